"""What ``rouse sweep`` says, and ``rouse log --json`` beside ``rouse log`` (issue 12, items 6-7).

Real processes on a tree laid by ``rouse init``: an idle ``--once`` (a cron
line every five minutes) prints nothing unless ``-v``; ``-q`` keeps only the
errors; the long-running loop says once, at start, what it is doing.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import pytest

INIT = "2026-03-14 12:00"  # the tree is laid then: nothing is due at that instant
LATER = "2099-01-02 09:00"  # both example records are due by then


def environment(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROUSE_")}
    env.update(extra or {})
    return env


def rouse(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rouse", *args],
        env=environment(env),
        capture_output=True,
        text=True,
        timeout=60,
    )


def wait_for(check: Callable[[], bool], timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            pytest.fail("timed out waiting")
        time.sleep(0.02)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    done = rouse("init", "--no-key", str(tmp_path), "--now", INIT)
    assert done.returncode == 0, done.stderr
    return tmp_path / "memory"


def sweep(
    tree: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return rouse("--memory", str(tree), "sweep", *args, env=env)


def nudges(tree: Path) -> list[Path]:
    return sorted((tree / ".rouse/nudges").glob("*.md"))


# -- --once -------------------------------------------------------------------


def test_an_idle_tick_prints_nothing(tree: Path) -> None:
    done = sweep(tree, "--once", "--now", INIT)
    assert done.returncode == 0
    assert (done.stdout, done.stderr) == ("", "")
    again = sweep(tree, "--once", "--now", INIT, "--every", "300")  # the documented cron line
    assert again.returncode == 0 and (again.stdout, again.stderr) == ("", "")


def test_verbose_says_what_an_idle_tick_did(tree: Path) -> None:
    done = sweep(tree, "--once", "--now", INIT, "-v")
    assert done.returncode == 0 and done.stdout == ""
    assert "tick: 0 delivered, 0 failed, 0 held, 0 given up, 0 owed" in done.stderr
    assert str(tree) in done.stderr  # and what it is sweeping
    long = sweep(tree, "--once", "--now", INIT, "--verbose")
    assert long.returncode == 0 and "tick: 0 delivered" in long.stderr


def test_a_tick_that_delivers_says_so(tree: Path) -> None:
    done = sweep(tree, "--once", "--now", LATER)
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert sum(" delivered " in line and " via file: " in line for line in lines) == 2
    assert "tick: 2 delivered" in lines[-1]
    assert done.stdout == ""


def test_silent_keeps_quiet_about_deliveries(tree: Path) -> None:
    for flag in ("-q", "--silent"):
        root = tree.parent.parent / flag.strip("-")
        assert rouse("init", "--no-key", str(root), "--now", INIT).returncode == 0
        done = sweep(root / "memory", "--once", "--now", LATER, flag)
        assert done.returncode == 0
        assert (done.stdout, done.stderr) == ("", "")
        assert len(nudges(root / "memory")) == 2  # it did its work all the same


def test_silent_still_prints_errors_and_keeps_the_exit_code(tree: Path) -> None:
    done = sweep(tree, "--once", "--now", LATER, "-q", "--sink", "exec", "--", "false")
    assert done.returncode == 1  # undelivered, as without -q
    lines = done.stderr.splitlines()
    assert sum("not delivered" in line and "false exited 1" in line for line in lines) == 2
    assert any("2 owed" in line for line in lines)  # exit 1 always comes with its reason
    assert not any(" delivered " in line and "not delivered" not in line for line in lines)


def test_an_owed_wake_not_retried_yet_still_says_why_it_exits_1(tree: Path) -> None:
    first = sweep(tree, "--once", "--now", LATER, "--sink", "exec", "--", "false")
    assert first.returncode == 1
    # 10 seconds later the backoff (1 minute) has not run out: nothing is attempted
    done = sweep(tree, "--once", "--now", "2099-01-02 09:00:10", "--sink", "exec", "--", "false")
    assert done.returncode == 1
    assert "not delivered" not in done.stderr
    assert "2 owed" in done.stderr and len(done.stderr.splitlines()) == 1


def test_verbose_and_silent_together_are_refused(tree: Path) -> None:
    done = sweep(tree, "--once", "-v", "-q")
    assert done.returncode == 2
    assert "not allowed with" in done.stderr


def test_quiet_hours_keep_their_own_option(tree: Path) -> None:
    done = sweep(tree, "--once", "--now", INIT, "--quiet", "22:00-07:00")
    assert done.returncode == 0 and done.stderr == ""
    bad = sweep(tree, "--once", "--quiet", "-q")
    assert bad.returncode == 2  # -q is not a value of --quiet


# -- the long-running loop ---------------------------------------------------------


def loop(tree: Path, tmp_path: Path, *args: str) -> tuple[subprocess.Popen[str], Callable[[], str]]:
    err = tmp_path / "stderr.txt"
    with err.open("w") as sink:
        process = subprocess.Popen(
            [sys.executable, "-m", "rouse", "--memory", str(tree), "sweep", *args],
            env=environment(),
            stdout=subprocess.DEVNULL,
            stderr=sink,
            text=True,
        )
    return process, err.read_text


def stop(process: subprocess.Popen[str]) -> int:
    process.send_signal(signal.SIGTERM)
    return process.wait(timeout=20)


def ticked(tree: Path) -> bool:
    return (tree / ".rouse/sweep.json").is_file()


def test_the_loop_says_once_at_start_what_it_is_doing(tree: Path, tmp_path: Path) -> None:
    process, stderr = loop(
        tree, tmp_path, "--every", "3600", "--now", INIT, "--quiet", "22:00-07:00",
        "--sink", "exec", "--", "true",
    )  # fmt: skip
    try:
        wait_for(lambda: ticked(tree) and stderr() != "")
    finally:
        assert stop(process) == 0
    lines = stderr().splitlines()
    assert len(lines) == 1, lines  # the start, and nothing for an idle tick
    (start,) = lines
    assert start.startswith("rouse sweep: ")
    for part in (
        str(tree),
        "every 3600s",
        "exec true",
        "quiet hours 22:00-07:00",
        f"pid {process.pid}",
    ):
        assert part in start, (part, start)


def test_the_loop_names_the_default_sink_and_no_quiet_hours(tree: Path, tmp_path: Path) -> None:
    process, stderr = loop(tree, tmp_path, "--now", INIT)
    try:
        wait_for(lambda: ticked(tree) and stderr() != "")
    finally:
        assert stop(process) == 0
    (start,) = stderr().splitlines()
    assert "every 60s" in start and "file (.rouse/nudges/)" in start
    assert "no quiet hours" in start


def test_the_silent_loop_says_nothing(tree: Path, tmp_path: Path) -> None:
    process, stderr = loop(tree, tmp_path, "--every", "3600", "--now", LATER, "-q")
    try:
        wait_for(lambda: ticked(tree) and len(nudges(tree)) == 2)
    finally:
        assert stop(process) == 0
    assert stderr() == ""


def test_the_verbose_loop_reports_every_tick(tree: Path, tmp_path: Path) -> None:
    process, stderr = loop(tree, tmp_path, "--every", "3600", "--now", INIT, "-v")
    try:
        wait_for(lambda: "tick: 0 delivered" in stderr())
    finally:
        assert stop(process) == 0
    assert "every 3600s" in stderr().splitlines()[0]


# -- log --json agrees with log (issue 12, item 7) -----------------------------------


def test_log_json_agrees_with_log(tree: Path) -> None:
    zone = {"TZ": "Asia/Tokyo"}  # +09:00 all year: the offset is visible
    assert sweep(tree, "--once", "--now", LATER, env=zone).returncode == 0
    failing = sweep(
        tree, "--once", "--now", "2099-01-03 09:00", "--sink", "exec", "--", "false", env=zone
    )
    assert failing.returncode == 1
    text = rouse("--memory", str(tree), "log", env=zone)
    data = json.loads(rouse("--memory", str(tree), "log", "--json", env=zone).stdout)
    rows = [line for line in text.stdout.splitlines() if not line.startswith(" ")]
    assert len(rows) == len(data) >= 3
    states = {entry["state"] for entry in data}
    assert states >= {"delivered", "pending"}
    for row, entry in zip(rows, data, strict=True):
        assert set(entry) >= {"id", "record", "reason", "nudge", "sink", "state", "attempts"}
        assert all(key == key.lower() and "-" not in key for key in entry)  # snake_case
        made = datetime.fromisoformat(entry["made_at"])
        assert made.utcoffset() is not None and entry["made_at"].endswith("+09:00")
        assert row.startswith(made.strftime("%Y-%m-%d %H:%M:%S") + "  " + entry["state"] + " ")
        assert f" id {entry['id']}" in row and f"  {entry['record']}  " in row
        assert f"attempts {entry['attempts']}" in row and f"via {entry['sink']}" in row
        last = entry["finished"] or entry["last_attempt"]
        assert last is not None
        assert f"last {datetime.fromisoformat(last):%Y-%m-%d %H:%M:%S}" in row
        for key in ("last_attempt", "finished", "next_attempt"):
            if entry[key] is not None:
                assert datetime.fromisoformat(entry[key]).utcoffset() is not None, key
    pending = [entry for entry in data if entry["state"] == "pending"]
    assert pending and all(entry["next_attempt"] and entry["error"] for entry in pending)
    for entry in pending:
        at = datetime.fromisoformat(entry["next_attempt"])
        assert f"next attempt at or after {at:%Y-%m-%d %H:%M:%S}" in text.stdout
        assert f"error: {entry['error']}" in text.stdout
