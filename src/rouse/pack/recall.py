"""``rouse recall``: search the tree, then show each hit with its origin, age and probes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from rouse.core.cache import cached_walk
from rouse.core.errors import UsageError
from rouse.core.timefmt import human_age, iso_stamp, parse_stamp
from rouse.core.tree import Tree
from rouse.pack.index import KINDS, Index, indexed_files
from rouse.pack.search import query_words
from rouse.probes import definitions as probes
from rouse.probes import demand, gate, readings
from rouse.trust import origins


@dataclass
class Hit:
    """One recalled file, as ``rouse recall`` and the MCP server show it."""

    path: str
    kind: str
    origin: str
    age: str  # the file's mtime relative to now, for text: "3h ago"
    keywords: str
    snippet: str
    probes: dict[str, str] = field(default_factory=dict)  # name → reading
    updated: str | None = None  # a note's own `updated:` line, as written
    mtime: datetime | None = None  # the file's mtime (local time)

    def to_json(self) -> dict[str, Any]:
        """The hit for scripts: ``age`` is the mtime in ISO 8601 with the local offset."""
        return {
            "path": self.path,
            "kind": self.kind,
            "origin": self.origin,
            "age": iso_stamp(self.mtime),
            "keywords": self.keywords,
            "snippet": self.snippet,
            "probes": dict(self.probes),
            "updated": _updated(self.updated),
        }


def _updated(text: str | None) -> str | None:
    """A note's ``updated:`` in ISO when it reads as a stamp; else as written."""
    if text is None:
        return None
    try:
        return iso_stamp(parse_stamp(text))
    except ValueError:
        return text


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
    reader = origins.origin_reader(root)
    tree = cached_walk(root, reader.cache_secret)
    with Index(root) as index:
        index.refresh(tree)
        matches = index.search(words, kind=kind, limit=limit)
    files = indexed_files(tree)
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
                mtime=file.mtime,
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
        keywords = f" — {hit.keywords}" if hit.keywords else ""
        lines.append(f"{hit.path} [{hit.origin}] ({hit.age}{keywords})")
        if hit.snippet:
            lines.append(f"  {hit.snippet}")
        if hit.updated:
            lines.append(f"  updated: {hit.updated}")
        if hit.probes:
            lines.append("  probes: " + ", ".join(f"{k}={v}" for k, v in hit.probes.items()))
    return lines
