"""The locks held for a process's life, and who holds them: one sweeper, one run per task.

``.rouse/sweep.lock`` is held (flock) for a sweeper's life — one sweeper per
tree, released by the OS if it dies — and names its holder. Each task's claim,
``.rouse/tasks/<slug>-<hash>.lock``, is held by the supervisor of its run (see
:mod:`rouse.runs`), so a claim ends the moment its holder dies. The tick's state
files the pack reads are :mod:`rouse.state.sweeper`; the pack never loads this.
``.rouse/work.json``, the task worker's last round, is read here too: like the
sweeper's lock, it names a pid and says whether it lives.
(The store's short write lock is :mod:`rouse.core.store`'s own.)
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

from rouse.core import layout
from rouse.core.errors import UsageError
from rouse.core.statedir import open_lock, pid_alive
from rouse.state.shapes import SWEEP, WORK
from rouse.state.shapes import SWEEP_LOCK as LOCK_SHAPE
from rouse.state.sweeper import (
    STATE_FILE,
    SWEEP_LOCK,
    TIME_FORMAT,
    WORK_STATE,
    last_tick,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


@contextlib.contextmanager
def sweeper_lock(root: Path) -> Iterator[None]:
    """Hold ``.rouse/sweep.lock`` for the sweeper's life; refuse at once if taken."""
    fd = open_lock(root, "sweep.lock", "the sweeper's lock")
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        found = holder(root) or {}
        who = f" (pid {found['pid']}, since {found.get('since')})" if found.get("pid") else ""
        raise UsageError(
            f"another sweeper is already running on {root}{who}: one sweeper per tree; "
            "stop it first, or let it do the work"
        ) from None
    try:
        os.ftruncate(fd, 0)
        started = datetime.now().replace(microsecond=0)
        since = started.strftime(TIME_FORMAT)
        os.write(fd, json.dumps({"pid": os.getpid(), "since": since}).encode())
        yield
    finally:
        os.close(fd)


def holder(root: Path) -> dict[str, Any] | None:
    """Who took the sweeper lock last, and whether that process is still alive."""
    return _alive(LOCK_SHAPE.read(root / SWEEP_LOCK), "running")


def sweeper_channels(root: Path, now: datetime) -> tuple[dict[str, str], str | None] | None:
    """The sweeper's channels (name → sink) and its default (``--notify``), as its last
    tick recorded them; None when no sweeper runs on this tree, or (``sweep --once``
    from cron) none has ticked within max(1h, 3 intervals) of ``now``."""
    data = SWEEP.read(root / STATE_FILE) or {}
    found = holder(root)
    running = bool(found and found.get("running"))
    if running and data.get("pid") != (found or {}).get("pid"):
        return {}, None  # it has not ticked yet: it says at its first tick
    if not running:
        when, interval = last_tick(root)
        allowed = max(3600.0, 3 * (interval or 0))
        if when is None or abs((now - when).total_seconds()) > allowed:
            return None
    return dict(data.get("channels") or {}), data.get("notify")  # (as its shape has them)


# -- a task's claim (rouse work) ---------------------------------------------------


def task_lock(record_dir: str) -> str:
    """A task's claim under .rouse/ (flock, held by its run's supervisor): one per task."""
    import hashlib

    slug = record_dir.rpartition("/")[2][:40]
    return f"tasks/{slug}-{hashlib.sha1(record_dir.encode()).hexdigest()[:16]}.lock"


def claim_live(root: Path, record_dir: str) -> bool:
    """Whether a live process holds the task's claim (a look that takes nothing for long)."""
    try:
        fd = os.open(root / layout.STATE_DIR / task_lock(record_dir), os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def work_state(root: Path) -> dict[str, Any] | None:
    """The task worker's last round (``.rouse/work.json``), and whether its pid lives."""
    return _alive(WORK.read(root / layout.STATE_DIR / WORK_STATE), "alive")


def _alive(data: Any, key: str) -> dict[str, Any] | None:
    """A state file naming a pid (None unless it read as one), with ``key``: whether the
    pid lives."""
    if not isinstance(data, dict):
        return None
    data[key] = isinstance(data.get("pid"), int) and pid_alive(data["pid"])
    return data
