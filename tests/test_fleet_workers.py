"""A fleet notices a missing delivery worker (issue 18, item 6), on a real PostgreSQL.

Real ``rouse sweep --plan-only`` and ``rouse deliver`` processes: each worker
keeps a row in ``workers`` (host, pid, the trees it serves, last seen, last
claim) and marks it stopped when it exits; ``rouse fleet status`` lists them;
``rouse status --check`` (with ``--ledger DSN``, and without it from the
``.rouse/fleet.json`` the fleet sweeper wrote) and the pack report wakes
queued for workers longer than 5 minutes with no live worker serving the tree.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from conftest import INTENTIONS, NOW, REMINDERS, ago, stamp, write_tree
from rouse.core.identity import ensure_tree_id
from rouse.fleet import workers
from rouse.fleet.pg import PgDatabase
from rouse.state import sweeper as sweepstate

ROUSE = [sys.executable, "-m", "rouse"]
FILES = {
    f"{INTENTIONS}/ship/intention.md": f"""
        ---
        status: open
        opened: {stamp(ago(days=2))}
        last-moved: {stamp(ago(hours=3))}
        closes-when: the release is tagged
        ---
        Ship the release.
        """,
    f"{REMINDERS}/call/reminder.md": f"""
        ---
        status: pending
        due: {stamp(ago(minutes=30))}
        ---
        Call the printer.
        """,
}
QUEUED = "wake(s) queued for delivery workers since 2026-03-14 12:00"
OTHER_TREE = "0" * 32


def environment(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROUSE_")}
    env["ROUSE_STAMP_KEY"] = "/nonexistent/rouse-test-key"
    env.update(extra)
    return env


def rouse(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*ROUSE, *args], env=env or environment(), capture_output=True, text=True, timeout=60
    )


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = write_tree(tmp_path / "memory", FILES)
    ensure_tree_id(root)
    return root


def tree_id(root: Path) -> str:
    return (root / ".rouse-tree").read_text().split()[1]


def plan_only(root: Path, dsn: str, at: datetime) -> None:
    done = rouse(
        "--memory", str(root), "--now", stamp(at), "sweep", "--once", "--plan-only", "--ledger", dsn
    )
    assert done.returncode == 0, done.stderr


def check(root: Path, at: datetime, *options: str) -> subprocess.CompletedProcess[str]:
    return rouse("--memory", str(root), "--now", stamp(at), "status", "--check", *options)


def pack(root: Path, at: datetime) -> list[str]:
    done = rouse("--memory", str(root), "--now", stamp(at), "pack", "--json")
    assert done.returncode == 0, done.stderr
    found: list[str] = json.loads(done.stdout)["warnings"]
    return found


def wait_for(condition: Callable[[], bool], what: str, limit: float = 30.0) -> None:
    """Poll ``condition`` until it holds (bounded)."""
    deadline = time.monotonic() + limit
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


@pytest.fixture
def started() -> Iterator[list[subprocess.Popen[str]]]:
    """Workers started by a test: stopped (SIGTERM, then SIGKILL) whatever happens."""
    procs: list[subprocess.Popen[str]] = []
    yield procs
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if proc.stderr is not None:
            proc.stderr.close()


def start_worker(dsn: str, *options: str) -> subprocess.Popen[str]:
    """A long-running worker, quiet from 11:00 to 14:00 on a clock started at NOW (12:00):
    live, but claiming nothing, as a worker in its quiet hours is."""
    return subprocess.Popen(
        [
            *ROUSE,
            "--now",
            stamp(NOW),
            "deliver",
            "--ledger",
            dsn,
            "--sink",
            "stdout",
            "--every",
            "0.2",
            "--quiet",
            "11:00-14:00",
            *options,
        ],
        env=environment(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def rows(dsn: str) -> dict[int, workers.WorkerRow]:
    db = PgDatabase(dsn)
    try:
        return {row.pid: row for row in workers.listed(db)}
    finally:
        db.close()


def live(dsn: str, proc: subprocess.Popen[str]) -> bool:
    found = rows(dsn).get(proc.pid)
    return found is not None and found.live


def test_wakes_queued_with_no_worker_fail_the_check_and_warn_in_the_pack(
    tree: Path, pg_dsn: str
) -> None:
    plan_only(tree, pg_dsn, NOW)
    note = json.loads((tree / ".rouse" / "fleet.json").read_text())
    assert note["queued"] == 2 and note["live_workers"] == 0 and note["worker_seen"] is None

    soon = NOW + timedelta(minutes=4)  # within the bound: nobody is told yet
    assert check(tree, soon).returncode == 0
    assert QUEUED not in check(tree, soon, "--ledger", pg_dsn).stderr
    assert not [w for w in pack(tree, soon) if "queued for delivery workers" in w]

    late = NOW + timedelta(minutes=6)
    local = check(tree, late)  # no DSN: from what the fleet sweeper noted at its tick
    assert local.returncode == 1
    (line,) = local.stderr.splitlines()
    assert f"2 {QUEUED} and no worker has ever been seen" in line
    assert "rouse deliver" in line and "--plan-only" in line
    shared = check(tree, late, "--ledger", pg_dsn)  # the database's own view
    assert shared.returncode == 1 and f"2 {QUEUED} and no worker has ever been seen" in (
        shared.stderr
    )
    data = json.loads(check(tree, late, "--json").stdout)
    assert data["ok"] is False and any(QUEUED in p for p in data["problems"])
    (warning,) = [w for w in pack(tree, late) if "queued for delivery workers" in w]
    assert warning.startswith(f"2 {QUEUED}") and "`rouse fleet status`" in warning

    # a later tick without the fleet makes the note moot: nothing is claimed from it
    again = rouse(
        "--memory", str(tree), "--now", stamp(late), "sweep", "--once", "--sink", "stdout"
    )
    assert again.returncode == 0, again.stderr
    assert QUEUED not in check(tree, late).stderr
    assert not [w for w in pack(tree, late) if "queued for delivery workers" in w]


def test_a_live_worker_serving_the_tree_quiets_the_check_one_serving_others_does_not(
    tree: Path, pg_dsn: str, started: list[subprocess.Popen[str]]
) -> None:
    plan_only(tree, pg_dsn, NOW)
    late = NOW + timedelta(minutes=10)
    elsewhere = start_worker(pg_dsn, "--tree", OTHER_TREE)
    started.append(elsewhere)
    wait_for(lambda: live(pg_dsn, elsewhere), "the other tree's worker to report")
    said = check(tree, late, "--ledger", pg_dsn).stderr
    assert f"2 {QUEUED} and no worker has ever been seen" in said  # it does not serve this tree

    everywhere = start_worker(pg_dsn)
    started.append(everywhere)
    wait_for(lambda: live(pg_dsn, everywhere), "the worker to report")
    assert QUEUED not in check(tree, late, "--ledger", pg_dsn).stderr
    plan_only(tree, pg_dsn, late)  # the sweeper's tick notes the live worker for the pack
    assert json.loads((tree / ".rouse" / "fleet.json").read_text())["live_workers"] == 1
    assert QUEUED not in check(tree, late).stderr
    assert not [w for w in pack(tree, late) if "queued for delivery workers" in w]

    status = rouse("fleet", "status", "--ledger", pg_dsn, env=environment())
    assert status.returncode == 0, status.stderr
    lines = status.stdout.splitlines()
    (tree_line,) = [line for line in lines if line.startswith(tree_id(tree)[:8])]
    assert "2 queued for workers since 2026-03-14 12:00, 1 live worker(s)" in tree_line
    host = socket.gethostname()
    for proc, serves in ((everywhere, "every tree"), (elsewhere, f"trees {OTHER_TREE[:8]}")):
        (line,) = [line for line in lines if line.startswith(f"worker {host} pid {proc.pid} ")]
        assert "  live, seen " in line and "no claim yet" in line and f"{serves} via " in line
    (item,) = json.loads(
        rouse("fleet", "status", "--ledger", pg_dsn, "--json", env=environment()).stdout
    )
    assert item["queued_for_workers"]["count"] == 2
    assert datetime.fromisoformat(item["queued_for_workers"]["oldest"]).tzinfo is not None
    (serving,) = item["workers"]
    assert (serving["host"], serving["pid"], serving["trees"]) == (host, everywhere.pid, None)
    assert serving["live"] is True and serving["last_claim"] is None and serving["stopped"] is None

    for proc in (everywhere, elsewhere):  # a clean exit reads stopped at once
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0
    found = rows(pg_dsn)
    assert not found[everywhere.pid].live and found[everywhere.pid].stopped is not None
    lines = rouse("fleet", "status", "--ledger", pg_dsn, env=environment()).stdout.splitlines()
    (line,) = [line for line in lines if f" pid {everywhere.pid} " in line]
    assert "  stopped " in line
    said = check(tree, late, "--ledger", pg_dsn).stderr
    assert f"2 {QUEUED} and no live worker has been seen since " in said


def test_a_worker_reports_its_last_claim_and_a_killed_one_goes_stale(
    tree: Path, pg_dsn: str
) -> None:
    plan_only(tree, pg_dsn, NOW)
    proc = subprocess.Popen(
        [
            *ROUSE,
            "--now",
            stamp(NOW),
            "deliver",
            "--ledger",
            pg_dsn,
            "--once",
            "--sink",
            "exec",
            "--",
            "sh",
            "-c",
            "true",
        ],
        env=environment(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    row = rows(pg_dsn)[proc.pid]
    assert row.last_claim is not None and row.claimed == 2 and row.stopped is not None
    assert row.trees is None and row.host == socket.gethostname() and not row.live
    lines = rouse("fleet", "status", "--ledger", pg_dsn, env=environment()).stdout.splitlines()
    (line,) = [line for line in lines if line.startswith("worker ")]
    assert f"pid {proc.pid}" in line and "last claim " in line and "2 wake(s) claimed" in line
    assert "every tree via exec" in line
    assert QUEUED not in check(tree, NOW + timedelta(minutes=10), "--ledger", pg_dsn).stderr

    # a worker that died without a word reads live until its bound has passed, then gone
    db = PgDatabase(pg_dsn)
    try:
        db.execute(
            "UPDATE workers SET stopped = NULL, last_seen = now() - make_interval(secs => ?) "
            "WHERE pid = ?",
            (row.live_for - 5, proc.pid),
        )
        assert workers.listed(db)[0].live
        db.execute(
            "UPDATE workers SET last_seen = now() - make_interval(secs => ?) WHERE pid = ?",
            (row.live_for + 5, proc.pid),
        )
        assert not workers.listed(db)[0].live
    finally:
        db.close()
    lines = rouse("fleet", "status", "--ledger", pg_dsn, env=environment()).stdout.splitlines()
    assert any(line.startswith("worker ") and "  gone: last seen " in line for line in lines)


def test_a_workers_live_bound_covers_its_polls_and_its_sends() -> None:
    assert workers.live_for(every=5, lease=50) == 80  # a webhook worker: lease + 30 s
    assert workers.live_for(every=60, lease=50) == 180  # polling slowly: 3 polls
    assert workers.live_for(every=1, lease=10) == 60  # never under a minute


def test_a_damaged_or_stale_fleet_note_says_nothing(tree: Path) -> None:
    """``.rouse/fleet.json`` is read through the bounded state reader: anything odd is moot."""
    note = tree / ".rouse" / "fleet.json"
    sweepstate.write_state(tree, NOW, 60.0, "workers")
    late = NOW + timedelta(minutes=10)
    good = {
        "tick": stamp(NOW) + ":00",
        "queued": 3,
        "oldest": stamp(NOW) + ":00",
        "live_workers": 0,
        "worker_seen": None,
    }
    for text in (
        "{not json",
        json.dumps([1, 2]),
        json.dumps({**good, "queued": "3"}),
        json.dumps({**good, "live_workers": -1}),
        json.dumps({**good, "tick": "2026-03-14 11:59:00"}),  # not the last tick's
        json.dumps({**good, "oldest": "yesterday"}),
        "x" * 100_000,
    ):
        note.write_text(text)
        assert QUEUED not in check(tree, late).stderr
        assert not [w for w in pack(tree, late) if "queued" in w]
    note.write_text(json.dumps(good))
    assert f"3 {QUEUED}" in check(tree, late).stderr
    assert [w for w in pack(tree, late) if w.startswith(f"3 {QUEUED}")]
