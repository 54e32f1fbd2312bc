"""The delivery ledger: ``.rouse/ledger.sqlite3`` (stdlib sqlite3), and its wakes.

Every wake is written here before it is sent and marked when it lands, so an
undelivered wake is never silently lost: it is resent (same id) with backoff,
and given up after 24h as a nudge file.

States: ``pending`` (not delivered yet: new, failing, or in flight),
``held`` (waiting out quiet hours), ``delivered``, ``given_up`` (written as a
nudge file after 24h of failures), ``withdrawn`` (its record moved or ended
before the wake could land, so there was nothing left to say).

Only the sweeper writes the ledger (it holds the sweeper lock); readers
(``status``, ``log``, the pack) open it without ever creating it.

This module owns the connection and the ``wakes`` rows; the other tables are
parts of :class:`Ledger` in their own modules (``ledger_digests``,
``ledger_escalations``, ``ledger_runs``), the schema is ``ledger_schema``, a
row is ``ledger_entry`` and the read-only views are ``ledger_views``. The names
readers use are importable from here too.
"""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime, timedelta
from pathlib import Path

from rouse.core.statedir import StateError, state_path
from rouse.core.sweepstate import LEDGER, TIME_FORMAT, counts, undelivered_counts
from rouse.sweep.ledger_db import Cursor, Database
from rouse.sweep.ledger_digests import DigestRows
from rouse.sweep.ledger_entry import _COLUMNS, Entry, _dt, _entry, _t
from rouse.sweep.ledger_escalations import EscalationRows
from rouse.sweep.ledger_runs import RunRows
from rouse.sweep.ledger_schema import SCHEMA_VERSION, migrate
from rouse.sweep.ledger_views import log_lines, recent
from rouse.sweep.quiet import QuietHours
from rouse.sweep.wake import Wake

GIVE_UP_AFTER = timedelta(hours=24)
FIRST_RETRY = timedelta(minutes=1)
MAX_RETRY = timedelta(hours=1)
STATES = ("pending", "held", "delivered", "given_up", "withdrawn")
__all__ = [
    "LEDGER",
    "SCHEMA_VERSION",
    "TIME_FORMAT",
    "Entry",
    "Ledger",
    "QuietHours",
    "counts",
    "log_lines",
    "recent",
    "undelivered_counts",
]


def backoff(attempts: int) -> timedelta:
    """``min(1m × 2^(attempts-1), 1h)``: the wait after the ``attempts``-th try."""
    if attempts >= 8:
        return MAX_RETRY
    wait: timedelta = FIRST_RETRY * 2 ** max(attempts - 1, 0)
    return min(wait, MAX_RETRY)


class Ledger(DigestRows, EscalationRows, RunRows):
    """The sweeper's read-write handle on its ledger.

    ``Ledger(root)`` opens (creating and migrating) the tree's SQLite ledger;
    a fleet's PostgreSQL ledger (``rouse.fleet.pg``) is a subclass that opens
    its own database and keeps one tree's rows among many (``tree``).
    """

    #: the ``tree`` column of this ledger's rows ('' in a tree's own SQLite file)
    tree: str = ""
    #: what this ledger is, for messages (its file, or the database without password)
    where: str
    db: Database

    def __init__(self, root: Path):
        self.path = state_path(root, "ledger.sqlite3")
        self.where = str(self.path)
        try:
            db = sqlite3.connect(self.path, isolation_level=None, timeout=30)
        except sqlite3.Error as exc:
            raise StateError(_unusable(self.path, exc)) from None
        try:
            db.row_factory = sqlite3.Row
            # WAL + NORMAL: every commit survives a killed process; a power cut can
            # lose the last commits, which at worst resends a wake (same id).
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            migrate(db)
        except sqlite3.Error as exc:
            db.close()
            raise StateError(_unusable(self.path, exc)) from None
        self.db = db

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def run(self, sql: str, *parameters: object) -> Cursor:
        """Run ``sql`` (``?`` placeholders) with ``parameters``."""
        return self.db.execute(sql, parameters)

    # -- reading ------------------------------------------------------------

    def open_entries(self) -> list[Entry]:
        """Wakes still owed something: pending, held, or delivered but not stamped."""
        rows = self.run(
            f"SELECT {_COLUMNS} FROM wakes WHERE tree = ? AND (state IN ('pending', 'held') "
            "OR (state = 'delivered' AND stamped = 0)) ORDER BY made_at, id",
            self.tree,
        )
        return [_entry(row) for row in rows]

    def get(self, wake_id: str) -> Entry | None:
        row = self.run(
            f"SELECT {_COLUMNS} FROM wakes WHERE tree = ? AND id = ?", self.tree, wake_id
        )
        found = row.fetchone()
        return _entry(found) if found else None

    def recent(self, limit: int = 20) -> list[Entry]:
        """The most recent wakes, newest first, with their escalations (``rouse log``)."""
        rows = self.run(
            f"SELECT {_COLUMNS} FROM wakes WHERE tree = ? ORDER BY made_at DESC, id DESC LIMIT ?",
            self.tree,
            limit,
        ).fetchall()
        entries = [_entry(row) for row in rows]
        found: dict[str, list[str]] = {}
        for row in self.run(
            "SELECT wake_id, level, sink, state FROM escalations WHERE tree = ? "
            "ORDER BY made_at, id",
            self.tree,
        ):
            line = f"level {row['level']} via {row['sink']}: {row['state']}"
            found.setdefault(row["wake_id"], []).append(line)
        for entry in entries:
            entry.escalations = tuple(found.get(entry.id, ()))
        return entries

    def counts(self) -> dict[str, int]:
        """How many of this tree's wakes are in each state."""
        found = dict.fromkeys(STATES, 0)
        for row in self.run(
            "SELECT state, COUNT(*) AS n FROM wakes WHERE tree = ? GROUP BY state", self.tree
        ):
            found[row["state"]] = int(row["n"])
        return found

    # -- writing ------------------------------------------------------------

    def add(self, wake: Wake, sink: str, now: datetime, *, held: bool = False) -> Entry | None:
        """Write a new wake: held, or pending with its first attempt starting now.

        A wake with this id already in the ledger (another sweeper over a clone
        of this tree wrote it, or this one did and the record is due at the same
        instant again) is not written twice: its entry is returned instead, None
        when the wake is new. A withdrawn one is owed again, so it is revived.
        """
        added = self.run(
            "INSERT INTO wakes (tree, id, record, path, file, reason, nudge, made_at, last_moved, "
            "wake, sink, state, attempts, in_flight, last_attempt) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT (id) DO NOTHING",
            self.tree,
            wake.id,
            wake.record,
            wake.path,
            wake.file,
            wake.reason,
            wake.nudge,
            wake.at,
            wake.last_moved,
            json.dumps(wake.as_dict(), ensure_ascii=False),
            sink,
            "held" if held else "pending",
            0 if held else 1,
            0 if held else 1,
            None if held else _t(now),
        )
        if added.rowcount == 1:
            return None
        revived = self.run(
            "UPDATE wakes SET state = ?, attempts = ?, in_flight = ?, last_attempt = ?, "
            "first_failure = NULL, next_attempt = NULL, finished = NULL, stamped = 0, "
            "receipt = NULL, error = NULL WHERE tree = ? AND id = ? AND state = 'withdrawn'",
            *(("held", 0, 0, None) if held else ("pending", 1, 1, _t(now))),
            self.tree,
            wake.id,
        )
        return None if revived.rowcount == 1 else self.get(wake.id)

    def start_attempt(self, wake_id: str, sink: str, now: datetime) -> None:
        self.run(
            "UPDATE wakes SET state = 'pending', sink = ?, attempts = attempts + 1, "
            "in_flight = 1, last_attempt = ? WHERE tree = ? AND id = ?",
            sink,
            _t(now),
            self.tree,
            wake_id,
        )

    def failed(
        self, wake_id: str, now: datetime, error: str, *, when: datetime | None = None
    ) -> None:
        """Record a failed attempt (made at ``when``, default now) and the next try's time."""
        row = self.run(
            "SELECT attempts, last_attempt FROM wakes WHERE tree = ? AND id = ?", self.tree, wake_id
        ).fetchone()
        failed_at = when or now
        last = _dt(row["last_attempt"]) or failed_at
        self.run(
            "UPDATE wakes SET in_flight = 0, first_failure = COALESCE(first_failure, ?), "
            "next_attempt = ?, error = ? WHERE tree = ? AND id = ?",
            _t(failed_at),
            _t(last + backoff(row["attempts"])),
            error,
            self.tree,
            wake_id,
        )

    def delivered(self, wake_id: str, now: datetime, receipt: str, *, stamped: bool) -> None:
        """It landed; ``stamped`` says whether the record's stamp is written yet."""
        self.run(
            "UPDATE wakes SET state = 'delivered', in_flight = 0, finished = ?, receipt = ?, "
            "next_attempt = NULL, error = NULL, stamped = ? WHERE tree = ? AND id = ?",
            _t(now),
            receipt,
            int(stamped),
            self.tree,
            wake_id,
        )

    def given_up(self, wake_id: str, now: datetime, receipt: str, *, stamped: bool) -> None:
        self.run(
            "UPDATE wakes SET state = 'given_up', in_flight = 0, finished = ?, receipt = ?, "
            "next_attempt = NULL, stamped = ? WHERE tree = ? AND id = ?",
            _t(now),
            receipt,
            int(stamped),
            self.tree,
            wake_id,
        )

    def hold(self, wake_id: str) -> None:
        self.run("UPDATE wakes SET state = 'held' WHERE tree = ? AND id = ?", self.tree, wake_id)

    def withdraw(self, wake_id: str, now: datetime, why: str) -> None:
        self.run(
            "UPDATE wakes SET state = 'withdrawn', in_flight = 0, finished = ?, "
            "next_attempt = NULL, stamped = 1, receipt = ? WHERE tree = ? AND id = ?",
            _t(now),
            why,
            self.tree,
            wake_id,
        )

    def mark_stamped(self, wake_id: str) -> None:
        self.run("UPDATE wakes SET stamped = 1 WHERE tree = ? AND id = ?", self.tree, wake_id)

    def defer(self, wake_id: str, why: str) -> None:
        """The wake waits (held) without it counting as a failed attempt: no run now."""
        self.run(
            "UPDATE wakes SET state = 'held', in_flight = 0, "
            "attempts = CASE WHEN attempts > 0 THEN attempts - 1 ELSE 0 END, "
            "error = ? WHERE tree = ? AND id = ?",
            why,
            self.tree,
            wake_id,
        )


def _unusable(path: Path, exc: sqlite3.Error) -> str:
    """Why the ledger cannot be opened, and what to do (the wakes it held are history)."""
    return (
        f"the ledger {path} cannot be used ({exc}): if it is damaged, move it aside "
        f"(mv {path} {path}.damaged) and sweep again — wakes still owed are found "
        "again by the clock; check that .rouse/ is writable"
    )
