"""``rouse fleet recall``: words searched in every mirrored tree at once.

It ranks as local recall does: documents matching more of the words first,
then by a weighted rank in which keywords count more than the path, and the
path more than the body.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from rouse.core.errors import UsageError
from rouse.core.layout import CONTEXT_TYPES
from rouse.core.timefmt import human_age, iso_stamp
from rouse.fleet.mirror import TEXT_CONFIG
from rouse.fleet.pg import PgDatabase, only_trees
from rouse.fleet.views import short
from rouse.pack import written
from rouse.pack.indexdoc import KINDS
from rouse.pack.recall import HELD
from rouse.pack.search import SNIPPET_TOKENS, one_line, query_words
from rouse.trust import fence
from rouse.trust.origins import VERIFIED

#: ``ts_rank`` weights, in PostgreSQL's order {D, C, B, A}: body 0.1, path 0.4, keywords 1.
RANK_WEIGHTS = "{0, 0.1, 0.4, 1.0}"
#: Characters of a hit's body the snippet is looked for in.
SNIPPET_SOURCE = 200_000


@dataclass
class FleetHit:
    """One file recalled from the mirror."""

    tree: str
    root: str
    host: str
    path: str
    kind: str
    origin: str
    verified: str  # the origin reader's verdict on the machine that mirrored it
    keywords: str
    snippet: str
    mtime: datetime
    updated: str | None = None
    words: int = 0
    rank: float = 0.0

    @property
    def held(self) -> bool:
        """Context whose words are quoted data is held back whole here (which key judged
        it is another machine's to say)."""
        return self.kind in CONTEXT_TYPES and fence.quoted(self.origin)

    def shown(self) -> tuple[str, str, str | None]:
        """Its keywords, snippet and ``updated:`` as a model may see them (the fence rule
        of its origin; a held context file: how the owner vouches, never its words)."""
        if self.held:
            return "", HELD, None
        updated = fence.inline(self.updated, self.origin) if self.updated else None
        return fence.inline(self.keywords, self.origin), self.snippet, updated

    def to_json(self) -> dict[str, Any]:
        return {
            "tree": self.tree,
            "root": self.root,
            "host": self.host,
            "path": self.path,
            "kind": self.kind,
            "origin": self.origin,
            "verified": self.verified,
            "origin_verified": self.verified in VERIFIED,
            "age": iso_stamp(self.mtime),
            "keywords": self.shown()[0],
            "snippet": self.shown()[1] if self.held else fence.shown(self.snippet, self.origin),
            "updated": self.shown()[2],
        }


#: The configuration a query made only of stopwords is searched with: ``english``
#: drops them all, as local FTS5 does not. The mirror's tsvector is ``english``,
#: so then each file's vector is made on the fly (a scan: such queries are rare).
SIMPLE_CONFIG = "simple"
SIMPLE_VECTOR = (
    "(setweight(to_tsvector('simple', coalesce(m.keywords, '')), 'A') || "
    "setweight(to_tsvector('simple', m.path), 'B') || "
    "setweight(to_tsvector('simple', m.body), 'C'))"
)
#: What ``fleet recall --mode`` can do: the mirror holds words, not vectors.
MIRROR_MODES = ("words",)


def search_config(db: PgDatabase, words: list[str]) -> str:
    """``english``, or ``simple`` when ``english`` would leave nothing of the query."""
    row = db.execute(
        f"SELECT numnode(plainto_tsquery('{TEXT_CONFIG}', ?)) AS n", (" ".join(words),)
    ).fetchone()
    return TEXT_CONFIG if int(row["n"]) else SIMPLE_CONFIG


def recall(
    db: PgDatabase,
    query: str,
    trees: list[str] | None = None,
    limit: int = 10,
    mode: str | None = None,
) -> list[FleetHit]:
    """The best ``limit`` mirrored files for ``query`` across trees, best first."""
    if mode is not None and mode not in MIRROR_MODES:  # the mirror holds no vectors
        raise UsageError(
            f"the fleet's mirror holds no vectors, so fleet recall cannot search by {mode}: "
            "give --mode words (or run rouse recall on a tree itself, which can)"
        )
    words = query_words(query)
    config = search_config(db, words)
    vector = "m.search" if config == TEXT_CONFIG else SIMPLE_VECTOR
    one = f"plainto_tsquery('{config}', ?)"
    matched = " + ".join(f"({vector} @@ {one})::int" for _ in words)
    either = " || ".join(one for _ in words)
    where, params = only_trees(trees, "m.tree")
    rows = db.execute(
        "SELECT best.*, ts_headline(?::regconfig, left(best.body || E'\\n' || best.log, ?), "
        "best.q, ?) AS snippet FROM ("
        "SELECT m.tree, m.path, m.kind, m.origin, m.verified, m.keywords, m.mtime_ns, "
        "m.header->>'updated' AS updated, m.body, m.log, q.q, "
        "coalesce(t.root, s.root, '') AS root, coalesce(t.host, s.host, '') AS host, "
        f"{matched} AS words, ts_rank(?::float4[], {vector}, q.q) AS rank "
        f"FROM (SELECT {either} AS q) q JOIN mirror_files m ON {vector} @@ q.q "
        "LEFT JOIN mirror_state s ON s.tree = m.tree LEFT JOIN trees t ON t.tree = m.tree "
        f"WHERE m.kind = ANY(?){where} "
        "ORDER BY words DESC, rank DESC, m.path, m.tree LIMIT ?) best "
        "ORDER BY best.words DESC, best.rank DESC, best.path, best.tree",
        (
            config,
            SNIPPET_SOURCE,
            f'StartSel="",StopSel="",MaxWords={SNIPPET_TOKENS},MinWords=8',
            *words,
            RANK_WEIGHTS,
            *words,
            list(KINDS),
            *params,
            limit,
        ),
    ).fetchall()
    return [
        FleetHit(
            tree=row["tree"],
            root=row["root"],
            host=row["host"],
            path=row["path"],
            kind=row["kind"],
            origin=row["origin"],
            verified=row["verified"],
            keywords=row["keywords"],
            snippet=marked_snippet(row["snippet"] or "", f"{row['body']}\n{row['log']}"),
            mtime=datetime.fromtimestamp(int(row["mtime_ns"]) / 1e9),
            updated=(row["updated"] or "").strip() or None,
            words=int(row["words"]),
            rank=float(row["rank"]),
        )
        for row in rows
    ]


def marked_snippet(fragment: str, source: str) -> str:
    """A headline fragment as one line of plain words, with ``…`` where it cuts ``source``."""
    flat = " ".join(fragment.split())
    whole = " ".join(source[:SNIPPET_SOURCE].split())
    if not flat:
        return ""
    lead = "" if whole.startswith(flat) else "…"
    tail = "" if whole.endswith(flat) else "…"
    words = " ".join(written.plain(flat).split())
    return one_line(f"{lead}{words}{tail}") if words else ""


def recall_lines(hits: list[FleetHit], now: datetime) -> list[str]:
    """``rouse fleet recall``: each hit's line (tree, path, origin and verdict), its snippet."""
    lines: list[str] = []
    for hit in hits:
        words, snippet, updated = hit.shown()
        keywords = f" — {words}" if words else ""
        age = human_age(hit.mtime, now)
        lines.append(
            f"{short(hit.tree)} {hit.path} [{hit.origin}: {hit.verified}] ({age}{keywords})"
        )
        if snippet and (hit.held or not fence.quoted(hit.origin)):
            lines.append(f"  {snippet}")
        elif snippet:
            lines += fence.block(snippet, hit.origin, "snippet: ", "  ", "    ")
        if updated:
            lines.append(f"  updated: {updated}")
    return lines
