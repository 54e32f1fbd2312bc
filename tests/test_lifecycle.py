"""Changing records (`move`, `snooze`, `close`, `promote`): time only moves forward.

Real `rouse` processes on a tree laid by `rouse init` at 2021-03-14 12:00.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest

INTENTIONS = "entrypoint/beliefs/motivations/intentions"
SHIP = f"{INTENTIONS}/ship-it"
REMINDER = "inventory/reminders/example-renew-the-tls-certificate"
ISO_RE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d$")


def run(
    *args: str, tmp: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("ROUSE_")}
    base["ROUSE_STAMP_KEY"] = str(tmp / "no-key")
    return subprocess.run(
        [sys.executable, "-m", "rouse", *args],
        env={**base, **(env or {})},
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """The example tree, plus `ship-it`: an intention with no children, moved at 12:00."""
    done = run("init", "--no-key", str(tmp_path), "--now", "2021-03-14 12:00", tmp=tmp_path)
    assert done.returncode == 0, done.stderr
    root = tmp_path / "memory"
    made = rouse(root, "new", "intention", "ship-it", "--set", "closes-when=it ships")
    assert made.returncode == 0, made.stderr
    return root


def rouse(
    home: Path, *args: str, now: str = "2021-03-14 12:00", env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return run("--memory", str(home), "--now", now, *args, tmp=home.parent, env=env)


def header_of(path: Path) -> dict[str, str]:
    lines = path.read_text().split("---\n")[1].splitlines()
    return dict(line.split(": ", 1) if ": " in line else (line.rstrip(":"), "") for line in lines)


def ship(home: Path) -> Path:
    return home / SHIP / "intention.md"


# -- snooze -------------------------------------------------------------------


@pytest.mark.parametrize("ref", ["ship-it", "example-renew-the-tls-certificate"])
def test_snooze_until_a_past_instant_is_refused(home: Path, ref: str) -> None:
    files = {
        "ship-it": ship(home),
        "example-renew-the-tls-certificate": home / REMINDER / "reminder.md",
    }
    before = files[ref].read_bytes()
    done = rouse(home, "snooze", ref, "--until", "2021-03-14 12:10", now="2021-03-14 12:30")
    assert done.returncode == 2, done.stdout
    assert "in the past" in done.stderr and "2021-03-14 12:30" in done.stderr
    assert len(done.stderr.splitlines()) == 1 and "Traceback" not in done.stderr
    assert files[ref].read_bytes() == before


def due_records(home: Path, now: str) -> list[str]:
    done = rouse(home, "due", "--json", now=now)
    assert done.returncode == 0, done.stderr
    return [item["record"] for item in json.loads(done.stdout)]


def test_snooze_writes_snoozed_until_and_leaves_last_moved(home: Path) -> None:
    """0.3: a snooze holds the record off; it is not a move (last-moved stays 12:00)."""
    done = rouse(home, "snooze", "ship-it", "--for", "2h", now="2021-03-14 12:30")
    assert done.returncode == 0, done.stderr
    assert "next due: 2021-03-14 14:30" in done.stdout
    head = header_of(ship(home))
    assert head["snoozed-until"] == "2021-03-14 14:30" and head["last-moved"] == "2021-03-14 12:00"
    assert "intention/ship-it" not in due_records(home, "2021-03-14 14:29")
    assert "intention/ship-it" in due_records(home, "2021-03-14 14:30")


def test_snooze_past_the_stale_window_needs_no_force(home: Path) -> None:
    done = rouse(home, "snooze", "ship-it", "--for", "1d", now="2021-03-14 12:30")
    assert done.returncode == 0, done.stderr
    assert "next due: 2021-03-15 12:30" in done.stdout
    assert header_of(ship(home))["last-moved"] == "2021-03-14 12:00"  # never a future one
    assert "intention/ship-it" not in due_records(home, "2021-03-15 12:29")
    assert "intention/ship-it" in due_records(home, "2021-03-15 12:30")


def test_a_move_does_not_cancel_a_snooze_and_clear_does(home: Path) -> None:
    assert rouse(home, "snooze", "ship-it", "--until", "2021-03-20 09:00").returncode == 0
    moved = rouse(home, "move", "ship-it", "--note", "started", now="2021-03-14 13:00")
    assert moved.returncode == 0, moved.stderr
    assert header_of(ship(home))["snoozed-until"] == "2021-03-20 09:00"
    assert "intention/ship-it" not in due_records(home, "2021-03-19 12:00")
    cleared = rouse(home, "snooze", "ship-it", "--clear", now="2021-03-14 13:05")
    assert cleared.returncode == 0, cleared.stderr
    assert "snoozed-until" not in header_of(ship(home))
    assert "intention/ship-it" in due_records(home, "2021-03-19 12:00")
    again = rouse(home, "snooze", "ship-it", "--clear", now="2021-03-14 13:06")
    assert again.returncode == 2 and "not snoozed" in again.stderr


def test_a_snooze_earlier_than_the_natural_due_changes_nothing_due(home: Path) -> None:
    done = rouse(home, "snooze", "ship-it", "--for", "1h", now="2021-03-14 12:30")
    assert done.returncode == 0, done.stderr
    assert "next due: 2021-03-14 14:00" in done.stdout  # its stale-after still rules


def test_a_snooze_once_past_is_inert(home: Path) -> None:
    assert rouse(home, "snooze", "ship-it", "--until", "2021-03-14 13:00").returncode == 0
    assert "intention/ship-it" in due_records(home, "2021-03-14 14:00")  # stale at 14:00


def test_snooze_of_a_reminder_sets_its_due_far_ahead(home: Path) -> None:
    done = rouse(home, "snooze", "example-renew-the-tls-certificate", "--for", "30d")
    assert done.returncode == 0, done.stderr
    assert header_of(home / REMINDER / "reminder.md")["due"] == "2021-04-13 12:00"


def test_snooze_json(home: Path) -> None:
    done = rouse(home, "snooze", "ship-it", "--for", "2h", "--json", now="2021-03-14 12:30",
                 env={"TZ": "Europe/Berlin"})  # fmt: skip
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["record"] == "intention/ship-it" and data["path"] == SHIP
    assert data["file"] == f"{SHIP}/intention.md"
    assert data["until"] == "2021-03-14T14:30:00+01:00"
    assert data["next_due"] == "2021-03-14T14:30:00+01:00"


# -- move ---------------------------------------------------------------------


def test_move_to_an_earlier_time_than_last_moved_is_refused(home: Path) -> None:
    before = ship(home).read_bytes()
    done = rouse(home, "move", "ship-it", now="2021-03-14 11:00")
    assert done.returncode == 2, done.stdout
    assert "last moved at 2021-03-14 12:00" in done.stderr and "--force" in done.stderr
    assert ship(home).read_bytes() == before
    forced = rouse(home, "move", "ship-it", "--force", now="2021-03-14 11:00")
    assert forced.returncode == 0, forced.stderr
    assert header_of(ship(home))["last-moved"] == "2021-03-14 11:00"


def test_move_forward_and_at_the_same_minute_is_fine(home: Path) -> None:
    assert rouse(home, "move", "ship-it").returncode == 0
    assert rouse(home, "move", "ship-it", now="2021-03-14 12:01").returncode == 0
    assert header_of(ship(home))["last-moved"] == "2021-03-14 12:01"


def test_move_json(home: Path) -> None:
    done = rouse(home, "move", "ship-it", "--note", "tagged", "--json", now="2021-03-14 13:00")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["record"] == "intention/ship-it" and data["path"] == SHIP
    assert ISO_RE.match(data["moved_at"])
    moved = datetime.fromisoformat(data["moved_at"]).astimezone().replace(tzinfo=None)
    assert moved == datetime(2021, 3, 14, 13, 0)


# -- close ----------------------------------------------------------------------


def test_close_done_after_dropped_is_refused_unless_forced(home: Path) -> None:
    dropped = rouse(home, "close", "ship-it", "--dropped", "not ours", now="2021-03-14 13:00")
    assert dropped.returncode == 0, dropped.stderr
    before = ship(home).read_bytes()
    done = rouse(home, "close", "ship-it", "--done", now="2021-03-14 14:00")
    assert done.returncode == 2, done.stdout
    assert "already dropped" in done.stderr and "--force" in done.stderr
    assert ship(home).read_bytes() == before
    forced = rouse(home, "close", "ship-it", "--done", "--force", now="2021-03-14 14:00")
    assert forced.returncode == 0, forced.stderr
    assert header_of(ship(home))["status"] == "done"
    lines = ship(home).read_text().splitlines()
    assert lines[-2:] == [
        "- 2021-03-14 13:00: dropped: not ours",
        "- 2021-03-14 14:00: done (was dropped)",
    ]


def test_close_twice_the_same_way_is_refused_too(home: Path) -> None:
    assert rouse(home, "close", "ship-it", "--done").returncode == 0
    again = rouse(home, "close", "ship-it", "--done")
    assert again.returncode == 2 and "already done" in again.stderr


def test_close_a_fired_reminder_is_the_normal_ending(home: Path) -> None:
    reminder = home / "inventory/reminders/call/reminder.md"
    reminder.parent.mkdir()
    reminder.write_text("---\nstatus: fired\ndue: 2021-03-14 09:00\nfired: 2021-03-14 09:00\n---\n")
    done = rouse(home, "close", "call", "--done")
    assert done.returncode == 0, done.stderr
    assert header_of(reminder)["status"] == "done"


def test_close_before_the_last_move_is_refused_unless_forced(home: Path) -> None:
    before = ship(home).read_bytes()
    done = rouse(home, "close", "ship-it", "--done", now="2021-03-14 11:00")
    assert done.returncode == 2 and "last moved at 2021-03-14 12:00" in done.stderr
    assert ship(home).read_bytes() == before


def test_close_json(home: Path) -> None:
    done = rouse(
        home, "close", "ship-it", "--dropped", "not ours", "--json", now="2021-03-14 13:00"
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["record"] == "intention/ship-it" and data["status"] == "dropped"
    assert data["reason"] == "not ours" and data["outcome"] is None
    assert ISO_RE.match(data["ended_at"])


# -- promote ----------------------------------------------------------------------


def test_promote_json(home: Path) -> None:
    done = rouse(home, "promote", "example-try-a-build-cache", "--closes-when", "builds < 5m",
                 "--json", now="2021-03-20 10:00")  # fmt: skip
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    target = f"{INTENTIONS}/example-try-a-build-cache"
    assert data["record"] == "intention/example-try-a-build-cache"
    assert data["path"] == target and data["file"] == f"{target}/intention.md"
    assert data["was"] == "inventory/backlog/example-try-a-build-cache"
    assert ISO_RE.match(data["promoted_at"])


def test_promote_under_a_reminder_is_refused(home: Path) -> None:
    done = rouse(home, "promote", "example-try-a-build-cache", "--closes-when", "x",
                 "--under", "example-renew-the-tls-certificate")  # fmt: skip
    assert done.returncode == 2, done.stdout
    assert "nothing nests under a reminder" in done.stderr
    assert (home / "inventory/backlog/example-try-a-build-cache/backlog.md").is_file()


def test_close_on_a_running_task_is_refused_and_points_to_cancel(home: Path) -> None:
    """Issue 34, item 2: a task whose run is in flight is ended by its worker (or stopped
    by ``rouse cancel``), never by a hand ``close`` the run would then contradict."""
    made = rouse(home, "new", "task", "cp3", "--under", "ship-it")
    assert made.returncode == 0, made.stderr
    task = home / SHIP / "cp3" / "task.md"
    task.write_text(task.read_text().replace("status: pending", "status: running"))
    before = task.read_bytes()
    for ending in (["--done"], ["--failed", "gave up"]):
        done = rouse(home, "close", "cp3", *ending, now="2021-03-14 13:00")
        assert done.returncode == 2, done.stdout
        assert "running" in done.stderr and "rouse cancel" in done.stderr
        assert task.read_bytes() == before
    forced = rouse(home, "close", "cp3", "--done", "--force", now="2021-03-14 13:00")
    assert forced.returncode == 0, forced.stderr  # its worker is gone for good: say so
    assert header_of(task)["status"] == "done"
