"""Human times where a time is typed (issue 19 item 3): the small grammar of
``rouse.core.humantime``, reached through ``timefmt.parse_when``.

``NOW`` is Saturday 2026-03-14 12:00; the 16th is a Monday.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import NOW
from rouse.core.humantime import HUMAN_FORMS, WHEN_FORMS, parse_human, parse_when

MONDAY = datetime(2026, 3, 16, 8, 0)


@pytest.mark.parametrize(
    ("text", "now", "expected"),
    [
        ("monday", NOW, datetime(2026, 3, 16, 9, 0)),
        ("Mon", NOW, datetime(2026, 3, 16, 9, 0)),
        ("mon 9am", NOW, datetime(2026, 3, 16, 9, 0)),
        ("mon 9:30pm", NOW, datetime(2026, 3, 16, 21, 30)),
        ("saturday", NOW, datetime(2026, 3, 21, 9, 0)),  # today is Saturday: strictly after
        ("sat 17:00", NOW, datetime(2026, 3, 14, 17, 0)),  # a time later today: today
        ("sat 11:00", NOW, datetime(2026, 3, 21, 11, 0)),  # earlier today: next week
        ("sat 12:00", NOW, datetime(2026, 3, 21, 12, 0)),  # now itself is not later
        ("monday", MONDAY, datetime(2026, 3, 23, 9, 0)),
        ("mon 9am", MONDAY, datetime(2026, 3, 16, 9, 0)),
        ("tomorrow", NOW, datetime(2026, 3, 15, 9, 0)),
        ("tomorrow 09:00", NOW, datetime(2026, 3, 15, 9, 0)),
        ("tomorrow at 7:05", NOW, datetime(2026, 3, 15, 7, 5)),
        ("today 17:30", NOW, datetime(2026, 3, 14, 17, 30)),
        ("today noon", NOW, datetime(2026, 3, 14, 12, 0)),
        ("17:30", NOW, datetime(2026, 3, 14, 17, 30)),
        ("9am", NOW, datetime(2026, 3, 15, 9, 0)),  # a time alone: the next one
        ("12am", NOW, datetime(2026, 3, 15, 0, 0)),
        ("12pm tomorrow", NOW, datetime(2026, 3, 15, 12, 0)),
        ("in 2h", NOW, datetime(2026, 3, 14, 14, 0)),
        ("in 1h30m", NOW, datetime(2026, 3, 14, 13, 30)),
        ("in 3 days", NOW, datetime(2026, 3, 17, 12, 0)),
        ("in 2 hours", NOW, datetime(2026, 3, 14, 14, 0)),
        ("in 1 week", NOW, datetime(2026, 3, 21, 12, 0)),
        ("next week", NOW, datetime(2026, 3, 16, 9, 0)),
        ("next week", MONDAY, datetime(2026, 3, 23, 9, 0)),
        ("next week 14:00", NOW, datetime(2026, 3, 16, 14, 0)),
        # people's words (issue 34 item 10): parts of a day, month names, a date and 10am
        ("tomorrow morning", NOW, datetime(2026, 3, 15, 9, 0)),
        ("tomorrow afternoon", NOW, datetime(2026, 3, 15, 14, 0)),
        ("friday evening", NOW, datetime(2026, 3, 20, 18, 0)),
        ("Friday, evening", NOW, datetime(2026, 3, 20, 18, 0)),
        ("tonight", NOW, datetime(2026, 3, 14, 20, 0)),
        ("evening", NOW, datetime(2026, 3, 14, 18, 0)),  # a part of a day alone: the next one
        ("morning", NOW, datetime(2026, 3, 15, 9, 0)),
        ("eod", NOW, datetime(2026, 3, 14, 17, 0)),
        ("end of day", NOW, datetime(2026, 3, 14, 17, 0)),
        ("tomorrow eod", NOW, datetime(2026, 3, 15, 17, 0)),
        ("tomorrow end of day", NOW, datetime(2026, 3, 15, 17, 0)),
        ("dec 24", NOW, datetime(2026, 12, 24, 9, 0)),
        ("24 dec", NOW, datetime(2026, 12, 24, 9, 0)),
        ("December 24 10am", NOW, datetime(2026, 12, 24, 10, 0)),
        ("24 dec evening", NOW, datetime(2026, 12, 24, 18, 0)),
        ("mar 14", NOW, datetime(2027, 3, 14, 9, 0)),  # today, like a weekday: the next one
        ("mar 14 17:00", NOW, datetime(2026, 3, 14, 17, 0)),  # a time later today: today
        ("2026-12-24 10am", NOW, datetime(2026, 12, 24, 10, 0)),
        ("2026-12-24 eod", NOW, datetime(2026, 12, 24, 17, 0)),
    ],
)
def test_human_forms(text: str, now: datetime, expected: datetime) -> None:
    assert parse_human(text, now) == expected
    assert parse_when(text, now) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("+2h", datetime(2026, 3, 14, 14, 0)),
        ("2026-03-20 09:00", datetime(2026, 3, 20, 9, 0)),
        ("2026-03-20", datetime(2026, 3, 20, 0, 0)),
        ("2026-03-20T09:00", datetime(2026, 3, 20, 9, 0)),
    ],
)
def test_the_forms_of_today_still_read(text: str, expected: datetime) -> None:
    assert parse_when(text, NOW) == expected


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("next monday", "ambiguous"),
        ("today", "needs a time"),
        ("9", "ambiguous"),
        ("mon tue", "one day"),
        ("tomorrow 25:00", "not a time of day"),
        ("13pm", "not a time of day"),
        ("someday", "not a time"),
        ("in forever", "not an interval"),
        ("mon 9am 10am", "one time"),
        ("", "not a time"),
        ("dec", "day of the month"),
        ("dec 32", "not a date"),
        ("feb 30", "not a date"),
        ("dec 24 25", "one day of the month"),
        ("dec 24 fri", "one day"),
        ("morning evening", "one time"),
        ("tomorrow 9am morning", "one time"),
        ("2026-13-01 10am", "not a date"),
        ("2026-12-24 25:00", "not a time of day"),
    ],
)
def test_ambiguous_or_unknown_words_are_refused_with_the_forms(text: str, why: str) -> None:
    with pytest.raises(ValueError) as caught:
        parse_when(text, NOW)
    message = str(caught.value)
    assert why in message
    assert "tomorrow 09:00" in message and "2026-03-14 09:00" in message
    assert "\n" not in message


def test_the_accepted_forms_are_listed_once() -> None:
    for form in (
        *("monday", "mon 9am", "tomorrow 09:00", "today 17:30", "in 2h", "next week"),
        *("tomorrow morning", "tonight", "eod", "end of day", "dec 24", "24 dec", "10am"),
    ):
        assert form in HUMAN_FORMS
    assert HUMAN_FORMS in WHEN_FORMS


def test_tonight_once_it_has_passed_is_refused_not_moved_to_tomorrow() -> None:
    with pytest.raises(ValueError, match="tonight"):
        parse_when("tonight", datetime(2026, 3, 14, 21, 0))


SUNDAY = datetime(2026, 3, 15, 10, 0)


@pytest.mark.parametrize(
    ("text", "now", "expected"),
    [
        ("next week", SUNDAY, datetime(2026, 3, 22, 23, 59)),  # the whole coming week
        ("next week", MONDAY, datetime(2026, 3, 29, 23, 59)),
        ("tomorrow", NOW, datetime(2026, 3, 15, 23, 59)),
        ("friday", NOW, datetime(2026, 3, 20, 23, 59)),
        ("dec 24", NOW, datetime(2026, 12, 24, 23, 59)),
        ("tomorrow 09:00", NOW, datetime(2026, 3, 15, 9, 0)),  # a time given is kept
        ("in 2h", NOW, datetime(2026, 3, 14, 14, 0)),
        ("2026-03-20", NOW, datetime(2026, 3, 20, 0, 0)),  # a stamp is a stamp
    ],
)
def test_the_end_of_a_forecast_is_the_end_of_the_day_or_week_it_names(
    text: str, now: datetime, expected: datetime
) -> None:
    assert parse_when(text, now, end=True) == expected


def test_a_human_time_outside_the_stamp_years_is_out_of_range() -> None:
    from rouse.core.timefmt import OutOfRange

    with pytest.raises(OutOfRange):
        parse_when("in 520w", datetime(9000, 6, 1, 0, 0))


WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
instants = st.datetimes(min_value=datetime(1950, 1, 1), max_value=datetime(2100, 1, 1)).map(
    lambda d: d.replace(second=0, microsecond=0)
)


@given(now=instants, day=st.sampled_from(WEEKDAYS))
def test_a_weekday_alone_is_the_next_one_strictly_after_today(now: datetime, day: str) -> None:
    when = parse_human(day, now)
    assert when.weekday() == WEEKDAYS.index(day)
    assert 1 <= (when.date() - now.date()).days <= 7
    assert (when.hour, when.minute) == (9, 0)


@given(
    now=instants,
    day=st.sampled_from(WEEKDAYS),
    hour=st.integers(0, 23),
    minute=st.integers(0, 59),
)
def test_a_weekday_with_a_time_is_the_first_such_instant_after_now(
    now: datetime, day: str, hour: int, minute: int
) -> None:
    when = parse_human(f"{day} {hour:02d}:{minute:02d}", now)
    assert when > now and when.weekday() == WEEKDAYS.index(day)
    assert (when.hour, when.minute) == (hour, minute)
    assert when - timedelta(days=7) <= now  # none of that weekday's instants was skipped


@given(
    now=instants,
    hour=st.integers(1, 12),
    minute=st.integers(0, 59),
    half=st.sampled_from(("am", "pm")),
)
def test_a_time_alone_is_the_next_such_time(
    now: datetime, hour: int, minute: int, half: str
) -> None:
    when = parse_human(f"{hour}:{minute:02d}{half}", now)
    assert now < when <= now + timedelta(days=1)
    assert when.hour % 12 == hour % 12 and when.minute == minute
    assert (when.hour >= 12) == (half == "pm")


@given(text=st.text(max_size=30))
def test_any_text_reads_or_is_refused_with_a_value_error(text: str) -> None:
    try:
        when = parse_when(text, NOW)
    except ValueError as exc:
        assert str(exc)
    else:
        assert isinstance(when, datetime)


def test_a_weekday_rule_across_dst(local_tz: Callable[[str], None]) -> None:
    # 2026-03-29 is the spring change in Berlin: 'sun 09:00' is still 09:00 local
    local_tz("Europe/Berlin")
    assert parse_when("sun 09:00", datetime(2026, 3, 28, 12, 0)) == datetime(2026, 3, 29, 9, 0)
    assert parse_when("in 1d", datetime(2026, 3, 28, 12, 0)) == datetime(2026, 3, 29, 12, 0)
