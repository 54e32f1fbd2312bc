"""Ledgers as older releases of rouse made them, to test migrating them in place.

``SQLITE_STEPS`` are the SQLite ledger's numbered migrations as rouse 0.x wrote
them, one script per ``PRAGMA user_version``: a ledger at version ``n`` is the
first ``n`` of them (8: the last with a table per kind of message, before the one
outbox). ``PG_LEDGER_1`` is the fleet's PostgreSQL migration 1 as it was written
by hand before both were made from one column spec; ``PG_LEDGER_5`` the fleet's
ledger tables as the last rouse with a table per kind of message made them
(schema 5). Kept here as data (never imported by rouse itself).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

SQLITE_STEPS: tuple[str, ...] = (
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
    # 8: an escalation that fails is tried again by the one retry rule
    """
    ALTER TABLE escalations ADD COLUMN first_failure TEXT;
    ALTER TABLE escalations ADD COLUMN next_attempt TEXT;
    """,
)


#: the fleet's PostgreSQL migration 1 (the shared ledger, the lease, the trees)
PG_LEDGER_1 = """
CREATE TABLE trees (
    tree TEXT PRIMARY KEY,
    root TEXT NOT NULL DEFAULT '',
    host TEXT NOT NULL DEFAULT '',
    first_seen TIMESTAMPTZ NOT NULL DEFAULT now(),
    last_tick TIMESTAMPTZ,
    last_tick_by TEXT
);
CREATE TABLE wakes (
    tree TEXT NOT NULL,
    id TEXT PRIMARY KEY,
    record TEXT NOT NULL,
    path TEXT NOT NULL,
    file TEXT NOT NULL,
    reason TEXT NOT NULL,
    nudge INTEGER NOT NULL,
    made_at TEXT NOT NULL,
    last_moved TEXT,
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
    error TEXT,
    digest TEXT,
    claimed_by TEXT,
    claim_until TIMESTAMPTZ
);
CREATE INDEX wakes_open ON wakes (tree, state, stamped);
CREATE INDEX wakes_made ON wakes (tree, made_at);
CREATE INDEX wakes_receipt ON wakes (receipt);
CREATE INDEX wakes_streak ON wakes (tree, path, last_moved);
CREATE INDEX wakes_owed ON wakes (state, claim_until) WHERE state = 'pending';
CREATE TABLE digests (
    tree TEXT NOT NULL,
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
CREATE TABLE escalations (
    tree TEXT NOT NULL,
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
    UNIQUE (tree, path, last_moved, level)
);
CREATE TABLE runs (
    tree TEXT NOT NULL,
    id TEXT PRIMARY KEY,
    digest TEXT NOT NULL,
    wakes TEXT NOT NULL,
    command TEXT NOT NULL,
    started TEXT NOT NULL,
    state TEXT NOT NULL,
    exit INTEGER,
    seconds DOUBLE PRECISION,
    answered INTEGER,
    woken INTEGER
);
CREATE INDEX runs_started ON runs (tree, started);
CREATE TABLE leaders (
    tree TEXT PRIMARY KEY,
    holder TEXT NOT NULL,
    host TEXT NOT NULL,
    pid INTEGER NOT NULL,
    token BIGINT NOT NULL,
    since TIMESTAMPTZ NOT NULL,
    expires TIMESTAMPTZ NOT NULL
);
"""


#: the fleet's ledger tables at schema 5 (migrations 1-5 as the last rouse with a table
#: per kind of message made them; its mirror and workers tables are not the ledger's)
PG_LEDGER_5 = """
CREATE TABLE trees (
    tree TEXT PRIMARY KEY,
    root TEXT NOT NULL DEFAULT '',
    host TEXT NOT NULL DEFAULT '',
    first_seen TIMESTAMPTZ NOT NULL DEFAULT now(),
    last_tick TIMESTAMPTZ,
    last_tick_by TEXT
);
CREATE TABLE wakes (
    tree TEXT NOT NULL DEFAULT '',
    id TEXT PRIMARY KEY,
    record TEXT NOT NULL,
    path TEXT NOT NULL,
    file TEXT NOT NULL,
    reason TEXT NOT NULL,
    nudge INTEGER NOT NULL,
    made_at TEXT NOT NULL,
    last_moved TEXT,
    wake TEXT NOT NULL,
    sink TEXT NOT NULL,
    state TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    last_attempt TEXT,
    finished TEXT,
    receipt TEXT,
    error TEXT,
    in_flight INTEGER NOT NULL DEFAULT 0,
    first_failure TEXT,
    next_attempt TEXT,
    stamped INTEGER NOT NULL DEFAULT 0,
    digest TEXT,
    claimed_by TEXT,
    claim_until TIMESTAMPTZ
);
CREATE TABLE digests (
    tree TEXT NOT NULL DEFAULT '',
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
CREATE TABLE escalations (
    tree TEXT NOT NULL DEFAULT '',
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
    first_failure TEXT,
    next_attempt TEXT,
    UNIQUE (tree, path, last_moved, level)
);
CREATE TABLE runs (
    tree TEXT NOT NULL DEFAULT '',
    id TEXT PRIMARY KEY,
    digest TEXT NOT NULL,
    wakes TEXT NOT NULL,
    command TEXT NOT NULL,
    started TEXT NOT NULL,
    state TEXT NOT NULL,
    exit INTEGER,
    seconds DOUBLE PRECISION,
    answered INTEGER,
    woken INTEGER
);
CREATE INDEX wakes_state ON wakes (tree, state, stamped);
CREATE INDEX wakes_made ON wakes (tree, made_at);
CREATE INDEX wakes_receipt ON wakes (receipt);
CREATE INDEX wakes_streak ON wakes (tree, path, last_moved);
CREATE INDEX runs_started ON runs (tree, started);
CREATE INDEX wakes_owed ON wakes (state, claim_until) WHERE state = 'pending';
CREATE TABLE leaders (
    tree TEXT PRIMARY KEY,
    holder TEXT NOT NULL,
    host TEXT NOT NULL,
    pid INTEGER NOT NULL,
    token BIGINT NOT NULL,
    since TIMESTAMPTZ NOT NULL,
    expires TIMESTAMPTZ NOT NULL
)
"""


def old_sqlite_ledger(path: Path, version: int) -> sqlite3.Connection:
    """A ledger at ``path`` made by the rouse whose schema was ``version``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path, isolation_level=None)
    for script in SQLITE_STEPS[:version]:
        for statement in script.split(";"):
            if statement.strip():
                db.execute(statement)
    db.execute(f"PRAGMA user_version = {version}")
    return db
