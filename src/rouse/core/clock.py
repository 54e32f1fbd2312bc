"""The clock: whether a record is due at ``now``, why, and when it will be.

Every function here is pure: it takes records (from ``rouse.core.tree``) and
``now`` and returns decisions. The pack, ``rouse due``, ``rouse explain`` and
the sweeper all import this module; nothing else computes due. The levels it
reads are :mod:`rouse.core.levels`, its fields :mod:`rouse.core.clockfields`; what
comes due next is :mod:`rouse.core.nextdue`.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from rouse.core import dueplan, recurrence
from rouse.core.clockfields import FieldProblem, FieldReader
from rouse.core.dueplan import REMINDER, STALE, decide, wake_of
from rouse.core.levels import LEVELS, STALE_LEVELS, is_nagging, is_open, silences_parent, status_of
from rouse.core.timefmt import FLOOR, as_span, later
from rouse.core.tree import Record, Tree
from rouse.core.value import Value

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

DEFAULT_MAX_FIRES = 10
REASONS = ("stale", "review", "due", "nag", "expire")


class Decision(Value):
    """What the clock says about one record at one instant."""

    __slots__ = (
        *("record", "now", "reason", "due_at", "moved_at", "moved_from", "nudge"),
        *("stale_after", "stale_at", "review_at", "swept", "own_clock", "silenced_by"),
        *("snoozed_until", "problems", "notes", "every", "missed", "provisional"),
        *("snooze", "wake", "expires", "fires_out", "nagging"),
    )
    _fields = __slots__

    def __init__(self, record: Record, now: datetime):
        self.record = record
        self.now = now
        self.reason: str | None = None  # a code from REASONS when due now, else None
        self.due_at: datetime | None = None  # when it is/was/will be due (None: never)
        self.moved_at: datetime | None = None
        self.moved_from = "mtime"  # last-moved, opened or mtime
        self.nudge = 1  # the number the next wake would carry
        self.stale_after: timedelta | None = None  # effective (floored) interval
        self.stale_at: datetime | None = None
        self.review_at: datetime | None = None
        self.swept: datetime | None = None
        self.own_clock: datetime | None = None
        self.silenced_by: list[str] = []
        #: ``snoozed-until`` while it holds (not due for any reason before it), else None
        self.snoozed_until: datetime | None = None
        self.problems: list[FieldProblem] = []
        self.notes: list[str] = []  # human explanations (floors, fallbacks)
        self.every: recurrence.Every | None = None  # a repeating reminder's rule
        self.missed = 0  # a repeating reminder's occurrences passed since its due
        #: a record below had a stamp later than now, passed over: this decision may
        #: change when that instant comes (so no plan keeps it)
        self.provisional = False
        #: the readable ``snoozed-until``, holding or past (a record is never due from an
        #: instant inside it: :func:`rouse.core.dueplan.verdict`)
        self.snooze: datetime | None = None
        #: the plan's instants (rouse.core.dueplan): when it first comes due, and a
        #: reminder's expiry, nags run out, nagging
        self.wake: datetime | None = None
        self.expires: datetime | None = None
        self.fires_out = False
        self.nagging = False

    def replace(self, **changes: object) -> Decision:
        """A copy with some fields changed."""
        clone = Decision(self.record, self.now)
        for name in self.__slots__:
            setattr(clone, name, changes.get(name, getattr(self, name)))
        return clone

    @property
    def is_due(self) -> bool:
        return self.reason is not None


def moved_at(
    record: Record, problems: list[FieldProblem] | None = None, now: datetime | None = None
) -> tuple[datetime, str]:
    """``last-moved``, else ``opened``, else the file's mtime — and which one it was.
    With ``now``, a stamp later than it is unreadable (:meth:`FieldReader.happened`)."""
    return _moved_at(FieldReader(record, [] if problems is None else problems), now)


def _moved_at(reader: FieldReader, now: datetime | None) -> tuple[datetime, str]:
    for key in ("last-moved", "opened"):
        value = reader.happened(key, now)
        if value is not None:
            return value, key
    return reader.record.mtime, "mtime"


# -- the decision -------------------------------------------------------------


def _floored_span(span: tuple[int, timedelta]) -> tuple[int, timedelta]:
    days, elapsed = span
    if days == 0 and elapsed < FLOOR:
        return 0, FLOOR
    return span


def evaluate(tree: Tree, record: Record, now: datetime) -> Decision:
    """Decide whether ``record`` is due at ``now``, why, and when it next will be."""
    decision = Decision(record, now)
    fields = FieldReader(record, decision.problems)
    decision.moved_at, decision.moved_from = _moved_at(fields, now)
    level = LEVELS[record.type]
    status = status_of(record)
    if status not in level.states:
        decision.notes.append(f"unknown status {status!r} counts as open")
    still_open = is_open(record, status)
    if record.type == "reminder":
        _evaluate_reminder(decision, fields, now)
    elif level.stale_after is not None and still_open:
        _evaluate_stale(tree, decision, fields, now)
    return decision


def _evaluate_stale(tree: Tree, decision: Decision, fields: FieldReader, now: datetime) -> None:
    # (runs for most records of every pack: locals, not repeated attribute reads)
    record = decision.record
    level = LEVELS[record.type]
    assert level.stale_after is not None
    decision.nudge = fields.integer("nudges", 0) + 1
    written = fields.span("stale-after")
    span = as_span(level.stale_after) if written is None else _floored_span(written)
    if written is not None and span is not written:
        decision.notes.append(f"stale-after {fields.text('stale-after')} is floored to 15m")
    decision.stale_after = timedelta(days=span[0]) + span[1]
    decision.swept = swept = fields.stamp("swept")
    children = record.children
    if children and record.type == "goal":
        passed: list[FieldProblem] = []
        # (a closed record ended when it last moved)
        ends = [moved_at(d, passed, now)[0] for d in tree.descendants(record) if not is_open(d)]
        decision.own_clock = max(ends) if ends else None
        if any(p.level == "warn" for p in passed):  # (the child's decision reports it)
            decision.provisional = True
            decision.notes.append("a closed record below has a stamp later than now: passed over")
    base = decision.moved_at  # the latest of moved, swept and own clock (no generator: hot)
    assert base is not None
    if swept is not None and swept > base:
        base = swept
    own_clock = decision.own_clock
    if own_clock is not None and own_clock > base:
        base = own_clock
    decision.stale_at = stale_at = later(base, span[1], span[0])
    silenced = False
    if children:
        decision.silenced_by = [d.dir for d in tree.descendants(record) if silences_parent(d)]
        silenced = bool(decision.silenced_by)

    review_every = fields.span("review-every")
    review_at = None
    if review_every is not None:
        review_base = (
            fields.happened("reviewed", now) or fields.happened("opened", now) or record.mtime
        )
        days, elapsed = _floored_span(review_every)
        decision.review_at = review_at = later(review_base, elapsed, days)

    decision.snooze = snoozed = fields.stamp("snoozed-until")
    if snoozed is not None and now < snoozed:
        # put off: due for no reason before it; then as its arithmetic says (inert once
        # past, but a record is never due from an instant inside it)
        decision.snoozed_until = snoozed
    decision.wake = wake = wake_of(review_at, stale_at, silenced, snoozed)
    found = decide(STALE, now, wake, review_at, stale_at)
    if found is None:
        decision.due_at = wake  # (only a review can wake a silenced record)
    else:
        decision.reason, decision.due_at = found


def _evaluate_reminder(decision: Decision, fields: FieldReader, now: datetime) -> None:
    record = decision.record
    fires = fields.integer("fires", 0)
    decision.nudge = fires + 1
    fields.interval("nag")  # (read for its problem: an unreadable nag is absent)
    nagging = is_nagging(record)
    if nagging:
        fields.integer("max-fires", DEFAULT_MAX_FIRES)
        fields.backoff()
    decision.expires = expires = fields.stamp("expires")
    decision.every = every = fields.every()
    if every is not None:
        fields.stamp("until")  # (read for its problem: the series ends only on re-arming)
    if not is_open(record):
        return
    due = fields.stamp("due")
    if due is None:
        assert decision.moved_at is not None
        due = decision.moved_at
        decision.notes.append(f"no readable 'due': treated as due since {decision.moved_from}")
    if nagging and status_of(record) == "fired":
        decision.notes.append("stuck at 'fired' with a nag: treated as pending and due now")
        due = min(due, now)
    decision.nagging = nagging
    if nagging:
        decision.fires_out = fires + 1 >= fields.integer("max-fires", DEFAULT_MAX_FIRES)
    decision.due_at = decision.wake = due
    found = decide(REMINDER, now, due, None, None, expires, decision.fires_out, nagging)
    if found is None:
        return
    decision.reason = found[0]
    if found[0] == "due" and every is not None:
        decision.missed = recurrence.count_between(every, fields.series_start(due), due, now)


def due(tree: Tree, now: datetime) -> list[Decision]:
    """Every record due at ``now``, earliest due first."""
    return select_due(decisions(tree, now))


def select_due(every: list[Decision]) -> list[Decision]:
    """The due decisions among ``every``, earliest due first."""
    found = [d for d in every if d.is_due]
    found.sort(key=lambda d: (d.due_at or d.now, d.record.dir))
    return found


def decisions(tree: Tree, now: datetime) -> list[Decision]:
    """Every record's decision (due or not), in tree order."""
    return [evaluate(tree, record, now) for record in tree.records.values()]


def field_problems(every: list[Decision]) -> list[FieldProblem]:
    """Every unreadable clock field among ``every`` (for the pack's warnings and check)."""
    return [p for d in every for p in d.problems]


def still_since(decision: Decision) -> datetime:
    """The instant a due line's age counts from: the due time for reminders."""
    if decision.record.type == "reminder" and decision.due_at is not None:
        return decision.due_at
    assert decision.moved_at is not None
    return decision.moved_at


def plan_of(decision: Decision) -> dueplan.DuePlan:
    """The plan in the clock's decision (already made, at its ``now``): the instants at
    which its verdict can turn, for a copy to decide later without the file."""
    record = decision.record
    still_open = is_open(record)
    kind = dueplan.NEVER
    if still_open and record.type == "reminder":
        kind = REMINDER
    elif still_open and record.type in STALE_LEVELS:
        kind = STALE
    return dueplan.DuePlan(decision, kind, status_of(record), still_open)


def clock_plan(tree: Tree, record: Record, now: datetime) -> dict[str, Any]:
    """The columns of ``record``'s plan from ``now`` on (the fleet's mirror)."""
    return plan_of(evaluate(tree, record, now)).columns()
