"""The levels (docs/clock.md "The levels"): each one's states, which of them are open, its
default stale-after; and a record's status, and whether it is open for the clock."""

from __future__ import annotations

from datetime import timedelta

from rouse.core.timefmt import parse_interval
from rouse.core.tree import Record
from rouse.core.value import Frozen


class Level(Frozen):
    __slots__ = _fields = ("states", "open_states", "stale_after")

    def __init__(
        self, states: tuple[str, ...], open_states: frozenset[str], stale_after: timedelta | None
    ):
        self.states = states  # first = default when missing
        self.open_states = open_states
        self.stale_after = stale_after  # None: not on the stale rule


LEVELS: dict[str, Level] = {
    "intention": Level(("open", "done", "dropped"), frozenset({"open"}), timedelta(hours=2)),
    "goal": Level(("open", "done", "abandoned"), frozenset({"open"}), timedelta(hours=1)),
    "action": Level(("open", "done", "dropped"), frozenset({"open"}), timedelta(days=1)),
    "task": Level(
        ("pending", "running", "done", "failed", "cancelled"),
        frozenset({"pending", "running"}),
        timedelta(days=1),
    ),
    "reminder": Level(
        ("pending", "fired", "done", "dropped", "expired"), frozenset({"pending"}), None
    ),
    "backlog": Level(("open", "promoted", "dropped"), frozenset({"open"}), None),
}
STALE_LEVELS = frozenset(t for t, level in LEVELS.items() if level.stale_after is not None)
OUTCOMES = ("as-expected", "surprising", "contradicts")


def status_of(record: Record) -> str:
    """The record's status, lowercased; the level's default when missing."""
    value = record.header.fields.get("status")
    if value:
        value = value.strip().lower()
    return value or LEVELS[record.type].states[0]


def known_status(record: Record) -> bool:
    return status_of(record) in LEVELS[record.type].states


def is_nagging(record: Record) -> bool:
    """Whether a reminder nags: it carries a readable ``nag:`` (an unreadable one is
    absent: the reminder fires once, and ``check`` reports the value)."""
    text = (record.get("nag") or "").strip()
    if not text:
        return False
    try:
        parse_interval(text)
    except ValueError:
        return False
    return True


def is_repeating(record: Record) -> bool:
    """Whether a reminder carries an ``every:`` (readable or not: the sweeper re-arms
    only a readable one, but a hand-written series is never read as answered)."""
    return bool((record.get("every") or "").strip())


def is_open(record: Record, status: str | None = None) -> bool:
    """Open for the clock: an unknown status counts as open (err loud). ``status``: its
    :func:`status_of`, when the caller has it. Memoised (a walk's headers never change)."""
    memo = record.open_memo
    if memo is None:
        memo = record.open_memo = _is_open(record, status)
    return memo


def _is_open(record: Record, status: str | None = None) -> bool:
    if status is None:
        status = status_of(record)
    level = LEVELS[record.type]
    if record.type == "action":
        outcome = (record.get("outcome") or "").strip().lower()
        if outcome in OUTCOMES or (outcome and status not in level.states):
            # judged: ended whatever its status says. An unknown outcome is a
            # check error and, on a known status, never silences the action
            return False
    if status not in level.states:
        return True
    if record.type == "reminder" and status == "fired":
        return is_nagging(record)  # a nag stuck at fired is still live
    return status in level.open_states


def silences_parent(record: Record) -> bool:
    """Whether this record, open, keeps the records above it quiet.

    Backlog items are never swept, so they never silence anything either:
    otherwise a parked idea could hold its parent quiet forever.
    """
    return record.type != "backlog" and is_open(record)
