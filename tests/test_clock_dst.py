"""The clock across DST (issue 31, items 2 and 2b).

``m`` and ``h`` are elapsed time; ``d``, ``w``, ``mo`` and the calendar rules
of ``every:`` keep the wall-clock time; every instant the clock reports is a
real one (none inside a gap, none an hour off). Checked in two zones whose
changes fall on different days and hours: New York (02:00 → 03:00 on
2026-03-08, 02:00 → 01:00 on 2026-11-01) and Berlin (02:00 → 03:00 on
2026-03-29, 03:00 → 02:00 on 2026-10-25).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from conftest import INTENTIONS, REMINDERS, MakeTree
from rouse.core import clock, recurrence, timefmt
from rouse.core.timefmt import iso_stamp, parse_stamp
from rouse.core.tree import walk
from rouse.records import lifecycle
from rouse.records.scaffold import init

Zone = Callable[[str], None]
NY, BERLIN = "America/New_York", "Europe/Berlin"
SHIP = f"{INTENTIONS}/ship"


def hours_between(early: datetime, late: datetime) -> float:
    return (late.timestamp() - early.timestamp()) / 3600


def intention(make_tree: MakeTree, **fields: str) -> Path:
    lines = "".join(f"{k.replace('_', '-')}: {v}\n" for k, v in fields.items())
    return make_tree({f"{SHIP}/intention.md": f"---\ncloses-when: x\n{lines}---\n"})


def decide(root: Path, now: datetime, rel: str = SHIP) -> clock.Decision:
    tree = walk(root)
    return clock.evaluate(tree, tree.records[rel], now)


# -- elapsed intervals ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("zone", "moved", "written", "hours"),
    [
        (NY, "2026-03-08 01:39", "3h", 3),  # across spring forward
        (NY, "2026-03-08 01:50", "15m", 0.25),  # into the gap
        (NY, "2026-11-01 00:30", "3h", 3),  # across fall back
        (BERLIN, "2026-03-29 01:39", "3h", 3),
        (BERLIN, "2026-10-25 01:30", "2h", 2),
    ],
)
def test_minutes_and_hours_are_elapsed_time(
    make_tree: MakeTree, local_tz: Zone, zone: str, moved: str, written: str, hours: float
) -> None:
    local_tz(zone)
    root = intention(make_tree, last_moved=moved, stale_after=written)
    decision = decide(root, parse_stamp(moved) + timedelta(minutes=1))
    assert decision.stale_at is not None
    assert hours_between(parse_stamp(moved), decision.stale_at) == hours
    assert decision.due_at == decision.stale_at
    # and it is due from that real instant on, not before
    just_before = datetime.fromtimestamp(decision.stale_at.timestamp() - 60)
    assert decide(root, just_before).reason is None
    assert decide(root, decision.stale_at).reason == "stale"


@pytest.mark.parametrize(
    ("zone", "moved", "expected"),
    [
        (NY, "2026-03-07 09:00", "2026-03-08 09:00"),
        (NY, "2026-10-31 09:00", "2026-11-01 09:00"),
        (BERLIN, "2026-03-28 09:00", "2026-03-29 09:00"),
        (BERLIN, "2026-10-24 09:00", "2026-10-25 09:00"),
    ],
)
def test_days_keep_the_wall_clock_time(
    make_tree: MakeTree, local_tz: Zone, zone: str, moved: str, expected: str
) -> None:
    local_tz(zone)
    root = intention(make_tree, opened=moved, last_moved=moved, stale_after="1d", review_every="1w")
    decision = decide(root, parse_stamp(moved))
    assert decision.stale_at == parse_stamp(expected)
    assert decision.review_at == parse_stamp(moved) + timedelta(weeks=1)
    assert hours_between(parse_stamp(moved), decision.stale_at) != 24  # the day was not 24h


def test_a_one_day_snooze_ends_at_the_same_wall_clock_time(tmp_path: Path, local_tz: Zone) -> None:
    local_tz(NY)
    root = tmp_path / "memory"
    now = parse_stamp("2026-03-07 09:00")
    init(root, now, examples=False)
    write_ship = root / SHIP / "intention.md"
    write_ship.parent.mkdir(parents=True)
    write_ship.write_text("---\ncloses-when: x\n---\n")
    lifecycle.snooze(root, "ship", now, duration="1d")
    assert "snoozed-until: 2026-03-08 09:00" in write_ship.read_text()
    lifecycle.snooze(root, "ship", now, duration="2h")  # elapsed: still 11:00 on a plain day
    assert "snoozed-until: 2026-03-07 11:00" in write_ship.read_text()
    night = parse_stamp("2026-03-08 01:30")
    lifecycle.snooze(root, "ship", night, duration="1h")  # 01:30 EST + 1h = 03:30 EDT
    assert "snoozed-until: 2026-03-08 03:30" in write_ship.read_text()


# -- real instants ----------------------------------------------------------------------


@pytest.mark.parametrize(("zone", "day"), [(NY, "2026-03-08"), (BERLIN, "2026-03-29")])
def test_a_wall_clock_time_in_the_gap_is_read_as_the_instant_after_it(
    local_tz: Zone, zone: str, day: str
) -> None:
    local_tz(zone)
    assert parse_stamp(f"{day} 02:30") == parse_stamp(f"{day} 03:30")
    assert timefmt.real(datetime.fromisoformat(f"{day} 02:05")) == datetime.fromisoformat(
        f"{day} 03:05"
    )
    assert iso_stamp(datetime.fromisoformat(f"{day} 02:05")).endswith(
        "03:05:00" + ("-04:00" if zone == NY else "+02:00")
    )


def test_a_reminder_due_in_the_gap_is_due_after_it(make_tree: MakeTree, local_tz: Zone) -> None:
    local_tz(NY)
    rel = f"{REMINDERS}/call"
    root = make_tree({f"{rel}/reminder.md": "---\ndue: 2026-03-08 02:30\n---\n"})
    assert decide(root, parse_stamp("2026-03-08 03:10"), rel).reason is None
    decision = decide(root, parse_stamp("2026-03-08 03:30"), rel)
    assert decision.reason == "due"
    assert iso_stamp(decision.due_at) == "2026-03-08T03:30:00-04:00"


@pytest.mark.parametrize(
    ("zone", "text", "after", "expected"),
    [
        (NY, "daily 02:30", "2026-03-07 12:00", "2026-03-08T03:30:00-04:00"),
        (NY, "12h", "2026-03-07 21:00", "2026-03-08T10:00:00-04:00"),
        (NY, "1d", "2026-03-07 09:00", "2026-03-08T09:00:00-04:00"),
        (BERLIN, "12h", "2026-10-24 21:00", "2026-10-25T08:00:00+01:00"),
        (BERLIN, "weekdays 02:30", "2026-03-27 12:00", "2026-03-30T02:30:00+02:00"),
    ],
)
def test_a_series_occurrence_is_a_real_instant(
    local_tz: Zone, zone: str, text: str, after: str, expected: str
) -> None:
    """A calendar rule keeps its wall-clock time (moved past a gap); ``h`` steps are elapsed."""
    local_tz(zone)
    anchor = parse_stamp(after)
    rule = recurrence.parse_every(text)
    found = recurrence.next_after(rule, anchor, anchor)
    assert iso_stamp(found) == expected


def rouse(tree: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROUSE_")}
    env.update(TZ=NY, ROUSE_STAMP_KEY=str(tree.parent / "no-key"))
    return subprocess.run(
        [sys.executable, "-m", "rouse", "--memory", str(tree), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_explain_and_due_report_the_real_instant_after_the_gap(tmp_path: Path) -> None:
    """Issue 31 item 2's reproduction: 15m from 01:50 on a New York spring-forward night."""
    root = tmp_path / "memory"
    init(root, datetime(2026, 3, 1, 12, 0), examples=False)
    made = rouse(root, "new", "intention", "q", "--set", "closes-when=x", "--set",
                 "stale-after=15m", "--now", "2026-03-08 01:50")  # fmt: skip
    assert made.returncode == 0, made.stderr
    explained = rouse(root, "explain", "q", "--now", "2026-03-08 01:51")
    assert "next comes due 2026-03-08 03:05" in explained.stdout, explained.stdout
    early = json.loads(rouse(root, "due", "--json", "--now", "2026-03-08 03:00").stdout)
    assert (
        not [r for r in early["due"] if r["path"].endswith("/q")]
        if isinstance(early, dict)
        else not [r for r in early if r["path"].endswith("/q")]
    )
    late = json.loads(rouse(root, "due", "--json", "--now", "2026-03-08 03:10").stdout)
    rows = late["due"] if isinstance(late, dict) else late
    (row,) = [r for r in rows if r["path"].endswith("/q")]
    assert row["due_at"] == "2026-03-08T03:05:00-04:00"
