"""A task's notices reach a fleet's ledger (issue 20, item 3), on a real PostgreSQL.

``rouse checkpoint`` queues its wake in the clone's own SQLite ledger (the
outbox: no DSN, no driver in the run); each sweeper on the fleet's ledger
(``rouse sweep --ledger DSN``, run as a user runs it), leader or standby,
carries its clone's outbox there before it plans, and the leader delivers it.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import INTENTIONS, write_tree
from rouse.core.identity import ensure_tree_id

TASK_DIR = f"{INTENTIONS}/ship/notes"
FILES = {
    f"{INTENTIONS}/ship/intention.md": "---\nstatus: open\n---\nShip version 2.\n",
    f"{TASK_DIR}/task.md": (
        "---\nstatus: running\nattempts: 1\nworker: elsewhere pid 1\n---\nWrite the notes.\n"
    ),
}

pytestmark = pytest.mark.usefixtures("no_stamp_key")


@pytest.fixture
def no_stamp_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROUSE_STAMP_KEY", str(tmp_path / "no-key"))
    monkeypatch.delenv("ROUSE_NOW", raising=False)
    monkeypatch.delenv("ROUSE_LEDGER", raising=False)


def rouse(root: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rouse", "--memory", str(root), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def rows(dsn: str, sql: str, *params: object) -> list[dict[str, object]]:
    import psycopg
    from psycopg.rows import dict_row

    with psycopg.connect(dsn, autocommit=True, row_factory=dict_row) as conn:
        found = conn.execute(sql, params)
        return list(found.fetchall()) if found.description else []


def outbox(root: Path) -> list[tuple[str, str, str]]:
    with sqlite3.connect(root / ".rouse/ledger.sqlite3") as db:
        return list(db.execute("SELECT reason, sink, state FROM outbox ORDER BY made_at"))


def nudged(root: Path, text: str) -> list[Path]:
    return [p for p in (root / ".rouse/nudges").glob("*.md") if text in p.read_text()]


def git(*args: str, cwd: Path) -> None:
    subprocess.run(
        ["git", "-c", "user.name=rouse", "-c", "user.email=rouse@example.org", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
    )


def test_a_checkpoint_is_delivered_by_a_sweeper_on_a_postgresql_ledger(
    tmp_path: Path, pg_dsn: str
) -> None:
    root = write_tree(tmp_path / "memory", FILES)
    said = rouse(root, "checkpoint", TASK_DIR, "emailed the vendor")
    assert said.returncode == 0, said.stderr
    assert outbox(root) == [("checkpoint", "notice", "held")]
    time.sleep(1.1)  # the tick's nudge file is named to the second, after the checkpoint
    swept = rouse(root, "sweep", "--once", "--ledger", pg_dsn)
    assert swept.returncode == 0, swept.stderr
    (row,) = rows(pg_dsn, "SELECT reason, state, receipt FROM outbox WHERE reason = 'checkpoint'")
    assert row["state"] == "delivered" and str(row["receipt"]).startswith(".rouse/nudges/")
    (nudge,) = nudged(root, "emailed the vendor")
    assert str(row["receipt"]).split(" ", 1)[0] == str(nudge.relative_to(root))
    # the outbox's copy is the delivered one now (the pack shows its nudge file)
    assert outbox(root) == [("checkpoint", "fleet", "delivered")]
    again = rouse(root, "sweep", "--once", "--ledger", pg_dsn)
    assert again.returncode == 0, again.stderr
    assert len(rows(pg_dsn, "SELECT id FROM outbox WHERE reason = 'checkpoint'")) == 1
    assert len(nudged(root, "emailed the vendor")) == 1  # delivered once


def test_a_standby_clone_carries_its_checkpoint_to_the_leader_which_delivers_it(
    tmp_path: Path, pg_dsn: str
) -> None:
    origin = write_tree(tmp_path / "origin", FILES)
    ensure_tree_id(origin)
    git("init", "-q", cwd=origin)
    git("add", "-A", cwd=origin)
    git("commit", "-q", "-m", "the tree", cwd=origin)
    a, b = tmp_path / "a", tmp_path / "b"
    for clone in (a, b):
        git("clone", "-q", str(origin), str(clone), cwd=tmp_path)
    log = (tmp_path / "leader.log").open("w")
    sweep = ["sweep", "--ledger", pg_dsn, "--every", "1", "--lease", "30"]
    leader = subprocess.Popen(
        [sys.executable, "-m", "rouse", "--memory", str(a), *sweep],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 60
        while "leads this tree" not in (tmp_path / "leader.log").read_text():
            assert time.monotonic() < deadline and leader.poll() is None, "it never led"
            time.sleep(0.1)
        said = rouse(b, "checkpoint", TASK_DIR, "emailed the vendor")
        assert said.returncode == 0, said.stderr
        standby = rouse(b, "sweep", "--once", "--ledger", pg_dsn, "-v")
        assert standby.returncode == 0, standby.stderr
        assert "stands by" in standby.stdout + standby.stderr
        assert outbox(b)[0][2] == "withdrawn"  # carried: the fleet's ledger has it
        while not nudged(a, "emailed the vendor"):
            assert time.monotonic() < deadline and leader.poll() is None, "never delivered"
            time.sleep(0.2)
        (row,) = rows(pg_dsn, "SELECT state FROM outbox WHERE reason = 'checkpoint'")
        assert row["state"] == "delivered"
        assert not nudged(b, "emailed the vendor")  # the leader's clone has the nudge file
    finally:
        leader.send_signal(signal.SIGTERM)
        leader.wait(timeout=60)
        log.close()
    assert os.path.exists(a / ".rouse/ledger.sqlite3")
