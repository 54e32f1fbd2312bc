"""A ledger an older rouse made is migrated in place at first use: nothing owed is lost,
nothing delivered is owed again."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import pytest

from ledger_history import PG_LEDGER_1, PG_LEDGER_5, SQLITE_STEPS, old_sqlite_ledger
from pg_server import PgServer
from rouse.state import sweeper
from rouse.sweep.ledger import Ledger
from rouse.sweep.ledger.sqlite import SCHEMA_VERSION
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
DIGESTS = [("d1", "failed"), ("d2", "delivered"), ("d3", "pending")]
ESCALATIONS = [(1, "pending"), (2, "delivered"), (3, "given_up"), (4, "withdrawn")]
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
        for digest_id, state in DIGESTS:
            digest = {"id": digest_id, "made_at": "2026-03-14 12:00:00", "wakes": '["w-pending"]'}
            _insert(run, "digests", {**digest, "sink": "file", "state": state}, tree)
    if version >= 3:
        for level, state in ESCALATIONS:
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
            if version >= 8 and state == "pending":  # (failing: its tries are kept)
                row["first_failure"] = "2026-03-14 12:01:00"
                row["next_attempt"] = "2026-03-14 12:02:00"
            _insert(run, "escalations", row, tree)
    if version >= 4:
        row = {"id": "r1", "digest": "d1", "wakes": "[]", "command": "agent"}
        _insert(run, "runs", {**row, "started": "2026-03-14 12:00:00", "state": "ended"}, tree)
    if version >= 7 and tree is None:  # (tells: only ever in a tree's own SQLite file)
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


def _check_owed(book: Ledger, version: int, *, tells: bool = True) -> None:
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
        states = [(row["level"], row["state"]) for row in book.messages("escalation")]
        assert states == ESCALATIONS
        ((message, tries),) = book.pending_escalations()
        assert message == _wake("e1")
        if version >= 8:
            assert tries == (datetime(2026, 3, 14, 12, 1), datetime(2026, 3, 14, 12, 2))
        assert book.escalated("inventory/reminders/w-delivered", MOVED, 2)
    if version >= 2:
        assert book.digest_of(["w-pending"]) is None  # (no wake named a digest then)
    # every message kept, with its id and its state (nothing owed lost, none owed again)
    kept = {row["id"]: (row["kind"], row["state"]) for row in book.run(KEPT, book.tree)}
    assert kept == _made(version, tells=tells)


#: every message of the ledger, its kind and state
KEPT = "SELECT id, kind, state FROM outbox WHERE tree = ?"


def _made(version: int, *, tells: bool = True) -> dict[str, tuple[str, str]]:
    """The messages :func:`_fill` made at ``version``: id → (kind, state)."""
    made = {wake_id: ("wake", state) for wake_id, state, _ in ROWS}
    if version >= 2:
        made |= {digest_id: ("digest", state) for digest_id, state in DIGESTS}
    if version >= 3:
        made |= {f"e{level}": ("escalation", state) for level, state in ESCALATIONS}
    if version >= 7 and tells:
        made |= {tell_id: ("tell", state) for tell_id, state in TELLS}
    return made


@pytest.mark.parametrize("version", range(1, len(SQLITE_STEPS) + 1))
def test_an_older_ledger_is_migrated_in_place_with_nothing_lost(
    tmp_path: Path, version: int
) -> None:
    old = old_sqlite_ledger(tmp_path / "old" / sweeper.LEDGER, version)
    _fill(old.execute, version)
    old.close()
    with Ledger(tmp_path / "fresh") as fresh:
        made = _columns(fresh.db)  # type: ignore[arg-type]
    for _ in range(2):  # (the second opening finds it migrated: nothing copied twice)
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
    if version >= 3:
        assert sweeper.escalation_counts(tmp_path / "old")["given_up"] == 1


def _pg_columns(dsn: str) -> set[tuple[str, ...]]:
    import psycopg

    with psycopg.connect(dsn) as db:
        found = db.execute(
            "SELECT table_name, column_name, data_type, is_nullable FROM "
            "information_schema.columns WHERE table_schema = 'public'"
        ).fetchall()
    return {tuple(row) for row in found}


def _old_fleet_ledger(dsn: str, tables: str, version: int, rows_of: int) -> None:
    """A fleet database as an older rouse made it: ``tables`` at schema ``version``,
    holding the rows a SQLite ledger at ``rows_of`` holds (:func:`_fill`)."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as db:
        for statement in tables.split(";"):
            if statement.strip():
                db.execute(statement)
        db.execute("CREATE TABLE rouse_schema (version INTEGER NOT NULL)")
        db.execute("INSERT INTO rouse_schema VALUES (%s)", (version,))
        _fill(lambda sql, values: db.execute(sql.replace("?", "%s"), values), rows_of, "t" * 32)


def test_a_fleet_database_made_before_the_column_spec_reads_alike(pg_server: PgServer) -> None:
    """A fleet database whose ledger tables were written by hand (before the column
    spec) has the columns a new one is made with, and its rows read as they did."""

    from rouse.fleet.pg_schema import PgLedger

    old, fresh = pg_server.new_database(), pg_server.new_database()
    _old_fleet_ledger(old, PG_LEDGER_1, 1, 6)
    PgLedger(fresh, "t" * 32).close()
    with PgLedger(old, "t" * 32) as book:
        _check_owed(book, 6, tells=False)
    assert _pg_columns(old) == _pg_columns(fresh)


def test_a_fleet_database_of_the_last_rouse_with_a_table_per_kind_moves_to_the_outbox(
    pg_server: PgServer,
) -> None:
    """A fleet database made by the last rouse that kept a table per kind of message
    (schema 5), holding rows of every kind in every state, keeps every message in the
    one outbox: ids, states and tries as they were, the old tables gone."""

    from rouse.fleet.pg_schema import PgLedger

    old, fresh = pg_server.new_database(), pg_server.new_database()
    _old_fleet_ledger(old, PG_LEDGER_5, 5, 8)
    PgLedger(fresh, "t" * 32).close()
    for _ in range(2):  # (the second opening finds it migrated: nothing copied twice)
        with PgLedger(old, "t" * 32) as book:
            _check_owed(book, 8, tells=False)
    ledger = {"outbox", "runs", "trees", "leaders"}
    assert {c for c in _pg_columns(old) if c[0] in ledger} == {
        c for c in _pg_columns(fresh) if c[0] in ledger
    }
    assert not {c[0] for c in _pg_columns(old)} & {"wakes", "digests", "escalations"}


def test_a_fleet_database_gains_the_columns_the_spec_added_since_it_was_made(
    pg_server: PgServer,
) -> None:
    """A column new in the spec reaches a fleet's database as it reaches a SQLite ledger:
    made from the spec at first use (no hand-written step), its rows untouched."""
    import psycopg

    from rouse.fleet.pg_schema import PgLedger

    old, fresh = pg_server.new_database(), pg_server.new_database()
    with PgLedger(old, "t" * 32) as book:
        for wake_id, _state, _stamped in ROWS:
            book.add(_wake(wake_id), "file", datetime(2026, 3, 14, 12))
    with psycopg.connect(old, autocommit=True) as db:  # as made before these columns were
        db.execute("ALTER TABLE outbox DROP COLUMN error, DROP COLUMN receipt")
        db.execute("ALTER TABLE outbox DROP COLUMN digest, DROP COLUMN claim_until")
        db.execute("ALTER TABLE runs DROP COLUMN woken")
        db.execute("UPDATE rouse_schema SET version = 3")
    PgLedger(fresh, "t" * 32).close()
    with PgLedger(old, "t" * 32) as book:
        assert [entry.id for entry in book.open_entries()] == sorted(w for w, _, _ in ROWS)
    assert _pg_columns(old) == _pg_columns(fresh)


def test_rouse_log_reads_a_ledger_an_older_rouse_made_before_any_sweeper_opens_it(
    tmp_path: Path,
) -> None:
    """``rouse log`` is the first to use a ledger after an upgrade: it is migrated then,
    and reads as it did (never "move it aside")."""
    from rouse.sweep import ledger

    old = old_sqlite_ledger(tmp_path / sweeper.LEDGER, 8)
    _fill(old.execute, 8)
    old.close()
    listed = [entry.id for entry in ledger.recent(tmp_path, 10)]
    assert sorted(listed) == sorted(wake_id for wake_id, _, _ in ROWS)
    assert [row["id"] for row in ledger.views.messages(tmp_path, "tell")] == [
        tell_id for tell_id, _ in reversed(TELLS)
    ]


def test_a_reader_of_a_fleet_database_not_migrated_yet_reads_no_wakes(
    pg_server: PgServer,
) -> None:
    """``status`` and ``log`` never migrate a fleet's database: one an older rouse made,
    before any sweeper of this rouse opened it, reads as one with no ledger yet (never
    an error about a missing table)."""

    from rouse.fleet.pg_schema import PgLedger

    old = pg_server.new_database()
    _old_fleet_ledger(old, PG_LEDGER_5, 5, 8)
    with PgLedger(old, "t" * 32, schema="read") as book:
        assert book.recent() == [] and book.counts()["given_up"] == 0
    with PgLedger(old, "t" * 32) as book:  # (a sweeper's: migrated, every row kept)
        _check_owed(book, 8, tells=False)
