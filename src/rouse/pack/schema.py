"""The recall index's schema: create it, recognise it, throw a stale one away.

``PRAGMA user_version`` holds :data:`SCHEMA`; a file of any other version, or
built for the other engine (FTS5 or the LIKE fallback), is discarded and
rebuilt: the index is derived and disposable (SPEC §10). The ``vectors``
table holds each file's meaning when the semantic extra is installed; its
``meta`` row ``model`` names the model that made them (another model's
vectors are dropped and made again, the words are kept).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from pathlib import Path

SCHEMA = 3  # bump when the tables, columns or tokenizer change: old files are rebuilt
#: ``body`` is the authored part, ``log`` the agent's notes below the log marker,
#: both as plain words (:mod:`rouse.pack.written`).
#: ``cjk`` holds the runs of text written without spaces (Chinese, Japanese) in the
#: keywords and body, as pairs of characters (:func:`rouse.pack.search.bigrams`).
COLUMNS = "keywords, path, body, log, cjk"
TOKENIZER = "porter unicode61 remove_diacritics 2"


def fts5_available() -> bool:
    """Whether this Python's SQLite has FTS5 (nearly every build does)."""
    try:
        with contextlib.closing(sqlite3.connect(":memory:")) as conn:
            conn.execute("CREATE VIRTUAL TABLE probe USING fts5(x)")
    except sqlite3.Error:
        return False
    return True


def is_empty(conn: sqlite3.Connection) -> bool:
    """A database with no schema at all (a file just created)."""
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    tables = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
    return bool(version == 0 and tables == 0)


def usable(conn: sqlite3.Connection, engine: str) -> bool:
    """True if ``conn`` holds our schema, built for ``engine``."""
    if conn.execute("PRAGMA user_version").fetchone()[0] != SCHEMA:
        return False
    row = conn.execute("SELECT value FROM meta WHERE key = 'engine'").fetchone()
    if row is None or row[0] != engine:
        return False
    conn.execute("SELECT count(*) FROM files").fetchone()
    conn.execute("SELECT rowid FROM docs LIMIT 1").fetchall()
    conn.execute("SELECT id FROM vectors LIMIT 1").fetchall()
    return True


def discard(path: Path) -> None:
    for suffix in ("", "-journal", "-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(f"{path}{suffix}")


def create(conn: sqlite3.Connection, engine: str) -> None:
    create = "CREATE TABLE IF NOT EXISTS"
    if engine == "fts5":
        fts5 = f"fts5({COLUMNS}, tokenize='{TOKENIZER}')"
        docs = f"CREATE VIRTUAL TABLE IF NOT EXISTS docs USING {fts5}"
    else:
        docs = f"{create} docs (rowid INTEGER PRIMARY KEY, {COLUMNS})"
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute(f"{create} meta (key TEXT PRIMARY KEY, value TEXT)")
        conn.execute(
            f"{create} files (id INTEGER PRIMARY KEY, rel TEXT NOT NULL UNIQUE, "
            "kind TEXT NOT NULL, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL)"
        )
        conn.execute(docs)
        # a file's meaning as a vector (the semantic extra); meta 'model' names the model
        # (one row per chunk: a long file is embedded in chunks, numbered from 0)
        conn.execute(
            f"{create} vectors (id INTEGER NOT NULL, chunk INTEGER NOT NULL DEFAULT 0, "
            "vec BLOB NOT NULL, PRIMARY KEY (id, chunk))"
        )
        conn.execute("INSERT OR REPLACE INTO meta VALUES ('engine', ?)", (engine,))
        conn.execute(f"PRAGMA user_version = {SCHEMA}")
        conn.execute("COMMIT")
    except sqlite3.Error:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
