"""Changing records: ``move``, ``snooze`` and ``close``.

Each verb writes through the store (atomic, under the writers' lock), notes
that it acted on the record (``rouse.state.acts``: what answers a wake, to the
second) and returns what it did, for the CLI or the MCP server to print. A
record named by its path is read on its own (:mod:`rouse.records.locate`), not
found by walking the tree. ``promote`` is :mod:`rouse.records.promoting`'s; a
task's claim, cancel and checkpoints are :mod:`rouse.records.tasks`'s.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from rouse.core import clock, header, levels, nextdue
from rouse.core.errors import UsageError
from rouse.core.humantime import parse_when
from rouse.core.store import with_log
from rouse.core.timefmt import format_stamp, later_by
from rouse.core.tree import Record, walk
from rouse.records.inputs import check_body
from rouse.records.locate import find
from rouse.records.scaffold import article
from rouse.state import acts
from rouse.state.nudges import stamp_of
from rouse.trust.stamp import SigningStore

#: A fact about a change, as ``--json`` shows it (times and durations converted there).
Fact = str | int | datetime | timedelta | None

ENDINGS = ("done", "dropped", "abandoned", "failed", "cancelled")
#: The lifecycle's own field for a snooze (outside the signature, like last-moved).
SNOOZED = "snoozed-until"
#: Reminder states a snooze re-arms (a fresh due and status pending).
REARMABLE = frozenset({"pending", "fired", "expired"})


@dataclass
class Changed:
    rel: str  # the record file written
    summary: str  # one line for the user
    next_due: datetime | None = None
    record: str = ""  # the record's id (type/slug)
    path: str = ""  # the record's directory, tree-relative
    facts: dict[str, Fact] = field(default_factory=dict)  # snake_case keys, for --json

    @classmethod
    def of(
        cls, record: Record, summary: str, facts: dict[str, Fact], next_due: datetime | None = None
    ) -> Changed:
        """What a verb did to ``record`` (its file, id and directory)."""
        return cls(record.rel, summary, next_due, record.id, record.dir, facts)


def _logged(
    root: Path,
    record: Record,
    now: datetime,
    updates: dict[str, str | None],
    *lines: str | None,
) -> None:
    """Write ``updates`` and each of ``lines`` (None: none), dated, in the record's log, in
    one write (:func:`acted`)."""
    logged = [dated(now, line) for line in lines if line is not None]

    def change(data: bytes) -> bytes:
        data = header.set_fields(data, updates, record.rel)
        for line in logged:
            data = with_log(data, record.rel, line)
        return data

    acted(root, record, now, change)


def acted(root: Path, record: Record, now: datetime, change: Callable[[bytes], bytes]) -> None:
    """Rewrite the record's file through ``change`` under the writers' lock, and note that
    a verb acted on the record (what answers its wake)."""
    store = SigningStore(root)
    with store.lock():
        store.update(record.rel, change)
        acts.note(root, record.dir, now, store.secret)


def dated(now: datetime, text: str) -> str:
    """A log line: ``- <stamp>: text``."""
    return f"- {format_stamp(now)}: {text}"


def _not_back(record: Record, now: datetime, force: bool) -> None:
    """Refuse to stamp ``last-moved`` earlier than it already is, unless forced.

    A ``last-moved`` ahead of the wall clock was never a real move (a forced
    snooze wrote it, or another machine's clock): stamping now brings it back.
    """
    last = stamp_of(record, "last-moved")
    real = datetime.now().replace(second=0, microsecond=0)
    if last is not None and now < last <= real and not force:
        raise UsageError(
            f"{record.id} last moved at {format_stamp(last)}, later than now "
            f"({format_stamp(now)}): rouse does not take time back — check --now, or give "
            "--force to write the earlier time"
        )


def move(
    root: Path, ref: str, now: datetime, note: str | None = None, *, force: bool = False
) -> Changed:
    """Stamp ``last-moved: now``, appending the note (if any) to the body.

    A ``now`` earlier than the record's ``last-moved`` is refused unless ``force``.
    """
    record = find(root, ref)
    _not_back(record, now, force)
    line = one_line(note) if note else None
    _logged(root, record, now, {"last-moved": format_stamp(now)}, line or None)
    return Changed.of(
        record, f"moved {record.id} at {format_stamp(now)}", {"moved_at": minute(now), "note": line}
    )


def snooze(
    root: Path,
    ref: str,
    now: datetime,
    *,
    until: str | None = None,
    duration: str | None = None,
    note: str | None = None,
    clear: bool = False,
) -> Changed:
    """Put a record off until WHEN (SPEC §3.2a): ``snoozed-until``; a reminder: its ``due``.

    WHEN must be after ``now``. Until then an intention, goal, action or task
    is due for no reason (stale, review); a ``move`` does not cancel it, and
    once past it is inert. ``clear`` removes a snooze. ``last-moved`` is never
    touched: putting a record off is not moving it. A reminder's snooze
    re-arms it (a fresh ``due``, status pending).
    """
    if clear:
        if until is not None or duration is not None:
            raise UsageError("snooze --clear takes no --until or --for")
        record = find(root, ref)
        if not (record.get(SNOOZED) or "").strip():
            raise UsageError(f"{record.id} is not snoozed: nothing to clear")
        line = "snooze cleared" + (f": {one_line(note)}" if note else "")
        return _snoozed(root, record, now, {SNOOZED: None}, line, None)
    if (until is None) == (duration is None):
        raise UsageError("snooze needs one of --until WHEN, --for INTERVAL or --clear")
    try:
        when = parse_when(until, now) if until else later_by(now, duration or "")
    except ValueError as exc:
        raise UsageError(f"bad snooze time: {exc}") from None
    if minute(when) <= minute(now):  # stamps are minutes: so is every comparison here
        past = "is in the past" if minute(when) < minute(now) else "is now"
        raise UsageError(
            f"{format_stamp(when)} {past} (now is {format_stamp(now)}): snooze puts a record "
            "off until later — give a later --until, or --for INTERVAL"
        )
    record = find(root, ref)
    if record.type == "backlog":
        raise UsageError(f"{record.id} is a backlog item: it is never swept, so never snoozed")
    rearmable = record.type == "reminder" and levels.status_of(record) in REARMABLE
    if not levels.is_open(record) and not rearmable:
        raise UsageError(f"{record.id} is {levels.status_of(record)}: only open records snooze")
    updates: dict[str, str | None]
    if record.type == "reminder":
        # a fresh due re-arms it: rouse clears its own firing history too
        updates = {"due": format_stamp(when), "status": "pending"}
        updates.update(dict.fromkeys(("fires", "set", "fired", "ended")))
    else:
        updates = {SNOOZED: format_stamp(when)}
    line = f"snoozed until {format_stamp(when)}" + (f": {one_line(note)}" if note else "")
    return _snoozed(root, record, now, updates, line, minute(when))


def _snoozed(
    root: Path,
    record: Record,
    now: datetime,
    updates: dict[str, str | None],
    line: str,
    until: datetime | None,
) -> Changed:
    _logged(root, record, now, updates, line)
    fresh = walk(root)
    next_due = clock.evaluate(fresh, fresh.records[record.dir], now).due_at
    what = f"snoozed {record.id} until {format_stamp(until)}" if until else f"{record.id}: {line}"
    return Changed.of(record, what, {"until": until, "next_due": next_due}, next_due)


def close(
    root: Path,
    ref: str,
    now: datetime,
    ending: str,
    why: str | None = None,
    outcome: str | None = None,
    *,
    force: bool = False,
    series: bool = False,
    before: str | None = None,
    by_worker: bool = False,
) -> Changed:
    """End a record out loud: status, last-moved, and the reason in the body.

    A record that has already ended (done, dropped, failed, expired…) is not
    ended again, and ``now`` may not be earlier than its ``last-moved``,
    unless ``force``: then the body line says what it was. ``done`` on a
    repeating reminder re-arms its next occurrence instead (:func:`_rearm`),
    unless ``series``: then it ends for good. ``before``: a log line written just above
    the ending's, in the same write (a task's ``result: …``, from its worker). A
    ``running`` task is ended by its worker (``by_worker``), not by hand unless ``force``.
    """
    record = find(root, ref)
    if series and (ending != "done" or record.type != "reminder"):
        raise UsageError("--series goes with --done on a repeating reminder: it ends the series")
    if ending == "done" and not series and record.type == "reminder":
        rearmed = _rearm(root, record, now, force)
        if rearmed is not None:
            return rearmed
    _check_ending(record, ending, why)
    status = levels.status_of(record)
    if record.type == "task" and status == "running" and not (by_worker or force):
        raise UsageError(
            f"{record.id} is running: its worker ends it when its run ends; `rouse cancel "
            f"{record.id}` stops the run (give --force only if no worker runs it any more)"
        )
    ended = _has_ended(record, status)
    if ended and not force:
        again = (
            "nothing to change"
            if status == ending
            else f"closing it {ending} would rewrite how it ended — give --force if it "
            f"really ended {ending}"
        )
        raise UsageError(f"{record.id} is already {status}: {again}")
    _not_back(record, now, force)
    updates: dict[str, str | None] = {"status": ending, "last-moved": format_stamp(now)}
    if outcome is not None:
        _check_outcome(record, outcome)
        updates["outcome"] = outcome
    reason = one_line(why) if why else None
    line = ending + (f" (was {status})" if ended and status != ending else "")
    line += f": {reason}" if reason else ""
    _logged(root, record, now, updates, before, line)
    return Changed.of(
        record,
        f"{record.id} is {ending}",
        {
            "status": ending,
            "ended_at": minute(now),
            "reason": reason,
            "outcome": outcome,
            "previous_status": status,
        },
    )


def _check_ending(record: Record, ending: str, why: str | None) -> None:
    """Refuse an ending that is not one of the record's closed states, or one other than
    ``done`` given without a reason."""
    states = levels.LEVELS[record.type].states
    if ending not in ENDINGS:
        raise UsageError(
            f"unknown ending {ending!r}: use --done, --dropped WHY, --abandoned WHY, "
            "--failed WHY or --cancelled WHY"
        )
    if ending not in states or ending == states[0]:
        endings = [s for s in states[1:] if s in ENDINGS]
        raise UsageError(
            f"{article(record.type)} cannot end '{ending}': its states are {', '.join(states)}"
            + (f" (use --{' or --'.join(endings)})" if endings else "")
        )
    if ending != "done" and not (why or "").strip():
        raise UsageError(f"--{ending} needs a reason, said out loud: --{ending} 'why'")


def _check_outcome(record: Record, outcome: str) -> None:
    """Refuse an outcome on anything but an action, or one not in :data:`levels.OUTCOMES`."""
    if record.type != "action":
        raise UsageError(f"only an action carries an outcome, not {article(record.type)}")
    if outcome not in levels.OUTCOMES:
        raise UsageError(f"unknown outcome {outcome!r}: use {', '.join(levels.OUTCOMES)}")


def _rearm(root: Path, record: Record, now: datetime, force: bool) -> Changed | None:
    """``done`` on a repeating reminder: this occurrence is done, the next is armed
    (status pending, its firing history cleared, ``set`` kept as the series' first
    due). None when it does not repeat or the series is over: then it ends."""
    following = nextdue.rearmed(record, now)
    if following is None:
        return None
    status = levels.status_of(record)
    if _has_ended(record, status) and not force:
        raise UsageError(f"{record.id} is already {status}: nothing to change")
    _not_back(record, now, force)
    updates: dict[str, str | None] = {
        "status": "pending",
        "due": format_stamp(following),
        "last-moved": format_stamp(now),
    }
    updates.update(dict.fromkeys(("fires", "fired", "ended")))
    line = f"done; the series goes on: next {format_stamp(following)}"
    _logged(root, record, now, updates, line)
    return Changed.of(
        record,
        f"{record.id} is done for now; next occurrence {format_stamp(following)}",
        {
            "status": "pending",
            "ended_at": minute(now),
            "reason": None,
            "outcome": None,
            "previous_status": status,
            "next_due": following,
        },
    )


def _has_ended(record: Record, status: str) -> bool:
    """Whether the record is in one of its level's closed states (a fired one-shot is not)."""
    level = levels.LEVELS[record.type]
    if status not in level.states or status in level.open_states:
        return False
    return not (record.type == "reminder" and status == "fired")


def minute(value: datetime) -> datetime:
    """``value`` to the minute, as a stamp holds it."""
    return value.replace(second=0, microsecond=0)


def one_line(text: str) -> str:
    """A note or reason as one body line: whitespace collapsed, and text (no NUL)."""
    return " ".join(check_body(text, "the note").split())
