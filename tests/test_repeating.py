"""Repeating reminders through the clock, the sweeper's stamps, close, remind, due
--until, check and the wake text (issue 19 item 2, SPEC §3.2a), and human times
typed to the verbs (item 3). Clocks are injected (``--now``); nothing waits.

``NOW`` is Saturday 2026-03-14 12:00; the 16th is a Monday.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from conftest import NOW, REMINDERS, MakeTree
from rouse.core import clock, nextdue
from rouse.core.header import set_fields
from rouse.core.tree import walk
from rouse.sweep import wake

R = f"{REMINDERS}/r"


def reminder(**fields: str) -> str:
    lines = "".join(f"{k.replace('_', '-')}: {v}\n" for k, v in fields.items())
    return f"---\n{lines}---\nStand up and stretch.\n"


def deliver(root: Path, now: datetime) -> tuple[clock.Decision, dict[str, str | None]]:
    """Play the sweeper: evaluate, write what delivery writes."""
    tree = walk(root)
    record = tree.records[R]
    decision = clock.evaluate(tree, record, now)
    assert decision.is_due, f"not due at {now}"
    updates = nextdue.stamps_after_delivery(decision, now)
    file = root / record.rel
    file.write_bytes(set_fields(file.read_bytes(), updates))
    return decision, updates


def fields_of(root: Path) -> dict[str, str]:
    return dict(walk(root).records[R].header.fields)


# -- the clock and the sweeper's stamps --------------------------------------------------


def test_without_nag_a_fired_occurrence_re_arms_the_next_one(make_tree: MakeTree) -> None:
    root = make_tree({f"{R}/reminder.md": reminder(due="2026-03-16 09:00", every="weekdays 09:00")})
    decision, updates = deliver(root, datetime(2026, 3, 16, 9, 0))
    assert decision.reason == "due" and decision.missed == 0
    assert updates["status"] == "pending" and updates["due"] == "2026-03-17 09:00"
    assert updates["set"] == "2026-03-16 09:00"
    fields = fields_of(root)
    assert fields["status"] == "pending" and fields["due"] == "2026-03-17 09:00"
    # Friday's occurrence re-arms Monday's
    (root / R / "reminder.md").write_bytes(
        set_fields((root / R / "reminder.md").read_bytes(), {"due": "2026-03-20 09:00"})
    )
    assert deliver(root, datetime(2026, 3, 20, 9, 1))[1]["due"] == "2026-03-23 09:00"


def test_missed_occurrences_collapse_into_one_wake_that_counts_them(make_tree: MakeTree) -> None:
    root = make_tree({f"{R}/reminder.md": reminder(due="2026-03-09 07:00", every="daily 07:00")})
    now = datetime(2026, 3, 14, 12, 0)  # the sweeper was down all week
    decision, updates = deliver(root, now)
    assert decision.missed == 5  # the 10th to the 14th
    assert updates["due"] == "2026-03-15 07:00"  # no catch-up storm: the next after now
    text = wake.first_line(decision, now)
    assert "missed 5 occurrences" in text and "next 2026-03-15 07:00" in text
    assert "every daily 07:00" in text
    assert clock.evaluate(walk(root), walk(root).records[R], now).reason is None


def test_an_interval_series_counts_from_its_first_due(make_tree: MakeTree) -> None:
    root = make_tree({f"{R}/reminder.md": reminder(due="2026-01-31 09:00", every="1mo")})
    seen = []
    for now in (
        datetime(2026, 1, 31, 9, 0),
        datetime(2026, 2, 28, 9, 5),
        datetime(2026, 3, 31, 9, 0),
    ):
        seen.append(deliver(root, now)[1]["due"])
    assert seen == ["2026-02-28 09:00", "2026-03-31 09:00", "2026-04-30 09:00"]
    assert fields_of(root)["set"] == "2026-01-31 09:00"


def test_until_ends_the_series_with_its_last_occurrence(make_tree: MakeTree) -> None:
    root = make_tree(
        {f"{R}/reminder.md": reminder(due="2026-03-19 09:00", every="1d", until="2026-03-20 12:00")}
    )
    assert deliver(root, datetime(2026, 3, 19, 9, 0))[1]["due"] == "2026-03-20 09:00"
    last = deliver(root, datetime(2026, 3, 20, 9, 0))[1]
    assert last["status"] == "fired"  # nothing is left before until: a one-shot's ending
    assert fields_of(root)["status"] == "fired"


def test_expires_ends_the_series_with_a_last_wake(make_tree: MakeTree) -> None:
    root = make_tree(
        {
            f"{R}/reminder.md": reminder(
                due="2026-03-20 09:00", every="1d", expires="2026-03-20 08:00"
            )
        }
    )
    decision, updates = deliver(root, datetime(2026, 3, 20, 9, 0))
    assert decision.reason == "expire" and updates["status"] == "expired"


def test_with_nag_it_nags_as_today(make_tree: MakeTree) -> None:
    root = make_tree(
        {f"{R}/reminder.md": reminder(due="2026-03-16 09:00", every="weekdays 09:00", nag="1h")}
    )
    decision, updates = deliver(root, datetime(2026, 3, 16, 9, 0))
    assert decision.reason == "nag"
    assert updates["due"] == "2026-03-16 10:00" and updates["fires"] == "1"


def test_an_every_that_does_not_parse_falls_back_to_one_shot_and_is_reported(
    make_tree: MakeTree,
) -> None:
    root = make_tree({f"{R}/reminder.md": reminder(due="2026-03-14 09:00", every="fortnightly")})
    decision, updates = deliver(root, NOW)
    assert updates == {"status": "fired", "fired": "2026-03-14 12:00"}
    (problem,) = decision.problems
    assert (
        problem.key == "every"
        and "one-shot" in problem.message
        and "fortnightly" in problem.message
    )


def test_the_next_occurrence_keeps_its_wall_clock_time_across_dst(
    make_tree: MakeTree, local_tz: Callable[[str], None]
) -> None:
    local_tz("Europe/Berlin")  # summer time begins on Sunday 2026-03-29
    root = make_tree({f"{R}/reminder.md": reminder(due="2026-03-28 09:00", every="1d")})
    assert deliver(root, datetime(2026, 3, 28, 9, 0))[1]["due"] == "2026-03-29 09:00"
    assert deliver(root, datetime(2026, 3, 29, 9, 0))[1]["due"] == "2026-03-30 09:00"
    local_tz("America/New_York")  # and back: winter time from Sunday 2026-11-01
    root = make_tree(
        {f"{R}/reminder.md": reminder(due="2026-10-31 09:00", every="weekends 09:00")}, name="ny"
    )
    assert deliver(root, datetime(2026, 10, 31, 9, 0))[1]["due"] == "2026-11-01 09:00"
    assert deliver(root, datetime(2026, 11, 1, 9, 0))[1]["due"] == "2026-11-07 09:00"


def test_forecast_lists_every_occurrence_in_the_window(make_tree: MakeTree) -> None:
    root = make_tree({f"{R}/reminder.md": reminder(due="2026-03-16 09:00", every="mon,thu 18:30")})
    tree = walk(root)
    until = datetime(2026, 3, 27, 0, 0)
    rows = nextdue.forecast(clock.decisions(tree, until), until)
    assert [d.due_at for d in rows if d.record.dir == R] == [
        datetime(2026, 3, 16, 9, 0),
        datetime(2026, 3, 16, 18, 30),
        datetime(2026, 3, 19, 18, 30),
        datetime(2026, 3, 23, 18, 30),
        datetime(2026, 3, 26, 18, 30),
    ]


# -- the verbs, as a user runs them -------------------------------------------------------


def run(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROUSE_")}
    return subprocess.run(
        [sys.executable, "-m", "rouse", "--memory", str(home), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def laid(tmp_path: Path) -> Path:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "rouse",
            "init",
            "--no-key",
            str(tmp_path),
            "--no-examples",
            "--now",
            "2026-03-14 12:00",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return tmp_path / "memory"


def test_remind_every_writes_a_series_and_echoes_its_first_due(tmp_path: Path) -> None:
    home = laid(tmp_path)
    done = run(home, "remind", "standup", "--every", "weekdays 09:00", "--now", "2026-03-14 12:00")
    assert done.returncode == 0, done.stderr
    assert "due 2026-03-16 09:00" in done.stdout
    text = (home / REMINDERS / "standup/reminder.md").read_text()
    assert "every: weekdays 09:00\n" in text and "due: 2026-03-16 09:00\n" in text
    bad = run(home, "remind", "x", "--every", "fortnightly", "--now", "2026-03-14 12:00")
    assert bad.returncode == 2 and "fortnightly" in bad.stderr and "weekdays 09:00" in bad.stderr
    assert not (home / REMINDERS / "x").exists()
    check = run(home, "check", "--now", "2026-03-14 12:00")
    assert check.returncode == 0, check.stdout


def test_remind_takes_human_times_and_echoes_the_instant(tmp_path: Path) -> None:
    home = laid(tmp_path)
    done = run(home, "remind", "call", "--due", "mon 9am", "--now", "2026-03-14 12:00")
    assert done.returncode == 0, done.stderr
    assert "due 2026-03-16 09:00" in done.stdout
    bad = run(home, "remind", "call2", "--due", "next monday", "--now", "2026-03-14 12:00")
    assert bad.returncode == 2 and "ambiguous" in bad.stderr and "tomorrow 09:00" in bad.stderr


def test_snooze_until_monday_and_now_in_human_words(tmp_path: Path) -> None:
    home = laid(tmp_path)
    assert run(home, "remind", "call", "--due", "+1h", "--now", "2026-03-14 12:00").returncode == 0
    done = run(home, "snooze", "call", "--until", "monday", "--now", "2026-03-14 12:00")
    assert done.returncode == 0, done.stderr
    assert "2026-03-16 09:00" in done.stdout
    due = run(home, "due", "--json", "--now", "2026-03-16 09:00")
    assert [item["slug"] for item in json.loads(due.stdout)] == ["call"]
    later = run(home, "due", "--json", "--now", "+10000w")
    assert later.returncode == 2 and "--now" in later.stderr
    human = run(home, "due", "--now", "in 2h")
    assert human.returncode == 0, human.stderr
    assert "--now 'in 2h' is " in human.stderr  # the parsed instant is echoed


def test_done_re_arms_the_next_occurrence_and_series_ends_it(tmp_path: Path) -> None:
    home = laid(tmp_path)
    made = run(
        home,
        "remind",
        "pills",
        "--every",
        "daily 08:00",
        "--nag",
        "30m",
        "--now",
        "2026-03-14 12:00",
    )
    assert made.returncode == 0, made.stderr
    file = home / REMINDERS / "pills/reminder.md"
    swept = run(home, "sweep", "--once", "--sink", "stdout", "--now", "2026-03-15 08:00")
    assert swept.returncode == 0, swept.stderr
    assert "fires: 1\n" in file.read_text()
    done = run(home, "close", "pills", "--done", "--json", "--now", "2026-03-15 08:10")
    assert done.returncode == 0, done.stderr
    facts = json.loads(done.stdout)
    assert facts["status"] == "pending"
    assert facts["next_due"] == datetime(2026, 3, 16, 8, 0).astimezone().isoformat()
    text = file.read_text()
    assert "status: pending\n" in text and "due: 2026-03-16 08:00\n" in text
    assert "fires:" not in text and "fired:" not in text
    assert "set: 2026-03-15 08:00\n" in text  # the series' first due stays
    over = run(home, "close", "pills", "--done", "--series", "--now", "2026-03-15 08:20")
    assert over.returncode == 0, over.stderr
    assert "status: done\n" in file.read_text()
    nothing = run(home, "due", "--json", "--now", "2026-03-20 09:00")
    assert json.loads(nothing.stdout) == []


def test_due_until_forecasts_each_occurrence(tmp_path: Path) -> None:
    home = laid(tmp_path)
    assert (
        run(
            home, "remind", "standup", "--every", "weekdays 09:00", "--now", "2026-03-14 12:00"
        ).returncode
        == 0
    )
    done = run(home, "due", "--until", "fri 18:00", "--now", "2026-03-14 12:00")
    assert done.returncode == 0, done.stderr
    rows = done.stdout.splitlines()
    assert len(rows) == 5 and all("reminder/standup" in row for row in rows)
    assert (
        "5 record(s) due by 2026-03-20 18:00" in done.stderr
        or "due by 2026-03-20 18:00" in done.stderr
    )
    data = json.loads(
        run(
            home, "due", "--json", "--until", "2026-03-17 10:00", "--now", "2026-03-14 12:00"
        ).stdout
    )
    assert [item["due_at"][:16] for item in data] == ["2026-03-16T09:00", "2026-03-17T09:00"]


def test_the_sweeper_missed_count_reaches_the_wake(tmp_path: Path) -> None:
    home = laid(tmp_path)
    assert (
        run(
            home, "remind", "standup", "--every", "daily 09:00", "--now", "2026-03-14 12:00"
        ).returncode
        == 0
    )
    swept = run(home, "sweep", "--once", "--sink", "stdout", "--now", "2026-03-18 10:00")
    assert swept.returncode == 0, swept.stderr
    assert "missed 3 occurrences" in swept.stdout
    text = (home / REMINDERS / "standup/reminder.md").read_text()
    assert "due: 2026-03-19 09:00\n" in text and "status: pending\n" in text
    again = run(home, "sweep", "--once", "--sink", "stdout", "--now", "2026-03-18 10:01")
    assert "missed" not in again.stdout and "standup" not in again.stdout


def test_the_sweepers_own_re_arm_does_not_answer_the_wake(tmp_path: Path) -> None:
    home = laid(tmp_path)
    made = run(
        home,
        "remind",
        "standup",
        "--every",
        "daily 09:00",
        "--body",
        "Stand-up now.",
        "--now",
        "2026-03-14 12:00",
    )
    assert made.returncode == 0, made.stderr
    assert run(home, "sweep", "--once", "--now", "2026-03-15 09:00").returncode == 0
    assert "due: 2026-03-16 09:00\n" in (home / REMINDERS / "standup/reminder.md").read_text()
    pack = run(home, "pack", "--now", "2026-03-15 09:05")
    assert "Stand-up now." in pack.stdout  # still in front of the agent
    assert run(home, "close", "standup", "--done", "--now", "2026-03-15 09:06").returncode == 0
    after = run(home, "pack", "--now", "2026-03-15 09:07")
    assert "Stand-up now." not in after.stdout
    assert "due: 2026-03-16 09:00\n" in (home / REMINDERS / "standup/reminder.md").read_text()


def test_check_reports_an_every_that_does_not_parse_and_a_short_one(make_tree: MakeTree) -> None:
    from rouse.lint.check import check

    root = make_tree(
        {
            f"{R}/reminder.md": reminder(
                due="2026-03-16 09:00", every="fortnightly", opened="2026-03-14 09:00"
            ),
            f"{REMINDERS}/s/reminder.md": reminder(
                due="2026-03-16 09:00", every="5m", until="soon"
            ),
            f"{REMINDERS}/ok/reminder.md": reminder(
                due="2026-03-16 09:00", every="mon,thu 18:30", until="2026-06-01"
            ),
        }
    )
    findings = [f.render() for f in check(walk(root), NOW)]
    bad = [f for f in findings if f"{R}/reminder.md" in f and "every" in f]
    assert bad and "error" in bad[0] and "fortnightly" in bad[0]
    short = [f for f in findings if f"{REMINDERS}/s/" in f]
    assert any("'every: 5m' is floored to 15m" in f for f in short)
    assert any("'until'" in f and "soon" in f for f in short)
    assert not [f for f in findings if f"{REMINDERS}/ok/" in f]


def test_new_set_accepts_every_and_refuses_a_bad_one(tmp_path: Path) -> None:
    home = laid(tmp_path)
    done = run(
        home,
        "new",
        "reminder",
        "gym",
        "--set",
        "due=tue 18:00",
        "--set",
        "every=tue 18:00",
        "--body",
        "Gym.",
        "--now",
        "2026-03-14 12:00",
    )
    assert done.returncode == 0, done.stderr
    text = (home / REMINDERS / "gym/reminder.md").read_text()
    assert "due: 2026-03-17 18:00\n" in text and "every: tue 18:00\n" in text
    bad = run(
        home,
        "new",
        "reminder",
        "gym2",
        "--set",
        "due=+1h",
        "--set",
        "every=sometimes",
        "--now",
        "2026-03-14 12:00",
    )
    assert bad.returncode == 2 and "every" in bad.stderr
