"""A ledger an older rouse made is migrated in place at first use: nothing owed is lost,
nothing delivered is owed again."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from ledger_history import PG_LEDGER_1, SQLITE_STEPS, old_sqlite_ledger
from pg_server import PgServer
from rouse.state import sweeper
from rouse.sweep.ledger import Ledger
from rouse.sweep.ledger.schema import SCHEMA_VERSION
from rouse.sweep.wake import Wake

MOVED = "2026-03-14 11:00"


def _wake(wake_id: str) -> Wake:
    path = f"inventory/reminders/{wake_id}"
    return Wake(
        id=wake_id,
        record=f"reminder/{wake_id}",
        type="reminder",
        slug=wake_id,
        path=path,
        file=f"{path}/reminder.md",
        reason="due",
        nudge=1,
        last_moved=MOVED,
        at="2026-03-14 12:00:00",
        text=f"reminder/{wake_id} — due just now\nat: {path}\n",
    )


#: a wake in each state a ledger keeps: (id, state, stamped)
ROWS = [
    ("w-pending", "pending", 0),
    ("w-held", "held", 0),
    ("w-delivered", "delivered", 1),
    ("w-unstamped", "delivered", 0),
    ("w-given-up", "given_up", 1),
    ("w-withdrawn", "withdrawn", 1),
]
TELLS = [
    ("t-pending", "pending"),
    ("t-waiting", "waiting"),
    ("t-done", "delivered"),
    ("t-gone", "given_up"),
]


Run = Callable[[str, tuple[object, ...]], object]


def _insert(run: Run, table: str, row: dict[str, object], tree: str | None) -> None:
    if tree is not None:  # (a fleet's rows name their tree; a tree's own file, not before 6)
        row = {"tree": tree, **row}
    marks = ",".join("?" * len(row))
    run(f"INSERT INTO {table} ({', '.join(row)}) VALUES ({marks})", tuple(row.values()))


def _fill(run: Run, version: int, tree: str | None = None) -> None:
    """Rows of every kind the ledger at ``version`` holds, in every state, as it wrote them."""
    for wake_id, state, stamped in ROWS:
        made = _wake(wake_id)
        row: dict[str, object] = {
            "id": made.id,
            "record": made.record,
            "path": made.path,
            "file": made.file,
            "reason": made.reason,
            "nudge": made.nudge,
            "made_at": made.at,
            "wake": json.dumps(made.as_dict()),
            "sink": "file",
            "state": state,
            "attempts": 1,
            "first_failure": "2026-03-14 11:50:00" if state == "pending" else None,
            "last_attempt": "2026-03-14 11:50:00",
            "next_attempt": "2026-03-14 11:51:00" if state == "pending" else None,
            "stamped": stamped,
            "receipt": f"nudges/{wake_id}.md" if state in ("delivered", "given_up") else None,
        }
        if version >= 6:  # (as rouse wrote it since: a column of its own)
            row["last_moved"] = MOVED
        _insert(run, "wakes", row, tree)
    if version >= 2:
        digest = {"id": "d1", "made_at": "2026-03-14 12:00:00", "wakes": '["w-pending"]'}
        _insert(run, "digests", {**digest, "sink": "file", "state": "failed"}, tree)
    if version >= 3:
        for level, state in ((1, "pending"), (2, "delivered")):
            message = _wake(f"e{level}")
            row = {
                "id": message.id,
                "record": message.record,
                "path": "inventory/reminders/w-delivered",
                "last_moved": MOVED,
                "level": level,
                "wake_id": "w-delivered",
                "made_at": "2026-03-14 12:00:00",
                "message": json.dumps(message.as_dict()),
                "sink": "stdout",
                "state": state,
            }
            _insert(run, "escalations", row, tree)
    if version >= 4:
        row = {"id": "r1", "digest": "d1", "wakes": "[]", "command": "agent"}
        _insert(run, "runs", {**row, "started": "2026-03-14 12:00:00", "state": "ended"}, tree)
    if version >= 7:
        for tell_id, state in TELLS:
            row = {
                "id": tell_id,
                "record": "reminder/r",
                "path": "inventory/reminders/r",
                "type": "reminder",
                "slug": "r",
                "source": "tell",
                "text": "hello",
                "made_at": "2026-03-14 12:00:00",
                "state": state,
                "receipt": "nudges/t.md" if state == "given_up" else None,
            }
            _insert(run, "tells", row, tree)


def _columns(db: sqlite3.Connection) -> dict[str, set[str]]:
    tables = [row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    return {t: {row[1] for row in db.execute(f"PRAGMA table_info({t})")} for t in tables}


def _check_owed(book: Ledger, version: int) -> None:
    """Nothing owed is lost, nothing delivered is owed again."""
    owed = [entry.id for entry in book.open_entries()]
    assert owed == ["w-held", "w-pending", "w-unstamped"]
    pending = book.get("w-pending")
    assert pending is not None and pending.wake == _wake("w-pending")
    assert pending.next_attempt is not None and pending.first_failure is not None
    assert book.counts() == {"pending": 1, "held": 1, "delivered": 2, "given_up": 1, "withdrawn": 1}
    # the streak reads each wake's last-moved (a column since version 6)
    assert book.streak("inventory/reminders/w-delivered", MOVED)[1] == 1
    if version >= 3:
        states = [(row["level"], row["state"]) for row in book.escalations()]
        assert states == [(1, "pending"), (2, "delivered")]
        assert [m.id for m, _ in book.pending_escalations()] == ["e1"]
        assert book.escalated("inventory/reminders/w-delivered", MOVED, 2)
    if version >= 2:
        assert book.digest_of(["w-pending"]) is None  # (no wake named a digest then)


@pytest.mark.parametrize("version", range(1, len(SQLITE_STEPS) + 1))
def test_an_older_ledger_is_migrated_in_place_with_nothing_lost(
    tmp_path: Path, version: int
) -> None:
    old = old_sqlite_ledger(tmp_path / "old" / sweeper.LEDGER, version)
    _fill(old.execute, version)
    old.close()
    with Ledger(tmp_path / "fresh") as fresh:
        made = _columns(fresh.db)  # type: ignore[arg-type]
    with Ledger(tmp_path / "old") as book:
        assert book.db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert _columns(book.db) == made  # type: ignore[arg-type]
        _check_owed(book, version)
        owed_tells = [row["id"] for row in book.owed_tells()]
        assert owed_tells == (["t-pending", "t-waiting"] if version >= 7 else [])
    # the read-only counts (status, the pack) read the migrated ledger alike
    assert sweeper.counts(tmp_path / "old")["given_up"] == 1
    assert sweeper.undelivered_counts(tmp_path / "old") == {
        "pending": 1,
        "held": 1,
        "given_up": 1,
    }
    if version >= 7:
        assert sweeper.tell_counts(tmp_path / "old")["given_up"] == 1


def _pg_columns(dsn: str) -> set[tuple[str, ...]]:
    import psycopg

    with psycopg.connect(dsn) as db:
        found = db.execute(
            "SELECT table_name, column_name, data_type, is_nullable FROM "
            "information_schema.columns WHERE table_schema = 'public'"
        ).fetchall()
    return {tuple(row) for row in found}


def test_a_fleet_database_made_before_the_column_spec_reads_alike(pg_server: PgServer) -> None:
    """A fleet database whose ledger tables were written by hand (before the column
    spec) has the columns a new one is made with, and its rows read as they did."""
    import psycopg

    from rouse.fleet.pg_ledger import PgLedger

    old, fresh = pg_server.new_database(), pg_server.new_database()
    with psycopg.connect(old, autocommit=True) as db:
        for statement in PG_LEDGER_1.split(";"):
            if statement.strip():
                db.execute(statement)
        db.execute("CREATE TABLE rouse_schema (version INTEGER NOT NULL)")
        db.execute("INSERT INTO rouse_schema VALUES (1)")
        _fill(lambda sql, values: db.execute(sql.replace("?", "%s"), values), 6, "t" * 32)
    PgLedger(fresh, "t" * 32).close()
    with PgLedger(old, "t" * 32) as book:
        _check_owed(book, 6)
    assert _pg_columns(old) == _pg_columns(fresh)


def test_a_fleet_database_gains_the_columns_the_spec_added_since_it_was_made(
    pg_server: PgServer,
) -> None:
    """A column new in the spec reaches a fleet's database as it reaches a SQLite ledger:
    made from the spec at first use (no hand-written step), its rows untouched."""
    import psycopg

    from rouse.fleet.pg_ledger import PgLedger

    old, fresh = pg_server.new_database(), pg_server.new_database()
    PgLedger(old, "t" * 32).close()
    with psycopg.connect(old, autocommit=True) as db:  # as made before these columns were
        db.execute("ALTER TABLE escalations DROP COLUMN error, DROP COLUMN receipt")
        db.execute("ALTER TABLE wakes DROP COLUMN digest, DROP COLUMN claim_until")
        db.execute("UPDATE rouse_schema SET version = 3")
        _fill(lambda sql, values: db.execute(sql.replace("?", "%s"), values), 6, "t" * 32)
    PgLedger(fresh, "t" * 32).close()
    with PgLedger(old, "t" * 32) as book:
        _check_owed(book, 6)
    assert _pg_columns(old) == _pg_columns(fresh)
