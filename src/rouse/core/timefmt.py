"""Stamps, intervals and human ages. Every function that needs "now" takes it.

Times are naive ``datetime`` values in the process's local time zone (``TZ``
is honoured); stamps carrying an offset are converted to local time on read.
Every time read or computed here is a real instant (:func:`real`): a wall-clock
time that a DST change skips names the instant just after the gap. Intervals
written in ``s``, ``m`` and ``h`` are elapsed time; ``d`` and ``w`` move the
calendar and keep the wall-clock time (:func:`after`).
"""

from __future__ import annotations

import re
import time
from datetime import datetime, timedelta

STAMP_FORMAT = "%Y-%m-%d %H:%M"
FLOOR = timedelta(minutes=15)

#: The years a stamp may name (docs/clock.md "Bounds"): wide enough for any
#: real plan, and far enough from the calendar's ends (years 1 and 9999) that
#: a stamp plus the longest interval, or minus a few days, is still a date.
FIRST_YEAR = 1900
LAST_YEAR = 9000
LATEST = datetime(LAST_YEAR, 12, 31, 23, 59)
#: The longest interval read: 520 weeks, about ten years.
LONGEST = timedelta(weeks=520)
STAMP_BOUNDS = f"must fall in the years {FIRST_YEAR} to {LAST_YEAR}"
INTERVAL_BOUNDS = "must be at most 520w (about ten years)"
#: The longest clock field value read (docs/clock.md "Bounds"): every real stamp,
#: interval, count or repeat rule is far shorter, and a longer one is unreadable
#: at once, before any pattern runs over it (so no value can make a read slow).
MOST_CHARS = 100
LENGTH_BOUNDS = f"must be at most {MOST_CHARS} characters long"
#: How much of a value an error message quotes.
_SHOWN = 40


def shown(text: str) -> str:
    """``text`` as an error message quotes it: whole when short, else its start and length."""
    if len(text) <= _SHOWN + 20:
        return text
    return f"{text[:_SHOWN]}… ({len(text)} characters)"


class OutOfRange(ValueError):
    """A value that reads, but lies outside rouse's bounds; ``need`` says what they are."""

    def __init__(self, what: str, need: str, text: str):
        super().__init__(f"{what} {need}, got {shown(text)!r}")
        self.need = need


class TooLong(OutOfRange):
    """A value longer than MOST_CHARS: refused before it is read."""


def check_length(text: str, what: str) -> None:
    """Raise TooLong when ``text``, without its outer spaces, is over MOST_CHARS."""
    if len(text) > MOST_CHARS and len(text.strip()) > MOST_CHARS:
        raise TooLong(what, LENGTH_BOUNDS, text.strip())


_STAMP_RE = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})"
    r"(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?)?"
    r"\s*(Z|[+-]\d{2}:?\d{2})?$"
)
_INTERVAL_RE = re.compile(r"(\d+)(?:\.(\d))?\s*([smhdw])")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_LONGEST_SECONDS = int(LONGEST.total_seconds())


def parse_stamp(text: str) -> datetime:
    """Parse a stamp (``YYYY-MM-DD[ HH:MM[:SS]][offset]``) into local naive time.

    Raises ValueError for what is not a stamp, and its subclass OutOfRange for
    a stamp outside the years FIRST_YEAR to LAST_YEAR (in local time), or one
    over MOST_CHARS long (TooLong).
    """
    if (
        len(text) == 16
        and text[4] == "-"
        and text[7] == "-"
        and text[10] == " "
        and text[13] == ":"
        and text.isascii()
    ):
        # the form rouse writes, thousands of times per pack: the C ISO parser
        # (it takes only ASCII digits between these separators), no regex
        try:
            value = datetime.fromisoformat(text)
        except ValueError:
            pass  # not a real date, or not digits: the full parser says so
        else:
            if FIRST_YEAR <= value.year <= LAST_YEAR:
                return real(value)
            raise OutOfRange("a stamp", STAMP_BOUNDS, text)
    check_length(text, "a stamp")
    match = _STAMP_RE.match(text.strip())
    if not match:
        raise ValueError(f"not a stamp (want YYYY-MM-DD HH:MM): {text!r}")
    year, month, day, hour, minute, second, offset = match.groups()
    try:
        value = datetime(
            int(year), int(month), int(day), int(hour or 0), int(minute or 0), int(second or 0)
        )
    except ValueError as exc:
        raise ValueError(f"not a real date/time: {text!r}") from exc
    if offset:
        iso = "+00:00" if offset == "Z" else offset
        if ":" not in iso:
            iso = f"{iso[:3]}:{iso[3:]}"
        try:
            aware = datetime.fromisoformat(value.isoformat() + iso)
            value = aware.astimezone().replace(tzinfo=None)
        except OverflowError as exc:
            raise OutOfRange("a stamp", STAMP_BOUNDS, text) from exc
        except ValueError as exc:
            raise ValueError(f"not a representable local time: {text!r}") from exc
    if not FIRST_YEAR <= value.year <= LAST_YEAR:
        raise OutOfRange("a stamp", STAMP_BOUNDS, text)
    return real(value)


# -- real instants: DST -------------------------------------------------------------

#: Local days with a DST change, by (zone, ordinal): whether the offset at the
#: day's start differs from the next day's. Bounded; a zone change (tzset) keys anew.
_CHANGE_DAYS: dict[tuple[tuple[str, str], int], bool] = {}


def _offset(value: datetime) -> float:
    return value.timestamp() - (value - datetime(1970, 1, 1)).total_seconds()


def _changes_on(value: datetime) -> bool:
    """Whether the local offset changes during ``value``'s day (or at its end)."""
    key = (time.tzname, value.toordinal())
    found = _CHANGE_DAYS.get(key)
    if found is None:
        midnight = datetime(value.year, value.month, value.day)
        try:
            found = _offset(midnight) != _offset(midnight + timedelta(days=1))
        except (OverflowError, OSError, ValueError):
            found = False
        if len(_CHANGE_DAYS) > 4096:
            _CHANGE_DAYS.clear()
        _CHANGE_DAYS[key] = found
    return found


def real(value: datetime) -> datetime:
    """The real instant the local wall-clock time ``value`` names: ``value`` itself,
    except a time a DST change skips (02:30 on a spring-forward night in New York),
    which is read as the same time after the gap (03:30), never an hour early."""
    if not time.daylight or not _changes_on(value):
        return value
    try:
        back = datetime.fromtimestamp(value.timestamp())
    except (OverflowError, OSError, ValueError):
        return value
    shift = round((back - value).total_seconds())
    if shift == 0:
        return value  # (a time that exists, kept as given, fold and all)
    return value + timedelta(seconds=shift)


_NAIVE_EPOCH = datetime(1970, 1, 1)
_MICROSECOND = timedelta(microseconds=1)


def micros(value: datetime) -> int:
    """A naive local time as whole microseconds, ordered as the real instants are: in
    a zone with DST, microseconds since the Unix epoch, so the hour a fall-back night
    repeats is ordered by its ``fold`` (01:30 the second time is after 01:59 the
    first); elsewhere (or out of the system's range) since the naive epoch."""
    if time.daylight:
        try:
            seconds = int(value.replace(microsecond=0).timestamp())
            return seconds * 1_000_000 + value.microsecond
        except (OverflowError, OSError, ValueError):
            pass
    return (value - _NAIVE_EPOCH) // _MICROSECOND


def from_micros(value: int) -> datetime:
    """The inverse of :func:`micros` (the naive local time, its ``fold`` kept)."""
    if time.daylight:
        try:
            whole, part = divmod(value, 1_000_000)
            return datetime.fromtimestamp(whole).replace(microsecond=part)
        except (OverflowError, OSError, ValueError):
            pass
    return _NAIVE_EPOCH + timedelta(microseconds=value)


def after(base: datetime, elapsed: timedelta, days: int = 0) -> datetime:
    """``days`` calendar days after ``base`` at the same wall-clock time, then
    ``elapsed`` real time later: a real instant. May raise OverflowError."""
    if days:
        base = base + timedelta(days=days)
    if not elapsed:
        return real(base)
    if not time.daylight:
        return base + elapsed
    try:
        start = real(base).timestamp()
        return datetime.fromtimestamp(start + elapsed.total_seconds())
    except (OSError, ValueError) as exc:
        raise OverflowError(str(exc)) from None


def later(base: datetime, interval: timedelta, days: int = 0) -> datetime:
    """:func:`after`, never past the last readable stamp (nor the calendar's end): a
    ``base`` already past LATEST (only a caller's ``now`` or a file's mtime can be)
    saturates at the calendar's end instead of raising OverflowError."""
    ceiling = LATEST if base <= LATEST else datetime.max
    try:
        return min(after(base, interval, days), ceiling)
    except OverflowError:
        return ceiling


def as_span(interval: timedelta) -> tuple[int, timedelta]:
    """A computed interval as (calendar days, elapsed): a whole number of days keeps
    the wall-clock time, anything else is elapsed time."""
    if interval.seconds == 0 and interval.microseconds == 0:
        return interval.days, timedelta(0)
    return 0, interval


def format_stamp(value: datetime) -> str:
    """Write a stamp in local minutes."""
    return value.strftime(STAMP_FORMAT)


def iso_stamp(value: datetime | None) -> str | None:
    """A naive local time as JSON carries it: ISO 8601, whole seconds, the local
    offset (``2026-03-14T09:00:00+01:00``); None stays None."""
    if value is None:
        return None
    return real(value).replace(microsecond=0).astimezone().isoformat()


def parse_interval(text: str) -> timedelta:
    """Parse ``45m``, ``2h``, ``1d``, ``2w``, combinations like ``1h30m``, and one
    decimal place (``1.5h`` = 90m; the unit stays required).

    Raises ValueError for what is not an interval, and its subclass OutOfRange
    for one longer than LONGEST, or written over MOST_CHARS long (TooLong).
    """
    days, elapsed = parse_span(text)
    return timedelta(days=days) + elapsed


def later_by(base: datetime, text: str) -> datetime:
    """``base`` plus the interval ``text`` (:func:`after`: days keep the wall clock)."""
    days, elapsed = parse_span(text)
    return after(base, elapsed, days)


def parse_span(text: str) -> tuple[int, timedelta]:
    """An interval as ``(calendar days, elapsed time)``: the whole days its ``d`` and
    ``w`` parts make, and its ``s``, ``m`` and ``h`` parts (with any part of a day).
    Raises as :func:`parse_interval`."""
    check_length(text, "an interval")
    compact = text.strip().lower().replace(" ", "")
    if not compact:
        raise ValueError("empty interval (want e.g. 45m, 2h, 1d)")
    pos = 0
    total = calendar = 0
    while pos < len(compact):
        # one part at a time from where the last ended: a part that does not
        # read ends the parse, so no character is looked at from two starts
        match = _INTERVAL_RE.match(compact, pos)
        if match is None:
            break
        letter = match.group(3)
        unit = _UNIT_SECONDS[letter]
        seconds = int(match.group(1)) * unit + int(match.group(2) or 0) * unit // 10
        total += seconds
        if letter in "dw":
            calendar += seconds
        pos = match.end()
    if pos != len(compact):
        raise ValueError(f"not an interval (want e.g. 45m, 2h, 1.5h, 1d, 1h30m): {text!r}")
    if total > _LONGEST_SECONDS:
        raise OutOfRange("an interval", INTERVAL_BOUNDS, text.strip())
    days = calendar // 86400
    return days, timedelta(seconds=total - days * 86400)


def format_interval(value: timedelta) -> str:
    """The shortest ``1d2h30m`` spelling of an interval (minutes precision)."""
    minutes = int(value.total_seconds() // 60)
    if minutes <= 0:
        return "0m"
    parts = []
    for unit, size in (("d", 1440), ("h", 60), ("m", 1)):
        count, minutes = divmod(minutes, size)
        if count:
            parts.append(f"{count}{unit}")
    return "".join(parts)


def floored(value: timedelta) -> timedelta:
    """No interval below the 15-minute floor is ever used."""
    return max(value, FLOOR)


def human_age(then: datetime, now: datetime) -> str:
    """A relative age: ``just now``, ``25m ago``, ``3h ago``, ``yesterday``, ``9d ago``,
    and above 60 days ``3mo ago`` (whole calendar months) or ``2y ago`` (whole years).

    Future instants read the same way: ``in 25m``, ``in 2h``, ``tomorrow``, ``in 3d``,
    ``in 3mo``, ``in 2y``.
    """
    future = then > now
    delta = (then - now) if future else (now - then)
    seconds = delta.total_seconds()
    if seconds < 60:
        return "just now"
    day_gap = abs((then.date() - now.date()).days)
    if seconds < 90 * 60:
        amount = f"{int(seconds // 60)}m"
    elif seconds < 12 * 3600 or day_gap == 0:
        amount = f"{int(seconds // 3600)}h"
    elif day_gap == 1:
        return "tomorrow" if future else "yesterday"
    elif day_gap <= 60:
        amount = f"{max(day_gap, 2)}d"
    else:
        months = _whole_months(min(then, now), max(then, now))
        amount = f"{max(months, 2)}mo" if months < 12 else f"{months // 12}y"
    return f"in {amount}" if future else f"{amount} ago"


def _whole_months(early: datetime, late: datetime) -> int:
    """How many whole calendar months lie between two dates (14 Dec → 14 Mar is 3)."""
    months = (late.year - early.year) * 12 + late.month - early.month
    return months - 1 if late.day < early.day else months
