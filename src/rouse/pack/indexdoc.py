"""What the recall index holds (:mod:`rouse.pack.index`): its schema, which files recall
searches, a file read as a row of words, a file as it is now, and what a refresh did.

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
import stat
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from rouse.core import header, layout
from rouse.core.errors import HeaderError
from rouse.core.header import Header
from rouse.core.tree import File, Tree
from rouse.pack import search, written
from rouse.state.files import RACY_NS

KINDS = (*layout.RECORD_TYPES[:5], "backlog", "note", *layout.CONTEXT_TYPES)
MAX_BODY_BYTES = 1024 * 1024
MAX_FILE_BYTES = 8 * 1024 * 1024 + 1  # read for a hit: enough to check its signature
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
    embedded: int = 0  # vectors made
    rebuilt: bool = False  # built from nothing (missing, corrupt, old schema, in memory)
    in_memory: bool = False  # .rouse/ could not hold the index


@dataclass
class Doc:
    """One file as the index holds it: its words (and, with a model, its vector)."""

    rel: str
    kind: str
    size: int
    mtime_ns: int
    keywords: str
    body: str  # the authored part and the record's described-by values, as plain words
    log: str  # the agent's notes below the log marker, rouse's prefixes left out

    @property
    def path(self) -> str:
        return self.rel.removesuffix(".md")

    def columns(self) -> tuple[str, str, str, str, str]:
        cjk = " ".join(search.bigrams(f"{self.keywords}\n{self.body}"))
        return (self.keywords, self.path, self.body, self.log, cjk)

    def meaning_text(self) -> str:
        """What the vector is made of: keywords, the path's words, the authored body."""
        return "\n".join(part for part in (self._heading(), self.body) if part)

    def meaning_chunks(self) -> list[str]:
        """What the vectors are made of: one text for a short body; for a long one, each
        of its chunks (:func:`chunks`) after the keywords and the path's words."""
        if len(self.body) <= CHUNK_CHARS:
            return [self.meaning_text()]
        heading = self._heading()
        return [f"{heading}\n{part}" if heading else part for part in chunks(self.body)]

    def _heading(self) -> str:
        path_words = " ".join(search.WORD_RE.findall(self.path.replace("_", " ")))
        return "\n".join(part for part in (self.keywords, path_words) if part)


#: A body longer than this is embedded in chunks of about this many characters (the
#: model reads a text's first 512 tokens: a long note's one vector would miss its end).
CHUNK_CHARS = 500
#: At most this many chunks a file: a longer body gets longer chunks.
MAX_CHUNKS = 64


def chunks(body: str) -> list[str]:
    """``body`` cut into chunks at paragraph (else line, else word) breaks."""
    size = max(CHUNK_CHARS, -(-len(body) // MAX_CHUNKS))
    pieces: list[str] = []
    for paragraph in body.split("\n\n"):
        while len(paragraph) > size:  # one paragraph longer than a chunk: cut at a space
            cut = paragraph.rfind(" ", 0, size)
            cut = cut if cut > size // 2 else size
            pieces.append(paragraph[:cut])
            paragraph = paragraph[cut:].lstrip()
        pieces.append(paragraph)
    found: list[str] = []
    for piece in pieces:
        if found and len(found[-1]) + 2 + len(piece) <= size:
            found[-1] += "\n\n" + piece
        elif piece.strip():
            found.append(piece)
    return found or [body]


@dataclass
class Current:
    """A file as it is now, read for a hit: its bytes, header and indexed form."""

    data: bytes
    header: Header
    doc: Doc
    mtime_ns: int  # as the file is now (the row's may be -1: written too recently to trust)


def document(rel: str, kind: str, size: int, mtime_ns: int, head: Header, raw: bytes) -> Doc:
    authored, log = written.split(raw)
    described = [(head.get(key) or "").strip() for key in DESCRIBED_BY]
    body = "\n\n".join(part for part in (authored, *described) if part)
    keywords = " ".join((head.get("keywords") or "").replace(",", " ").split())
    return Doc(rel, kind, size, mtime_ns, keywords, body, log)


def _settled(mtime_ns: int) -> int:
    """The mtime a row keeps: -1 for a file written just now, which could change again
    unseen within its mtime tick, so that it is read again next time."""
    return -1 if time.time_ns() - mtime_ns < RACY_NS else mtime_ns


def read_doc(root: Path, file: File, kind: str) -> Doc:
    """One walked file as a row, its body (and its header) read afresh; one that cannot
    be read is its walked header alone, read again next time."""
    mtime_ns = _settled(file.mtime_ns)
    try:
        data = header.read_capped(root / file.rel, MAX_BODY_BYTES)
        head, raw = header.split(data, file.rel)
    except (OSError, HeaderError):
        head, raw, mtime_ns = file.header, b"", -1
    return document(file.rel, kind, file.size, mtime_ns, head, raw)


def read_current(root: Path, rel: str, kind: str) -> Current | None:
    """A hit's file as it is now, and its row; None when it cannot be read now (gone,
    not a regular file, no header)."""
    try:
        fd = os.open(root / rel, header.READ_FLAGS)
        with os.fdopen(fd, "rb") as handle:
            info = os.fstat(handle.fileno())
            data = handle.read(MAX_FILE_BYTES) if stat.S_ISREG(info.st_mode) else b""
        if not stat.S_ISREG(info.st_mode):
            raise OSError(f"{rel} is not a regular file")
        head, raw = header.split(data[:MAX_BODY_BYTES], rel)
    except (OSError, HeaderError):
        return None
    doc = document(rel, kind, info.st_size, _settled(info.st_mtime_ns), head, raw)
    return Current(data, head, doc, info.st_mtime_ns)


# -- the schema ------------------------------------------------------------------

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
    with writing(conn):
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


@contextlib.contextmanager
def writing(conn: sqlite3.Connection) -> Iterator[None]:
    """``BEGIN IMMEDIATE`` … ``COMMIT`` (or ``ROLLBACK`` on an error)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
