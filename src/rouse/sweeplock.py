"""Who sweeps this tree, and when it last ticked.

``.rouse/sweep.lock`` is held (flock) for a sweeper's life — one sweeper per
tree, released by the OS if it dies — and names its holder.
``.rouse/sweep.json`` records the last tick's ``now`` and the sweeper's
interval, so the pack can warn when a sweeper has stopped ticking. Light to
import (the pack and ``status`` read it).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from rouse import layout
from rouse.errors import UsageError

SWEEP_LOCK = f"{layout.STATE_DIR}/sweep.lock"
STATE_FILE = f"{layout.STATE_DIR}/sweep.json"
TIME_FORMAT = "%Y-%m-%d %H:%M:%S"


def _t(value: datetime) -> str:
    return value.strftime(TIME_FORMAT)


@contextlib.contextmanager
def sweeper_lock(root: Path) -> Iterator[None]:
    """Hold ``.rouse/sweep.lock`` for the sweeper's life; refuse at once if taken."""
    path = root / SWEEP_LOCK
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
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
        os.write(fd, json.dumps({"pid": os.getpid(), "since": _t(started)}).encode())
        yield
    finally:
        os.close(fd)


def holder(root: Path) -> dict[str, Any] | None:
    """Who took the sweeper lock last, and whether that process is still alive."""
    try:
        data = json.loads((root / SWEEP_LOCK).read_text() or "{}")
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("pid"), int):
        return None
    data["running"] = _alive(data["pid"])
    return data


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def write_state(root: Path, now: datetime, interval: float | None, sink: str) -> None:
    """Record the last tick (its ``now``) and the interval, atomically."""
    path = root / STATE_FILE
    data = {
        "last_tick": _t(now),
        "interval": interval,
        "wall": _t(datetime.now()),
        "pid": os.getpid(),
        "sink": sink,
    }
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temp.write_text(json.dumps(data) + "\n")
    os.replace(temp, path)


def last_tick(root: Path) -> tuple[datetime | None, float | None]:
    """The last tick's ``now`` and the sweeper's interval in seconds (None: unknown)."""
    try:
        data = json.loads((root / STATE_FILE).read_text())
        when = datetime.strptime(data["last_tick"], TIME_FORMAT)
    except (OSError, ValueError, KeyError, TypeError):
        return None, None
    interval = data.get("interval")
    return when, float(interval) if isinstance(interval, int | float) else None
