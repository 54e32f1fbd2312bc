"""A header cache in ``.rouse/``, validated by size and mtime.

Derived and disposable: deleting it only costs speed, a corrupt one is
ignored, and a tree that cannot be written still works (the cache is just
not saved). Entries whose mtime is within a couple of seconds of the read
are not trusted, so a write landing in the same clock tick is never missed.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from rouse import layout
from rouse.header import Entry, Header, read_header
from rouse.statefile import load_json, save_json
from rouse.tree import Tree, walk

VERSION = 1
FILE = "headers.json"
RACY_NS = 2_000_000_000


def _dump(header: Header) -> list[Any]:
    return [
        int(header.fenced),
        [[e.key, e.value, e.line] for e in header.entries],
        [e.line for e in header.duplicates],
        header.continued,
        [list(bad) for bad in header.bad_lines],
        header.end_line,
    ]


def _load(data: list[Any]) -> Header:
    fenced, entries, duplicate_lines, continued, bad_lines, end_line = data
    header = Header(fenced=bool(fenced), end_line=end_line)
    fields = header.fields
    if duplicate_lines or continued or bad_lines:
        header.continued = list(continued)
        header.bad_lines = [(int(line), str(text)) for line, text in bad_lines]
        dupes = set(duplicate_lines)
        for key, value, line in entries:
            entry = Entry(key, value, line)
            header.entries.append(entry)
            if line in dupes:
                header.duplicates.append(entry)
            else:
                fields.setdefault(key, value)
        return header
    header.rows = entries
    for key, value, _ in entries:
        fields[key] = value
    return header


class HeaderCache:
    """A ``tree.walk`` reader that re-reads only files whose size or mtime changed."""

    def __init__(self, root: Path):
        self.path = root / layout.STATE_DIR / "cache" / FILE
        self.entries: dict[str, list[Any]] = {}
        self.seen: set[str] = set()
        self.dirty = False
        self.hits = 0
        self.misses = 0
        raw = load_json(self.path)
        if isinstance(raw, dict) and raw.get("version") == VERSION:
            entries = raw.get("entries")
            self.entries = entries if isinstance(entries, dict) else {}

    def __call__(self, path: str, rel: str, info: os.stat_result) -> Header:
        self.seen.add(rel)
        cached = self.entries.get(rel)
        if cached is not None and cached[0] == info.st_size and cached[1] == info.st_mtime_ns:
            try:
                header = _load(cached[2])
            except (ValueError, TypeError, IndexError):
                pass
            else:
                self.hits += 1
                return header
        self.misses += 1
        header = read_header(path, rel)
        if time.time_ns() - info.st_mtime_ns > RACY_NS:
            self.entries[rel] = [info.st_size, info.st_mtime_ns, _dump(header)]
            self.dirty = True
        elif cached is not None:
            del self.entries[rel]
            self.dirty = True
        return header

    def save(self) -> None:
        """Write the cache (dropping files no longer seen); silently skip if we can't."""
        stale = set(self.entries) - self.seen
        if not self.dirty and not stale:
            return
        for rel in stale:
            del self.entries[rel]
        save_json(self.path, {"version": VERSION, "entries": self.entries})


def cached_walk(root: Path) -> Tree:
    """``tree.walk`` through the header cache, saving it afterwards (best-effort)."""
    cache = HeaderCache(root)
    tree = walk(root, cache)
    cache.save()
    return tree
