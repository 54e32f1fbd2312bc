"""The recall index: SQLite FTS5 over notes, backlog, records and context files.

Derived and disposable (SPEC §10): ``.rouse/index.sqlite3`` is brought up to
date at query time, re-reading only files whose size or mtime changed (the
tree walk goes through the header cache, bodies are read only for changed
files) and dropping rows for files that are gone. It is rebuilt when missing,
corrupt, or of another schema; when ``.rouse/`` cannot be written the index
lives in memory for the one query, so recall always works.

Three columns are searched, weighted keywords > path > body (bm25 column
weights). A user's query never reaches FTS5 syntax raw: it is cut into words
and each word is quoted, so quotes, ``-``, ``:``, ``*``, ``NEAR(`` or ``AND``
are plain text. Documents match any word; those matching more of the words
rank first, then by bm25.
"""

from __future__ import annotations

import contextlib
import os
import re
import sqlite3
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from rouse.core import header, layout
from rouse.core.cache import cached_walk
from rouse.core.errors import HeaderError, UsageError
from rouse.core.timefmt import human_age
from rouse.core.tree import File, Tree
from rouse.probes import definitions as probes
from rouse.probes import gate, readings
from rouse.trust import origins

SCHEMA = 1  # bump when the tables, columns or tokenizer change: old files are rebuilt
FILE = "index.sqlite3"
KINDS = (*layout.RECORD_TYPES[:5], "backlog", "note", *layout.CONTEXT_TYPES)
COLUMNS = "keywords, path, body"
WEIGHTS = (10.0, 4.0, 1.0)  # bm25 weights of those columns
TOKENIZER = "porter unicode61 remove_diacritics 2"
RACY_NS = 2_000_000_000  # a file this fresh may change again within its mtime tick
MAX_BODY_BYTES = 1024 * 1024
MAX_WORDS = 32
SNIPPET_TOKENS = 24
SNIPPET_CHARS = 160
#: Header lines that describe a record in words: searched with the body.
DESCRIBED_BY = ("closes-when", "success-when", "outcome")
_WORD_RE = re.compile(r"[^\W_]+")


def query_words(query: str) -> list[str]:
    """The words of a user's query, lowercased and de-duplicated (at most 32).

    Raises UsageError when nothing searchable is left.
    """
    words = list(dict.fromkeys(_WORD_RE.findall(query.lower())))[:MAX_WORDS]
    if not words:
        raise UsageError(
            f"nothing to search for in {query!r}: give at least one word of letters or digits"
        )
    return words


def fts5_available() -> bool:
    """Whether this Python's SQLite has FTS5 (nearly every build does)."""
    try:
        with contextlib.closing(sqlite3.connect(":memory:")) as conn:
            conn.execute("CREATE VIRTUAL TABLE probe USING fts5(x)")
    except sqlite3.Error:
        return False
    return True


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
class Match:
    rel: str
    kind: str
    words: int  # how many of the query's words it matches
    score: float  # bm25 (lower is better)
    snippet: str = ""
    doc_id: int = 0


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
        try:
            self.path.parent.mkdir(exist_ok=True)
            return self._open_file()
        except (OSError, sqlite3.Error):
            return self._memory()

    def _memory(self) -> sqlite3.Connection:
        self.stats = Stats(rebuilt=True, in_memory=True)
        conn = sqlite3.connect(":memory:", isolation_level=None)
        self._create(conn)
        return conn

    def _open_file(self) -> sqlite3.Connection:
        for attempt in range(2):
            conn = sqlite3.connect(self.path, timeout=5, isolation_level=None)
            try:
                if self._usable(conn):
                    return conn
            except sqlite3.DatabaseError:
                pass  # corrupt: not a database, or damaged tables
            conn.close()
            if attempt == 0:
                self._discard()
        raise sqlite3.DatabaseError(f"cannot build an index at {self.path}")

    def _usable(self, conn: sqlite3.Connection) -> bool:
        """True if ``conn`` holds our schema (creating it in an empty file)."""
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        tables = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
        if version == 0 and tables == 0:
            self._create(conn)
            self.stats.rebuilt = True
            return True
        if version != SCHEMA:
            return False
        row = conn.execute("SELECT value FROM meta WHERE key = 'engine'").fetchone()
        if row is None or row[0] != self.engine:
            return False
        conn.execute("SELECT count(*) FROM files").fetchone()
        conn.execute("SELECT rowid FROM docs LIMIT 1").fetchall()
        return True

    def _discard(self) -> None:
        for suffix in ("", "-journal", "-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(f"{self.path}{suffix}")

    def _create(self, conn: sqlite3.Connection) -> None:
        create = "CREATE TABLE IF NOT EXISTS"
        if self.fts:
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
            conn.execute("INSERT OR REPLACE INTO meta VALUES ('engine', ?)", (self.engine,))
            conn.execute(f"PRAGMA user_version = {SCHEMA}")
            conn.execute("COMMIT")
        except sqlite3.Error:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

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

    # -- searching ------------------------------------------------------------

    def search(self, words: list[str], *, kind: str | None = None, limit: int = 10) -> list[Match]:
        """The best ``limit`` matches for ``words`` (see :func:`query_words`), best first."""
        found = self._fts(words, kind) if self.fts else self._like(words, kind)
        found.sort(key=lambda m: (-m.words, m.score, m.rel))
        best = found[:limit]
        if self.fts and best:
            self._snippets(words, best)
        return best

    def _rows(self, sql: str, params: list[Any], kind: str | None) -> list[Any]:
        if kind is not None:
            sql += " AND f.kind = ?"
            params = [*params, kind]
        return self.conn.execute(sql, params).fetchall()

    def _fts(self, words: list[str], kind: str | None) -> list[Match]:
        matched: Counter[int] = Counter()
        for word in words:
            matched.update(
                row[0]
                for row in self.conn.execute(
                    "SELECT rowid FROM docs WHERE docs MATCH ?", (_quoted([word]),)
                )
            )
        sql = (
            "SELECT f.id, f.rel, f.kind, bm25(docs, ?, ?, ?) FROM docs "
            "JOIN files f ON f.id = docs.rowid WHERE docs MATCH ?"
        )
        return [
            Match(rel, doc_kind, matched[doc_id], float(score), doc_id=doc_id)
            for doc_id, rel, doc_kind, score in self._rows(sql, [*WEIGHTS, _quoted(words)], kind)
        ]

    def _snippets(self, words: list[str], best: list[Match]) -> None:
        ids = [m.doc_id for m in best]
        marks = ", ".join("?" for _ in ids)
        rows = self.conn.execute(
            f"SELECT rowid, snippet(docs, 2, '', '', '…', {SNIPPET_TOKENS}) FROM docs "
            f"WHERE docs MATCH ? AND rowid IN ({marks})",
            (_quoted(words), *ids),
        )
        snippets = dict(rows)
        for match in best:
            match.snippet = one_line(snippets.get(match.doc_id, ""))

    def _like(self, words: list[str], kind: str | None) -> list[Match]:
        clauses = " OR ".join(
            f"d.{column} LIKE ? ESCAPE '\\'"
            for _ in words
            for column in ("keywords", "path", "body")
        )
        params = [f"%{_escape_like(w)}%" for w in words for _ in range(3)]
        sql = (
            "SELECT f.rel, f.kind, d.keywords, d.path, d.body FROM docs d "
            f"JOIN files f ON f.id = d.rowid WHERE ({clauses})"
        )
        found = []
        for rel, doc_kind, *columns in self._rows(sql, params, kind):
            texts = [str(c).lower() for c in columns]
            hits = [[w in text for text in texts] for w in words]
            score = -sum(
                weight for row in hits for weight, hit in zip(WEIGHTS, row, strict=True) if hit
            )
            body = str(columns[2])
            at = min((i for i in (body.lower().find(w) for w in words) if i >= 0), default=0)
            snippet = ("…" if at > 40 else "") + body[max(at - 40, 0) : at + SNIPPET_CHARS]
            found.append(
                Match(str(rel), str(doc_kind), sum(any(r) for r in hits), score, one_line(snippet))
            )
        return found


def _quoted(words: list[str]) -> str:
    """An FTS5 query matching any of ``words``, each a quoted string (never syntax)."""
    return " OR ".join('"' + w.replace('"', '""') + '"' for w in words)


def _escape_like(word: str) -> str:
    return word.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def one_line(text: str, limit: int = SNIPPET_CHARS) -> str:
    """Whitespace collapsed to single spaces, cut to ``limit`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


# -- recall -----------------------------------------------------------------------


@dataclass
class Hit:
    """One recalled file, as ``rouse recall`` and the MCP server show it."""

    path: str
    kind: str
    origin: str
    age: str
    keywords: str
    snippet: str
    probes: dict[str, str] = field(default_factory=dict)  # name → reading
    updated: str | None = None  # a note's own `updated:` line, as written

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "kind": self.kind,
            "origin": self.origin,
            "age": self.age,
            "keywords": self.keywords,
            "snippet": self.snippet,
            "probes": dict(self.probes),
            "updated": self.updated,
        }


def recall(
    root: Path,
    query: str,
    now: datetime,
    *,
    limit: int = 10,
    kind: str | None = None,
    run_probes: bool = True,
) -> list[Hit]:
    """Search the tree at ``root`` for ``query``; the best ``limit`` hits, best first.

    Raises UsageError for a query with no words, an unknown ``kind`` or a
    ``limit`` below 1. Demand probes named by the returned hits run (reusing
    readings within their ttl) unless ``run_probes`` is False or the probes
    file is not trusted; then they read ``<unknown>``.
    """
    words = query_words(query)
    if kind is not None and kind not in KINDS:
        raise UsageError(f"unknown kind {kind!r}: use one of {', '.join(KINDS)}")
    if limit < 1:
        raise UsageError(f"--limit must be at least 1, got {limit}")
    tree = cached_walk(root)
    with Index(root) as index:
        index.refresh(tree)
        matches = index.search(words, kind=kind, limit=limit)
    files = indexed_files(tree)
    reader = origins.origin_reader(root)
    measure = _probe_reader(tree, reader, run_probes)
    hits = []
    for match in matches:
        file = files[match.rel][0]
        names = [n.strip() for n in (file.get("probes") or "").split(",") if n.strip()]
        hits.append(
            Hit(
                path=match.rel,
                kind=match.kind,
                origin=reader(file),
                age=human_age(file.mtime, now),
                keywords=(file.get("keywords") or "").strip(),
                snippet=match.snippet,
                probes={name: measure(name) for name in names},
                updated=(file.get("updated") or "").strip() or None,
            )
        )
    reader.flush()
    return hits


def _probe_reader(
    tree: Tree, reader: origins.OriginReader, run_probes: bool
) -> Callable[[str], str]:
    """``measure(name)``: a probe's reading, run at most once per recall, only when asked."""
    readings_by_name: dict[str, str] = {}
    state: dict[str, Any] = {}

    def measure(name: str) -> str:
        if name in readings_by_name:
            return readings_by_name[name]
        if "probes" not in state:  # first probe named by a hit: read and judge the file once
            allowed = run_probes and gate.probes_allowed(tree, reader, {})[0]
            state["probes"] = {p.name: p for p in probes.load_probes(tree)[0]} if allowed else {}
        probe = state["probes"].get(name)
        reading = readings.run_demand(tree.root, probe) if probe else readings.UNKNOWN
        readings_by_name[name] = reading
        return reading

    return measure


def render(hits: list[Hit]) -> list[str]:
    """The plain text of ``rouse recall``: each hit's path line, then indented details."""
    lines: list[str] = []
    for hit in hits:
        keywords = f" — {hit.keywords}" if hit.keywords else ""
        lines.append(f"{hit.path} [{hit.origin}] ({hit.age}{keywords})")
        if hit.snippet:
            lines.append(f"  {hit.snippet}")
        if hit.updated:
            lines.append(f"  updated: {hit.updated}")
        if hit.probes:
            lines.append("  probes: " + ", ".join(f"{k}={v}" for k, v in hit.probes.items()))
    return lines
