"""Clock plans kept in the walk cache: what is due now, without re-deriving it.

A record's plan (:func:`rouse.core.clockplan.plan_of`) holds the instants at
which it comes due, and stays right at every later instant while neither the
record nor its subtree changes. The walk cache (:mod:`rouse.core.cache`)
keeps one per record file, beside the header it came from, and drops it when
the file, or any record below it, changes. :func:`survey` then answers "what
is due at ``now``" by comparing ``now`` with stored instants, and asks the
clock itself (:func:`rouse.core.clock.evaluate`) for every record without a
usable plan. The clock stays the one authority: a plan is only ever made
from its decision, and tests/test_planned.py checks that plans decide
exactly as a fresh evaluation at random instants, after edits, moves and
deletes.

A stored plan is a JSON list of whole microseconds since the naive epoch (the
clock's instants are naive local times; this keeps their order exactly)::

    [since, kind, wake, why, review, stale, expires, fires_out, snooze, nudge,
     moved, moved_from]

``kind`` is 0 (never due), 1 (the stale rule) or 2 (a reminder); ``0`` in
place of the list marks a record the clock must always evaluate afresh (a
field it cannot read, a repeating reminder, a nag stuck at fired).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from rouse.core import clock
from rouse.core.clockplan import plan_of
from rouse.core.tree import Record, Tree

# typing costs ~5 ms to import on the pack's start-up path; annotations are
# strings here (__future__), so it is only imported for the type checker
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from rouse.core.clockfields import FieldProblem

EPOCH = datetime(1970, 1, 1)
MICROSECOND = timedelta(microseconds=1)
MOVED_FROM = ("last-moved", "opened", "mtime")
REMINDER_WHY = ("due", "nag")
NEVER, STALE, REMINDER = 0, 1, 2
#: a plan's length (anything else is not a plan: the clock evaluates afresh)
SIZE = 12
#: what a malformed stored plan can raise while it is read (then: evaluate afresh)
BAD_PLAN = (TypeError, ValueError, IndexError, OverflowError, KeyError)


def micros(value: datetime | None) -> int | None:
    """A naive instant as whole microseconds since the naive epoch (None stays None)."""
    if value is None:
        return None
    return (value - EPOCH) // MICROSECOND


def instant(value: int | None) -> datetime | None:
    """The inverse of :func:`micros`."""
    if value is None:
        return None
    return EPOCH + timedelta(microseconds=value)


def make_plan(tree: Tree, record: Record, now: datetime) -> list[Any] | int:
    """The clock's plan for ``record`` from ``now`` on, as the cache stores it;
    0 when the clock must evaluate it afresh every time."""
    decision = clock.evaluate(tree, record, now)
    if decision.problems or decision.every is not None:
        return 0  # its warnings are the clock's to give; a series counts what it missed
    is_open = clock.is_open(record)
    if (
        is_open
        and record.type == "reminder"
        and clock.is_nagging(record)
        and clock.status_of(record) == "fired"
    ):
        return 0  # due since "now", whenever now is
    plan = plan_of(tree, decision)
    if not is_open:
        kind = NEVER
    elif record.type == "reminder":
        kind = REMINDER
    elif clock.LEVELS[record.type].stale_after is None:
        kind = NEVER
    else:
        kind = STALE
    why = plan["wake_why"]
    return [
        micros(now),
        kind,
        micros(plan["wake_at"]) if kind != NEVER else None,
        REMINDER_WHY.index(why) if kind == REMINDER and why in REMINDER_WHY else 0,
        micros(plan["review_at"]),
        micros(plan["stale_at"]),
        micros(plan["expires_at"]),
        int(bool(plan["fires_out"])),
        micros(decision.snoozed_until),
        decision.nudge,
        micros(decision.moved_at),
        MOVED_FROM.index(decision.moved_from),
    ]


def _planned(record: Record, plan: list[Any], now: datetime, at: int) -> clock.Decision:
    """The decision for a record its plan says is due at ``at`` (``now`` in microseconds).

    It carries what a due line shows: reason, due_at, moved_at, moved_from and
    nudge (``rouse explain`` asks the clock itself).
    """
    kind, wake = plan[1], plan[2]
    if kind == REMINDER:
        expires = plan[6]
        if (expires is not None and at >= expires) or plan[7]:
            reason = "expire"
        else:
            reason = REMINDER_WHY[plan[3]]
        due_at = wake
    elif kind == STALE:
        review = plan[4]
        if review is not None and at >= review:
            reason, due_at = "review", review
        else:
            reason, due_at = "stale", plan[5]
    else:
        raise ValueError("a plan that is never due has a wake")
    nudge = plan[9]
    if type(nudge) is not int:
        raise TypeError("a plan's nudge is not a number")
    decision = clock.Decision(record, now)
    decision.reason = reason
    decision.due_at = instant(due_at)
    decision.moved_at = instant(plan[10])
    decision.moved_from = MOVED_FROM[plan[11]]
    decision.nudge = nudge
    return decision


class Survey:
    """What the clock says of a whole tree at one instant: the due decisions
    (in tree order), how many records are snoozed, and the fields it could not read."""

    __slots__ = ("due", "snoozed", "problems", "evaluated")

    def __init__(self) -> None:
        self.due: list[clock.Decision] = []
        self.snoozed = 0
        self.problems: list[FieldProblem] = []
        self.evaluated = 0  # records the clock evaluated afresh (no usable plan)


def survey(tree: Tree, now: datetime) -> Survey:
    """Every record due at ``now`` (as :func:`rouse.core.clock.due` finds, in tree
    order), from the records' plans where the walk cache vouches for them."""
    found = Survey()
    due = found.due
    at = micros(now)
    assert at is not None
    for record in tree.records.values():
        plan = record.plan
        if plan is not None:
            try:
                if plan[0] <= at:
                    snooze = plan[8]
                    if snooze is not None and at < snooze:
                        found.snoozed += 1
                        continue
                    wake = plan[2]
                    if wake is None or at < wake:
                        continue
                    due.append(_planned(record, plan, now, at))
                    continue
            except BAD_PLAN:
                pass  # not a plan after all: the clock decides
        decision = clock.evaluate(tree, record, now)
        found.evaluated += 1
        if decision.reason is not None:
            due.append(decision)
        if decision.snoozed_until is not None:
            found.snoozed += 1
        if decision.problems:
            found.problems += decision.problems
    return found
