"""What the recall index holds for each file (:mod:`rouse.pack.index`): which files
recall searches, a file as a row of words, a file as it is now, and what a refresh did."""

from __future__ import annotations

from dataclasses import dataclass

from rouse.core import layout
from rouse.core.header import Header
from rouse.core.tree import File, Tree
from rouse.pack import search, written

KINDS = (*layout.RECORD_TYPES[:5], "backlog", "note", *layout.CONTEXT_TYPES)
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

    def columns(self) -> tuple[str, str, str, str]:
        return (self.keywords, self.path, self.body, self.log)

    def meaning_text(self) -> str:
        """What the vector is made of: keywords, the path's words, the authored body."""
        path_words = " ".join(search.WORD_RE.findall(self.path.replace("_", " ")))
        return "\n".join(part for part in (self.keywords, path_words, self.body) if part)


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
