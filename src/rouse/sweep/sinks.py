"""Where wakes go: a nudge file, a command, a webhook, or stdout.

A sink's ``send`` returns a short receipt when the wake landed and raises
``SinkError`` when it did not; it never raises anything else for a failed
delivery. Only real-world timers (timeouts, the Standard Webhooks timestamp)
use the wall clock; everything else takes the tick's ``now``.

The exec and webhook sinks have their own modules (``exec_sink``,
``webhook_sink``); this one owns the ``Sink`` protocol, the file and stdout
sinks and ``make_sink``, which builds any of them.
"""

from __future__ import annotations

import errno
import os
import sys
import tempfile
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import IO, Protocol

from rouse.core import layout, nudges, statedir
from rouse.core.errors import UsageError
from rouse.runs.capture import MAX_OUTPUT
from rouse.sweep.exec_sink import ExecSink
from rouse.sweep.sink_base import SinkError, check_timeout
from rouse.sweep.wake import Wake
from rouse.sweep.webhook_sink import WebhookSink, parse_secret

KINDS = ("file", "exec", "webhook", "stdout")
DEFAULT_TIMEOUT = {"exec": 60.0, "webhook": 10.0}
__all__ = [
    "KINDS",
    "MAX_OUTPUT",
    "FileSink",
    "Sink",
    "SinkError",
    "StdoutSink",
    "make_sink",
    "parse_secret",
    "write_nudge",
]


class Sink(Protocol):
    kind: str
    holdable: bool  # quiet hours hold it (exec, webhook)

    def describe(self) -> str: ...

    def send(self, wake: Wake, now: datetime) -> str: ...


# -- file ---------------------------------------------------------------------


NUDGES_REL = f"{layout.STATE_DIR}/{nudges.DIR}"


def write_nudge(root: Path, wake: Wake, now: datetime, trailer: str = "") -> str:
    """Write the wake text to a new ``.rouse/nudges/`` file; never overwrite one.

    The name is ``<YYYYmmdd-HHMMSS>-<type>-<slug>[-N].md`` with the tick's
    ``now``; a taken name gets ``-2``, ``-3``… Returns the tree-relative path.
    """
    problem = statedir.path_problem(root, nudges.DIR, directory=True)
    if problem is not None:  # checked at every write: a link planted after the start too
        raise OSError(errno.ELOOP, problem)
    directory = nudges.nudge_dir(root)
    directory.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(prefix=".wake.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write((wake.text + trailer).encode("utf-8"))
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp, 0o644)
        number = 1
        while True:
            name = nudges.file_name(now, wake.type, wake.slug, number)
            try:
                os.link(temp, directory / name)  # atomic, and fails if the name is taken
            except FileExistsError:
                number += 1
                continue
            return f"{NUDGES_REL}/{name}"
    finally:
        os.unlink(temp)


class FileSink:
    kind = "file"
    holdable = False

    def __init__(self, root: Path):
        self.root = root

    def describe(self) -> str:
        return f"file ({NUDGES_REL}/)"

    def send(self, wake: Wake, now: datetime) -> str:
        try:
            return write_nudge(self.root, wake, now)
        except OSError as exc:
            raise SinkError(f"cannot write the nudge file: {exc.strerror or exc}") from None


# -- stdout -------------------------------------------------------------------


class StdoutSink:
    kind = "stdout"
    holdable = False

    def __init__(self, stream: IO[str] | None = None):
        self.stream = stream

    def describe(self) -> str:
        return "stdout"

    def send(self, wake: Wake, now: datetime) -> str:
        stream = self.stream or sys.stdout
        try:
            stream.write(f"=== wake {wake.id}\n{wake.text}\n")
            stream.flush()
        except (OSError, ValueError) as exc:
            raise SinkError(f"cannot write to stdout: {exc}") from None
        return "printed"


# -- choosing one -------------------------------------------------------------


def make_sink(
    spec: Sequence[str] | None,
    command: Sequence[str],
    *,
    root: Path,
    timeout: float | None,
    secret: str | None,
    base_env: Mapping[str, str],
) -> Sink:
    """Build the sink named by ``--sink KIND [URL]`` (and the command after ``--``)."""
    kind, *rest = list(spec or ["file"])
    if kind not in KINDS:
        raise UsageError(f"unknown sink {kind!r}: use one of {', '.join(KINDS)}")
    wait = check_timeout(timeout) if timeout is not None else DEFAULT_TIMEOUT.get(kind, 0.0)
    if kind == "webhook":
        if len(rest) != 1:
            raise UsageError("--sink webhook needs exactly one URL: --sink webhook https://…")
        if command:
            raise UsageError("the webhook sink takes no command after --")
        return WebhookSink(rest[0], wait, parse_secret(secret) if secret else None)
    if rest:
        raise UsageError(f"--sink {kind} takes no argument (got {' '.join(rest)!r})")
    if kind == "exec":
        if not command:
            raise UsageError("--sink exec needs a command after --: --sink exec -- CMD ARG…")
        return ExecSink(command, wait, root, base_env)
    if command:
        raise UsageError(f"a command after -- is only for --sink exec, not {kind}")
    return FileSink(root) if kind == "file" else StdoutSink()
