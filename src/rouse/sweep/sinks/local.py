"""The sinks on this machine: a nudge file for the pack (``file``), and ``stdout``.

:func:`write_nudge` is also how a given-up wake, tell or escalation is left
for the pack.
"""

from __future__ import annotations

import errno
import os
import sys
import tempfile
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import IO

from rouse.core import layout, statedir
from rouse.state import nudges
from rouse.sweep.sinks.base import SinkError
from rouse.sweep.wake import Wake

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


@dataclass(eq=False)
class FileSink:
    kind = "file"
    holdable = False
    root: Path

    def describe(self) -> str:
        return f"file ({NUDGES_REL}/)"

    def send(self, wake: Wake, now: datetime) -> str:
        try:
            return write_nudge(self.root, wake, now)
        except OSError as exc:
            raise SinkError(f"cannot write the nudge file: {exc.strerror or exc}") from None


# -- stdout -------------------------------------------------------------------


@dataclass(eq=False)
class StdoutSink:
    kind = "stdout"
    holdable = False
    stream: IO[str] | None = None

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
