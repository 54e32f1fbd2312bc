"""The ledger's schema: its numbered migrations and the step that applies them.

The schema moves forward one migration at a time, the number reached kept in
``PRAGMA user_version``; a ledger newer than this rouse is refused, not touched.
"""

from __future__ import annotations

import sqlite3

from rouse.core.errors import TooNew

MIGRATIONS: tuple[str, ...] = (
    # 1: the wakes table
    """
    CREATE TABLE wakes (
        id TEXT PRIMARY KEY,
        record TEXT NOT NULL,
        path TEXT NOT NULL,
        file TEXT NOT NULL,
        reason TEXT NOT NULL,
        nudge INTEGER NOT NULL,
        made_at TEXT NOT NULL,
        wake TEXT NOT NULL,
        sink TEXT NOT NULL,
        state TEXT NOT NULL,
        attempts INTEGER NOT NULL DEFAULT 0,
        in_flight INTEGER NOT NULL DEFAULT 0,
        first_failure TEXT,
        last_attempt TEXT,
        next_attempt TEXT,
        finished TEXT,
        stamped INTEGER NOT NULL DEFAULT 0,
        receipt TEXT,
        error TEXT
    );
    CREATE INDEX wakes_state ON wakes (state, stamped);
    CREATE INDEX wakes_made ON wakes (made_at);
    """,
    # 2: digests (sweep --digest): one message carrying several wakes
    """
    ALTER TABLE wakes ADD COLUMN digest TEXT;
    CREATE TABLE digests (
        id TEXT PRIMARY KEY,
        made_at TEXT NOT NULL,
        wakes TEXT NOT NULL,
        sink TEXT NOT NULL,
        state TEXT NOT NULL,
        attempts INTEGER NOT NULL DEFAULT 0,
        last_attempt TEXT,
        finished TEXT,
        receipt TEXT,
        error TEXT
    );
    """,
    # 3: escalations to a human (sweep --escalate): once per record, streak and level
    """
    CREATE TABLE escalations (
        id TEXT PRIMARY KEY,
        record TEXT NOT NULL,
        path TEXT NOT NULL,
        last_moved TEXT NOT NULL,
        level INTEGER NOT NULL,
        wake_id TEXT NOT NULL,
        made_at TEXT NOT NULL,
        message TEXT NOT NULL,
        sink TEXT NOT NULL,
        state TEXT NOT NULL,
        attempts INTEGER NOT NULL DEFAULT 0,
        last_attempt TEXT,
        finished TEXT,
        receipt TEXT,
        error TEXT,
        UNIQUE (path, last_moved, level)
    );
    """,
    # 4: agent runs (sweep --run): one per digest
    """
    CREATE TABLE runs (
        id TEXT PRIMARY KEY,
        digest TEXT NOT NULL,
        wakes TEXT NOT NULL,
        command TEXT NOT NULL,
        started TEXT NOT NULL,
        state TEXT NOT NULL,
        exit INTEGER,
        seconds REAL,
        answered INTEGER,
        woken INTEGER
    );
    CREATE INDEX runs_started ON runs (started);
    """,
    # 5: the pack and the prompt hook look nudge files up by receipt
    """
    CREATE INDEX wakes_receipt ON wakes (receipt);
    """,
    # 6: the ledger's SQL is shared with the fleet's PostgreSQL backend: every table
    # names its tree ('' here: one file, one tree), and a wake's last-moved is a
    # column (the escalation streak asks for it without SQLite's JSON functions)
    """
    ALTER TABLE wakes ADD COLUMN tree TEXT NOT NULL DEFAULT '';
    ALTER TABLE wakes ADD COLUMN last_moved TEXT;
    UPDATE wakes SET last_moved = json_extract(wake, '$.last_moved');
    CREATE INDEX wakes_streak ON wakes (path, last_moved);
    ALTER TABLE digests ADD COLUMN tree TEXT NOT NULL DEFAULT '';
    ALTER TABLE escalations ADD COLUMN tree TEXT NOT NULL DEFAULT '';
    ALTER TABLE runs ADD COLUMN tree TEXT NOT NULL DEFAULT '';
    """,
    # 7: messages to the owner (rouse tell, a reminder's channel): always in the tree's
    # own SQLite file, even when the sweeper keeps its wakes in a fleet's PostgreSQL
    """
    CREATE TABLE tells (
        id TEXT PRIMARY KEY,
        tree TEXT NOT NULL DEFAULT '',
        record TEXT NOT NULL,
        path TEXT NOT NULL,
        type TEXT NOT NULL,
        slug TEXT NOT NULL,
        channel TEXT NOT NULL DEFAULT '',
        source TEXT NOT NULL,
        text TEXT NOT NULL,
        made_at TEXT NOT NULL,
        state TEXT NOT NULL,
        sink TEXT,
        attempts INTEGER NOT NULL DEFAULT 0,
        first_failure TEXT,
        last_attempt TEXT,
        next_attempt TEXT,
        finished TEXT,
        receipt TEXT,
        error TEXT
    );
    CREATE INDEX tells_state ON tells (state, made_at);
    CREATE INDEX tells_receipt ON tells (receipt);
    """,
)
SCHEMA_VERSION = len(MIGRATIONS)


def migrate(db: sqlite3.Connection) -> None:
    """Bring the schema up to ``SCHEMA_VERSION``, one numbered step at a time.

    Safe under concurrent first use (a service manager starts the sweeper and
    the task worker together): each step takes the write lock first and reads
    the version again under it, so a step another process made while this one
    waited is never run twice.
    """
    version = _version(db)
    while version < SCHEMA_VERSION:
        db.execute("BEGIN IMMEDIATE")
        try:
            version = _version(db)  # (under the lock: what another process made counts)
            if version < SCHEMA_VERSION:
                _run_script(db, MIGRATIONS[version])
                version += 1
                db.execute(f"PRAGMA user_version = {version}")
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise


def _version(db: sqlite3.Connection) -> int:
    """The schema's number; TooNew when this rouse does not know it."""
    version = int(db.execute("PRAGMA user_version").fetchone()[0])
    if version > SCHEMA_VERSION:
        raise TooNew(
            f"the ledger has schema {version}, newer than this rouse knows ({SCHEMA_VERSION}): "
            "upgrade rouse, or move .rouse/ledger.sqlite3 aside"
        )
    return version


def _run_script(db: sqlite3.Connection, script: str) -> None:
    """Run a migration's statements inside the caller's transaction."""
    for statement in script.split(";"):
        if statement.strip():
            db.execute(statement)
