"""The clock's plan for a record: the instants in the clock's decision at which its
verdict can turn (:class:`DuePlan`, taken out by :func:`rouse.core.clock.plan_of`), and
:func:`verdict`, the one rule that reads a verdict from them. The clock itself decides
through it, so a copy of the plan — the walk cache's microseconds
(:mod:`rouse.cache.plans`), the fleet's columns (:meth:`DuePlan.columns`) — decides at
any later instant exactly as the clock would, without the file.
"""

from __future__ import annotations

from datetime import datetime

from rouse.core import timefmt

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from rouse.core.clock import Decision

#: What a plan follows: never due (closed, backlog), the stale rule, a reminder.
NEVER, STALE, REMINDER = 0, 1, 2


def verdict(
    kind: int,
    at: Any,
    wake: Any,
    review: Any = None,
    stale: Any = None,
    expires: Any = None,
    fires_out: bool = False,
    nagging: bool = False,
) -> tuple[str, Any] | None:
    """``(reason, due_at)`` if a plan with these instants is due at ``at``, else None.

    THE rule of "is it due", for the clock and every copy of its plan. Instants
    are anything ordered alike (naive datetimes, aware ones, microseconds).
    ``wake`` is when it first comes due (a snooze already put it off to its end),
    so a record is due from ``wake`` on; a review once reached outranks
    staleness; a due instant is never inside a snooze (never before ``wake``); a
    reminder past ``expires``, or whose nags have run out, is due to expire.
    """
    if wake is None or at < wake:
        return None
    if kind == REMINDER:
        if (expires is not None and at >= expires) or fires_out:
            return "expire", wake
        return ("nag" if nagging else "due"), wake
    if kind != STALE:
        return None
    if review is not None and at >= review:
        return "review", review if review > wake else wake
    return "stale", stale if stale is not None and stale > wake else wake


def decide(
    kind: int,
    at: datetime,
    wake: datetime | None,
    review: datetime | None = None,
    stale: datetime | None = None,
    expires: datetime | None = None,
    fires_out: bool = False,
    nagging: bool = False,
) -> tuple[str, datetime] | None:
    """:func:`verdict` on naive local times, compared as the real instants they name
    (:func:`timefmt.micros`: in the hour a fall-back night repeats, naive times that
    read alike are an hour apart, and ``fold`` says which)."""
    named: dict[int, datetime] = {}

    def key(value: datetime | None) -> int | None:
        if value is None:
            return None
        found = timefmt.micros(value)
        named[found] = value
        return found

    found = verdict(
        kind, key(at), key(wake), key(review), key(stale), key(expires), fires_out, nagging
    )
    return None if found is None else (found[0], named[found[1]])


def wake_of(review: Any, stale: Any, silenced: bool, snooze: Any) -> Any:
    """When a record on the stale rule first comes due: the earlier of its review and —
    unless an open record under it silences it — its staleness, put off to the end of
    a snooze that ends later; None when nothing can wake it."""
    wake = review
    if stale is not None and not silenced and (wake is None or stale < wake):
        wake = stale
    if wake is not None and snooze is not None and snooze > wake:
        wake = snooze
    return wake


class DuePlan:
    """A record's plan, as :func:`rouse.core.clock.plan_of` takes it from the clock's
    decision: the plan's instants are the decision's own (``wake``, ``review_at``,
    ``stale_at``, ``expires``, ``fires_out``, ``nagging``, ``snooze``)."""

    __slots__ = ("decision", "kind", "status", "open")

    def __init__(self, decision: Decision, kind: int, status: str, is_open: bool) -> None:
        self.decision, self.kind, self.status, self.open = decision, kind, status, is_open

    def at(self, when: datetime) -> tuple[str, Any] | None:
        """:func:`verdict` of this plan at ``when``."""
        d = self.decision
        return decide(
            self.kind, when, d.wake, d.review_at, d.stale_at, d.expires, d.fires_out, d.nagging
        )

    def columns(self) -> dict[str, Any]:
        """The plan as the fleet's mirror keeps it (naive local instants; the rows hold
        them aware). ``wake_why``: the verdict at the wake."""
        d = self.decision
        found = None if d.wake is None else self.at(d.wake)
        return {
            "status": self.status,
            "open": self.open,
            "wake_at": d.wake,
            "wake_why": None if found is None else found[0],
            "review_at": d.review_at if self.kind == STALE else None,
            "stale_at": d.stale_at if self.kind == STALE else None,
            "silenced": bool(d.silenced_by),
            "expires_at": d.expires,
            "nagging": d.nagging,
            "fires_out": d.fires_out,
            "nudge": d.nudge,
            "moved_at": d.moved_at,
        }


def aware(value: datetime | None) -> datetime | None:
    """A naive local instant as an aware one (None past what the calendar holds)."""
    if value is None:
        return None
    try:
        return value.astimezone()
    except (OverflowError, ValueError, OSError):
        return None  # the saturated end of the calendar: never, in practice


def no_plan() -> dict[str, Any]:
    """Every column of a plan, as for a file with no clock (context, a note): never due."""
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


def due_at_time(row: Any, when: datetime) -> tuple[str, datetime] | None:
    """:func:`verdict` of a mirrored row (``mirror_files``' columns) at ``when`` (aware)."""
    kind = REMINDER if row["kind"] == "reminder" else STALE
    return verdict(
        kind,
        when,
        row["wake_at"],
        row["review_at"],
        row["stale_at"],
        row["expires_at"],
        bool(row["fires_out"]),
        bool(row["nagging"]),
    )
