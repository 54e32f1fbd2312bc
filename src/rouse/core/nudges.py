"""Nudge files: wakes delivered to the file sink, in ``.rouse/nudges/``.

The sweeper writes them; the pack opens with the ones whose record the agent
has not acted on since. rouse's own writes (swept, nudges, reviewed, fires,
set, a re-armed due, fired, expired) never count as the agent acting.
"""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path

from rouse.core import clock, layout, statedir, sweepstate
from rouse.core.tree import Record, Tree
from rouse.core.value import Value

DIR = "nudges"
NAME_STAMP = "%Y%m%d-%H%M%S"
#: Statuses only the agent writes when it ends a record.
AGENT_ENDINGS = frozenset({"done", "dropped", "abandoned", "cancelled", "promoted"})
MAX_NUDGE_BYTES = 64 * 1024


class Nudge(Value):
    __slots__ = ("path", "at", "record_dir", "title", "reason", "number")
    _fields = __slots__

    def __init__(
        self,
        path: Path,
        at: datetime,
        record_dir: str,
        title: str,
        reason: str = "",
        number: int = 0,
    ):
        self.path = path
        self.at = at  # the wake's time (the tick's now), from the file name
        self.record_dir = record_dir  # the record path named by its ``at:`` line
        self.title = title  # the wake's first line (its ages as they were then)
        self.reason = reason  # stale, review, due, nag, expire (from the ledger)
        self.number = number  # the nudge number (from the ledger)


def nudge_dir(root: Path) -> Path:
    return root / layout.STATE_DIR / DIR


def file_name(now: datetime, kind: str, slug: str, number: int = 1) -> str:
    """``<YYYYmmdd-HHMMSS>-<type>-<slug>[-N].md``: the one place the name is made."""
    suffix = "" if number <= 1 else f"-{number}"
    return f"{now.strftime(NAME_STAMP)}-{kind}-{slug}{suffix}.md"


def read_nudges(root: Path) -> list[Nudge]:
    """Every undelivered-to-the-agent nudge file (not yet archived), oldest first."""
    found: list[Nudge] = []
    if statedir.path_problem(root, DIR, directory=True) is not None:
        return found  # behind a link: not state rouse wrote (check and the pack say so)
    try:
        entries = list(os.scandir(nudge_dir(root)))
    except OSError:
        return found
    for entry in entries:
        if not entry.name.endswith(".md") or not entry.is_file(follow_symlinks=False):
            continue
        try:
            at = datetime.strptime(entry.name[:15], NAME_STAMP)
            with open(entry.path, "rb") as handle:
                head = handle.read(MAX_NUDGE_BYTES).decode("utf-8", "replace")
        except (ValueError, OSError):
            continue
        lines = head.splitlines()
        record_dir = next((ln[4:].strip() for ln in lines[:4] if ln.startswith("at: ")), "")
        if lines and record_dir:
            found.append(Nudge(Path(entry.path), at, record_dir, lines[0]))
    found.sort(key=lambda n: (n.at, n.path.name))
    return found


def acted_since(record: Record, when: datetime) -> bool:
    """Has the agent acted on ``record`` since ``when``: moved it later, or ended it.

    Stamps have minute resolution, so "later" is compared at the minute: a
    move stamped in the wake's own minute counts as acting on it.
    """
    if clock.status_of(record) in AGENT_ENDINGS:
        return True
    moved, _ = clock.moved_at(record)
    return moved >= when.replace(second=0, microsecond=0)


def rel_of(nudge: Nudge) -> str:
    """The nudge file's tree-relative path: what the ledger keeps as its receipt."""
    return f"{layout.STATE_DIR}/{DIR}/{nudge.path.name}"


def vouched(root: Path, found: list[Nudge]) -> tuple[list[Nudge], list[Nudge]]:
    """Split nudge files into those the ledger says rouse wrote (their record and
    title taken from the ledger, not the file) and the rest."""
    known = sweepstate.vouched_nudges(root, [rel_of(n) for n in found])
    kept: list[Nudge] = []
    strays: list[Nudge] = []
    for nudge in found:
        row = known.get(rel_of(nudge))
        if row is None:
            strays.append(nudge)
        else:
            kept.append(Nudge(nudge.path, nudge.at, *row))
    return kept, strays


def woken(root: Path, tree: Tree) -> list[Nudge]:
    """The latest nudge per record whose record the agent has not acted on since.

    Only nudge files the ledger vouches for count (see :func:`vouched`).
    """
    latest: dict[str, Nudge] = {}
    for nudge in vouched(root, read_nudges(root))[0]:
        latest[nudge.record_dir] = nudge
    live = []
    for nudge in latest.values():
        record = tree.records.get(nudge.record_dir)
        if record is not None and not acted_since(record, nudge.at):
            live.append(nudge)
    live.sort(key=lambda n: (n.at, n.record_dir))
    return live
