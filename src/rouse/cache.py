"""The walk cache in ``.rouse/``: headers validated by size and mtime, and
directory listings validated by the directory's mtime.

Derived and disposable: deleting it only costs speed, a corrupt one is
ignored, and a tree that cannot be written still works (the cache is just
not saved). Anything whose mtime is within a couple of seconds of the read
is not trusted, so a change landing in the same clock tick is never missed.
A directory's mtime changes whenever an entry is added, removed or renamed
in it, so an unchanged directory costs one stat instead of a listing; every
file is still stat'ed, so an edited file is always re-read.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from rouse import layout
from rouse.header import Entry, Header, read_header
from rouse.statefile import load_json, save_json
from rouse.tree import Listing, Tree, scan_dir, walk

VERSION = 3
FILE = "walk.json"
RACY_NS = 2_000_000_000


def _dump(header: Header) -> list[Any]:
    """A header as JSON: ``[fenced, fields, lines]`` when it is plain (one line per
    key, in order), else with its entries and findings spelled out."""
    entries = header.entries
    plain = not (header.duplicates or header.continued or header.bad_lines)
    if plain and list(header.fields) == [e.key for e in entries]:
        return [int(header.fenced), header.fields, [e.line for e in entries], header.end_line]
    return [
        int(header.fenced),
        header.fields,
        [[e.key, e.value, e.line] for e in entries],
        header.end_line,
        [e.line for e in header.duplicates],
        header.continued,
        [list(bad) for bad in header.bad_lines],
    ]


def _load(data: list[Any]) -> Header:
    fenced, fields, lines, end_line = data[:4]
    if not isinstance(fields, dict):
        raise ValueError("cached fields are not a mapping")
    header = Header(bool(fenced), fields, int(end_line))
    if len(data) == 4:  # plain: made into Entry objects only if someone asks
        if len(lines) != len(fields):
            raise ValueError("cached lines do not match the fields")
        header.lines = lines
        return header
    duplicate_lines, continued, bad_lines = data[4:]
    header.continued = [int(line) for line in continued]
    header.bad_lines = [(int(line), str(text)) for line, text in bad_lines]
    entries = [Entry(str(key), str(value), int(line)) for key, value, line in lines]
    dupes = set(duplicate_lines)
    header.entries.extend(entries)
    header.duplicates = [e for e in entries if e.line in dupes]
    return header


class HeaderCache:
    """A ``tree.walk`` reader and lister that redo only what changed."""

    def __init__(self, root: Path):
        self.root = root
        self.path = root / layout.STATE_DIR / "cache" / FILE
        self.files: dict[str, list[Any]] = {}
        self.dirs: dict[str, list[Any]] = {}
        self.seen: set[str] = set()
        self.seen_dirs: set[str] = set()
        self.dirty = False
        self.hits = 0
        self.misses = 0
        self.listed = 0
        self.now_ns = time.time_ns()
        raw = load_json(self.path)
        if isinstance(raw, dict) and raw.get("version") == VERSION:
            files, dirs = raw.get("files"), raw.get("dirs")
            if isinstance(files, dict) and isinstance(dirs, dict):
                self.files, self.dirs = files, dirs

    def _settled(self, mtime_ns: int) -> bool:
        return self.now_ns - mtime_ns > RACY_NS

    def __call__(self, path: str, rel: str, info: os.stat_result) -> Header:
        self.seen.add(rel)
        cached = self.files.get(rel)
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
        if self._settled(info.st_mtime_ns):
            self.files[rel] = [info.st_size, info.st_mtime_ns, _dump(header)]
            self.dirty = True
        elif cached is not None:
            del self.files[rel]
            self.dirty = True
        return header

    def list_dir(self, path: str, rel: str) -> Listing:
        """The directory's listing: from the cache while its mtime is unchanged."""
        self.seen_dirs.add(rel)
        mtime_ns = os.lstat(path).st_mtime_ns
        cached = self.dirs.get(rel)
        if cached is not None and cached[0] == mtime_ns and len(cached) == 4:
            return cached[1], cached[2], cached[3]
        self.listed += 1
        listing = scan_dir(path, rel)
        if self._settled(mtime_ns):
            self.dirs[rel] = [mtime_ns, *listing]
            self.dirty = True
        elif cached is not None:
            del self.dirs[rel]
            self.dirty = True
        return listing

    def walk(self) -> Tree:
        """One walk of the tree through this cache, then save it (best-effort)."""
        self.seen, self.seen_dirs = set(), set()
        self.now_ns = time.time_ns()
        tree = walk(self.root, self, self.list_dir)
        self.save()
        return tree

    def save(self) -> None:
        """Write the cache (dropping what was not seen); silently skip if we can't."""
        stale = set(self.files) - self.seen
        stale_dirs = set(self.dirs) - self.seen_dirs
        if not (self.dirty or stale or stale_dirs):
            return
        for rel in stale:
            del self.files[rel]
        for rel in stale_dirs:
            del self.dirs[rel]
        save_json(self.path, {"version": VERSION, "files": self.files, "dirs": self.dirs})


def cached_walk(root: Path) -> Tree:
    """``tree.walk`` through the cache, saving it afterwards (best-effort)."""
    return HeaderCache(root).walk()
