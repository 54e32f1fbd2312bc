"""Searching the recall index: a user's words in, ranked matches out (the ranking is
docs/recall.md's "By words", "By meaning" and "Both").

A user's query never reaches FTS5 syntax raw: it is cut into words and each word is
quoted, so quotes, ``-``, ``:``, ``*``, ``NEAR(`` or ``AND`` are plain text. Without
FTS5, a LIKE scan ranks the same way.
"""

from __future__ import annotations

import re
import sqlite3
from collections import Counter
from dataclasses import dataclass
from typing import Any

from rouse.core.errors import UsageError

WEIGHTS = (10.0, 4.0, 1.0, 0.5, 1.0)  # bm25 weights of keywords, path, body, log, cjk
MAX_WORDS = 32
SNIPPET_TOKENS = 24
SNIPPET_CHARS = 160
#: Reciprocal rank fusion: the constant, and how much each list weighs.
RRF_K = 10
WORDS_WEIGHT = 1.0
MEANING_WEIGHT = 1.0
#: A file is a match by meaning when its cosine with the query reaches this.
MEANING_FLOOR = 0.15
#: How deep each list goes into the fusion.
FUSED_DEPTH = 50

WORD_RE = re.compile(r"[^\W_]+")

#: English words that say little on their own (our own list). A query made of
#: nothing else is searched for them; otherwise they are left out.
_STOPWORDS = """a about after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few
    for from further had has have having he her here hers herself him himself his how
    i if in into is it its itself just me more most my myself no nor not now of off
    on once only or other our ours ourselves out over own same she should so some
    such than that the their theirs them themselves then there these they this those
    through to too under until up very was we were what when where which while who
    whom why will with would you your yours yourself yourselves"""
STOPWORDS = frozenset(_STOPWORDS.split())


#: Runs of characters of scripts written without spaces between words (Chinese,
#: Japanese kana and kanji): the tokenizer would take a whole run as one word.
CJK_RUN = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")


def bigrams(text: str) -> list[str]:
    """Each run of :data:`CJK_RUN` in ``text`` as its overlapping pairs of characters
    (a run of one: itself) — the words such text is searched by."""
    pairs: list[str] = []
    for run in CJK_RUN.findall(text):
        pairs += [run] if len(run) == 1 else [run[i : i + 2] for i in range(len(run) - 1)]
    return pairs


def _segmented(word: str) -> list[str]:
    """A query word as searched: its CJK runs as pairs, the rest as it is."""
    if not CJK_RUN.search(word):
        return [word]
    rest = [w for w in WORD_RE.findall(CJK_RUN.sub(" ", word))]
    return rest + bigrams(word)


def query_words(query: str) -> list[str]:
    """The words of a user's query, lowercased and de-duplicated (at most 32); text
    without spaces between words (:data:`CJK_RUN`) as pairs of characters.

    Raises UsageError when nothing searchable is left.
    """
    found = [part for word in WORD_RE.findall(query.lower()) for part in _segmented(word)]
    words = list(dict.fromkeys(found))[:MAX_WORDS]
    if not words:
        raise UsageError(
            f"nothing to search for in {query!r}: give at least one word of letters or digits"
        )
    return words


def content_words(words: list[str]) -> list[str]:
    """The words that carry the query: all but stopwords (all of them if that is all)."""
    content = [w for w in words if w not in STOPWORDS]
    return content or words


@dataclass
class Match:
    rel: str
    kind: str
    words: int  # how many of the query's words it matches
    score: float  # bm25 (lower is better); by meaning, minus the cosine
    snippet: str = ""
    doc_id: int = 0
    only_log: bool = False  # by words: only the log below the marker matched
    by_words: bool = False
    meaning: float | None = None  # the cosine, when it is a match by meaning
    chunk: int | None = None  # by meaning, in a file embedded in chunks: the nearest (from 0)


def _quoted(words: list[str]) -> str:
    """An FTS5 query matching any of ``words``, each a quoted string (never syntax)."""
    return " OR ".join('"' + w.replace('"', '""') + '"' for w in words)


def _escape_like(word: str) -> str:
    return word.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def one_line(text: str, limit: int = SNIPPET_CHARS) -> str:
    """Whitespace collapsed to single spaces, cut to ``limit`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def by_words(
    conn: sqlite3.Connection, words: list[str], *, fts: bool, kind: str | None = None
) -> list[Match]:
    """Every match for ``words`` (see :func:`query_words`), best first."""
    words = content_words(words)
    found = _fts(conn, words, kind) if fts else _like(conn, words, kind)
    found.sort(key=lambda m: (-m.words, m.score, m.rel))
    return found


#: A file's vector, as :func:`by_meaning` ranks it: (file id, path, kind, chunk).
VectorRow = tuple[int, str, str, int]


def vector_rows(conn: sqlite3.Connection, kind: str | None = None) -> list[tuple[VectorRow, bytes]]:
    """Every vector in the index (of files of ``kind``), each with its row."""
    sql = (
        "SELECT f.id, f.rel, f.kind, v.chunk, v.vec FROM vectors v "
        "JOIN files f ON f.id = v.id WHERE 1"
    )
    # a vector is a BLOB; a row holding anything else (TEXT written by hand, a number)
    # is no vector: skipped, as if it had none
    return [
        ((int(doc_id), str(rel), str(doc_kind), int(chunk)), bytes(vec))
        for doc_id, rel, doc_kind, chunk, vec in _rows(conn, sql, [], kind)
        if isinstance(vec, bytes)
    ]


def by_meaning(rows: list[VectorRow], scores: list[float]) -> list[Match]:
    """Files ranked by the cosine of their vectors (``rows``, :func:`vector_rows`) with
    the query's (``scores``, one per row), best first, those below the floor left out.

    A file embedded in chunks scores its nearest chunk, and the match names it."""
    best: dict[int, Match] = {}
    chunked: set[int] = set()
    for (doc_id, rel, doc_kind, chunk), score in zip(rows, scores, strict=True):
        if chunk:
            chunked.add(doc_id)
        if score < MEANING_FLOOR:
            continue
        held = best.get(doc_id)
        if held is None or held.meaning is None or score > held.meaning:
            best[doc_id] = Match(
                rel, doc_kind, 0, -score, doc_id=doc_id, meaning=score, chunk=chunk
            )
    found = list(best.values())
    for match in found:
        if match.doc_id not in chunked:
            match.chunk = None  # one vector for the whole file: no chunk to name
    found.sort(key=lambda m: (m.score, m.rel))
    return found


COVERAGE_POWER = 2.0


def fuse(words: list[Match], meaning: list[Match], limit: int, total: int = 1) -> list[Match]:
    """Both lists as one, by reciprocal rank fusion: each file scores ``1 / (RRF_K + rank)``
    in each list it is in (its words' share weighing a match by words), and the sums rank."""
    fused: dict[int, Match] = {}
    score: dict[int, float] = {}
    by_words_rank: dict[int, int] = {}
    for weight, ranked in ((WORDS_WEIGHT, words), (MEANING_WEIGHT, meaning)):
        for rank, match in enumerate(ranked[:FUSED_DEPTH], start=1):
            share = (match.words / total) ** COVERAGE_POWER if match.by_words and total else 1.0
            if match.meaning is not None and not match.by_words:
                share = 1.0
            score[match.doc_id] = score.get(match.doc_id, 0.0) + share * weight / (RRF_K + rank)
            kept = fused.setdefault(match.doc_id, match)
            if match.meaning is not None:
                kept.meaning = match.meaning
                kept.chunk = match.chunk
            if match.by_words:
                by_words_rank.setdefault(match.doc_id, rank)
    last = FUSED_DEPTH + 1  # a tie goes to the better match by words
    order = sorted(
        fused.values(),
        key=lambda m: (-round(score[m.doc_id], 12), by_words_rank.get(m.doc_id, last), m.rel),
    )
    if words and total and words[0].words / total >= MOST_OF_QUERY:
        _above_meaning_alone(order, fused[words[0].doc_id])
    return order[:limit]


#: The best match by words that has at least this share of the query's words is never
#: ranked below a match that has fewer of them (by meaning alone: none).
MOST_OF_QUERY = 0.5


def _above_meaning_alone(order: list[Match], best: Match) -> None:
    """Move ``best`` (the best match by words) above every match with fewer of the words."""
    at = order.index(best)
    fewer = (i for i, m in enumerate(order[:at]) if not m.by_words or m.words < best.words)
    first = next(fewer, None)
    if first is not None:
        order.insert(first, order.pop(at))


def snippets(conn: sqlite3.Connection, words: list[str], best: list[Match]) -> None:
    """The FTS5 snippet of each match by words: from its body, or from its log when
    only the log matched."""
    words = content_words(words)
    for column, only_log in ((2, False), (3, True)):
        ids = [m.doc_id for m in best if m.by_words and m.only_log is only_log and not m.snippet]
        if not ids:
            continue
        marks = ", ".join("?" for _ in ids)
        rows = conn.execute(
            f"SELECT rowid, snippet(docs, {column}, '', '', '…', {SNIPPET_TOKENS}) FROM docs "
            f"WHERE docs MATCH ? AND rowid IN ({marks})",
            (_quoted(words), *ids),
        )
        found = dict(rows)
        for match in best:
            if match.doc_id in found:
                match.snippet = one_line(found[match.doc_id])


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
    written = {
        row[0]
        for row in conn.execute(
            "SELECT rowid FROM docs WHERE docs MATCH ?",
            ("{keywords path body cjk} : (" + _quoted(words) + ")",),
        )
    }
    sql = (
        "SELECT f.id, f.rel, f.kind, bm25(docs, ?, ?, ?, ?, ?) FROM docs "
        "JOIN files f ON f.id = docs.rowid WHERE docs MATCH ?"
    )
    return [
        Match(
            rel,
            doc_kind,
            matched[doc_id],
            float(score),
            doc_id=doc_id,
            only_log=doc_id not in written,
            by_words=True,
        )
        for doc_id, rel, doc_kind, score in _rows(conn, sql, [*WEIGHTS, _quoted(words)], kind)
    ]


def _like(conn: sqlite3.Connection, words: list[str], kind: str | None) -> list[Match]:
    columns = ("keywords", "path", "body", "log")
    clauses = " OR ".join(f"d.{column} LIKE ? ESCAPE '\\'" for _ in words for column in columns)
    params = [f"%{_escape_like(w)}%" for w in words for _ in columns]
    sql = (
        "SELECT f.id, f.rel, f.kind, d.keywords, d.path, d.body, d.log FROM docs d "
        f"JOIN files f ON f.id = d.rowid WHERE ({clauses})"
    )
    found = []
    for doc_id, rel, doc_kind, *texts in _rows(conn, sql, params, kind):
        lowered = [str(c).lower() for c in texts]
        hits = [[w in text for text in lowered] for w in words]
        score = -sum(
            weight for row in hits for weight, hit in zip(WEIGHTS[:4], row, strict=True) if hit
        )
        only_log = not any(any(row[:3]) for row in hits)
        text = str(texts[3] if only_log else texts[2])
        at = min((i for i in (text.lower().find(w) for w in words) if i >= 0), default=0)
        snippet = ("…" if at > 40 else "") + text[max(at - 40, 0) : at + SNIPPET_CHARS]
        found.append(
            Match(
                str(rel),
                str(doc_kind),
                sum(any(r) for r in hits),
                score,
                one_line(snippet),
                doc_id=int(doc_id),
                only_log=only_log,
                by_words=True,
            )
        )
    return found
