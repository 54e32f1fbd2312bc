"""The clock's plan for a record: the instants at which it will come due, and why.

:func:`clock_plan` asks :func:`rouse.core.clock.evaluate` once, at ``now``,
and keeps what stays true while the record and its subtree do not change:
when it next comes due, when its review and staleness fall, whether a child
silences it, when a reminder expires. :func:`due_at_time` answers "due at
``t``, and why?" from those instants alone, by the same rules as the clock,
so a copy of the plan (the fleet's mirror keeps one per record) stays right
as time passes, without the file.
"""

from __future__ import annotations

from datetime import datetime

from rouse.core import clock
from rouse.core.clockfields import FieldReader
from rouse.core.tree import Record, Tree

# typing costs ~5 ms to import on the pack's start-up path; annotations are
# strings here (__future__), so it is only imported for the type checker
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def aware(value: datetime | None) -> datetime | None:
    """A naive local instant as an aware one (None past what the calendar holds)."""
    if value is None:
        return None
    try:
        return value.astimezone()
    except (OverflowError, ValueError, OSError):
        return None  # the saturated end of the calendar: never, in practice


def no_plan() -> dict[str, Any]:
    """Every key of a plan, as for a file with no clock (context, a note): never due."""
    return {
        "status": None,
        "open": None,
        "wake_at": None,
        "wake_why": None,
        "review_at": None,
        "stale_at": None,
        "silenced": False,
        "expires_at": None,
        "nagging": False,
        "fires_out": False,
        "nudge": None,
        "moved_at": None,
    }


def clock_plan(tree: Tree, record: Record, now: datetime) -> dict[str, Any]:
    """The clock's plan for ``record``: the instants :func:`due_at_time` needs.

    Valid at every ``t >= now`` while neither the record nor its subtree
    changes. Instants are naive local times, as the clock's; the rows hold
    them aware (with the local offset), for a database shared across time zones.
    """
    return plan_of(tree, clock.evaluate(tree, record, now))


def plan_of(tree: Tree, decision: clock.Decision) -> dict[str, Any]:
    """:func:`clock_plan` from the clock's decision at its ``now`` (already made)."""
    record = decision.record
    is_open = clock.is_open(record)
    plan = no_plan()
    plan.update(
        status=clock.status_of(record),
        open=is_open,
        nudge=decision.nudge,
        moved_at=decision.moved_at,
    )
    if not is_open:
        return plan
    if record.type == "reminder":
        fields = FieldReader(record, [])
        nagging = clock.is_nagging(record)
        assert decision.moved_at is not None
        due = fields.stamp("due") or decision.moved_at
        if nagging and clock.status_of(record) == "fired":
            # stuck at fired with a nag: due now, whenever now is (the clock's
            # own ``min(due, now)``); the last move is a stable instant for that
            due = min(due, decision.moved_at)
        expires = fields.stamp("expires")
        fires_out = nagging and decision.nudge >= fields.integer(
            "max-fires", clock.DEFAULT_MAX_FIRES
        )
        plan.update(
            nagging=nagging,
            fires_out=fires_out,
            expires_at=expires,
            wake_at=due,
        )
        if (expires is not None and due >= expires) or fires_out:
            plan["wake_why"] = "expire"
        else:
            plan["wake_why"] = "nag" if nagging else "due"
        return plan
    if clock.LEVELS[record.type].stale_after is None:
        return plan  # backlog: never swept
    silenced = bool(decision.silenced_by)
    review_at, stale_at = decision.review_at, decision.stale_at
    plan.update(silenced=silenced, review_at=review_at, stale_at=stale_at)
    candidates = [(review_at, "review")] if review_at is not None else []
    if not silenced and stale_at is not None:
        candidates.append((stale_at, "stale"))
    if candidates:
        at, why = min(candidates, key=lambda pair: (pair[0], pair[1] != "review"))
        snoozed = decision.snooze  # (holding or past)
        if snoozed is not None and snoozed > at:  # put off: nothing wakes it before
            at = snoozed
            why = "review" if review_at is not None and review_at <= at else "stale"
        plan.update(wake_at=at, wake_why=why)
    return plan


def due_at_time(plan: Any, when: datetime) -> tuple[str, datetime] | None:
    """``(reason, due_at)`` if a record with this plan is due at ``when`` (aware), else None.

    ``plan`` is a mapping of the plan's columns (a row of ``mirror_files``
    works). The same rules as :func:`rouse.core.clock.evaluate`.
    """
    wake_at = plan["wake_at"]
    if wake_at is None or when < wake_at:
        return None
    if plan["kind"] == "reminder":
        expires = plan["expires_at"]
        if (expires is not None and when >= expires) or plan["fires_out"]:
            return "expire", wake_at
        return ("nag" if plan["nagging"] else "due"), wake_at
    # (never inside a snooze now past: the wake, which a snooze puts off, bounds it)
    review_at = plan["review_at"]
    if review_at is not None and when >= review_at:
        return "review", max(review_at, wake_at)
    return "stale", max(plan["stale_at"], wake_at)
