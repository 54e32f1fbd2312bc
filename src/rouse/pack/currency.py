"""Which of recall's hits are current: the order that says so, and the words for it.

Two rules, both from headers alone (no body is read to decide):

- a file another one supersedes (:mod:`rouse.core.supersession`) ranks right
  after its successor when that is among the hits, else after every current
  hit, and says "superseded by X on DATE";
- among notes whose keywords overlap strongly (:func:`rouse.core.supersession.overlap`)
  and that no ``supersedes:`` relates, the more recently written one (its
  ``updated:``, else its mtime) takes the best place the group holds, and each
  older one names the newest.

Not owned: the search that ranks the hits (:mod:`rouse.pack.search`), what
``supersedes:`` names (:mod:`rouse.core.supersession`).
"""

from __future__ import annotations

from datetime import datetime

from rouse.core.supersession import Successor, keyword_set, overlap, written
from rouse.pack.hits import Hit

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
