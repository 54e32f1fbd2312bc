"""Times as people type them: ``monday``, ``mon 9am``, ``tomorrow 09:00``, ``in 2h``.

A small grammar of our own (a handful of words, no library: it sits on the
CLI's path, and every word it takes is listed in :data:`HUMAN_FORMS`):

- a day: ``today``, ``tomorrow``, a weekday (``monday`` or ``mon``: the next
  one strictly after today, unless a time later today is given), or
  ``next week`` (the Monday of next week); then, optionally, ``at`` and a
  time. A day without a time means 09:00; ``today`` needs a time.
- a time alone (``17:30``, ``9am``, ``noon``): the next such time after now.
- ``in`` and an interval (``in 2h``, ``in 1h30m``, ``in 3 days``).

Anything else is refused, and words people read two ways (``next monday``, a
bare ``9``) are refused as ambiguous: a wrong guess at a time is worse than a
question. The stamp forms and ``+INTERVAL`` are :func:`rouse.core.timefmt.parse_when`'s.
It owns the words; it does no arithmetic beyond whole days on a naive local date.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

#: The human forms, as the error for a time that does not read lists them.
HUMAN_FORMS = (
    "monday or mon (the next one after today, 09:00), mon 9am, tomorrow 09:00, "
    "today 17:30, 17:30 or 9pm (the next such time), in 2h, next week (Monday 09:00)"
)

WEEKDAYS = {
    **{name: i for i, name in enumerate(("mon", "tue", "wed", "thu", "fri", "sat", "sun"))},
    **{
        name: i
        for i, name in enumerate(
            ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
        )
    },
}
#: The time a day named without one stands for.
DAY_START = (9, 0)

_CLOCK_RE = re.compile(r"^(\d{1,2}):(\d{2})$")
_MERIDIEM_RE = re.compile(r"^(\d{1,2})(?::(\d{2}))?(am|pm)$")
_UNIT_WORDS = {
    "minute": "m",
    "minutes": "m",
    "min": "m",
    "mins": "m",
    "hour": "h",
    "hours": "h",
    "hr": "h",
    "hrs": "h",
    "day": "d",
    "days": "d",
    "week": "w",
    "weeks": "w",
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


def parse_human(text: str, now: datetime) -> datetime:
    """The instant ``text`` names, from ``now`` (naive local time).

    Raises Unreadable (a ValueError) saying what is wrong; the caller adds the
    accepted forms.
    """
    from rouse.core.timefmt import later_by  # (timefmt imports this module lazily)

    words = [w for w in text.lower().replace(",", " ").split() if w != "at"]
    if not words:
        raise Unreadable("not a time: nothing given")
    if words[0] == "in":
        try:
            return later_by(now, _interval_text(words[1:]))
        except OverflowError:
            return datetime.max
        except ValueError:
            raise Unreadable(f"{text.strip()!r}: after 'in', not an interval") from None
    if words[:2] == ["next", "week"]:
        day_words: list[str] = ["next week"]
        rest = words[2:]
    else:
        day_words = [w for w in words if w in WEEKDAYS or w in ("today", "tomorrow")]
        rest = [w for w in words if w not in day_words]
    if "next" in rest:
        raise Unreadable(
            f"{text.strip()!r} is ambiguous (this coming one, or the one after?): "
            "say 'mon' for the next Monday, or give a date"
        )
    if len(day_words) > 1:
        raise Unreadable(f"{text.strip()!r}: name one day, not {' and '.join(day_words)}")
    times = []
    for word in rest:
        at = time_of_day(word)
        if at is None:
            if word.isdigit():
                raise Unreadable(f"{word!r} is ambiguous: write 09:00, 9am or 9pm")
            raise Unreadable(f"not a time: {word!r} is no word rouse reads as a time")
        times.append(at)
    if len(times) > 1:
        raise Unreadable(f"{text.strip()!r}: give one time of day, not {len(times)}")
    at = times[0] if times else None
    midnight = now.replace(hour=0, minute=0, second=0, microsecond=0)
    if not day_words:
        assert at is not None
        when = _at(midnight, at)
        return when if when > now else when + timedelta(days=1)
    day = day_words[0]
    if day == "today":
        if at is None:
            raise Unreadable("'today' needs a time: today 17:30")
        return _at(midnight, at)
    if day == "tomorrow":
        return _at(midnight + timedelta(days=1), at or DAY_START)
    if day == "next week":
        monday = midnight + timedelta(days=7 - now.weekday())
        return _at(monday, at or DAY_START)
    ahead = (WEEKDAYS[day] - now.weekday()) % 7
    if ahead == 0:
        later_today = at is not None and _at(midnight, at) > now
        ahead = 0 if later_today else 7
    return _at(midnight + timedelta(days=ahead), at or DAY_START)
