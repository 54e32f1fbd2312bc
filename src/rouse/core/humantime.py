"""Times as people type them: ``monday``, ``mon 9am``, ``tomorrow 09:00``, ``in 2h``.

A small grammar of our own (no library: it sits on the CLI's path), the one
docs/clock.md ("Typing a time") lays out; every word it takes is in
:data:`HUMAN_FORMS`. Anything else is refused, and words people read two ways
(``next monday``, a bare ``9``) are refused as ambiguous: a wrong guess at a time is
worse than a question. A CLI time in any form is read by :func:`parse_when`. It owns
the words; it does no arithmetic beyond whole days on a naive local date.
"""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta

from rouse.core.timefmt import (
    FIRST_YEAR,
    LAST_YEAR,
    STAMP_BOUNDS,
    OutOfRange,
    format_stamp,
    later_by,
    parse_stamp,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

#: The human forms, as the error for a time that does not read lists them.
HUMAN_FORMS = (
    "monday or mon (the next one after today, 09:00), mon 9am, tomorrow 09:00, "
    "today 17:30, 17:30 or 9pm (the next such time), in 2h, next week (Monday 09:00), "
    "tomorrow morning (09:00; afternoon 14:00, evening 18:00, tonight 20:00, "
    "eod or end of day 17:00), dec 24 or 24 dec (the next one, 09:00), 2026-12-24 10am"
)

#: Weekdays and months by name, whole or by their first three letters (``mon``, ``dec``).
_DAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
WEEKDAYS = {name: i for i, day in enumerate(_DAYS) for name in (day, day[:3])}
#: The time a day named without one stands for.
DAY_START = (9, 0)
#: The time a day stands for as the end of a span (a forecast's ``--until``).
DAY_END = (23, 59)
#: Parts of a day people name, as times (``end of day`` is read as ``eod``).
PARTS_OF_DAY = {
    "morning": (9, 0),
    "afternoon": (14, 0),
    "evening": (18, 0),
    "tonight": (20, 0),
    "eod": (17, 0),
}
_MONTHS = (
    *("january", "february", "march", "april", "may", "june", "july"),
    *("august", "september", "october", "november", "december"),
)
MONTHS = {name: i for i, month in enumerate(_MONTHS, 1) for name in (month, month[:3])}
_DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_END_OF_DAY_RE = re.compile(r"\bend\s+of\s+(the\s+)?day\b")

_CLOCK_RE = re.compile(r"^(\d{1,2}):(\d{2})$")
_MERIDIEM_RE = re.compile(r"^(\d{1,2})(?::(\d{2}))?(am|pm)$")
_UNIT_WORDS = {
    **dict.fromkeys(("minute", "minutes", "min", "mins"), "m"),
    **dict.fromkeys(("hour", "hours", "hr", "hrs"), "h"),
    **dict.fromkeys(("day", "days"), "d"),
    **dict.fromkeys(("week", "weeks"), "w"),
}


class Unreadable(ValueError):
    """A time that does not read; the message says why, in a few words."""


def time_of_day(word: str) -> tuple[int, int] | None:
    """``17:30``, ``9:05``, ``9am``, ``9:30pm``, ``noon`` as (hour, minute); None when
    ``word`` is no time; Unreadable when it looks like one but is not (``25:00``)."""
    word = word.lower()
    if word == "noon":
        return 12, 0
    match = _CLOCK_RE.match(word)
    if match:
        hour, minute = int(match.group(1)), int(match.group(2))
        if hour > 23 or minute > 59:
            raise Unreadable(f"{word!r} is not a time of day (00:00 to 23:59)")
        return hour, minute
    match = _MERIDIEM_RE.match(word)
    if match:
        hour, minute = int(match.group(1)), int(match.group(2) or 0)
        if not 1 <= hour <= 12 or minute > 59:
            raise Unreadable(f"{word!r} is not a time of day (1am to 12pm)")
        hour = hour % 12 + (12 if match.group(3) == "pm" else 0)
        return hour, minute
    return None


def _at(day: datetime, at: tuple[int, int]) -> datetime:
    return day.replace(hour=at[0], minute=at[1], second=0, microsecond=0)


def _interval_text(words: list[str]) -> str:
    """``3 days`` → ``3d``; ``1h30m`` as it is (timefmt reads it)."""
    return "".join(_UNIT_WORDS.get(w, w) for w in words)


def parse_human(text: str, now: datetime, *, end: bool = False) -> datetime:
    """The instant ``text`` names, from ``now`` (naive local time).

    ``end``: the end of a span (a forecast's ``--until``): a day named without a
    time stands for its last minute (23:59), ``next week`` for that week's Sunday
    23:59. Raises Unreadable (a ValueError) saying what is wrong; the caller adds
    the accepted forms.
    """
    said = text.strip()
    lowered = _END_OF_DAY_RE.sub("eod", text.lower().replace(",", " "))
    words = [w for w in lowered.split() if w != "at"]
    if not words:
        raise Unreadable("not a time: nothing given")
    if words[0] == "in":
        try:
            return later_by(now, _interval_text(words[1:]))
        except OverflowError:
            return datetime.max
        except ValueError:
            raise Unreadable(f"{said!r}: after 'in', not an interval") from None
    day, rest = _day_words(said, words)
    at = _one_time(said, rest)
    midnight = now.replace(hour=0, minute=0, second=0, microsecond=0)
    if day is None:
        assert at is not None
        when = _at(midnight, at)
        if when <= now and "tonight" in words:
            raise Unreadable("'tonight' (20:00) has passed: say tomorrow evening, or a time")
        return when if when > now else when + timedelta(days=1)
    if day == "today" and at is None:
        raise Unreadable("'today' needs a time: today 17:30")
    first = _first_day(day, now, midnight, at)
    if at is None and end:
        last = first + timedelta(days=6) if day == "next week" else first
        return _at(last, DAY_END)
    return _at(first, at or DAY_START)


def _day_words(said: str, words: list[str]) -> tuple[str | date | None, list[str]]:
    """The day ``words`` name (a word, or a date) and the words left over."""
    if words[:2] == ["next", "week"]:
        found: list[str | date] = ["next week"]
        rest = words[2:]
    else:
        found = [w for w in words if w in WEEKDAYS or w in ("today", "tomorrow")]
        rest = [w for w in words if w not in found]
    if "next" in rest:
        raise Unreadable(
            f"{said!r} is ambiguous (this coming one, or the one after?): "
            "say 'mon' for the next Monday, or give a date"
        )
    dated, rest = _date_words(said, rest)
    if dated is not None:
        found.append(dated)
    if len(found) > 1:
        raise Unreadable(f"{said!r}: name one day, not {' and '.join(map(str, found))}")
    return (found[0] if found else None), rest


def _date_words(said: str, words: list[str]) -> tuple[date | None, list[str]]:
    """A date among ``words``: ``2026-12-24``, or a month and its day (``dec 24``,
    ``24 dec``: the year is the coming one, settled by :func:`_first_day`). A date
    without a year is returned in year 1 (a leap year's Feb 29 in year 4)."""
    iso = [w for w in words if _DATE_RE.match(w)]
    months = [w for w in words if w in MONTHS]
    if not iso and not months:
        return None, words
    if len(iso) + len(months) > 1:
        raise Unreadable(f"{said!r}: name one date")
    if iso:
        try:
            return date.fromisoformat(iso[0]), [w for w in words if w != iso[0]]
        except ValueError:
            raise Unreadable(f"{iso[0]!r} is not a date") from None
    numbers = [w for w in words if w.isdigit()]
    if not numbers:
        raise Unreadable(f"{said!r}: give the day of the month too, as in dec 24")
    if len(numbers) > 1:
        raise Unreadable(f"{said!r}: give one day of the month, as in dec 24")
    try:
        dated = date(4, MONTHS[months[0]], int(numbers[0]))
    except ValueError:
        raise Unreadable(f"{said!r} is not a date") from None
    return dated, [w for w in words if w not in (months[0], numbers[0])]


def _one_time(said: str, words: list[str]) -> tuple[int, int] | None:
    """The one time of day ``words`` give (``17:30``, ``9am``, ``evening``), if any."""
    times = []
    for word in words:
        at = PARTS_OF_DAY.get(word) or time_of_day(word)
        if at is None:
            if word.isdigit():
                raise Unreadable(f"{word!r} is ambiguous: write 09:00, 9am or 9pm")
            raise Unreadable(f"not a time: {word!r} is no word rouse reads as a time")
        times.append(at)
    if len(times) > 1:
        raise Unreadable(f"{said!r}: give one time of day, not {len(times)}")
    return times[0] if times else None


def _first_day(
    day: str | date, now: datetime, midnight: datetime, at: tuple[int, int] | None
) -> datetime:
    """The midnight of the day named: a weekday or a month's day is the next one after
    today, or today itself when a time later today is given."""
    if day == "today":
        return midnight
    if day == "tomorrow":
        return midnight + timedelta(days=1)
    if day == "next week":
        return midnight + timedelta(days=7 - now.weekday())
    if isinstance(day, date):
        return _next_date(day, now, midnight, at)
    assert isinstance(day, str)
    ahead = (WEEKDAYS[day] - now.weekday()) % 7
    if ahead == 0:
        later_today = at is not None and _at(midnight, at) > now
        ahead = 0 if later_today else 7
    return midnight + timedelta(days=ahead)


def _next_date(
    day: date, now: datetime, midnight: datetime, at: tuple[int, int] | None
) -> datetime:
    """A date as a midnight: one with its year as it is; a month's day in the coming
    year that has it (``feb 29``: the next leap year)."""
    if day.year > 4:
        return midnight.replace(year=day.year, month=day.month, day=day.day)
    for year in range(now.year, now.year + 9):
        try:
            found = midnight.replace(year=year, month=day.month, day=day.day)
        except ValueError:
            continue  # feb 29 in a common year
        if found > midnight or (found == midnight and at is not None and _at(found, at) > now):
            return found
    raise Unreadable(f"{day:%b %d}: no such day in the coming years")


#: Every form a CLI time (``--due``, ``--until``, a stamp field given to ``new``) takes,
#: as the error for one that does not read names them.
WHEN_FORMS = (
    f"{HUMAN_FORMS}; +3d (from now: s, m, h, d, w, combined as in +1h30m), 2026-03-14 09:00 "
    "(local time; a date alone is midnight), or ISO 8601 with T and an optional "
    "offset, 2026-03-14T09:00 or 2026-03-14T09:00+01:00"
)


def parse_when(text: str, now: datetime, *, end: bool = False) -> datetime:
    """A CLI time: a stamp, ``+INTERVAL`` relative to now, or a human form
    (:func:`parse_human`: ``mon 9am``, ``tomorrow``, ``in 2h``), within the
    stamp years. ``end``: the time ends a span (``due --until``), so a day named without
    a time is its last minute (:func:`parse_human`).

    Raises OutOfRange for a time outside the stamp years, and ValueError
    naming every accepted form (``WHEN_FORMS``) for anything else.
    """
    text = text.strip()
    try:
        if text.startswith("+"):
            return _within_years(text, now, lambda: later_by(now, text[1:]))
        return parse_stamp(text)
    except OutOfRange:
        raise
    except ValueError:
        dated = text[:4].isdigit() and text[4:5] == "-"
        if text.startswith("+") or (dated and text[10:11] != " "):  # (a date, then words)
            raise ValueError(f"not a time: {text!r}; use {WHEN_FORMS}") from None
    try:
        return _within_years(text, now, lambda: parse_human(text, now, end=end))
    except OutOfRange:
        raise
    except ValueError as exc:
        raise ValueError(f"{exc}; use {WHEN_FORMS}") from None


def _within_years(text: str, now: datetime, make: Callable[[], datetime]) -> datetime:
    try:
        when = make()
    except OverflowError:
        when = datetime.max
    if not FIRST_YEAR <= when.year <= LAST_YEAR:
        raise OutOfRange("a time", STAMP_BOUNDS, f"{text} from {format_stamp(now)}")
    return when
