"""``rouse status --check`` (issue 13, item 6): exit 1 when a human should look.

Real ``rouse`` processes, every clock decision under ``--now``: a sweeper
late by more than 3 intervals (or that never ticked), a wake given up, a run
budget spent each make it exit 1 with one line per reason on stderr; all
well, it prints nothing and exits 0 (for any monitor or cron to call).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

INIT = "2026-03-14 12:00"  # the tree is laid then: nothing is due at that instant
LATER = "2099-01-02 09:00"  # both example records are due by then


def rouse(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROUSE_")}
    return subprocess.run(
        [sys.executable, "-m", "rouse", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    done = rouse("init", "--no-key", str(tmp_path), "--now", INIT)
    assert done.returncode == 0, done.stderr
    return tmp_path / "memory"


def check(tree: Path, now: str, *more: str) -> subprocess.CompletedProcess[str]:
    return rouse("--memory", str(tree), "status", "--check", "--now", now, *more)


def tick(tree: Path, now: str, *more: str) -> None:
    rouse("--memory", str(tree), "sweep", "--once", "--now", now, *more)


def test_a_sweeper_that_ticked_on_time_passes_silently(tree: Path) -> None:
    tick(tree, "2026-03-14 12:00", "--every", "60")
    done = check(tree, "2026-03-14 12:03")  # exactly 3 intervals: not late yet
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def test_a_sweeper_late_by_more_than_three_intervals_fails(tree: Path) -> None:
    tick(tree, "2026-03-14 12:00", "--every", "60")
    done = check(tree, "2026-03-14 12:04")
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.splitlines() == [
        "rouse status --check: the sweeper is late: its last tick was at 2026-03-14 12:00, "
        "more than 3 intervals of 60s before 2026-03-14 12:04"
    ]


def test_now_decides_lateness_not_the_wall_clock(tree: Path) -> None:
    tick(tree, "2099-01-01 00:00", "--every", "300")
    assert check(tree, "2099-01-01 00:14").returncode == 0  # the wall clock is years before
    assert check(tree, "2099-01-01 00:16").returncode == 1


def test_an_unknown_interval_allows_an_hour(tree: Path) -> None:
    tick(tree, "2026-03-14 12:00")  # --once without --every records no interval
    assert check(tree, "2026-03-14 13:00").returncode == 0
    done = check(tree, "2026-03-14 13:01")
    assert done.returncode == 1
    assert "its interval is unknown: give `sweep --once` --every S" in done.stderr


def test_a_tree_no_sweeper_ever_ticked_fails(tree: Path) -> None:
    done = check(tree, INIT)
    assert done.returncode == 1
    assert (
        done.stderr
        == f"rouse status --check: no sweeper has ticked {tree} yet: start `rouse sweep`\n"
    )


def test_a_wake_given_up_fails_with_its_own_line(tree: Path) -> None:
    fail = ("--sink", "exec", "--", "false")
    tick(tree, LATER, "--every", "3600", *fail)
    tick(tree, "2099-01-03 09:30", "--every", "3600", *fail)  # past 24h of failures: given up
    given = rouse("--memory", str(tree), "status", "--json", "--now", "2099-01-03 09:30")
    assert json.loads(given.stdout)["ledger"]["given_up"] == 2
    done = check(tree, "2099-01-03 10:00")
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        "rouse status --check: 2 wake(s) given up after 24h of failed delivery in the last day "
        "(written as nudge files instead): `rouse log`"
    ]
    late = check(tree, "2099-01-05 10:00")  # a day on: late, and the give-ups have aged out
    assert late.returncode == 1
    assert [line.split(":", 2)[1] for line in late.stderr.splitlines()] == [" the sweeper is late"]


def test_check_json_says_the_same(tree: Path) -> None:
    tick(tree, "2026-03-14 12:00", "--every", "60")
    ok = check(tree, "2026-03-14 12:01", "--json")
    assert (ok.returncode, json.loads(ok.stdout)) == (0, {"ok": True, "problems": []})
    late = check(tree, "2026-03-14 13:00", "--json")
    assert late.returncode == 1
    data = json.loads(late.stdout)
    assert data["ok"] is False
    assert len(data["problems"]) == 1
    assert data["problems"][0].startswith("the sweeper is late")


def test_status_without_check_is_unchanged(tree: Path) -> None:
    done = rouse("--memory", str(tree), "status", "--now", INIT)
    assert done.returncode == 0
    assert "last tick: never" in done.stdout


def test_a_spent_run_budget_fails_until_it_refills(tree: Path) -> None:
    run = ("--every", "3600", "--run", "exec", "--max-runs", "1/day", "--", "true")
    tick(tree, "2099-01-02 09:00", *run)  # the day's one run (a real process)
    made = rouse(
        "--memory", str(tree), "remind", "call-bob", "--due", "2099-01-02 10:00",
        "--now", "2099-01-02 09:01", "--body", "call bob",
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    tick(tree, "2099-01-02 10:00", *run)  # a second digest: over budget, it waits
    done = check(tree, "2099-01-02 10:30")
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        "rouse status --check: the run budget (1/day) is spent: wakes wait for agent runs "
        "until 2099-01-03 09:00 (raise --max-runs, or answer them by hand)"
    ]
    refilled = check(tree, "2099-01-03 09:00")  # the budget is back (the sweeper is late now)
    assert "run budget" not in refilled.stderr
