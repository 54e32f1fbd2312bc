"""How a task's run ended, in the task's terms: its ending, the reason, and its result.

:func:`verdict` is the rule, on what the supervisor reported
(:class:`rouse.runs.handle.Ended`): exit 0 is ``done``; a non-zero exit or the
deadline is ``failed``; a ``cancel:`` stamp is ``cancelled``, the reason
listing the checkpoints the run reported (the outward actions the owner must
know about); a run its worker stopped goes back to ``pending``. The result is
read as each CLI documents it (:func:`rouse.runs.presets.result_of`) from the
run's ``run.log`` and, for Codex, its last-message file.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from rouse.core.timefmt import format_interval
from rouse.records import tasks
from rouse.runs import presets
from rouse.runs.handle import Ended


@dataclass
class TaskEnding:
    ending: str  # done, failed, cancelled, or pending (handed back)
    why: str
    result: str  # the run's final message ('' when there is none)


def verdict(
    ended: Ended,
    *,
    kind: str,
    timeout: timedelta,
    task_dir: str,
    task_file: Path,
    log: Path,
    last_message: Path | None,
) -> TaskEnding:
    """What ``ended`` means for the task at ``task_dir``."""
    took = f"after {ended.seconds:.1f}s (output in {task_dir}/run.log)"
    result = result_of(kind, log, last_message)  # (read, so Codex's file is removed, always)
    if ended.stopped == "stop":
        why = f"handed back by its worker (stopped {took}); back to pending"
        return TaskEnding("pending", why, "")
    if ended.stopped == "cancel":
        try:
            data = task_file.read_bytes()
        except OSError:
            data = b""
        said = tasks.checkpoints(data, task_file.name)
        listed = "; ".join(said) if said else "none"
        return TaskEnding(
            "cancelled", f"cancelled while it ran ({took}); its checkpoints: {listed}", ""
        )
    if ended.ok:
        return TaskEnding("done", f"exit 0 {took}", result)
    if ended.stopped == "deadline":
        seconds = timeout.total_seconds()
        limit = f"{seconds:g}s" if seconds < 60 else format_interval(timeout)
        return TaskEnding(
            "failed", f"killed at its deadline (--task-timeout {limit}) {took}", result
        )
    return TaskEnding("failed", f"exit {ended.code} {took}", result)


def result_of(kind: str, log: Path, last_message: Path | None) -> str:
    """The run's final message: from its output in ``log`` (after the head), or Codex's
    last-message file (read, then removed)."""
    try:
        output = log.read_bytes().split(b"\n---\n", 1)[-1]
    except OSError:
        output = b""
    last = None
    if last_message is not None:
        with contextlib.suppress(OSError):
            last = last_message.read_bytes()
            last_message.unlink()
    return presets.result_of(kind, output, last)
