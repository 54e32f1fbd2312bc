"""Clock plans kept in the walk cache: what is due now, without re-deriving it
(docs/pack.md "Speed"). A plan is only ever made from the clock's decision, and
:func:`survey` asks the clock itself for every record without a usable one;
tests/test_plans.py holds plans to a fresh evaluation.

A stored plan is a JSON list of whole microseconds (:func:`rouse.core.timefmt.micros`)::

    [since, kind, wake, why, review, stale, expires, fires_out, snooze, nudge,
     moved, moved_from]

``kind`` is :data:`rouse.core.dueplan.NEVER`, ``STALE`` or ``REMINDER``, ``why`` 1 for
a nagging reminder; ``0`` in place of the list marks a record the clock must always
evaluate afresh. What a plan says at an instant is :func:`rouse.core.dueplan.verdict`'s.
"""

from __future__ import annotations

import heapq
from datetime import datetime, timedelta

from rouse.core import clock, levels, timefmt
from rouse.core.clock import plan_of
from rouse.core.dueplan import REMINDER, verdict
from rouse.core.tree import Record, Tree

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from rouse.core.clockfields import FieldProblem

EPOCH = datetime(1970, 1, 1)
MICROSECOND = timedelta(microseconds=1)
MOVED_FROM = ("last-moved", "opened", "mtime")
_MOVED_FROM = {name: index for index, name in enumerate(MOVED_FROM)}
#: a plan's length (anything else is not a plan: the clock evaluates afresh)
SIZE = 12
#: what a malformed stored plan can raise while it is read (then: evaluate afresh)
BAD_PLAN = (TypeError, ValueError, IndexError, OverflowError, KeyError)


def micros(value: datetime | None) -> int | None:
    """A naive instant as whole microseconds (:func:`timefmt.micros`; None stays None)."""
    return None if value is None else timefmt.micros(value)


def instant(value: int | None) -> datetime | None:
    """The inverse of :func:`micros`."""
    return None if value is None else timefmt.from_micros(value)


def make_plan(tree: Tree, record: Record, now: datetime, at: int | None = None) -> list[Any] | int:
    """The clock's plan for ``record`` from ``now`` on, as the cache stores it;
    0 when the clock must evaluate it afresh every time. ``at``: ``micros(now)``.

    Runs for every record of a first walk: the :class:`rouse.core.dueplan.DuePlan`
    in the clock's decision, its instants in microseconds."""
    decision = clock.evaluate(tree, record, now)
    if decision.problems or decision.every is not None or decision.provisional:
        # its warnings are the clock's to give; a series counts what it missed; a
        # stamp passed over as later than now will be read once now reaches it
        return 0
    if decision.nagging and levels.status_of(record) == "fired":
        return 0  # a nag stuck at fired: due since "now", whenever now is
    if at is None:
        at = timefmt.micros(now)
    return [
        at,
        plan_of(decision).kind,
        micros(decision.wake),
        int(decision.nagging),
        micros(decision.review_at),
        micros(decision.stale_at),
        micros(decision.expires),
        int(decision.fires_out),
        micros(decision.snooze),
        decision.nudge,
        micros(decision.moved_at),
        _MOVED_FROM[decision.moved_from],
    ]


def unvouched(tree: Tree, missed: list[str], relisted: list[str]) -> set[str]:
    """The records whose kept plan a walk cannot vouch for: each one over a file it
    re-read (``missed``) or a directory it listed afresh, and every record above those."""
    records = tree.records
    changed: set[str] = set()
    for path in [*(rel.rpartition("/")[0] for rel in missed), *relisted]:
        directory = path
        while directory and directory not in records:
            directory = directory.rpartition("/")[0]
        while directory and directory not in changed:
            changed.add(directory)
            directory = records[directory].parent or ""
    return changed


def keep_plans(
    tree: Tree, state: dict[str, list[Any]], stale: set[str], now: datetime | None
) -> bool:
    """Give each record the plan its entry in the walk cache's ``state`` keeps, unless it
    is ``stale``; with ``now``, a new one (kept too), else a stale one is dropped. True
    when ``state`` changed."""
    at = micros(now)
    dirty = False
    for directory, record in tree.records.items():
        files = state[directory][4]
        name = record.rel[len(directory) + 1 :]
        entry = files.get(name)
        if entry is None:
            continue  # racy: not kept, so the clock decides afresh
        kept = entry[5] if len(entry) == 6 else None
        if kept is not None and (not stale or directory not in stale):
            if type(kept) is list:
                if at is None or (len(kept) == SIZE and type(kept[0]) is int and kept[0] <= at):
                    record.plan = kept  # (any other flaw in it: the clock decides afresh)
                    continue
            elif type(kept) is int and kept == 0:
                continue  # the clock evaluates it every time
        if now is None:
            if kept is not None:  # made for a subtree that is not there any more
                files[name] = [*entry[:5], None]
                dirty = True
            continue
        made = make_plan(tree, record, now, at)
        files[name] = [*entry[:5], made]
        record.plan = made if type(made) is list else None
        dirty = True
    return dirty


#: the instants a stored plan may hold (what a datetime can be): anything else is a miss
FIRST = (datetime.min - EPOCH) // MICROSECOND
LAST = (datetime.max - EPOCH) // MICROSECOND


def _verdict(record: Record, plan: list[Any], at: int) -> tuple[Any, ...]:
    """What a plan says of a record it has due at ``at`` (microseconds): ``(still, dir,
    record, reason, due_at, moved_at, moved_from, nudge)``, instants in microseconds
    (``still``: what the pack orders its due list by, as :func:`clock.still_since`).
    Every value checked, so that making the decision cannot fail."""
    kind = plan[1]
    found = verdict(kind, at, plan[2], plan[4], plan[5], plan[6], bool(plan[7]), bool(plan[3]))
    if found is None:
        raise ValueError("a plan that is not due has a wake before now")
    reason, due_at = found
    moved, nudge, moved_from = plan[10], plan[9], MOVED_FROM[plan[11]]
    if not (
        type(due_at) is int
        and type(moved) is int
        and type(nudge) is int
        and FIRST <= due_at <= LAST
        and FIRST <= moved <= LAST
    ):
        raise TypeError("a plan's instants or nudge are not whole numbers in range")
    still = due_at if kind == REMINDER else moved
    return (still, record.dir, record, reason, due_at, moved, moved_from, nudge)


def _decision(verdict: tuple[Any, ...], now: datetime) -> clock.Decision:
    """The decision a plan's verdict stands for. It carries what a due line shows:
    reason, due_at, moved_at, moved_from and nudge (``rouse explain`` asks the clock)."""
    _, _, record, reason, due_at, moved, moved_from, nudge = verdict
    decision = clock.Decision(record, now)
    decision.reason = reason
    decision.due_at = instant(due_at)
    decision.moved_at = instant(moved)
    decision.moved_from = moved_from
    decision.nudge = nudge
    return decision


class Survey:
    """What the clock says of a whole tree at one instant: the records due (how many,
    the decisions themselves, the ones still longest), how many are snoozed, and the
    fields it could not read. A planned decision is only made when it is asked for."""

    __slots__ = ("now", "planned", "fresh", "snoozed", "problems", "evaluated", "_due")

    def __init__(self, now: datetime) -> None:
        self.now = now
        self.planned: list[tuple[Any, ...]] = []  # verdicts of plans (see _verdict)
        self.fresh: list[clock.Decision] = []  # due, as the clock evaluated afresh
        self.snoozed = 0
        self.problems: list[FieldProblem] = []
        self.evaluated = 0  # records the clock evaluated afresh (no usable plan)
        self._due: list[clock.Decision] | None = None

    @property
    def count(self) -> int:
        return len(self.planned) + len(self.fresh)

    @property
    def due(self) -> list[clock.Decision]:
        """Every due decision (planned ones first, then the clock's own)."""
        if self._due is None:
            self._due = [_decision(v, self.now) for v in self.planned] + self.fresh
        return self._due

    def first(self, count: int, skip: set[str]) -> tuple[list[clock.Decision], int]:
        """The ``count`` due records still longest, oldest first (by ``still_since``,
        then path), and how many are due in all, leaving out the records in ``skip``."""
        keyed = [v for v in self.planned if v[1] not in skip]
        keyed += [
            (micros(clock.still_since(d)), d.record.dir, d)
            for d in self.fresh
            if d.record.dir not in skip
        ]
        top = heapq.nsmallest(count, keyed, key=lambda v: (v[0], v[1]))
        return [v[2] if len(v) == 3 else _decision(v, self.now) for v in top], len(keyed)


def survey(tree: Tree, now: datetime) -> Survey:
    """Every record due at ``now`` (as :func:`rouse.core.clock.due` finds), from the
    records' plans where the walk cache vouches for them, else from the clock."""
    found = Survey(now)
    planned = found.planned
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
                    planned.append(_verdict(record, plan, at))
                    continue
            except BAD_PLAN:
                pass  # not a plan after all: the clock decides
        decision = clock.evaluate(tree, record, now)
        found.evaluated += 1
        if decision.reason is not None:
            found.fresh.append(decision)
        if decision.snoozed_until is not None:
            found.snoozed += 1
        if decision.problems:
            found.problems += decision.problems
    return found


#: the instants in a plan at which what it says can change: a snooze ends, the wake,
#: a review (stale turns review), an expiry (a reminder's last wake)
_TURNS = (8, 2, 4, 6)


def holds_until(tree: Tree, now: datetime) -> tuple[bool, datetime | None]:
    """Till when :func:`survey` says of ``tree`` what it says at ``now``: ``(True, the
    first later instant a plan turns at)``, ``(True, None)`` when none ever turns, and
    ``(False, None)`` when a record has no usable plan (the clock decides it afresh,
    so nothing says when it changes)."""
    at = micros(now)
    assert at is not None
    soonest = LAST + 1
    for record in tree.records.values():
        plan = record.plan
        if plan is None:
            return False, None
        try:
            if not (type(plan[0]) is int and plan[0] <= at):
                return False, None
            for index in _TURNS:
                turn = plan[index]
                if turn is not None and at < turn < soonest:
                    soonest = turn
        except BAD_PLAN:
            return False, None
    return True, (None if soonest > LAST else instant(soonest))
