"""What a task's run is started with: its command, prompt, environment and log head.

:func:`launch` builds the supervisor's spec (:mod:`rouse.runs.supervisor`) for
one attempt of one task: the preset's command with the task's ``model`` and
``reasoning`` flags (:func:`rouse.runs.presets.task_command`), the prompt
(:func:`rouse.work.prompt.build`), the environment (``ROUSE_MEMORY``,
``ROUSE_TASK``, ``ROUSE_TASK_ATTEMPT``, ``ROUSE_RUN_ID``, ``ROUSE_REPO``,
``ROUSE_CATEGORY``), the deadline, the claim's lock and the ``run.log`` beside
the task, and the task's file to watch for a ``cancel:`` stamp.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from rouse.core.statedir import state_path
from rouse.core.tree import Record, Tree
from rouse.runs import presets
from rouse.runs.handle import resolve
from rouse.state import locks
from rouse.trust.origins import OriginReader
from rouse.trust.speaker import ROUSE_MARKER
from rouse.work import prompt


@dataclass
class Launch:
    """One attempt of a task, ready for its supervisor."""

    spec: dict[str, Any]
    run_id: str
    attempt: int
    argv: list[str]
    #: where Codex writes its last message (None for the other presets)
    last_message: Path | None


@dataclass(frozen=True)
class RunSetup:
    """What every run one worker starts shares: the tree, the preset and its extra
    arguments, the deadline and the grace before SIGKILL, whose origins count, the
    environment, and the worker's name for the log head."""

    root: Path
    kind: str
    extra: list[str]
    timeout: timedelta
    grace: float
    reader: OriginReader
    env: Mapping[str, str]
    worker: str


def launch(setup: RunSetup, tree: Tree, record: Record, attempt: int, now: datetime) -> Launch:
    """The spec of ``record``'s run, attempt ``attempt``."""
    root, kind = setup.root, setup.kind
    fields = prompt.fields_of(record)
    origin = setup.reader(record)
    run_id = f"w{now:%Y%m%dT%H%M%S}-{os.urandom(4).hex()}"
    last = state_path(root, f"runs/{run_id}.last") if kind == "codex" else None
    last_message = str(last) if last else None
    argv, unflagged = presets.task_command(kind, setup.extra, fields, last_message, origin)
    text = prompt.build(root, tree, record, setup.reader, unflagged, attempt)
    run_env = {
        **setup.env,
        ROUSE_MARKER: "1",  # what the run writes through rouse signs as agent
        "ROUSE_MEMORY": str(root),
        "ROUSE_TASK": record.dir,
        "ROUSE_TASK_ATTEMPT": str(attempt),
        "ROUSE_RUN_ID": run_id,
        "ROUSE_REPO": _env_value(fields["repo"], origin),
        "ROUSE_CATEGORY": _env_value(fields["category"], origin),
    }
    directory = root / record.dir
    spec = {
        "argv": resolve(argv, run_env),
        "cwd": str(directory),
        "env": run_env,
        "prompt": text,
        "timeout": setup.timeout.total_seconds(),
        "grace": setup.grace,
        "locks": [str(state_path(root, locks.task_lock(record.dir)))],
        "watch": str(root / record.rel),
        "log": str(directory / "run.log"),
        "log_head": (
            f"run: {run_id}\ntask: {record.dir}\nattempt: {attempt}\n"
            f"started: {now:%Y-%m-%d %H:%M:%S}\ncommand: {' '.join(argv)}\n"
            f"directory: {directory}\nworker: {setup.worker}\n"
        ),
    }
    return Launch(spec, run_id, attempt, argv, last)


def _env_value(value: str, origin: str) -> str:
    """A task's field as its run's environment carries it: empty for an untrusted task
    (the prompt says it, fenced) and for a value holding a control character."""
    if origin == "untrusted" or any(ord(ch) < 32 or ord(ch) == 127 for ch in value):
        return ""
    return value
