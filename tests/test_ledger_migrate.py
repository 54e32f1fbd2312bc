"""A ledger an older rouse made is migrated in place at first use: nothing owed is lost,
nothing delivered is owed again."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from ledger_history import SQLITE_STEPS, old_sqlite_ledger
from rouse.core import sweepstate
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


def _fill(db: sqlite3.Connection, version: int) -> None:
    """Rows of every kind the ledger at ``version`` holds, in every state, as it wrote them."""
    for wake_id, state, stamped in ROWS:
        made = _wake(wake_id)
        db.execute(
            "INSERT INTO wakes (id, record, path, file, reason, nudge, made_at, wake, sink, "
            "state, attempts, first_failure, last_attempt, next_attempt, stamped, receipt) "
            "VALUES (?,?,?,?,?,?,?,?,'file',?,1,?,?,?,?,?)",
            (
                made.id,
                made.record,
                made.path,
                made.file,
                made.reason,
                made.nudge,
                made.at,
                json.dumps(made.as_dict()),
                state,
                "2026-03-14 11:50:00" if state == "pending" else None,
                "2026-03-14 11:50:00",
                "2026-03-14 11:51:00" if state == "pending" else None,
                stamped,
                f"nudges/{wake_id}.md" if state in ("delivered", "given_up") else None,
            ),
        )
        if version >= 6:  # (as rouse wrote it since: a column of its own)
            db.execute("UPDATE wakes SET last_moved = ? WHERE id = ?", (MOVED, wake_id))
    if version >= 2:
        db.execute(
            "INSERT INTO digests (id, made_at, wakes, sink, state, attempts) "
            "VALUES ('d1', '2026-03-14 12:00:00', '[\"w-pending\"]', 'file', 'failed', 1)"
        )
    if version >= 3:
        for level, state in ((1, "pending"), (2, "delivered")):
            message = _wake(f"e{level}")
            db.execute(
                "INSERT INTO escalations (id, record, path, last_moved, level, wake_id, "
                "made_at, message, sink, state) VALUES (?,?,?,?,?,?,?,?,'stdout',?)",
                (
                    message.id,
                    message.record,
                    "inventory/reminders/w-delivered",
                    MOVED,
                    level,
                    "w-delivered",
                    "2026-03-14 12:00:00",
                    json.dumps(message.as_dict()),
                    state,
                ),
            )
    if version >= 4:
        db.execute(
            "INSERT INTO runs (id, digest, wakes, command, started, state) "
            "VALUES ('r1', 'd1', '[]', 'agent', '2026-03-14 12:00:00', 'ended')"
        )
    if version >= 7:
        for tell_id, state in (
            ("t-pending", "pending"),
            ("t-waiting", "waiting"),
            ("t-done", "delivered"),
            ("t-gone", "given_up"),
        ):
            db.execute(
                "INSERT INTO tells (id, record, path, type, slug, source, text, made_at, state, "
                "receipt) VALUES (?, 'reminder/r', 'inventory/reminders/r', 'reminder', 'r', "
                "'tell', 'hello', '2026-03-14 12:00:00', ?, ?)",
                (tell_id, state, "nudges/t.md" if state == "given_up" else None),
            )


def _columns(db: sqlite3.Connection) -> dict[str, set[str]]:
    tables = [row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    return {t: {row[1] for row in db.execute(f"PRAGMA table_info({t})")} for t in tables}


@pytest.mark.parametrize("version", range(1, len(SQLITE_STEPS) + 1))
def test_an_older_ledger_is_migrated_in_place_with_nothing_lost(
    tmp_path: Path, version: int
) -> None:
    old = old_sqlite_ledger(tmp_path / "old" / sweepstate.LEDGER, version)
    _fill(old, version)
    old.close()
    with Ledger(tmp_path / "fresh") as fresh:
        made = _columns(fresh.db)  # type: ignore[arg-type]
    with Ledger(tmp_path / "old") as book:
        assert book.db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert _columns(book.db) == made  # type: ignore[arg-type]
        owed = [entry.id for entry in book.open_entries()]
        assert owed == ["w-held", "w-pending", "w-unstamped"]
        pending = book.get("w-pending")
        assert pending is not None and pending.wake == _wake("w-pending")
        assert pending.next_attempt is not None and pending.first_failure is not None
        assert book.counts() == {
            "pending": 1,
            "held": 1,
            "delivered": 2,
            "given_up": 1,
            "withdrawn": 1,
        }
        # the streak reads each wake's last-moved (a column since version 6)
        assert book.streak("inventory/reminders/w-delivered", MOVED)[1] == 1
        if version >= 3:
            states = [(row["level"], row["state"]) for row in book.escalations()]
            assert states == [(1, "pending"), (2, "delivered")]
            assert [m.id for m, _ in book.pending_escalations()] == ["e1"]
            assert book.escalated("inventory/reminders/w-delivered", MOVED, 2)
        if version >= 2:
            assert book.digest_of(["w-pending"]) is None  # (no wake named a digest then)
        owed_tells = [row["id"] for row in book.owed_tells()]
        assert owed_tells == (["t-pending", "t-waiting"] if version >= 7 else [])
    # the read-only counts (status, the pack) read the migrated ledger alike
    assert sweepstate.counts(tmp_path / "old")["given_up"] == 1
    assert sweepstate.undelivered_counts(tmp_path / "old") == {
        "pending": 1,
        "held": 1,
        "given_up": 1,
    }
    if version >= 7:
        assert sweepstate.tell_counts(tmp_path / "old")["given_up"] == 1
