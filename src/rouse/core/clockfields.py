"""Reading the clock's header fields: their bounds, and the problems a bad value makes.

A clock field that cannot be read never raises: :class:`FieldReader` records a
:class:`FieldProblem` (with what the clock does instead, :data:`FALLBACKS`)
and returns the fallback. ``rouse check`` asks the ``*_problem`` functions the
same question, so both say it in the same words.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from rouse.core.recurrence import Every, parse_every
from rouse.core.timefmt import (
    OutOfRange,
    TooLong,
    check_length,
    parse_interval,
    parse_span,
    parse_stamp,
    shown,
)
from rouse.core.treefiles import Problem

TYPE_CHECKING = False
if TYPE_CHECKING:
    from rouse.core.tree import Record

DEFAULT_BACKOFF = 2.0
#: The largest ``fires``, ``nudges`` or ``max-fires`` read (docs/clock.md "Bounds").
MOST_COUNT = 1_000_000
#: ``backoff`` is read when ``1 <= backoff < BACKOFF_BELOW`` (or ``fixed``).
BACKOFF_BELOW = 1000.0

#: What the clock does instead when a field cannot be read (docs/clock.md).
FALLBACKS = {
    "last-moved": "falls back to opened, else the mtime",
    "opened": "falls back to the mtime",
    "stale-after": "uses the level's default",
    "swept": "ignored: as if never woken",
    "nudges": "read as 0",
    "review-every": "ignored: no review",
    "reviewed": "falls back to opened, else the mtime",
    "due": "falls back to moved_at: it fires",
    "nag": "ignored: the reminder fires once, no nagging",
    "backoff": "read as 2",
    "fires": "read as 0",
    "max-fires": "read as 10",
    "expires": "ignored: no expiry",
    "every": "read as a one-shot reminder",
    "until": "ignored: the series does not end",
}


#: How far past now a stamp of what happened may be and still be read (clock skew).
SKEW = timedelta(minutes=1)
#: The stamps that say when something happened: one later than now (beyond SKEW)
#: is unreadable, so a hand-written future can never keep a record quiet.
HAPPENED = frozenset({"last-moved", "opened", "reviewed"})


class FieldProblem(Problem):
    """A clock field that cannot be read; the clock fell back and says so.

    ``level``: how ``check`` reports it ("error"; "warn" for a stamp later than now)."""

    __slots__ = ("key", "value", "level")
    _fields = ("path", "key", "value", "message", "line", "level")

    def __init__(
        self,
        path: str,
        key: str,
        value: str,
        message: str,
        line: int | None = None,
        level: str = "error",
    ):
        Problem.__init__(self, path, message, line)
        self.key = key
        self.value = value
        self.level = level


def parse_count(text: str) -> int:
    """A ``fires``, ``nudges`` or ``max-fires`` value: a whole number, 0 to MOST_COUNT.

    Raises ValueError (OutOfRange when it is a whole number, but too large, or
    TooLong when it is over MOST_CHARS long).
    """
    check_length(text, "a count")
    text = text.strip()
    if not (text.isascii() and text.isdigit()):
        raise ValueError(f"not a whole number: {text!r}")
    digits = text.lstrip("0")
    if len(digits) > len(str(MOST_COUNT)) or int(digits or "0") > MOST_COUNT:
        raise OutOfRange("a count", f"must be at most {MOST_COUNT}", text)
    return int(digits or "0")


def _problem(key: str, value: str, exc: ValueError, shape: str) -> str:
    if isinstance(exc, OutOfRange):
        return f"'{key}' {exc.need}, got {shown(value)!r}"
    return f"'{key}' must {shape}, got {shown(value)!r}"


def _count_problem(key: str, value: str, exc: ValueError) -> str:
    if isinstance(exc, TooLong):
        return _problem(key, value, exc, "")
    return f"'{key}' must be a whole number from 0 to {MOST_COUNT}, got {shown(value)!r}"


def parse_backoff(text: str) -> float:
    """A ``backoff`` value: ``fixed`` (1), or a number from 1 to below BACKOFF_BELOW.

    Raises ValueError (TooLong when it is over MOST_CHARS long).
    """
    check_length(text, "a backoff")
    text = text.strip()
    if text.lower() == "fixed":
        return 1.0
    try:
        number = float(text)
    except ValueError:
        number = -1.0
    if 1.0 <= number < BACKOFF_BELOW:  # (nan and inf are not)
        return number
    raise ValueError(f"not a backoff: {text!r}")


#: What a clock value of each kind must look like, as a problem says it.
_SHAPES = {
    "stamp": "look like 2026-03-14 15:40",
    "interval": "look like 45m, 2h or 1d",
    "backoff": "be a number >= 1 or 'fixed'",
}
#: How each kind of clock value is read.
PARSERS = {
    "stamp": parse_stamp,
    "interval": parse_interval,
    "count": parse_count,
    "every": parse_every,
    "backoff": parse_backoff,
}


def value_problem(kind: str, key: str, value: str) -> str | None:
    """Why ``value`` cannot be read as ``key``, a clock value of ``kind`` (one of
    :data:`PARSERS`), in the clock's words; or None."""
    try:
        PARSERS[kind](value)
    except ValueError as exc:
        if kind == "count":
            return _count_problem(key, value, exc)
        return f"'{key}': {exc}" if kind == "every" else _problem(key, value, exc, _SHAPES[kind])
    return None


def count_problem(key: str, value: str) -> str | None:
    """Why ``value`` cannot be read as the count ``key`` (fires, nudges, max-fires), or None."""
    return value_problem("count", key, value)


class FieldReader:
    """Typed reads of one record's header that collect problems instead of raising."""

    def __init__(self, record: Record, problems: list[FieldProblem]):
        self.record = record
        self.fields = record.header.fields  # (read ~5 times per record per pack)
        self.problems = problems

    def _bad(self, key: str, value: str, message: str, level: str = "error") -> None:
        if any(p.path == self.record.rel and p.key == key for p in self.problems):
            return  # read twice, reported once
        line = self.record.header.line_of(key)
        fallback = FALLBACKS.get(key)
        if fallback:
            message = f"{message} ({fallback})"
        self.problems.append(FieldProblem(self.record.rel, key, value, message, line, level))

    def text(self, key: str) -> str:
        value = self.fields.get(key)
        return value.strip() if value else ""

    def stamp(self, key: str) -> datetime | None:
        value = self.fields.get(key)  # (self.text inlined here and below: hot)
        if value:
            value = value.strip()
        if not value:
            return None
        try:
            return parse_stamp(value)
        except ValueError as exc:
            self._bad(key, value, _problem(key, value, exc, _SHAPES["stamp"]))
            return None

    def happened(self, key: str, now: datetime | None) -> datetime | None:
        """A stamp of :data:`HAPPENED`; one later than ``now`` (beyond SKEW) is unreadable."""
        value = self.stamp(key)
        if value is None or now is None or value <= now + SKEW:
            return value
        text = self.text(key)
        self._bad(key, text, f"'{key}' {shown(text)!r} is later than now", "warn")
        return None

    def interval(self, key: str) -> timedelta | None:
        span = self.span(key)
        return None if span is None else timedelta(days=span[0]) + span[1]

    def span(self, key: str) -> tuple[int, timedelta] | None:
        """An interval as (calendar days, elapsed time): :func:`timefmt.parse_span`."""
        value = self.fields.get(key)
        if value:
            value = value.strip()
        if not value:
            return None
        try:
            return parse_span(value)
        except ValueError as exc:
            self._bad(key, value, _problem(key, value, exc, _SHAPES["interval"]))
            return None

    def every(self) -> Every | None:
        """A reminder's ``every:`` rule; None (a one-shot) when absent or unreadable."""
        value = self.text("every")
        if not value:
            return None
        try:
            return parse_every(value)
        except ValueError:
            self._bad("every", value, value_problem("every", "every", value) or "")
            return None

    def series_start(self, due: datetime) -> datetime:
        """Where a series' interval occurrences count from: ``set``, else ``due``."""
        return self.stamp("set") or due

    def integer(self, key: str, default: int) -> int:
        value = self.fields.get(key)
        if value:
            value = value.strip()
        if not value:
            return default
        try:
            return parse_count(value)
        except ValueError as exc:
            self._bad(key, value, _count_problem(key, value, exc))
            return default

    def backoff(self) -> float:
        value = self.text("backoff")
        if not value:
            return DEFAULT_BACKOFF
        try:
            return parse_backoff(value)
        except ValueError:
            self._bad("backoff", value, value_problem("backoff", "backoff", value) or "")
            return DEFAULT_BACKOFF
