"""The sweeper's only write to memory: a delivered wake's machine fields.

Stamping happens strictly after a sink reports delivery. It goes through the
store (re-read right before the rename, retried if the bytes moved, mode
kept) under the writers' lock, and writes machine fields only — plus one
guard, documented below, that keeps rouse's own writes from ever looking
like the agent moving a record.
"""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path

from rouse.core import clockfields, levels
from rouse.core.errors import ChangedUnderfoot
from rouse.core.header import parse_header, set_fields
from rouse.core.store import Store
from rouse.core.timefmt import format_stamp, parse_stamp
from rouse.core.tree import Record
from rouse.sweep.wake import Wake

#: Fields whose change under us means the agent acted on a reminder meanwhile.
REMINDER_GUARDS = ("status", "due", "fires", "nag")


class _AgentActed(Exception):
    """The record changed in a way that makes our stamp wrong: write nothing."""


def _count(value: str | None) -> int:
    """A count as the clock reads it (out of bounds or unreadable: 0)."""
    try:
        return clockfields.parse_count(value or "")
    except ValueError:
        return 0


def already_stamped(record: Record, made: Wake) -> bool:
    """Whether ``made``'s stamp is already in the record (rouse stamps only after delivery).

    A record other than a reminder carries it in two lines, ``nudges`` and
    ``swept``: with ``swept`` missing or unreadable (a header rewritten by
    hand, a file restored from git, ``swept: soon``) the stamp is not there,
    whatever ``nudges`` says, and is written again from the ledger: the clock
    counts the record's next step from ``swept``, so a record without it would
    stay due for a wake already delivered, and never be woken again.
    """
    if record.type != "reminder":
        if _count(record.get("nudges")) < made.nudge:
            return False
        try:
            swept = parse_stamp(record.get("swept") or "")
        except ValueError:
            return False
        return swept >= made.made_at.replace(second=0)
    if made.reason != "due":
        return _count(record.get("fires")) >= made.nudge
    try:
        fired = parse_stamp(record.get("fired") or "")
    except ValueError:
        return False
    return levels.status_of(record) == "fired" and fired >= made.made_at.replace(second=0)


def _readable(value: str | None) -> bool:
    try:
        parse_stamp(value or "")
    except ValueError:
        return False
    return True


def stamp_after_delivery(root: Path, record: Record, updates: dict[str, str | None]) -> bool:
    """Write a delivered wake's machine fields; False when the agent acted first.

    The store re-reads the file right before its rename and retries if the
    bytes moved (it raises ChangedUnderfoot if they never settle). A reminder
    whose status, due, fires or nag changed since the tick read it is left
    alone: the agent acted, and our re-arm would undo it. A record with
    neither a readable ``last-moved`` nor an ``opened`` falls back to its mtime
    for ``moved_at``; our own write changes the mtime, so we also write
    ``opened:`` with the mtime it had, and rouse's writes never count as the
    agent moving it.
    """
    store = Store(root)
    path = store.path(record.rel)
    expected = {k: record.get(k) for k in REMINDER_GUARDS} if record.type == "reminder" else {}

    def change(data: bytes) -> bytes:
        fresh = parse_header(data, record.rel)
        if record.header.fenced and not fresh.fenced:
            raise ChangedUnderfoot("its header is gone (caught mid-write?)", path=record.rel)
        for key, value in expected.items():
            if fresh.get(key) != value:
                raise _AgentActed(key)
        writes = dict(updates)
        if not _readable(fresh.get("last-moved")) and not (fresh.get("opened") or "").strip():
            mtime = datetime.fromtimestamp(os.stat(path).st_mtime)
            writes["opened"] = format_stamp(mtime)
        return set_fields(data, writes, record.rel)

    try:
        with store.lock():
            store.update(record.rel, change)
    except _AgentActed:
        return False
    return True
