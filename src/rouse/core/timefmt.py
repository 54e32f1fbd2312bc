"""Stamps, intervals and human ages. Every function that needs "now" takes it.

Times are naive ``datetime`` values in the process's local time zone (``TZ``
is honoured); stamps carrying an offset are converted to local time on read.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

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


class OutOfRange(ValueError):
    """A value that reads, but lies outside rouse's bounds; ``need`` says what they are."""

    def __init__(self, what: str, need: str, text: str):
        super().__init__(f"{what} {need}, got {text!r}")
        self.need = need


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
    a stamp outside the years FIRST_YEAR to LAST_YEAR (in local time).
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
                return value
            raise OutOfRange("a stamp", STAMP_BOUNDS, text)
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
    return value


def format_stamp(value: datetime) -> str:
    """Write a stamp in local minutes."""
    return value.strftime(STAMP_FORMAT)


def iso_stamp(value: datetime | None) -> str | None:
    """A naive local time as JSON carries it: ISO 8601, whole seconds, the local
    offset (``2026-03-14T09:00:00+01:00``); None stays None."""
    if value is None:
        return None
    return value.replace(microsecond=0).astimezone().isoformat()


def parse_interval(text: str) -> timedelta:
    """Parse ``45m``, ``2h``, ``1d``, ``2w``, combinations like ``1h30m``, and one
    decimal place (``1.5h`` = 90m; the unit stays required).

    Raises ValueError for what is not an interval, and its subclass OutOfRange
    for one longer than LONGEST.
    """
    compact = text.strip().lower().replace(" ", "")
    if not compact:
        raise ValueError("empty interval (want e.g. 45m, 2h, 1d)")
    pos = 0
    total = 0
    for match in _INTERVAL_RE.finditer(compact):
        if match.start() != pos:
            break
        unit = _UNIT_SECONDS[match.group(3)]
        total += int(match.group(1)) * unit + int(match.group(2) or 0) * unit // 10
        pos = match.end()
    if pos != len(compact):
        raise ValueError(f"not an interval (want e.g. 45m, 2h, 1.5h, 1d, 1h30m): {text!r}")
    if total > _LONGEST_SECONDS:
        raise OutOfRange("an interval", INTERVAL_BOUNDS, text.strip())
    return timedelta(seconds=total)


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


#: Every form a CLI time (``--due``, ``--until``, a stamp field given to ``new``) takes,
#: as the error for one that does not read names them. (The human forms are
#: :data:`rouse.core.humantime.HUMAN_FORMS`, repeated here so that reading a
#: stamp never imports that module.)
WHEN_FORMS = (
    "monday or mon (the next one after today, 09:00), mon 9am, tomorrow 09:00, "
    "today 17:30, 17:30 or 9pm (the next such time), in 2h, next week (Monday 09:00), "
    "tomorrow morning (09:00; afternoon 14:00, evening 18:00, tonight 20:00, "
    "eod or end of day 17:00), dec 24 or 24 dec (the next one, 09:00), 2026-12-24 10am; "
    "+3d (from now: s, m, h, d, w, combined as in +1h30m), 2026-03-14 09:00 "
    "(local time; a date alone is midnight), or ISO 8601 with T and an optional "
    "offset, 2026-03-14T09:00 or 2026-03-14T09:00+01:00"
)


def parse_when(text: str, now: datetime, *, end: bool = False) -> datetime:
    """A CLI time: a stamp, ``+INTERVAL`` relative to now, or a human form
    (:mod:`rouse.core.humantime`: ``mon 9am``, ``tomorrow``, ``in 2h``), within the
    stamp years. ``end``: the time ends a span (``due --until``), so a day named without
    a time is its last minute (``humantime.parse_human``).

    Raises OutOfRange for a time outside the stamp years, and ValueError
    naming every accepted form (``WHEN_FORMS``) for anything else.
    """
    text = text.strip()
    try:
        if text.startswith("+"):
            return _within_years(text, now, lambda: now + parse_interval(text[1:]))
        return parse_stamp(text)
    except OutOfRange:
        raise
    except ValueError:
        dated = text[:4].isdigit() and text[4:5] == "-"
        if text.startswith("+") or (dated and text[10:11] != " "):  # (a date, then words)
            raise ValueError(f"not a time: {text!r}; use {WHEN_FORMS}") from None
    from rouse.core import humantime  # (only when a stamp did not read: off the pack's path)

    try:
        return _within_years(text, now, lambda: humantime.parse_human(text, now, end=end))
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
