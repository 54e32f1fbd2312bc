"""Searching the recall index: a user's words in, ranked matches out.

A user's query never reaches FTS5 syntax raw: it is cut into words and each
word is quoted, so quotes, ``-``, ``:``, ``*``, ``NEAR(`` or ``AND`` are plain
text. Documents match any word; those matching more of the words rank first,
then by bm25 (keywords > path > body). Without FTS5, a LIKE scan ranks the
same way.
"""

from __future__ import annotations

import re
import sqlite3
from collections import Counter
from dataclasses import dataclass
from typing import Any

from rouse.core.errors import UsageError

WEIGHTS = (10.0, 4.0, 1.0)  # bm25 weights of those columns


MAX_WORDS = 32


SNIPPET_TOKENS = 24


SNIPPET_CHARS = 160


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


@dataclass
class Match:
    rel: str
    kind: str
    words: int  # how many of the query's words it matches
    score: float  # bm25 (lower is better)
    snippet: str = ""
    doc_id: int = 0


def _quoted(words: list[str]) -> str:
    """An FTS5 query matching any of ``words``, each a quoted string (never syntax)."""
    return " OR ".join('"' + w.replace('"', '""') + '"' for w in words)


def _escape_like(word: str) -> str:
    return word.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def one_line(text: str, limit: int = SNIPPET_CHARS) -> str:
    """Whitespace collapsed to single spaces, cut to ``limit`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def search(
    conn: sqlite3.Connection,
    words: list[str],
    *,
    fts: bool,
    kind: str | None = None,
    limit: int = 10,
) -> list[Match]:
    """The best ``limit`` matches for ``words`` (see :func:`query_words`), best first."""
    found = _fts(conn, words, kind) if fts else _like(conn, words, kind)
    found.sort(key=lambda m: (-m.words, m.score, m.rel))
    best = found[:limit]
    if fts and best:
        _snippets(conn, words, best)
    return best


def _rows(conn: sqlite3.Connection, sql: str, params: list[Any], kind: str | None) -> list[Any]:
    if kind is not None:
        sql += " AND f.kind = ?"
        params = [*params, kind]
    return conn.execute(sql, params).fetchall()


def _fts(conn: sqlite3.Connection, words: list[str], kind: str | None) -> list[Match]:
    matched: Counter[int] = Counter()
    for word in words:
        matched.update(
            row[0]
            for row in conn.execute("SELECT rowid FROM docs WHERE docs MATCH ?", (_quoted([word]),))
        )
    sql = (
        "SELECT f.id, f.rel, f.kind, bm25(docs, ?, ?, ?) FROM docs "
        "JOIN files f ON f.id = docs.rowid WHERE docs MATCH ?"
    )
    return [
        Match(rel, doc_kind, matched[doc_id], float(score), doc_id=doc_id)
        for doc_id, rel, doc_kind, score in _rows(conn, sql, [*WEIGHTS, _quoted(words)], kind)
    ]


def _snippets(conn: sqlite3.Connection, words: list[str], best: list[Match]) -> None:
    ids = [m.doc_id for m in best]
    marks = ", ".join("?" for _ in ids)
    rows = conn.execute(
        f"SELECT rowid, snippet(docs, 2, '', '', '…', {SNIPPET_TOKENS}) FROM docs "
        f"WHERE docs MATCH ? AND rowid IN ({marks})",
        (_quoted(words), *ids),
    )
    snippets = dict(rows)
    for match in best:
        match.snippet = one_line(snippets.get(match.doc_id, ""))


def _like(conn: sqlite3.Connection, words: list[str], kind: str | None) -> list[Match]:
    clauses = " OR ".join(
        f"d.{column} LIKE ? ESCAPE '\\'" for _ in words for column in ("keywords", "path", "body")
    )
    params = [f"%{_escape_like(w)}%" for w in words for _ in range(3)]
    sql = (
        "SELECT f.rel, f.kind, d.keywords, d.path, d.body FROM docs d "
        f"JOIN files f ON f.id = d.rowid WHERE ({clauses})"
    )
    found = []
    for rel, doc_kind, *columns in _rows(conn, sql, params, kind):
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
