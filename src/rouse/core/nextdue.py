"""What comes due next, from the clock's decisions: what a delivered wake writes (a nag's
next step, a series' next occurrence), a series re-armed, and a forecast."""

from __future__ import annotations

from datetime import datetime, timedelta

from rouse.core import recurrence
from rouse.core.clockfields import FieldReader
from rouse.core.timefmt import FLOOR, as_span, floored, format_stamp, later
from rouse.core.tree import Record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from rouse.core.clock import Decision

MAX_NAG_STEP = timedelta(days=1)


def nag_step(nag: timedelta, backoff: float, fires: int) -> timedelta:
    """``clamp(nag × backoff^(fires-1), 15m, 1d)`` where ``fires`` is the new count."""
    try:
        seconds = nag.total_seconds() * backoff ** max(fires - 1, 0)
    except OverflowError:
        seconds = MAX_NAG_STEP.total_seconds()
    seconds = min(seconds, MAX_NAG_STEP.total_seconds())
    return floored(timedelta(seconds=seconds))


def stamps_after_delivery(decision: Decision, now: datetime) -> dict[str, str | None]:
    """The machine fields to write once a wake for ``decision`` has been delivered."""
    record = decision.record
    stamp = format_stamp(now)
    if record.type != "reminder":
        updates: dict[str, str | None] = {"swept": stamp, "nudges": str(decision.nudge)}
        if decision.reason == "review":
            updates["reviewed"] = stamp
        return updates
    fires, fields = decision.nudge, FieldReader(record, [])
    if decision.reason == "expire":
        expires = fields.stamp("expires")
        ended = "expires" if expires is not None and now >= expires else "max-fires"
        return {"status": "expired", "fires": str(fires), "ended": ended}
    if decision.reason == "due":
        every = fields.every()
        due_at = decision.due_at or now
        following = None if every is None else next_occurrence(fields, every, due_at, now)
        if following is None:
            return {"status": "fired", "fired": stamp}
        updates = {"status": "pending", "due": format_stamp(following), "fired": stamp}
        if not record.get("set"):
            updates["set"] = format_stamp(due_at)
        return updates
    nag = fields.interval("nag") or FLOOR
    step = nag_step(nag, fields.backoff(), fires)
    days, elapsed = as_span(step)
    updates = {
        "fires": str(fires),
        "due": format_stamp(later(now, elapsed, days)),
        "status": "pending",
    }
    if not record.get("set"):
        updates["set"] = fields.text("due") or format_stamp(decision.due_at or now)
    return updates


def next_occurrence(
    fields: FieldReader, every: recurrence.Every, due: datetime, now: datetime
) -> datetime | None:
    """A series' first occurrence strictly after ``now``; None when the series is over
    (past its ``until``, or past the last stamp year)."""
    following = recurrence.next_after(every, fields.series_start(due), now)
    until = fields.stamp("until")
    if following is None or (until is not None and following > until):
        return None
    return following


def rearmed(record: Record, now: datetime) -> datetime | None:
    """The ``due`` a repeating reminder set done at ``now`` re-arms to; None for a
    reminder that does not repeat (or an unreadable ``every``), or a series that is over."""
    fields = FieldReader(record, [])
    every = fields.every()
    if record.type != "reminder" or every is None:
        return None
    due = fields.stamp("due") or now
    return next_occurrence(fields, every, due, now)


#: The most rows one repeating reminder gives a forecast (``due --until``).
MOST_FORECAST = 500


def forecast(every: list[Decision], until: datetime) -> list[Decision]:
    """The decisions due at ``until``, a repeating reminder once per occurrence up to
    ``until`` (at most MOST_FORECAST): each as due at that occurrence, if nothing moves."""
    rows: list[Decision] = []
    for decision in (d for d in every if d.is_due):  # (sorted below)
        rule = decision.every
        if rule is None or decision.reason != "due" or decision.due_at is None:
            rows.append(decision)
            continue
        fields = FieldReader(decision.record, [])
        at: datetime | None = decision.due_at
        count = 0
        while at is not None and at <= until and count < MOST_FORECAST:
            rows.append(decision.replace(due_at=at, missed=0))
            at = next_occurrence(fields, rule, decision.due_at, at)
            count += 1
    rows.sort(key=lambda d: (d.due_at or d.now, d.record.dir))
    return rows
