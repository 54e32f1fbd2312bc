"""The delivery ledger: ``.rouse/ledger.sqlite3`` (stdlib sqlite3), its connection and schema.

Only the sweeper writes the ledger (it holds the sweeper lock); readers
(``status``, ``log``, the pack) open it without ever creating it.

:class:`Ledger` owns the connection; its rows are parts in their own modules,
one per kind of message in the one outbox (:mod:`~rouse.sweep.ledger.wakes`,
``escalations``, ``tells``) and the agent ``runs`` (here). Its schema is made from the
ledger's column spec and migrated in place: the number reached is kept in
``PRAGMA user_version``; a ledger made by an older rouse is brought up to the
spec (its missing tables, columns and indexes made) at first use; one newer
than this rouse is refused, not touched.
"""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime
from pathlib import Path

from rouse.core.errors import TooNew
from rouse.core.statedir import StateError, state_path
from rouse.state.ledgerschema import FORMER, TABLES, carry_over, column_name, create, indexes
from rouse.state.sweeper import TIME_FORMAT
from rouse.sweep.ledger.entry import as_text
from rouse.sweep.ledger.escalations import EscalationRows
from rouse.sweep.ledger.outbox import Rows
from rouse.sweep.ledger.tells import TellRows
from rouse.sweep.ledger.wakes import WakeRows

#: The schema's number: each older one is brought to it in one step, from the column
#: spec (:mod:`rouse.state.ledgerschema`). 1 the wakes; 2 digests; 3 escalations; 4 agent
#: runs; 5 the receipt index; 6 a ``tree`` column everywhere and a wake's ``last_moved``;
#: 7 tells; 8 an escalation's first failure and next try; 9 one ``outbox`` for every
#: message (the rows of the tables of 1-8 moved there, ids kept, those tables dropped).
SCHEMA_VERSION = 9


def migrate(db: sqlite3.Connection) -> None:
    """Bring the schema up to ``SCHEMA_VERSION``.

    Safe under concurrent first use (a service manager starts the sweeper and
    the task worker together): the step takes the write lock first and reads
    the version again under it, so a step another process made while this one
    waited is never run twice.
    """
    if _version(db) >= SCHEMA_VERSION:
        return
    db.execute("BEGIN IMMEDIATE")
    try:
        version = _version(db)  # (under the lock: what another process made counts)
        if version < SCHEMA_VERSION:
            _bring_up(db, version)
            db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise


def _bring_up(db: sqlite3.Connection, version: int) -> None:
    """Make what the spec has and the ledger lacks (its tables, columns and indexes), and
    move the rows of the tables it had a table per kind of message in to ``outbox``."""
    for table, columns in TABLES.items():
        db.execute(create(table))
        have = _columns(db, table)
        for column in columns:
            name = column_name(column)
            if name and name not in have:
                db.execute(f"ALTER TABLE {table} ADD COLUMN {column}")
    into = [name for name in map(column_name, TABLES["outbox"]) if name]
    for table in FORMER:
        have = _columns(db, table)
        if not have:
            continue
        fallback = {}
        if table == "wakes" and "last_moved" not in have:  # (before 6: only in its JSON)
            fallback["last_moved"] = "json_extract(wake, '$.last_moved')"
        db.execute(carry_over(table, have, into, fallback))
        db.execute(f"DROP TABLE {table}")
    for statement in indexes(tuple(TABLES)):
        db.execute(statement)


def _columns(db: sqlite3.Connection, table: str) -> set[str]:
    """The columns ``table`` has (none: there is no such table)."""
    return {row[1] for row in db.execute(f"PRAGMA table_info({table})")}


def _version(db: sqlite3.Connection) -> int:
    """The schema's number; TooNew when this rouse does not know it."""
    version = int(db.execute("PRAGMA user_version").fetchone()[0])
    if version > SCHEMA_VERSION:
        raise TooNew(
            f"the ledger has schema {version}, newer than this rouse knows ({SCHEMA_VERSION}): "
            "upgrade rouse, or move .rouse/ledger.sqlite3 aside"
        )
    return version


class RunRows(Rows):
    """The ``runs`` rows (``sweep --run``), agent runs, not messages: one per run (one per
    digest), when it started, how it ended, and how many of the records it was woken about
    it answered."""

    def start_run(
        self, run_id: str, digest_id: str, wake_ids: list[str], command: str, now: datetime
    ) -> None:
        self.run(
            "INSERT INTO runs (tree, id, digest, wakes, command, started, state, woken) "
            "VALUES (?,?,?,?,?,?,'running',?) ON CONFLICT (id) DO UPDATE SET started = "
            "excluded.started, state = 'running', wakes = excluded.wakes",
            self.tree,
            run_id,
            digest_id,
            json.dumps(wake_ids),
            command,
            as_text(now),
            len(wake_ids),
        )

    def end_run(self, run_id: str, state: str, code: int | None, seconds: float) -> None:
        """``state``: ran (exit 0; answered or not is decided after), failed."""
        self.run(
            "UPDATE runs SET state = ?, exit = ?, seconds = ? WHERE tree = ? AND id = ?",
            state,
            code,
            round(seconds, 3),
            self.tree,
            run_id,
        )

    def run_answered(self, run_id: str, answered: int) -> None:
        """After a run exited 0: how many of its woken records it moved or ended."""
        self.run(
            "UPDATE runs SET answered = ?, state = ? WHERE tree = ? AND id = ?",
            answered,
            "answered" if answered else "not answered",
            self.tree,
            run_id,
        )

    def runs_since(self, since: datetime, *, tasks: bool = False) -> list[datetime]:
        """When each run started after ``since``, oldest first (the budget's window):
        the sweeper's runs, or (``tasks``) the task worker's (digest ``task:<path>``)."""
        rows = self.run(
            "SELECT started FROM runs WHERE tree = ? AND started > ? AND "
            f"{'' if tasks else 'NOT '}(COALESCE(digest, '') LIKE 'task:%') ORDER BY started",
            self.tree,
            as_text(since),
        )
        return [datetime.strptime(row[0], TIME_FORMAT) for row in rows]

    def runs(self) -> list[dict[str, object]]:
        rows = self.run(
            "SELECT id, digest, wakes, command, started, state, exit, seconds, answered, woken "
            "FROM runs WHERE tree = ? ORDER BY started, id",
            self.tree,
        )
        return [dict(row) for row in rows]


class Ledger(WakeRows, EscalationRows, RunRows, TellRows):
    """The sweeper's read-write handle on its ledger.

    ``Ledger(root)`` opens (creating and migrating) the tree's SQLite ledger;
    a fleet's PostgreSQL ledger (``rouse.fleet.pg``) is a subclass that opens
    its own database and keeps one tree's rows among many (``tree``).
    """

    #: what this ledger is, for messages (its file, or the database without password)
    where: str
    #: shared by many machines (a fleet's): the pack, which reads only the tree's own
    #: SQLite file, learns of this sweeper's nudge files from a copy of their rows there
    shared: bool = False

    def __init__(self, root: Path):
        self.path = state_path(root, "ledger.sqlite3")
        self.where = str(self.path)
        try:
            # (one user at a time, but not always the thread that opened it: a sweeper
            # made in one thread may tick in another, as its loop does under a test)
            db = sqlite3.connect(
                self.path, isolation_level=None, timeout=30, check_same_thread=False
            )
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


def _unusable(path: Path, exc: sqlite3.Error) -> str:
    """Why the ledger cannot be opened, and what to do (the wakes it held are history)."""
    return (
        f"the ledger {path} cannot be used ({exc}): if it is damaged, move it aside "
        f"(mv {path} {path}.damaged) and sweep again — wakes still owed are found "
        "again by the clock; check that .rouse/ is writable"
    )
