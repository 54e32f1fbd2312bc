"""One recalled file as ``rouse recall`` and the MCP server show it: a :class:`Hit`.

Below :mod:`rouse.pack.recall` (which finds them) and :mod:`rouse.pack.currency`
(which orders them by what is current), so neither imports the other for it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

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
            "updated": _updated(self.updated, self.origin),
            "matched": self.matched,
            "only_log": self.only_log,
            "superseded_by": self.superseded_by,
            "superseded_on": iso_stamp(self.superseded_on),
            "newer": self.newer,
            "chunk": self.chunk,
            "drifted": [{"probe": p, "then": then, "now": now} for p, then, now in self.drifted],
        }


def _updated(text: str | None, origin: str) -> str | None:
    """A note's ``updated:`` in ISO when it reads as a stamp; else as written (quoted by
    the fence rule of its origin)."""
    if text is None:
        return None
    try:
        return iso_stamp(parse_stamp(text))
    except ValueError:
        return fence.inline(text, origin)
