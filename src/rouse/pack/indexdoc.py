"""What the recall index holds for each file (:mod:`rouse.pack.index`): which files
recall searches, a file read as a row of words, a file as it is now, and what a refresh
did."""

from __future__ import annotations

import os
import stat
import time
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
