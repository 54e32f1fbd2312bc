"""Recall's hits: a :class:`Hit` (one recalled file, as ``rouse recall`` and the MCP
server show it) and :func:`arrange`, the order that puts what is current first
(docs/recall.md, "What is current goes first"), from headers alone: what
``supersedes:`` names is :mod:`rouse.core.supersession`'s, the ranking
:mod:`rouse.pack.search`'s.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from rouse.core.supersession import Successor, keyword_set, overlap, written
from rouse.core.timefmt import iso_stamp, parse_stamp
from rouse.trust import fence


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
    matched: str = "words"  # how it was found: words, meaning, or both
    only_log: bool = False  # by words, only the log below the marker matched
    superseded_by: str | None = None  # the path of the file that supersedes it
    superseded_on: datetime | None = None  # since when (that file's updated:, else its mtime)
    newer: str | None = None  # a newer note on the same keywords, when no supersedes relates them
    chunk: int | None = None  # by meaning, in a long file: the part that matched (from 1)
    drifted: list[tuple[str, str, str]] = field(default_factory=list)  # (probe, then, now)
    held: bool = False  # quarantined context: its words are not shown, only how to vouch

    def to_json(self) -> dict[str, Any]:
        """The hit for scripts: ``age`` is the mtime in ISO 8601 with the local offset.
        The file's words are as the text shows them (:mod:`rouse.trust.fence`)."""
        return {
            "path": self.path,
            "kind": self.kind,
            "origin": self.origin,
            "age": iso_stamp(self.mtime),
            "keywords": fence.inline(self.keywords, self.origin),
            "snippet": self.snippet if self.held else fence.shown(self.snippet, self.origin),
            "probes": {fence.inline(k, self.origin): v for k, v in self.probes.items()},
            "updated": updated_said(self.updated, self.origin, True),
            "matched": self.matched,
            "only_log": self.only_log,
            "superseded_by": self.superseded_by,
            "superseded_on": iso_stamp(self.superseded_on),
            "newer": self.newer,
            "chunk": self.chunk,
            "drifted": [{"probe": p, "then": then, "now": now} for p, then, now in self.drifted],
        }


def updated_said(text: str | None, origin: str, iso: bool) -> str | None:
    """A note's ``updated:`` as a hit says it: when it reads as a stamp, as written (in ISO
    8601 with ``iso``), else quoted by the fence rule of its origin."""
    if text is None:
        return None
    try:
        stamp = parse_stamp(text)
    except ValueError:
        return fence.inline(text, origin)
    return iso_stamp(stamp) if iso else text


_EPOCH = datetime(1970, 1, 1)


def arrange(hits: list[Hit], successors: dict[str, Successor]) -> list[Hit]:
    """``hits`` (best first) in the order that serves current files first."""
    current: list[Hit] = []
    stale: list[Hit] = []
    for hit in hits:
        successor = successors.get(hit.path)
        if successor is None:
            current.append(hit)
            continue
        hit.superseded_by = successor.rel
        hit.superseded_on = successor.on
        stale.append(hit)
    return _after_successors(_newer_first(current), stale)


def _newer_first(hits: list[Hit]) -> list[Hit]:
    """Notes on the same keywords, newest first within the places the group holds."""
    notes = [(at, keyword_set(h.keywords)) for at, h in enumerate(hits) if h.kind == "note"]
    group_of: dict[int, int] = {}
    for i, (at, words) in enumerate(notes):
        for other, other_words in notes[:i]:
            if overlap(words, other_words):
                group_of[at] = group_of.get(other, other)
                break
    groups: dict[int, list[int]] = {}
    for at, first in group_of.items():
        groups.setdefault(first, [first]).append(at)
    arranged = list(hits)
    for places in groups.values():
        members = sorted((hits[at] for at in places), key=_written, reverse=True)
        newest = members[0]
        for place, hit in zip(sorted(places), members, strict=True):
            arranged[place] = hit
            if hit is not newest and _written(hit) < _written(newest):
                hit.newer = newest.path
    return arranged


def _written(hit: Hit) -> datetime:
    return written(hit.updated, hit.mtime or _EPOCH)


def _after_successors(current: list[Hit], stale: list[Hit]) -> list[Hit]:
    """Each superseded hit placed after its successor (and what already follows it)."""
    arranged = list(current)
    waiting = list(stale)
    while waiting:
        placed = False
        for hit in list(waiting):
            at = next((i for i, h in enumerate(arranged) if h.path == hit.superseded_by), None)
            if at is None:
                continue
            while at + 1 < len(arranged) and arranged[at + 1].superseded_by is not None:
                at += 1
            arranged.insert(at + 1, hit)
            waiting.remove(hit)
            placed = True
        if not placed:
            break
    return arranged + waiting
