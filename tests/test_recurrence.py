"""Repeating reminders' rules (issue 19 item 2, SPEC §3.2a): parsing ``every:``,
the next occurrence, the occurrences missed, across DST both ways.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rouse.core.recurrence import EVERY_FORMS, count_between, next_after, parse_every
from rouse.core.timefmt import real

JAN31 = datetime(2026, 1, 31, 9, 0)


def test_one_month_is_the_same_day_clamped_and_never_drifts() -> None:
    rule = parse_every("1mo")
    seen = []
    now = JAN31
    for _ in range(4):
        now = next_after(rule, JAN31, now)
        assert now is not None
        seen.append(now)
    assert seen == [
        datetime(2026, 2, 28, 9, 0),
        datetime(2026, 3, 31, 9, 0),
        datetime(2026, 4, 30, 9, 0),
        datetime(2026, 5, 31, 9, 0),
    ]


@pytest.mark.parametrize(
    ("text", "now", "expected"),
    [
        ("1d", datetime(2026, 3, 14, 12, 0), datetime(2026, 3, 15, 9, 0)),
        ("2w", datetime(2026, 3, 14, 12, 0), datetime(2026, 3, 28, 9, 0)),
        ("12h", datetime(2026, 3, 14, 12, 0), datetime(2026, 3, 14, 21, 0)),
        ("daily 07:00", datetime(2026, 3, 14, 12, 0), datetime(2026, 3, 15, 7, 0)),
        ("daily 07:00", datetime(2026, 3, 14, 6, 0), datetime(2026, 3, 14, 7, 0)),
        ("weekdays 09:00", datetime(2026, 3, 14, 12, 0), datetime(2026, 3, 16, 9, 0)),
        ("weekdays 09:00", datetime(2026, 3, 16, 9, 0), datetime(2026, 3, 17, 9, 0)),
        ("weekends 10:00", datetime(2026, 3, 16, 9, 0), datetime(2026, 3, 21, 10, 0)),
        ("mon,thu 18:30", datetime(2026, 3, 16, 19, 0), datetime(2026, 3, 19, 18, 30)),
        ("Mon, Thu 6:30pm", datetime(2026, 3, 16, 18, 0), datetime(2026, 3, 16, 18, 30)),
        ("monthly 1 09:00", datetime(2026, 3, 14, 12, 0), datetime(2026, 4, 1, 9, 0)),
        ("monthly 31 09:00", datetime(2026, 3, 31, 10, 0), datetime(2026, 4, 30, 9, 0)),
    ],
)
def test_next_occurrence(text: str, now: datetime, expected: datetime) -> None:
    # interval series start Saturday 2026-03-14 09:00
    assert next_after(parse_every(text), datetime(2026, 3, 14, 9, 0), now) == expected


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("often", "not a repeat"),
        ("daily", "needs a time"),
        ("weekdays 25:00", "not a time of day"),
        ("monthly 32 09:00", "day of the month"),
        ("monthly 09:00", "day of the month"),
        ("mon,mon 09:00", "twice"),
        ("0d", "longer than nothing"),
        ("0mo", "longer than nothing"),
        ("121mo", "at most"),
        ("1mo2d", "not a repeat"),
    ],
)
def test_bad_rules_are_refused_with_the_forms(text: str, why: str) -> None:
    with pytest.raises(ValueError) as caught:
        parse_every(text)
    assert why in str(caught.value)
    assert EVERY_FORMS in str(caught.value)


def test_a_short_interval_is_floored() -> None:
    rule = parse_every("5m")
    start = datetime(2026, 3, 14, 9, 0)
    assert next_after(rule, start, start) == start + timedelta(minutes=15)


def test_missed_occurrences_are_counted() -> None:
    rule = parse_every("daily 07:00")
    due = datetime(2026, 3, 10, 7, 0)
    assert count_between(rule, due, due, datetime(2026, 3, 14, 12, 0)) == 4
    assert count_between(rule, due, due, datetime(2026, 3, 10, 8, 0)) == 0
    weekdays = parse_every("weekdays 09:00")
    # Fri 13th 09:00 to Tue 17th 09:00: Mon 16th and Tue 17th
    friday = datetime(2026, 3, 13, 9, 0)
    assert count_between(weekdays, friday, friday, datetime(2026, 3, 17, 9, 0)) == 2
    month = parse_every("1mo")
    assert count_between(month, JAN31, JAN31, datetime(2026, 5, 1, 0, 0)) == 3


def test_a_series_past_the_last_stamp_year_ends() -> None:
    assert (
        next_after(parse_every("1w"), datetime(9000, 12, 28, 9, 0), datetime(9000, 12, 29)) is None
    )
    assert (
        next_after(
            parse_every("daily 09:00"), datetime(9000, 12, 31, 9, 0), datetime(9000, 12, 31, 10)
        )
        is None
    )


# -- properties ---------------------------------------------------------------------

instants = st.datetimes(min_value=datetime(1990, 1, 1), max_value=datetime(2080, 12, 31)).map(
    lambda d: d.replace(second=0, microsecond=0)
)
DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
day_sets = st.sets(st.sampled_from(DAYS), min_size=1).map(
    lambda s: ",".join(sorted(s, key=DAYS.index))
)
clock_times = st.tuples(st.integers(0, 23), st.integers(0, 59)).map(
    lambda t: f"{t[0]:02d}:{t[1]:02d}"
)
calendar_rules = st.one_of(
    clock_times.map(lambda t: f"daily {t}"),
    clock_times.map(lambda t: f"weekdays {t}"),
    st.tuples(day_sets, clock_times).map(lambda p: f"{p[0]} {p[1]}"),
    st.tuples(st.integers(1, 31), clock_times).map(lambda p: f"monthly {p[0]} {p[1]}"),
)
interval_rules = st.one_of(
    st.integers(1, 48).map(lambda n: f"{n}h"),
    st.integers(1, 40).map(lambda n: f"{n}d"),
    st.integers(1, 10).map(lambda n: f"{n}w"),
    st.integers(1, 24).map(lambda n: f"{n}mo"),
)


def _valid_days(text: str, start: date, end: date) -> list[date]:
    """Every date in [start, end] on which a calendar rule has an occurrence (by brute force)."""
    words = text.split()
    out = []
    day = start
    while day <= end:
        if words[0] == "daily":
            ok = True
        elif words[0] == "weekdays":
            ok = day.weekday() < 5
        elif words[0] == "monthly":
            wanted = int(words[1])
            last = (
                (day.replace(day=28) + timedelta(days=4)).replace(day=1) - timedelta(days=1)
            ).day
            ok = day.day == min(wanted, last)
        else:
            ok = DAYS[day.weekday()] in words[0].split(",")
        if ok:
            out.append(day)
        day += timedelta(days=1)
    return out


def _at(text: str) -> tuple[int, int]:
    hour, minute = text.split()[-1].split(":")
    return int(hour), int(minute)


@given(text=calendar_rules, now=instants)
def test_a_calendar_rule_is_strictly_after_now_and_skips_no_valid_day(
    text: str, now: datetime
) -> None:
    nxt = next_after(parse_every(text), now, now)
    assert nxt is not None and nxt > now
    assert (nxt.hour, nxt.minute) == _at(text)
    hour, minute = _at(text)
    for day in _valid_days(text, now.date(), nxt.date()):
        candidate = datetime.combine(day, datetime.min.time()).replace(hour=hour, minute=minute)
        assert candidate <= now or candidate >= nxt, (text, now, nxt, candidate)
    assert nxt.date() in _valid_days(text, nxt.date(), nxt.date())


@given(text=interval_rules, first=instants, gap=st.integers(0, 5_000_000))
def test_an_interval_is_strictly_after_now_on_the_series_grid(
    text: str, first: datetime, gap: int
) -> None:
    rule = parse_every(text)
    now = first + timedelta(minutes=gap)
    nxt = next_after(rule, first, now)
    assert nxt is not None and nxt > now
    # on the grid counted from the first due: it is the first grid point after now
    before = count_between(rule, first, first, now)
    assert count_between(rule, first, first, nxt) == before + 1
    if text.endswith(("d", "w", "mo")):
        assert (nxt.hour, nxt.minute) == (first.hour, first.minute)
    if text.endswith("mo"):
        assert nxt.day == first.day or nxt.day < first.day  # clamped, never later


@given(
    text=st.one_of(calendar_rules, interval_rules),
    first=instants,
    a=st.integers(0, 400_000),
    b=st.integers(0, 400_000),
)
def test_counts_add_up(text: str, first: datetime, a: int, b: int) -> None:
    rule = parse_every(text)
    mid = first + timedelta(minutes=a)
    end = mid + timedelta(minutes=b)
    assert count_between(rule, first, first, end) == count_between(
        rule, first, first, mid
    ) + count_between(rule, first, mid, end)


@pytest.mark.parametrize("zone", ["Europe/Berlin", "America/New_York"])
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=calendar_rules, minutes=st.integers(-3 * 24 * 60, 3 * 24 * 60))
def test_rules_keep_their_wall_clock_time_across_dst_both_ways(
    local_tz: Callable[[str], None], zone: str, text: str, minutes: int
) -> None:
    local_tz(zone)
    # instants around the spring and autumn changes of 2026, as the wall clock reads them
    for change in (
        datetime(2026, 3, 29, 1, 0),
        datetime(2026, 10, 25, 1, 0),
        datetime(2026, 3, 8, 7, 0),
        datetime(2026, 11, 1, 6, 0),
    ):
        now = (
            (change.replace(tzinfo=UTC) + timedelta(minutes=minutes))
            .astimezone()
            .replace(tzinfo=None)
        )
        nxt = next_after(parse_every(text), now, now)
        assert nxt is not None and nxt > now
        # the rule's wall-clock time, as a real instant: a time the change skips
        # (02:00 on a spring-forward night) is the same time after the gap
        hour, minute = _at(text)
        assert nxt == real(nxt.replace(hour=hour, minute=minute))
