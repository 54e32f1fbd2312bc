"""The recall index: SQLite FTS5 over notes, backlog, records and context files.

Derived and disposable (SPEC §10): ``.rouse/index.sqlite3`` is brought up to
date at query time, re-reading only files whose size or mtime changed (the
tree walk goes through the header cache, bodies are read only for changed
files) and dropping rows for files that are gone. It is rebuilt when missing,
corrupt, or of another schema; when ``.rouse/`` cannot be written the index
lives in memory for the one query, so recall always works.

The schema lives in :mod:`rouse.pack.schema`, the queries in
:mod:`rouse.pack.search`, and ``rouse recall`` itself in :mod:`rouse.pack.recall`.
"""

from __future__ import annotations

import os
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path

from rouse.core import header, layout, statedir
from rouse.core.errors import HeaderError
from rouse.core.tree import File, Tree
from rouse.pack.schema import create, discard, fts5_available, is_empty, usable
from rouse.pack.search import Match, search

FILE = "index.sqlite3"
KINDS = (*layout.RECORD_TYPES[:5], "backlog", "note", *layout.CONTEXT_TYPES)
RACY_NS = 2_000_000_000  # a file this fresh may change again within its mtime tick
MAX_BODY_BYTES = 1024 * 1024
#: Header lines that describe a record in words: searched with the body.
DESCRIBED_BY = ("closes-when", "success-when", "outcome")


def indexed_files(tree: Tree) -> dict[str, tuple[File, str]]:
    """What recall searches: tree-relative path → (file, kind)."""
    files: dict[str, tuple[File, str]] = {}
    for record in tree.records.values():
        files[record.rel] = (record, record.type)
    for context in tree.context:
        files[context.rel] = (context, context.kind)
    for note in tree.notes:
        files[note.rel] = (note, "note")
    return files


@dataclass
class Stats:
    """What the last :meth:`Index.refresh` did (tests and the benchmark read it)."""

    read: int = 0  # files whose body was (re)read
    removed: int = 0  # rows dropped for files that are gone
    unchanged: int = 0  # files skipped: same size and mtime as indexed
    rebuilt: bool = False  # built from nothing (missing, corrupt, old schema, in memory)
    in_memory: bool = False  # .rouse/ could not hold the index


@dataclass
class _Doc:
    rel: str
    kind: str
    size: int
    mtime_ns: int
    keywords: str
    body: str


class Index:
    """The recall index of one tree. ``Index(root)``, then :meth:`refresh`, then :meth:`search`."""

    def __init__(self, root: Path, *, in_memory: bool = False, fts: bool | None = None):
        self.root = root
        self.path = root / layout.STATE_DIR / FILE
        # Without FTS5 in this SQLite build, a plain table and a LIKE scan stand in
        # (same ranking order: words matched, then keywords > path > body).
        self.fts = fts5_available() if fts is None else fts
        self.engine = "fts5" if self.fts else "like"
        self.stats = Stats()
        self.conn = self._memory() if in_memory else self._connect()

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Index:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- opening --------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        if statedir.path_problem(self.root, FILE) is not None:
            return self._memory()  # .rouse/ behind a link: never build the index there
        try:
            self.path.parent.mkdir(exist_ok=True)
            return self._open_file()
        except (OSError, sqlite3.Error):
            return self._memory()

    def _memory(self) -> sqlite3.Connection:
        self.stats = Stats(rebuilt=True, in_memory=True)
        conn = sqlite3.connect(":memory:", isolation_level=None)
        create(conn, self.engine)
        return conn

    def _open_file(self) -> sqlite3.Connection:
        for attempt in range(2):
            conn = sqlite3.connect(self.path, timeout=5, isolation_level=None)
            try:
                if is_empty(conn):
                    create(conn, self.engine)
                    self.stats.rebuilt = True
                    return conn
                if usable(conn, self.engine):
                    return conn
            except sqlite3.DatabaseError:
                pass  # corrupt: not a database, or damaged tables
            conn.close()
            if attempt == 0:
                discard(self.path)
        raise sqlite3.DatabaseError(f"cannot build an index at {self.path}")

    # -- keeping it fresh -----------------------------------------------------

    def refresh(self, tree: Tree) -> Stats:
        """Bring the index up to date with ``tree`` (a walk of this root)."""
        try:
            self._refresh(tree)
        except sqlite3.Error:
            if self.stats.in_memory:
                raise
            self.conn.close()  # e.g. a read-only .rouse/: start over in memory
            self.conn = self._memory()
            self._refresh(tree)
        return self.stats

    def _refresh(self, tree: Tree) -> None:
        files = indexed_files(tree)
        gone, replaced, changed = self._diff(files)
        if gone or changed:
            conn = self.conn
            conn.execute("BEGIN IMMEDIATE")
            try:
                gone, replaced, changed = self._diff(files)  # again, holding the write lock
                fresh = [self._read(file, kind) for file, kind in changed.values()]
                for doc_id in gone + replaced:
                    conn.execute("DELETE FROM docs WHERE rowid = ?", (doc_id,))
                    conn.execute("DELETE FROM files WHERE id = ?", (doc_id,))
                for doc in fresh:
                    cursor = conn.execute(
                        "INSERT INTO files (rel, kind, size, mtime_ns) VALUES (?, ?, ?, ?)",
                        (doc.rel, doc.kind, doc.size, doc.mtime_ns),
                    )
                    conn.execute(
                        "INSERT INTO docs (rowid, keywords, path, body) VALUES (?, ?, ?, ?)",
                        (cursor.lastrowid, doc.keywords, doc.rel.removesuffix(".md"), doc.body),
                    )
                conn.execute("COMMIT")
            except sqlite3.Error:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
        self.stats.read = len(changed)
        self.stats.removed = len(gone)
        self.stats.unchanged = len(files) - len(changed)

    def _diff(
        self, files: dict[str, tuple[File, str]]
    ) -> tuple[list[int], list[int], dict[str, tuple[File, str]]]:
        """Rows of files gone, rows of files changed, and the files to (re)read."""
        gone: list[int] = []
        replaced: list[int] = []
        changed: dict[str, tuple[File, str]] = {}
        seen: set[str] = set()
        for rel, doc_id, kind, size, mtime_ns in self.conn.execute(
            "SELECT rel, id, kind, size, mtime_ns FROM files"
        ):
            seen.add(rel)
            entry = files.get(rel)
            if entry is None:
                gone.append(doc_id)
            elif (entry[1], entry[0].size, entry[0].mtime_ns) != (kind, size, mtime_ns):
                replaced.append(doc_id)
                changed[rel] = entry
        changed.update((rel, entry) for rel, entry in files.items() if rel not in seen)
        return gone, replaced, changed

    def _read(self, file: File, kind: str) -> _Doc:
        """Read one file's body (and its header afresh) for indexing."""
        mtime_ns = file.mtime_ns
        if time.time_ns() - mtime_ns < RACY_NS:
            mtime_ns = -1  # written just now: it could change again unseen, so re-read next time
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
        try:
            fd = os.open(self.root / file.rel, flags)
            with os.fdopen(fd, "rb") as handle:
                data = handle.read(MAX_BODY_BYTES)
            head, raw = header.split(data, file.rel)
        except (OSError, HeaderError):
            head, raw, mtime_ns = file.header, b"", -1
        described = [f"{key}: {head.get(key)}" for key in DESCRIBED_BY if head.get(key)]
        body = "\n\n".join([raw.decode("utf-8", "replace").strip(), *described])
        keywords = (head.get("keywords") or "").replace(",", " ")
        return _Doc(file.rel, kind, file.size, mtime_ns, keywords, body)

    def search(self, words: list[str], *, kind: str | None = None, limit: int = 10) -> list[Match]:
        """The best ``limit`` matches for ``words`` (see :func:`query_words`), best first."""
        return search(self.conn, words, fts=self.fts, kind=kind, limit=limit)


# -- recall -----------------------------------------------------------------------
