"""Repeating reminders' rules: reading ``every:`` and counting its occurrences.

``every:`` is an interval (``1d``, ``2w``, ``12h``, ``1mo``) or a calendar rule
(``daily 07:00``, ``weekdays 09:00``, ``weekends 10:00``, ``mon,thu 18:30``,
``monthly 1 09:00``). Everything is naive local wall-clock time, as every stamp
is: a 09:00 rule stays at 09:00 across a DST change, and ``1d`` keeps the time
of day. An interval's occurrences are counted from the series' first due (its
anchor), so ``1mo`` from Jan 31 gives Feb 28, then Mar 31, and never drifts;
a calendar rule's occurrences are where the calendar puts them.

The clock (:mod:`rouse.core.clock`) is the only caller that decides anything
with these; this module only counts.
"""

from __future__ import annotations

import time
from datetime import datetime, timedelta

from rouse.core.humantime import WEEKDAYS, Unreadable, time_of_day
from rouse.core.timefmt import (
    LAST_YEAR,
    LATEST,
    OutOfRange,
    after,
    check_length,
    floored,
    parse_span,
    real,
)

#: The forms ``every:`` takes, as the error for one that does not read lists them.
EVERY_FORMS = (
    "an interval (1d, 2w, 12h, 1mo = the same day next month) or a calendar rule "
    "(daily 07:00, weekdays 09:00, weekends 10:00, mon,thu 18:30, monthly 1 09:00)"
)
MOST_MONTHS = 120
#: The weekdays (0-6, Monday first) each named calendar rule falls on.
_NAMED_DAYS = {
    "daily": frozenset(range(7)),
    "weekdays": frozenset(range(5)),
    "weekends": frozenset((5, 6)),
}
#: 1900-01-01 was a Monday: whole weeks are counted from it.
_EPOCH = datetime(1900, 1, 1)


class Every:
    """A parsed ``every:``: an interval (``months`` or ``step``) or a calendar rule
    (``days``, the weekdays 0-6 it falls on, or ``monthday``; and ``at``).
    ``elapsed``: a step written with ``s``, ``m`` or ``h`` is elapsed time across
    DST; one of whole days (``1d``, ``2w``) keeps the wall-clock time."""

    __slots__ = ("text", "months", "step", "elapsed", "days", "monthday", "at")

    def __init__(
        self,
        text: str,
        *,
        months: int = 0,
        step: timedelta | None = None,
        elapsed: bool = False,
        days: frozenset[int] | None = None,
        monthday: int | None = None,
        at: tuple[int, int] = (0, 0),
    ):
        self.text = text
        self.months = months
        self.step = step
        self.elapsed = elapsed
        self.days = days
        self.monthday = monthday
        self.at = at

    def __repr__(self) -> str:
        return f"Every({self.text!r})"


def parse_every(text: str) -> Every:
    """Read an ``every:`` value; ValueError (naming :data:`EVERY_FORMS`) when it does not."""
    check_length(text, "a repeat")
    try:
        return _parse(text.strip())
    except ValueError as exc:
        raise ValueError(f"{exc}; use {EVERY_FORMS}") from None


def _parse(text: str) -> Every:
    lowered = text.lower()
    words = lowered.replace(", ", ",").split()
    if not words:
        raise ValueError("not a repeat: empty")
    digits = lowered[:-2].rstrip()
    if lowered.endswith("mo") and digits.isascii() and digits.isdigit():
        count = int(digits)
        if count == 0:
            raise ValueError(f"{text!r} must be longer than nothing")
        if count > MOST_MONTHS:
            raise OutOfRange("a repeat", f"must be at most {MOST_MONTHS}mo", text)
        return Every(text, months=count)
    if words[0] in _NAMED_DAYS or words[0] == "monthly" or words[0].split(",")[0] in WEEKDAYS:
        return _calendar(text, words)
    try:
        days, elapsed = parse_span(lowered)
    except OutOfRange:
        raise
    except ValueError:
        raise ValueError(f"not a repeat: {text!r}") from None
    step = timedelta(days=days) + elapsed
    if step <= timedelta(0):
        raise ValueError(f"{text!r} must be longer than nothing")
    return Every(text, step=floored(step), elapsed=bool(elapsed) or step < floored(step))


def _calendar(text: str, words: list[str]) -> Every:
    head, rest = words[0], words[1:]
    monthday = None
    days: frozenset[int] | None = None
    if head == "monthly":
        if not rest or not rest[0].isdigit() or not 1 <= int(rest[0]) <= 31:
            raise ValueError(f"{text!r}: 'monthly' wants a day of the month, 1 to 31")
        monthday, rest = int(rest[0]), rest[1:]
    elif head in _NAMED_DAYS:
        days = _NAMED_DAYS[head]
    else:
        names = [n for n in head.split(",") if n]
        picked = []
        for name in names:
            if name not in WEEKDAYS:
                raise ValueError(f"not a repeat: {name!r} is no weekday")
            picked.append(WEEKDAYS[name])
        if len(set(picked)) != len(picked):
            raise ValueError(f"{text!r} names a weekday twice")
        days = frozenset(picked)
    if len(rest) != 1:
        raise ValueError(f"{text!r} needs a time, one: e.g. {head} 09:00")
    try:
        at = time_of_day(rest[0])
    except Unreadable as exc:
        raise ValueError(str(exc)) from None
    if at is None:
        raise ValueError(f"{text!r} needs a time: {rest[0]!r} is not a time of day")
    return Every(text, days=days, monthday=monthday, at=at)


# -- occurrences ----------------------------------------------------------------------


def _month_length(year: int, month: int) -> int:
    """Days in a month (``calendar`` costs ~1.4 ms to import on the pack's start-up path)."""
    if month == 12:
        return 31
    return (datetime(year, month + 1, 1) - datetime(year, month, 1)).days


def _add_months(anchor: datetime, months: int) -> datetime | None:
    """The same day ``months`` later, clamped to that month's last day; None past the years."""
    year, month = divmod(anchor.month - 1 + months, 12)
    year += anchor.year
    if year > LAST_YEAR:
        return None
    day = min(anchor.day, _month_length(year, month + 1))
    return anchor.replace(year=year, month=month + 1, day=day)


def _month_day(year: int, month: int, rule: Every) -> datetime:
    assert rule.monthday is not None
    day = min(rule.monthday, _month_length(year, month))
    return datetime(year, month, day, *rule.at)


def _within(value: datetime | None) -> datetime | None:
    """An occurrence as a real instant (:func:`real`), None past the last stamp."""
    return real(value) if value is not None and value <= LATEST else None


def _steps(rule: Every, anchor: datetime, when: datetime) -> int:
    """How many whole steps of an interval rule lie from ``anchor`` to ``when`` (later)."""
    assert rule.step is not None
    if rule.elapsed and time.daylight:
        seconds = round(when.timestamp()) - round(anchor.timestamp())
        return seconds // round(rule.step.total_seconds())
    return (when - anchor) // rule.step


def _nth(rule: Every, anchor: datetime, count: int) -> datetime:
    """An interval rule's occurrence ``count`` steps after ``anchor`` (OverflowError past
    the calendar)."""
    assert rule.step is not None
    if rule.elapsed:
        return after(anchor, count * rule.step)
    return anchor + count * rule.step


def next_after(rule: Every, anchor: datetime, now: datetime) -> datetime | None:
    """The first occurrence strictly after ``now`` (None: past the last stamp year).

    ``anchor`` is the series' first due; an interval's occurrences are
    ``anchor + k × interval`` for k ≥ 0. A calendar rule ignores it.
    """
    if rule.step is not None:
        if now < anchor:
            return anchor
        try:
            return _within(_nth(rule, anchor, _steps(rule, anchor, now) + 1))
        except OverflowError:
            return None
    if rule.months:
        gap = (now.year - anchor.year) * 12 + now.month - anchor.month
        k = max(gap // rule.months - 1, 0)
        while True:
            when = _add_months(anchor, k * rule.months)
            if when is None or real(when) > now:
                return _within(when)
            k += 1
    midnight = now.replace(hour=0, minute=0, second=0, microsecond=0)
    if rule.monthday is not None:
        year, month = now.year, now.month
        for _ in range(3):
            if year > LAST_YEAR:
                return None
            when = _month_day(year, month, rule)
            if real(when) > now:
                return _within(when)
            year, month = (year + 1, 1) if month == 12 else (year, month + 1)
        return None  # (unreachable: one of three months always has its day after now)
    assert rule.days is not None
    for ahead in range(8):
        try:
            day = midnight + timedelta(days=ahead)
        except OverflowError:
            return None
        when = day.replace(hour=rule.at[0], minute=rule.at[1])
        if day.weekday() in rule.days and real(when) > now:
            return _within(when)
    return None  # (unreachable: every week holds one of its days)


def _upto(rule: Every, anchor: datetime, when: datetime) -> int:
    """How many occurrences fall at or before ``when`` (from the anchor, or the epoch)."""
    if rule.step is not None:
        return 0 if when < anchor else _steps(rule, anchor, when) + 1
    if rule.months:
        if when < anchor:
            return 0
        gap = (when.year - anchor.year) * 12 + when.month - anchor.month
        k = gap // rule.months + 1
        while k > 0:
            occurrence = _add_months(anchor, (k - 1) * rule.months)
            if occurrence is not None and occurrence <= when:
                break
            k -= 1
        return k
    at = when.replace(hour=rule.at[0], minute=rule.at[1], second=0, microsecond=0)
    if rule.monthday is not None:
        count = (when.year - _EPOCH.year) * 12 + when.month
        return count - (1 if _month_day(when.year, when.month, rule) > when else 0)
    assert rule.days is not None
    days = (when.date() - _EPOCH.date()).days + 1
    weeks, rest = divmod(days, 7)
    count = weeks * len(rule.days) + sum(1 for i in range(rest) if i in rule.days)
    if when.weekday() in rule.days and at > when:
        count -= 1
    return count


def count_between(rule: Every, anchor: datetime, after: datetime, upto: datetime) -> int:
    """How many occurrences fall in ``(after, upto]``: what a late firing missed."""
    if upto <= after:
        return 0
    return max(_upto(rule, anchor, upto) - _upto(rule, anchor, after), 0)


def occurrences(
    rule: Every, anchor: datetime, first: datetime, end: datetime, most: int
) -> list[datetime]:
    """``first`` and the occurrences after it up to ``end`` (inclusive), at most ``most``."""
    found: list[datetime] = []
    when: datetime | None = first
    while when is not None and when <= end and len(found) < most:
        found.append(when)
        when = next_after(rule, anchor, when)
    return found
