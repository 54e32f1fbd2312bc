"""``rouse recall``: search the tree, then show each hit with its origin, age and probes;
and the :class:`Session` a long-lived process (the MCP server) keeps between recalls.

Modes (issue 23): ``words`` (the FTS5 index), ``meaning`` (vectors from the
semantic extra's model) and ``both`` fused — the default when the extra is
installed, ``words`` otherwise.

A hit shows only what its file says now: before it is shown, each hit's file
is read again, its row in the index compared with it (a row that differs is
indexed again and the search run again), and its origin, keywords, snippet
and probes taken from those very bytes — with a stamp key, the origin is
the verdict of the signature over them.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from rouse.cache import snapshot
from rouse.cache.walk import HeaderCache
from rouse.core import supersession
from rouse.core.errors import HeaderError, UsageError
from rouse.core.header import Header
from rouse.core.layout import CONTEXT_TYPES
from rouse.core.timefmt import human_age
from rouse.core.tree import Tree
from rouse.pack import semantic
from rouse.pack.hits import Hit, arrange, updated_said
from rouse.pack.index import Index
from rouse.pack.indexdoc import KINDS, Current, indexed_files
from rouse.pack.search import Match, one_line, query_words
from rouse.probes import baselines, demand, readings
from rouse.probes import definitions as probes
from rouse.trust import fence, origins
from rouse.trust.stampkey import verify

MODES = ("words", "meaning", "both")
#: Searches run at most this often for one recall: a hit whose row was stale or
#: forged is indexed again and the search run again.
ROUNDS = 3


#: What recall shows of a quarantined context file instead of its words.
HELD = (
    "quarantined: its words are not shown (nobody you trust vouches for it). For the owner, "
    "from outside the agent: review the file, then `rouse stamp --origin owner FILE` vouches "
    "for it; or delete it"
)


def default_mode() -> str:
    """``both`` when the semantic extra is installed, else ``words``."""
    return "both" if semantic.available() else "words"


def recall(
    root: Path,
    query: str,
    now: datetime,
    *,
    limit: int = 10,
    kind: str | None = None,
    run_probes: bool = True,
    mode: str | None = None,
    notes: list[str] | None = None,
    key_path: Path | None = None,
    session: Session | None = None,
) -> list[Hit]:
    """Search the tree at ``root`` for ``query``; the best ``limit`` hits, best first.

    ``mode`` is ``words``, ``meaning`` or ``both`` (default: :func:`default_mode`).
    Raises UsageError for a query with no words, an unknown ``kind`` or
    ``mode``, a ``limit`` below 1, or a mode by meaning without the semantic
    extra. Demand probes named by the returned hits run (reusing readings
    within their ttl) unless ``run_probes`` is False or the probes file is not
    trusted; then they read ``<unknown>``. With no ``mode`` given, a semantic
    model that cannot be read makes it recall by words, and says so in ``notes``.
    A long-lived process passes the same ``session`` (:class:`Session`) to each recall.
    """
    words = query_words(query)
    if kind is not None and kind not in KINDS:
        raise UsageError(f"unknown kind {kind!r}: use one of {', '.join(KINDS)}")
    if limit < 1:
        raise UsageError(f"--limit must be at least 1, got {limit}")
    mode, model = _search_mode(mode, notes)
    reader = origins.origin_reader(root, key_path)
    kept = session or Session()
    try:
        with kept.lock:
            tree, index = kept.open(root, reader.cache_secret, model)
            shown = _checked(
                index,
                tree,
                lambda: index.search(words, query=query, mode=mode, kind=kind, limit=limit),
            )
            kept.searched()
    finally:
        if session is None:
            kept.close()
    measure = _probe_reader(tree, reader, run_probes)
    hits = [_hit(match, now_is, reader, measure, now) for match, now_is in shown]
    seen = [(h.path, h.updated or "", h.probes) for h in hits if h.probes]
    drifted = baselines.observe(root, reader.cache_secret, seen)
    for hit in hits:
        hit.drifted = drifted.get(hit.path, [])
    successors = supersession.superseded(
        tree, lambda f: not fence.held_back(reader(f), reader.keyed)
    )
    reader.flush()
    return arrange(hits, successors)


def _search_mode(mode: str | None, notes: list[str] | None) -> tuple[str, semantic.Model | None]:
    """The mode recall searches in and its model: with no ``mode`` given, by meaning too
    when the extra is there, and by words alone (said in ``notes``) when its model
    cannot be read; a mode asked for by meaning is refused without it."""
    chosen, mode = mode, mode or default_mode()
    if mode not in MODES:
        raise UsageError(f"unknown mode {mode!r}: use one of {', '.join(MODES)}")
    try:
        model = semantic.load() if mode != "words" else None
    except UsageError as exc:
        if chosen is not None:
            raise  # asked for by meaning: a clear refusal
        mode, model = "words", None
        if notes is not None:
            notes.append(f"recall by words only: {exc.render()}")
    return mode, model


def _hit(
    match: Match,
    now_is: Current,
    reader: origins.OriginReader,
    measure: Callable[[str], str],
    now: datetime,
) -> Hit:
    """One match as recall shows it, from its file as it is now: a quarantined context
    file's words held back."""
    head = now_is.header
    origin = _origin(reader, match.rel, now_is.data, head)
    held = match.kind in CONTEXT_TYPES and fence.held_back(origin, reader.keyed)
    names = [n.strip() for n in (head.get("probes") or "").split(",") if n.strip()]
    mtime = datetime.fromtimestamp(now_is.mtime_ns / 1e9)
    return Hit(
        path=match.rel,
        kind=match.kind,
        origin=origin,
        age=human_age(mtime, now),
        keywords="" if held else (head.get("keywords") or "").strip(),
        snippet=HELD if held else match.snippet,
        probes={} if held else {name: measure(name) for name in names},
        updated=None if held else (head.get("updated") or "").strip() or None,
        mtime=mtime,
        matched=_how(match),
        only_log=match.only_log,
        chunk=None if match.chunk is None else match.chunk + 1,
        held=held,
    )


def _checked(
    index: Index, tree: Tree, search: Callable[[], list[Match]]
) -> list[tuple[Match, Current]]:
    """The hits of ``search`` (on ``index``), each checked against its file as it is now
    (see the module)."""
    kinds = {rel: file_kind for rel, (_, file_kind) in indexed_files(tree).items()}
    shown: list[tuple[Match, Current]] = []
    for round_number in range(ROUNDS):
        matches = search()
        shown = []
        clean = True
        for match in matches:
            if match.rel not in kinds:  # a row for no file the walk found (or under a link)
                index.drop(match)
                clean = False
                continue
            match.kind = kinds[match.rel]  # what the file is, not what its row says
            current, same = index.current(match)
            if current is None:
                clean = False
                continue
            if not same:
                clean = False
                if round_number < ROUNDS - 1:
                    continue
                # (never the row's text)
                match.snippet = one_line(current.doc.body or current.doc.log)
            shown.append((match, current))
        if clean:
            break
    return shown


def _how(match: Match) -> str:
    if match.by_words and match.meaning is not None:
        return "both"
    return "meaning" if match.meaning is not None else "words"


def _origin(reader: origins.OriginReader, rel: str, data: bytes, head: Header) -> str:
    """The effective origin of these bytes: with a key, only what their signature says."""
    if reader.key is None:
        return origins.as_written(head.get("origin"))
    if reader.key.secret is None:
        return "unknown"
    try:
        written, state = verify(reader.key.secret, rel, data)
    except (ValueError, HeaderError):
        return "unknown"
    origin = origins.as_written(written) if state in origins.VERIFIED else "unknown"
    return reader.kept_fence(rel, origin)


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
            allowed = run_probes and readings.probes_allowed(tree, reader, {})[0]
            state["probes"] = {p.name: p for p in probes.load_probes(tree)[0]} if allowed else {}
        probe = state["probes"].get(name)
        reading = (
            demand.run_demand(tree.root, probe, reader.key_path) if probe else readings.UNKNOWN
        )
        readings_by_name[name] = reading
        return reading

    return measure


def render(hits: list[Hit]) -> list[str]:
    """The plain text of ``rouse recall``: each hit's path line, then indented details."""
    lines: list[str] = []
    for hit in hits:
        words = fence.inline(hit.keywords, hit.origin)
        keywords = f" — {words}" if words else ""
        lines.append(f"{hit.path} [{hit.origin}] ({hit.age}{keywords})")
        if hit.snippet:
            how = "only its log matched" if hit.only_log else ""
            part = f" (part {hit.chunk})" if hit.chunk is not None else ""
            how = f"near in meaning{part}" if hit.matched == "meaning" else how
            if hit.held or not fence.quoted(hit.origin):
                lines.append(f"  {how + ': ' if how else ''}{hit.snippet}")
            else:
                lead = f"{how + ', ' if how else ''}snippet: "
                lines += fence.block(hit.snippet, hit.origin, lead, "  ", "    ")
        if hit.superseded_by:
            on = f" on {hit.superseded_on:%Y-%m-%d}" if hit.superseded_on else ""
            lines.append(f"  superseded by {hit.superseded_by}{on}: not current")
        elif hit.newer:
            lines.append(f"  a newer note on the same keywords exists: {hit.newer}")
        if hit.updated:
            lines.append(f"  updated: {updated_said(hit.updated, hit.origin, False)}")
        if hit.probes:
            shown = (f"{fence.inline(k, hit.origin)}={v}" for k, v in hit.probes.items())
            lines.append("  probes: " + ", ".join(shown))
        if hit.drifted:
            lines.append(f"  drifted: {baselines.said(hit.drifted)}")
    return lines


# -- the session of a long-lived process (the MCP server) --------------------------------


class Session:
    """What a long-lived process (the MCP server) keeps between recalls of one tree: the
    last walk, taken again only while :func:`rouse.cache.snapshot.still` says the tree
    is as that walk found it, and the open index, brought up to date again when the
    tree was walked again, its file was replaced or written by another process, or the
    model changed (docs/recall.md, "Kept warm in the MCP server"). One recall at a time
    uses it (the MCP server runs each tool call in a worker thread of its own)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        #: the last walk: where, under which key, and the cache that made it
        self.walked: tuple[Path, bytes | None, HeaderCache, Tree] | None = None
        self.shape: snapshot.Shape | None = None  # that walk's, once asked for
        self.index: Index | None = None
        self.opened: tuple[int, int] | None = None  # the index file's (device, inode)
        self.version: tuple[int, int] | None = None  # the index's, after our last recall

    def open(
        self, root: Path, secret: bytes | None, model: semantic.Model | None
    ) -> tuple[Tree, Index]:
        """The tree and the index, both up to date."""
        tree = self._kept_tree(root, secret)
        fresh = tree is None
        if tree is None:
            walked = HeaderCache(root, secret)
            tree = walked.walk()
            self.walked, self.shape = (root, secret, walked, tree), None
        index = self.index
        if index is not None and (index.model is not model or _identity(index.path) != self.opened):
            self.close()
            index = None
        if index is None:
            index = self.index = Index(root, model=model)
            self.opened = None if index.stats.in_memory else _identity(index.path)
            fresh = True
        if fresh or index.version() != self.version:
            index.refresh(tree)
        return tree, index

    def _kept_tree(self, root: Path, secret: bytes | None) -> Tree | None:
        """The last walk's tree, if the tree is still as that walk found it."""
        if self.walked is None:
            return None
        at, key, walked, tree = self.walked
        if (at, key) != (root, secret) or walked.unsettled or tree.untrackable:
            return None
        if self.shape is None:
            self.shape = snapshot.shape_of(walked.dirs, walked.racy_listings)
        if self.shape is None or not snapshot.still(root, self.shape, walked.token_next, secret):
            return None
        return tree

    def searched(self) -> None:
        """Note the index's version after this recall's own writes: another process's
        next write is then seen."""
        assert self.index is not None
        self.version = self.index.version()

    def close(self) -> None:
        if self.index is not None:
            self.index.close()
        self.index = self.version = None


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_dev, info.st_ino
