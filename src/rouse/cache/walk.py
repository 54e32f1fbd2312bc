"""The walk cache in ``.rouse/``: headers kept while a file's identity (size, mtime,
ctime, inode) is what it was, listings while the directory's mtime is; anything
within a couple of seconds of the read is not trusted (docs/pack.md "Speed").

Derived and disposable, and nothing in it is taken on faith (docs/hardening.md): a
cached name must be a single path component, a value of the wrong type is a miss, a
cache the walk trips over means one walk without it, and with a stamp key
(``secret``) the file is MACed.
"""

from __future__ import annotations

import errno
import os
import stat
import time
from datetime import datetime
from pathlib import Path

from rouse.cache import fsmon
from rouse.cache.plans import keep_plans, unvouched
from rouse.cache.walkfile import (
    VERSION,
    dump_header,
    load_header,
    names_ok,
    read_cache,
    write_cache,
    zone,
)
from rouse.core import layout
from rouse.core.header import COMPACT_LINES, Header, read_header
from rouse.core.tree import Listing, Tree, scan_dir, walk
from rouse.state.files import RACY_NS, make_parent

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    #: what changed since a token (rouse.cache.fsmon.ask, or a sweeper's own watcher)
    Since = Callable[[str | None], fsmon.Answer | None]

FILE = "walk.json"


class Known:
    """A file's identity as the cache kept it, standing in for its ``lstat`` when a
    watching sweeper vouches that nothing happened to it since (no stat made)."""

    __slots__ = ("st_size", "st_mtime_ns", "st_ctime_ns", "st_ino", "entry")

    def __init__(self, entry: list[Any]):
        size, mtime_ns, ctime_ns, ino = entry[0], entry[1], entry[2], entry[3]
        if type(size) is not int or type(mtime_ns) is not int or type(ino) is not int:
            raise TypeError("cached identity is not numbers")
        self.st_size, self.st_mtime_ns = size, mtime_ns
        self.st_ctime_ns, self.st_ino, self.entry = ctime_ns, ino, entry


class HeaderCache:
    """A ``tree.walk`` reader and lister that redo only what changed.

    The file holds one entry per directory, ``[mtime_ns, subdirs, md_names,
    links, {name: [size, mtime_ns, ctime_ns, inode, header, plan]}]``: each file's
    header (and a record's clock plan, :mod:`rouse.cache.plans`) lives in its
    directory's entry (one small dict lookup per file, no repeated full
    paths), and the next state is built as the walk goes, so whatever the
    walk did not see is dropped without a set of every path. ``mtime_ns`` is
    null when the listing is not trusted (racy, or never listed).
    """

    def __init__(self, root: Path, secret: bytes | None = None, *, ask_socket: bool = True):
        self.root = root
        self.path = root / layout.STATE_DIR / "cache" / FILE
        self.secret = secret  # with a stamp key: the cache is MACed
        self.dirs: dict[str, list[Any]] = {}  # as loaded (the last walk's state)
        self.next: dict[str, list[Any]] = {}  # this walk's state, saved afterwards
        self.dirty = False
        self.hits = 0
        self.misses = 0
        self.listed = 0
        self.now_ns = time.time_ns()
        # the directory whose files are being read: its old and new file maps
        self._dir: str | None = None
        self._old: dict[str, list[Any]] = {}
        self._new: dict[str, list[Any]] = {}
        # what this walk could not vouch for: files re-read, directories listed afresh
        self.missed: list[str] = []
        self.relisted: list[str] = []
        #: this walk read a file too new to keep (inside the racy window)
        self.unsettled = False
        #: the listings this walk made of directories too new to keep (by path)
        self.racy_listings: dict[str, Listing] = {}
        self.plans_ok = False  # the stored plans were made under this time zone
        #: the token of a watching sweeper the saved state was built at (rouse.cache.fsmon)
        self.token: str | None = None
        self.token_next: str | None = None  # the token this walk was asked at
        #: the paths changed since ``token`` (this walk), or None: stat everything
        self.changed: set[str] | None = None
        #: how to ask what changed since a token (None: the socket in .rouse/, if any)
        self.since: Since | None = None
        #: whether the socket in .rouse/ may be asked at all (the sweeper's own walks
        #: never do: a fake socket must not hide a due record from the one that wakes it)
        self.ask_socket = ask_socket
        raw = read_cache(self.path, secret)
        if isinstance(raw, dict) and raw.get("version") == VERSION:
            dirs = raw.get("dirs")
            if isinstance(dirs, dict):
                self.dirs = dirs  # each entry is checked when used
                self.plans_ok = raw.get("zone") == zone()
                token = raw.get("token")
                self.token = token if type(token) is str else None

    def _settled(self, mtime_ns: int) -> bool:
        return self.now_ns - mtime_ns > RACY_NS

    def _enter(self, rel: str) -> None:
        """Make ``rel`` the current directory for reads (when no listing did)."""
        entry, old = self.next.get(rel), self._old_entry(rel)
        if entry is None:
            # a reader without the lister cannot vouch for a listing: keep the old one as is
            head = old[:4] if old is not None else [None, [], [], []]
            self.dirty = self.dirty or old is None
            entry = self.next[rel] = [*head, {}]
        self._dir = rel
        self._old = old[4] if old is not None else {}
        self._new = entry[4]

    def _old_entry(self, rel: str) -> list[Any] | None:
        """The last walk's entry for ``rel``; None if missing or malformed."""
        old = self.dirs.get(rel)
        if type(old) is list and len(old) == 5 and type(old[4]) is dict:
            return old
        return None

    def __call__(self, path: str, rel: str, seen: os.stat_result | Known) -> Header:
        where, _, name = rel.rpartition("/")
        if where != self._dir:
            self._enter(where)
        if isinstance(seen, Known):  # vouched for by the watcher: no stat was made
            try:
                header = load_header(seen.entry[4])
                self.hits += 1
                self._new[name] = seen.entry
                return header
            except (ValueError, TypeError, IndexError, KeyError, OverflowError):
                info = os.lstat(path)  # (a damaged entry: read it as a miss)
        else:
            info = seen
        cached = self._old.get(name)
        size, mtime_ns = info.st_size, info.st_mtime_ns
        if cached is not None:
            try:
                if (
                    cached[1] == mtime_ns
                    and cached[0] == size
                    and cached[2] == info.st_ctime_ns
                    and cached[3] == info.st_ino
                ):
                    data = cached[4]
                    if type(data) is dict:  # compact (_load inlined: once per file)
                        "".join(data)  # (TypeError unless every key and value is a string)
                        "".join(data.values())
                        count = len(data)
                        header = Header(True, data, count + 2)
                        header.lines = COMPACT_LINES[count]
                    else:
                        header = load_header(data)
                    self.hits += 1
                    self._new[name] = cached
                    return header
            except (ValueError, TypeError, IndexError, KeyError, OverflowError):
                pass
        self.misses += 1
        self.missed.append(rel)
        header = read_header(path, rel, info)
        if self.now_ns - mtime_ns > RACY_NS:  # (self._settled inlined: once per file)
            fields = header.fields
            # a compact header is stored as its fields (dump_header's first case, inlined)
            data = (
                fields
                if header.lines is COMPACT_LINES[len(fields)] and header._entries is None
                else dump_header(header)
            )
            self._new[name] = [size, mtime_ns, info.st_ctime_ns, info.st_ino, data, None]
            self.dirty = True
        else:  # (a racy file is left out: if it was cached, save sees the count drop)
            self.unsettled = True
        return header

    def list_dir(self, path: str, rel: str) -> Listing:
        """The directory's listing: from the cache while its mtime is unchanged (or,
        with a watching sweeper, while nothing happened in it: no stat made)."""
        changed = self.changed
        old = self._old_entry(rel)
        new: dict[str, list[Any]] = {}
        # (a directory the watcher names is listed afresh, whatever its mtime says)
        vouched = changed is not None and rel not in changed
        if vouched and old is not None and old[0] is not None and _sound(old, rel):
            self.next[rel] = [*old[:4], new]
            self._dir, self._old, self._new = rel, old[4], new
            return old[1], old[2], old[3]
        info = os.lstat(path)
        if not stat.S_ISDIR(info.st_mode):  # a cached name that is now a link or a file
            raise NotADirectoryError(errno.ENOTDIR, "not a directory (never followed)", path)
        mtime_ns = info.st_mtime_ns
        if (
            old is not None
            and old[0] == mtime_ns
            and (changed is None or vouched)
            and _sound(old, rel)
        ):
            listing: Listing = (old[1], old[2], old[3])
            self.next[rel] = [mtime_ns, *listing, new]
        else:
            self.listed += 1
            self.relisted.append(rel)
            listing = scan_dir(path, rel)
            if self._settled(mtime_ns):
                entry = [mtime_ns, *listing, new]
            else:
                entry = [None, [], [], [], new]
                self.racy_listings[rel] = listing
            self.next[rel] = entry
            # Worth a save: a new directory, or a trusted listing that changed.
            # A listing that was not trusted (the root, just after .rouse/ was
            # made) and now is costs one scandir per walk; rewriting the whole
            # file for it alone would cost far more.
            if entry[0] is not None and (
                old is None or (old[0] is not None and old[:4] != entry[:4])
            ):
                self.dirty = True
        self._dir = rel
        self._old = old[4] if old is not None else {}
        self._new = new
        return listing

    def stat_names(self, path: str, rel: str, names: list[str]) -> list[tuple[str, Any]]:
        """The walk's ``lstat`` of each name in the directory just listed, with a
        watching sweeper: what it vouches for stands on the cache's word."""
        old, changed = self._old, self.changed
        assert changed is not None
        prefix = f"{rel}/" if rel else ""
        lstat = os.lstat
        found: list[tuple[str, Any]] = []
        for name in names:
            entry = old.get(name)
            if entry is not None and type(entry) is list and prefix + name not in changed:
                found.append((name, Known(entry)))
                continue
            try:
                found.append((name, lstat(f"{path}/{name}")))
            except OSError:
                continue  # gone since the listing
        return found

    def _ask(self) -> None:
        """Ask the watching sweeper (if any) what changed since the saved state."""
        self.changed, self.token_next = None, None
        since = self.since
        if since is None:
            answer = fsmon.ask(self.root, self.token, self.secret) if self.ask_socket else None
        else:
            answer = since(self.token)
        if answer is None:
            return
        self.token_next, paths = answer
        if paths is not None and self.token is not None and self.dirs:
            self.changed = set(paths)

    def walk(self, plan_at: datetime | None = None) -> Tree:
        """One walk of the tree through this cache, then save it (best-effort).

        A cache so damaged that the walk trips over it is dropped: the tree is
        walked again from the files alone, and the cache rewritten.

        Each record gets the clock plan the cache kept for it while neither it
        nor any record below it changed; with ``plan_at``, every other record
        gets a plan made now, valid from ``plan_at`` on (kept for the next walk).
        """
        self.next, self._dir = {}, None
        self.missed, self.relisted, self.unsettled = [], [], False
        self.racy_listings = {}
        if not self.dirs:  # the first walk: its folder made before the root is stat'ed,
            make_parent(self.path)  # so that making it moves no mtime this walk saw
        self._ask()  # before the walk: whatever changes during it is in the next answer
        self.now_ns = time.time_ns()
        try:
            stat_names = self.stat_names if self.changed is not None else None
            tree = walk(self.root, self, self.list_dir, stat_names)
        except (TypeError, ValueError, KeyError, IndexError, AttributeError, OverflowError):
            self.dirs, self.next, self._dir, self.dirty = {}, {}, None, True
            self.missed, self.relisted, self.plans_ok = [], [], False
            self.changed, self.unsettled, self.racy_listings = None, False, {}
            tree = walk(self.root, self, self.list_dir)
        stale = unvouched(tree, self.missed, self.relisted) if self.plans_ok else set(tree.records)
        self.dirty = keep_plans(tree, self.next, stale, plan_at) or self.dirty
        self.plans_ok = True  # what is kept now was kept or made under this zone
        self.save()
        return tree

    def save(self) -> None:
        """Write this walk's state (what it did not see is dropped); skip if we can't."""
        old, new = self.dirs, self.next
        if self.token_next is not None and self.changed is None and self.token_next != self.token:
            self.dirty = True  # walked in full under a watcher: keep its token
        # when not dirty, every key of `new` is in `old`: equal counts mean
        # nothing vanished
        unchanged = (
            not self.dirty
            and len(new) == len(old)
            and sum(len(e[4]) for e in new.values()) == sum(len(e[4]) for e in old.values())
        )
        self.dirs, self.next, self._dir = new, {}, None
        if unchanged:
            return  # (the saved token stays: asked since it, the watcher says more, not less)
        write_cache(self.path, self.secret, new, self.token_next)
        self.token = self.token_next


def _sound(entry: list[Any], rel: str) -> bool:
    """Whether a directory's kept listing can be used as it is: lists of safe names."""
    subdirs, names, links = entry[1], entry[2], entry[3]
    if type(subdirs) is not list or type(names) is not list or type(links) is not list:
        return False
    return names_ok(subdirs + names + links if links else subdirs + names, not rel)


def cached_walk(root: Path, secret: bytes | None = None, plan_at: datetime | None = None) -> Tree:
    """``tree.walk`` through the cache, saving it afterwards: :meth:`HeaderCache.walk`
    (``secret``: the stamp key's, which MACs the cache)."""
    return HeaderCache(root, secret).walk(plan_at)
