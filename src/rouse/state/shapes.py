"""Every JSON state file in ``.rouse/``: where it lives, its bounds and its shape.

One table, so that every reader goes through the one bounded reader
(:mod:`rouse.state.files`) with the file's own limits, and ``rouse check``
can name each file the reader refuses. Owners read their file with
``SPEC.read(path)`` (or ``SPEC.decode(bytes)``) and still check each entry
as they use it (MACs, bindings); the shape here is what makes the file safe
to walk at all: the right containers, strings where strings go, numbers
within bounds. A refused file is a miss: the owner re-derives or rewrites it.
Light to import: on the pack's start-up path, and the hooks'.
"""

from __future__ import annotations

import os

from rouse.state.files import (
    MAX_BYTES,
    STATE_DIR,
    Damaged,
    Num,
    decode,
    read_bounded,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

    from _typeshed import StrPath

#: the longest interval rouse accepts anywhere (520 weeks), in seconds
MAX_INTERVAL = 520 * 7 * 86400.0
WHOLE = Num(0, 2**63 - 1, whole=True)
PID = Num(1, 2**31 - 1, whole=True)
CACHES = 64 << 20  # the walk and origin caches grow with the tree


class StateFile:
    """One kind of state file: ``rel`` under ``.rouse/`` (``*`` matches one name),
    its bounds, its ``shape``; ``magic``: the file opens with one text line (the
    walk cache's version and MAC) before the JSON; ``head``: only the JSON line after
    that is this shape (the rest is its reader's to check: the snapshot's paths);
    ``empty_ok``: an empty file is no file (a lock between its truncation and its
    write)."""

    __slots__ = ("empty_ok", "head", "magic", "max_bytes", "rel", "shape")

    def __init__(
        self,
        rel: str,
        shape: Any,
        *,
        max_bytes: int = MAX_BYTES,
        magic: bool = False,
        head: bool = False,
        empty_ok: bool = False,
    ):
        self.rel, self.shape, self.max_bytes = rel, shape, max_bytes
        self.magic, self.head, self.empty_ok = magic, head, empty_ok

    def decode(self, data: bytes) -> Any:
        """The value in ``data`` (the JSON part); :class:`Damaged` says why not."""
        return decode(data, self.shape)

    def _value(self, path: StrPath) -> Any:
        data = read_bounded(path, self.max_bytes)
        if data is None or (self.empty_ok and not data.strip()):
            return None
        if self.magic:
            data = data.partition(b"\n")[2]
        if self.head:
            data = data.partition(b"\n")[0]
        return self.decode(data)

    def read(self, path: StrPath) -> Any:
        """The decoded file, or None: missing, behind a link, or refused."""
        try:
            return self._value(path)
        except Damaged:
            return None

    def problem(self, path: StrPath) -> str | None:
        """Why :meth:`read` refuses the file at ``path`` (None: fine, or missing)."""
        try:
            self._value(path)
        except Damaged as exc:
            return str(exc)
        return None


_STAMP_OR_NONE = (str, type(None))

WALK_CACHE = StateFile(
    "cache/walk.json",
    {"version": WHOLE, "dirs": {str: list}},
    max_bytes=CACHES,
    magic=True,
)
INSTANT = Num(-(2**63), 2**63 - 1, whole=True)  # (microseconds since the naive epoch)
SNAPSHOT = StateFile(  # (its head line; the paths line is checked as it is read)
    "cache/snapshot.json",
    {
        "key": str,
        "made": INSTANT,
        "until": (INSTANT, type(None)),
        "token": (str, type(None)),
        "listed": {str: [[str]]},
        "digest": str,
        "parts": [str],
    },
    max_bytes=CACHES,
    magic=True,
    head=True,
)
ORIGINS = StateFile(
    "cache/origins.json",
    {"version": WHOLE, "entries": {str: list}, "untrusted?": {str: str}},
    max_bytes=CACHES,
)
SWEEP = StateFile(
    "sweep.json",
    {
        "last_tick": str,
        "interval?": (Num(0, MAX_INTERVAL), type(None)),
        "wall?": str,
        "pid?": PID,
        "sink?": str,
        "channels?": {str: str},
        "notify?": _STAMP_OR_NONE,
    },
)
SWEEP_LOCK = StateFile("sweep.lock", {"pid": PID, "since?": str}, empty_ok=True)
FLEET = StateFile(
    "fleet.json",
    {
        "tick": str,
        "queued": WHOLE,
        "oldest?": _STAMP_OR_NONE,
        "live_workers": WHOLE,
        "worker_seen?": _STAMP_OR_NONE,
    },
)
BUDGET = StateFile("runs/budget.json", {"until": str, "budget?": str, "runs?": WHOLE})
PROBES = StateFile("probes.json", {"version": WHOLE, "entries": {str: dict}})
ACTS = StateFile("acts.json", {"version": WHOLE, "acts": {str: str}}, max_bytes=8 << 20, magic=True)
SEEN = StateFile("sessions/*.json", {"seen": [str]}, max_bytes=8 << 20)
WAITER = StateFile("sessions/*.waiter", {"pid": PID, "at": WHOLE})
WORK = StateFile(
    "work.json",
    {
        "last_round": str,
        "wall?": str,
        "pid?": PID,
        "jobs?": WHOLE,
        "running?": [str],
        "held?": [str],
        "waiting?": _STAMP_OR_NONE,
        "stopping?": WHOLE,  # how many SIGTERMs the worker has had
    },
)

ALL = (
    WALK_CACHE,
    SNAPSHOT,
    ORIGINS,
    SWEEP,
    SWEEP_LOCK,
    FLEET,
    BUDGET,
    PROBES,
    ACTS,
    SEEN,
    WAITER,
    WORK,
)


def _paths(root: Path, spec: StateFile) -> list[tuple[str, Path]]:
    state = root / STATE_DIR
    folder, _, name = spec.rel.rpartition("/")
    if "*" not in name:
        return [(spec.rel, state / spec.rel)]
    suffix = name.partition("*")[2]
    where = state / folder
    try:
        with os.scandir(where) as entries:
            names = sorted(e.name for e in entries if e.name.endswith(suffix))
    except OSError:
        return []
    return [(f"{folder}/{found}", where / found) for found in names if not found.startswith(".")]


def problems(root: Path) -> list[tuple[str, str]]:
    """``(tree-relative path, why)`` for each state file the bounded reader refuses."""
    found: list[tuple[str, str]] = []
    for spec in ALL:
        for rel, path in _paths(root, spec):
            why = spec.problem(path)
            if why is not None:
                found.append((f"{STATE_DIR}/{rel}", why))
    return found
