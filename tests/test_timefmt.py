"""Stamps, intervals and human ages (SPEC §2 "Stamps"/"Intervals", §4 age rules).

Ages above 60 days read in months, then years (issue 12, item 8).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import NOW
from rouse.core.humantime import parse_when
from rouse.core.timefmt import (
    FLOOR,
    LATEST,
    LONGEST,
    OutOfRange,
    floored,
    format_interval,
    format_stamp,
    human_age,
    parse_interval,
    parse_stamp,
)

# -- stamps ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-03-14 15:40", datetime(2026, 3, 14, 15, 40)),
        ("2026-03-14", datetime(2026, 3, 14, 0, 0)),
        ("2026-03-14T15:40", datetime(2026, 3, 14, 15, 40)),
        ("2026-03-14 15:40:59", datetime(2026, 3, 14, 15, 40, 59)),
        ("2026-03-14T15:40:07", datetime(2026, 3, 14, 15, 40, 7)),
        ("  2026-03-14 15:40  ", datetime(2026, 3, 14, 15, 40)),
        ("2024-02-29 23:59", datetime(2024, 2, 29, 23, 59)),
        ("2026-01-01 00:00", datetime(2026, 1, 1, 0, 0)),
    ],
)
def test_parse_stamp_local_forms(text: str, expected: datetime) -> None:
    assert parse_stamp(text) == expected


def test_date_alone_means_midnight() -> None:
    value = parse_stamp("2026-03-14")
    assert (value.hour, value.minute, value.second) == (0, 0, 0)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "yesterday",
        "14/03/2026",
        "2026-3-14",
        "2026-03-14 15:4",
        "2026-03-14 1540",
        "2026-13-01",
        "2026-02-30 10:00",
        "2025-02-29",
        "2026-03-14 24:00",
        "2026-03-14 15:60",
        "2026-03-14 15:40 +01",
        "2026-03-14 15:40 CET",
        "2026-03-14 15:40 extra",
        "2026-03-14x15:40",
        "0001-01-01 00:30+01:00",  # converting would leave the calendar: still a ValueError
        "9999-12-31 23:59-05:00",
    ],
)
def test_parse_stamp_refuses_non_stamps(text: str) -> None:
    with pytest.raises(ValueError):
        parse_stamp(text)


@pytest.mark.parametrize(
    ("zone", "text", "expected"),
    [
        # Paris is UTC+1 in March (DST starts 2026-03-29), UTC+2 in July.
        ("Europe/Paris", "2026-03-14 15:40Z", datetime(2026, 3, 14, 16, 40)),
        ("Europe/Paris", "2026-03-14T15:40:00Z", datetime(2026, 3, 14, 16, 40)),
        ("Europe/Paris", "2026-07-01 12:00Z", datetime(2026, 7, 1, 14, 0)),
        ("Europe/Paris", "2026-03-14 15:40+01:00", datetime(2026, 3, 14, 15, 40)),
        ("Europe/Paris", "2026-03-14 15:40+0100", datetime(2026, 3, 14, 15, 40)),
        ("Europe/Paris", "2026-03-14 23:30-05:00", datetime(2026, 3, 15, 5, 30)),
        ("UTC", "2026-03-14T15:40+01:00", datetime(2026, 3, 14, 14, 40)),
        ("UTC", "2026-03-14 00:10+01:00", datetime(2026, 3, 13, 23, 10)),
        # New York switched to EDT (UTC-4) on 2026-03-08.
        ("America/New_York", "2026-03-14T15:40:00+01:00", datetime(2026, 3, 14, 10, 40)),
        ("America/New_York", "2026-03-01 15:40Z", datetime(2026, 3, 1, 10, 40)),
    ],
)
def test_offsets_convert_to_local_time(
    local_tz: Callable[[str], None], zone: str, text: str, expected: datetime
) -> None:
    local_tz(zone)
    assert parse_stamp(text) == expected


def test_stamp_without_offset_is_not_shifted_by_tz(local_tz: Callable[[str], None]) -> None:
    local_tz("Asia/Tokyo")
    assert parse_stamp("2026-03-14 15:40") == datetime(2026, 3, 14, 15, 40)


def test_tz_is_honoured_not_cached(local_tz: Callable[[str], None]) -> None:
    local_tz("UTC")
    in_utc = parse_stamp("2026-03-14 12:00Z")
    local_tz("Asia/Tokyo")
    in_tokyo = parse_stamp("2026-03-14 12:00Z")
    assert in_utc == datetime(2026, 3, 14, 12, 0)
    assert in_tokyo == datetime(2026, 3, 14, 21, 0)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (datetime(2026, 3, 14, 9, 5), "2026-03-14 09:05"),
        (datetime(2026, 3, 14, 9, 5, 59), "2026-03-14 09:05"),  # minutes: seconds dropped
        (datetime(2026, 3, 14), "2026-03-14 00:00"),
    ],
)
def test_format_stamp_writes_local_minutes(value: datetime, text: str) -> None:
    assert format_stamp(value) == text


@given(st.datetimes(min_value=datetime(1900, 1, 1), max_value=datetime(9000, 12, 31, 23, 59)))
def test_stamp_round_trip_is_exact_to_the_minute(value: datetime) -> None:
    assert parse_stamp(format_stamp(value)) == value.replace(second=0, microsecond=0)


# -- intervals -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("45m", timedelta(minutes=45)),
        ("2h", timedelta(hours=2)),
        ("1d", timedelta(days=1)),
        ("2w", timedelta(weeks=2)),
        ("1h30m", timedelta(hours=1, minutes=30)),
        ("2d12h", timedelta(days=2, hours=12)),
        ("1w1d1h1m", timedelta(weeks=1, days=1, hours=1, minutes=1)),
        (" 15m ", timedelta(minutes=15)),
        ("0m", timedelta(0)),
    ],
)
def test_parse_interval(text: str, expected: timedelta) -> None:
    assert parse_interval(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "45",
        "m",
        "h2",
        "1.25h",
        ".5h",
        "-5m",
        "+5m",
        "1h30",
        "2hours",
        "1y",
        "1 fortnight",
        "two hours",
        "1h-30m",
        "99999999999999w",  # too large for any clock: refused, not a crash
    ],
)
def test_parse_interval_refuses_non_intervals(text: str) -> None:
    with pytest.raises(ValueError):
        parse_interval(text)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (timedelta(minutes=45), "45m"),
        (timedelta(hours=2), "2h"),
        (timedelta(days=1, hours=2, minutes=30), "1d2h30m"),
        (timedelta(weeks=2), "14d"),
        (timedelta(0), "0m"),
    ],
)
def test_format_interval(value: timedelta, text: str) -> None:
    assert format_interval(value) == text


@given(st.integers(min_value=1, max_value=520 * 7 * 24 * 60))  # up to the longest, 520w
def test_interval_round_trip(minutes: int) -> None:
    value = timedelta(minutes=minutes)
    assert parse_interval(format_interval(value)) == value


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (timedelta(0), FLOOR),
        (timedelta(minutes=10), FLOOR),
        (timedelta(minutes=14, seconds=59), FLOOR),
        (timedelta(minutes=15), timedelta(minutes=15)),
        (timedelta(minutes=16), timedelta(minutes=16)),
        (timedelta(hours=2), timedelta(hours=2)),
    ],
)
def test_floor_is_15_minutes(value: timedelta, expected: timedelta) -> None:
    assert timedelta(minutes=15) == FLOOR
    assert floored(value) == expected


def test_parse_when() -> None:
    assert parse_when("+2h", NOW) == NOW + timedelta(hours=2)
    assert parse_when(" +1h30m ", NOW) == NOW + timedelta(hours=1, minutes=30)
    assert parse_when("2026-03-15 09:00", NOW) == datetime(2026, 3, 15, 9, 0)
    with pytest.raises(ValueError):
        parse_when("+soon", NOW)
    with pytest.raises(ValueError):
        parse_when("someday", NOW)


@pytest.mark.parametrize(
    "text", ["soon", "someday", "+3x", "+", "14/03/2026", "2026-03-14 9am 10am"]
)
def test_a_bad_when_names_every_accepted_form(text: str) -> None:
    """Issue 12, item 8: the bad ``--due``/``--until`` error lists what would have worked."""
    with pytest.raises(ValueError) as caught:
        parse_when(text, NOW)
    message = str(caught.value)
    assert repr(text.strip()) in message
    for form in ("+3d", "2026-03-14 09:00", "2026-03-14T09:00", "+01:00", "ISO 8601"):
        assert form in message, (form, message)


def test_every_form_the_error_names_is_accepted() -> None:
    assert parse_when("+3d", NOW) == NOW + 3 * D
    assert parse_when("2026-03-14 09:00", NOW) == datetime(2026, 3, 14, 9, 0)
    assert parse_when("2026-03-14T09:00", NOW) == datetime(2026, 3, 14, 9, 0)
    assert parse_when("2026-03-14", NOW) == datetime(2026, 3, 14, 0, 0)
    assert parse_when("2026-03-14T09:00+01:00", NOW) == parse_stamp("2026-03-14 09:00+01:00")


def test_an_out_of_range_when_still_says_its_bounds() -> None:
    with pytest.raises(OutOfRange, match="1900 to 9000"):
        parse_when("1899-01-01", NOW)


# -- bounds (docs/clock.md "Bounds") ------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "1899-12-31 23:59",
        "9001-01-01 00:00",
        "9999-12-31 23:59",
        "0001-01-01",
        "9999-12-31T23:59:59",
        "9000-12-31 23:30-05:00",  # a real date, but after the last year in local time
    ],
)
def test_stamps_outside_the_years_1900_to_9000_are_out_of_range(
    local_tz: Callable[[str], None], text: str
) -> None:
    local_tz("UTC")
    with pytest.raises(OutOfRange, match="must fall in the years 1900 to 9000"):
        parse_stamp(text)


def test_intervals_longer_than_520_weeks_are_out_of_range() -> None:
    assert parse_interval("520w") == LONGEST == timedelta(weeks=520)
    assert parse_interval("3640d") == LONGEST
    for text in ("521w", "3641d", "520w1s", "87361h", "99999999999999w"):
        with pytest.raises(OutOfRange, match="at most 520w"):
            parse_interval(text)


def test_stamps_read_to_the_edges_of_their_years_and_no_further() -> None:
    assert parse_stamp("1900-01-01 00:00") == datetime(1900, 1, 1)
    assert parse_stamp("9000-12-31 23:59") == LATEST
    assert parse_stamp("9000-12-31T23:59:59") == LATEST.replace(second=59)
    near_the_end = datetime(9000, 12, 31, 23, 0)
    assert parse_when("+59m", near_the_end) == LATEST
    with pytest.raises(OutOfRange, match="1900 to 9000"):
        parse_when("+1h", near_the_end)
    with pytest.raises(OutOfRange):
        parse_when("+1h", datetime.max)  # never an OverflowError
    with pytest.raises(OutOfRange):
        parse_when("1899-01-01", NOW)


# -- human ages (SPEC §4 rules) ---------------------------------------------------

S = timedelta(seconds=1)
M = timedelta(minutes=1)
H = timedelta(hours=1)
D = timedelta(days=1)


@pytest.mark.parametrize(
    ("then", "now", "expected"),
    [
        # under a minute: just now
        (NOW, NOW, "just now"),
        (NOW - 59 * S, NOW, "just now"),
        (NOW - 60 * S, NOW, "1m ago"),
        # under 90 minutes: minutes
        (NOW - 25 * M, NOW, "25m ago"),
        (NOW - 89 * M - 59 * S, NOW, "89m ago"),
        (NOW - 90 * M, NOW, "1h ago"),
        # under 12 hours: hours
        (NOW - 3 * H, NOW, "3h ago"),
        (NOW - 11 * H - 59 * M, NOW, "11h ago"),
        # under 12 hours wins over "yesterday" (08:00, then 22:00 the day before)
        (datetime(2026, 3, 13, 22, 0), datetime(2026, 3, 14, 8, 0), "10h ago"),
        # 12 hours or more, but earlier the same day: still hours
        (datetime(2026, 3, 14, 0, 30), datetime(2026, 3, 14, 23, 0), "22h ago"),
        (datetime(2026, 3, 14, 0, 0), datetime(2026, 3, 14, 23, 59), "23h ago"),
        # the previous calendar day, 12h or more ago: yesterday
        (datetime(2026, 3, 13, 23, 59), NOW, "yesterday"),
        (datetime(2026, 3, 13, 0, 0), NOW, "yesterday"),
        (datetime(2026, 3, 13, 0, 0), datetime(2026, 3, 14, 23, 59), "yesterday"),
        # otherwise whole days
        (datetime(2026, 3, 12, 23, 59), NOW, "2d ago"),
        (NOW - 9 * D, NOW, "9d ago"),
        (NOW - 60 * D, NOW, "60d ago"),
        # above 60 days: whole calendar months (at least 2), then whole years
        (NOW - 61 * D, NOW, "2mo ago"),
        (datetime(2025, 12, 14, 12, 0), NOW, "3mo ago"),
        (datetime(2025, 12, 15, 12, 0), NOW, "2mo ago"),  # a day short of 3 months
        (datetime(2025, 3, 15, 12, 0), NOW, "11mo ago"),
        (datetime(2025, 3, 14, 12, 0), NOW, "1y ago"),
        (NOW - 400 * D, NOW, "1y ago"),
        (datetime(2024, 3, 14, 0, 0), NOW, "2y ago"),
        (datetime(2016, 3, 15, 0, 0), NOW, "9y ago"),
    ],
)
def test_human_age_past(then: datetime, now: datetime, expected: str) -> None:
    assert human_age(then, now) == expected


@pytest.mark.parametrize(
    ("then", "now", "expected"),
    [
        (NOW + 30 * S, NOW, "just now"),
        (NOW + 59 * S, NOW, "just now"),
        (NOW + 60 * S, NOW, "in 1m"),
        (NOW + 25 * M, NOW, "in 25m"),
        (NOW + 89 * M, NOW, "in 89m"),
        (NOW + 90 * M, NOW, "in 1h"),
        (NOW + 2 * H, NOW, "in 2h"),
        (NOW + 11 * H, NOW, "in 11h"),
        # later the same day, 12h or more ahead: hours
        (datetime(2026, 3, 14, 23, 30), datetime(2026, 3, 14, 0, 30), "in 23h"),
        # the next calendar day: tomorrow
        (datetime(2026, 3, 15, 0, 1), NOW, "tomorrow"),
        (datetime(2026, 3, 15, 23, 59), NOW, "tomorrow"),
        # under 12h wins over tomorrow
        (datetime(2026, 3, 15, 7, 0), datetime(2026, 3, 14, 22, 0), "in 9h"),
        (datetime(2026, 3, 16, 0, 0), NOW, "in 2d"),
        (NOW + 3 * D, NOW, "in 3d"),
        (NOW + 60 * D, NOW, "in 60d"),
        (NOW + 61 * D, NOW, "in 2mo"),
        (datetime(2026, 6, 14, 12, 0), NOW, "in 3mo"),
        (datetime(2027, 3, 14, 0, 0), NOW, "in 1y"),
        (datetime(2028, 3, 14, 12, 0), NOW, "in 2y"),
    ],
)
def test_human_age_future(then: datetime, now: datetime, expected: str) -> None:
    assert human_age(then, now) == expected


@given(
    st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1)),
    st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1)),
)
def test_human_age_past_and_future_mirror(a: datetime, b: datetime) -> None:
    """The same gap reads the same forwards and backwards, only the words differ."""
    past = human_age(min(a, b), max(a, b))
    future = human_age(max(a, b), min(a, b))
    words = {"yesterday": "tomorrow", "just now": "just now"}
    if past in words:
        assert future == words[past]
    else:
        assert past.endswith(" ago")
        assert future == "in " + past.removesuffix(" ago")
