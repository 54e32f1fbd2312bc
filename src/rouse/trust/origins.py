"""Reading provenance: ``origin:`` classes and a file's effective origin.

Without a stamp key an origin reads as written. With one (SPEC §7), an origin
counts only when its ``origin-sig`` verifies (``rouse.trust.stamp`` writes
it); anything else reads ``unknown``. :func:`origin_reader` answers
"what is this file's effective origin?" cheaply, from a cache in ``.rouse/``
whose entries are themselves authenticated with the key, so editing the cache
forges nothing. What ``check`` makes of the verdicts is :mod:`rouse.lint.check`'s.
"""

from __future__ import annotations

import json
import os
import stat
import time
import weakref
from pathlib import Path

from rouse.core import header, home, layout
from rouse.core.errors import HeaderError
from rouse.core.tree import File
from rouse.core.value import Frozen, Value
from rouse.state.files import RACY_NS, save_json
from rouse.state.shapes import ORIGINS as ORIGINS_FILE
from rouse.trust.stampkey import (
    StampKey,
    load_key,
    mac,
    verify,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Literal


ORIGINS = ("owner", "system", "agent", "untrusted", "unknown")

CACHE_FILE = "origins.json"
CACHE_VERSION = 1
#: What each kind of cache entry's MAC is labelled with.
VERDICT, ONCE_UNTRUSTED = "rouse-origin-cache", "rouse-origin-once-untrusted"
MAX_FILE_BYTES = 8 * 1024 * 1024

#: EffectiveOrigin states whose written origin counts.
VERIFIED = frozenset({"verified", "verified-v1"})

#: Why an origin reads the way it does, by verdict state.
STATES = {
    "as-written": "no stamp key: read as written, unverified",
    "verified": "its signature verifies",
    "verified-v1": (
        "its v1 signature verifies — v1 covers the body but not the header's fields "
        "(re-sign with `rouse stamp --upgrade`)"
    ),
    "unstamped": "it was never stamped",
    "unsigned": "its origin has no origin-sig (typed by hand, or stamped before the key existed)",
    "mismatch": (
        "its origin-sig does not match (edited since it was stamped, copied from another "
        "file, or signed with another key)"
    ),
    "bad-key": "the stamp key cannot be used",
    "once-untrusted": (
        "it was stamped untrusted, and stays untrusted until the owner re-stamps it "
        "(`rouse stamp --origin owner`), whatever its header says now"
    ),
    "unreadable": "the file cannot be read",
}


def effective_origin(file: File) -> str:
    """The origin as written (unverified): for callers that have no tree root.

    Prefer :func:`origin_reader`, which verifies signatures when a key exists.
    """
    return as_written(file.get("origin"))


def as_written(value: str | None) -> str:
    """An ``origin:`` value as one of :data:`ORIGINS` (anything else reads ``unknown``)."""
    value = (value or "").strip().lower()
    return value if value in ORIGINS else "unknown"


# -- reading origins ----------------------------------------------------------


class EffectiveOrigin(Frozen):
    """A file's effective ``origin`` and how it was reached."""

    __slots__ = ("origin", "written", "state")
    _fields = __slots__

    def __init__(self, origin: str, written: str, state: str):
        self.origin = origin  # the effective origin: what to show and act on
        self.written = written  # as written in the header ('' when absent)
        self.state = state  # a key of STATES

    @property
    def why(self) -> str:
        return STATES[self.state]


class _Cache:
    """Verdicts by (rel, size, mtime_ns, ctime_ns), each entry MACed with the key."""

    def __init__(self, root: Path, secret: bytes):
        self.path = root / layout.STATE_DIR / "cache" / CACHE_FILE
        self.secret = secret
        self.root = root
        self.entries: dict[str, list[Any]] = {}
        #: rel → MAC: files once stamped untrusted (they stay so until the owner stamps)
        self.untrusted: dict[str, Any] = {}
        self.seen: set[str] = set()
        self.dirty = False
        raw = ORIGINS_FILE.read(self.path)
        if isinstance(raw, dict) and raw.get("version") == CACHE_VERSION:
            entries = raw.get("entries")
            self.entries = entries if isinstance(entries, dict) else {}
            untrusted = raw.get("untrusted")
            self.untrusted = untrusted if isinstance(untrusted, dict) else {}

    def once_untrusted(self, rel: str) -> bool:
        import hmac

        given = self.untrusted.get(rel)
        return isinstance(given, str) and hmac.compare_digest(given, self._mac(ONCE_UNTRUSTED, rel))

    def remember(self, rel: str, untrusted: bool) -> None:
        """Note that ``rel`` was (``untrusted``) stamped untrusted, or vouched by the owner."""
        if untrusted and not self.once_untrusted(rel):
            self.untrusted[rel] = self._mac(ONCE_UNTRUSTED, rel)
            self.dirty = True
        elif not untrusted and self.untrusted.pop(rel, None) is not None:
            self.dirty = True

    def _mac(self, label: str, rel: str, *fields: Any) -> str:
        """An entry's MAC: of a JSON array, the label first, so no entry passes for another."""
        return mac(self.secret, json.dumps([label, CACHE_VERSION, rel, *fields]).encode("utf-8"))

    def get(self, rel: str, key: list[int]) -> EffectiveOrigin | None:
        import hmac

        self.seen.add(rel)
        entry = self.entries.get(rel)
        if not isinstance(entry, list) or len(entry) != 7 or entry[:3] != key:
            return None
        if not isinstance(entry[6], str) or not hmac.compare_digest(
            entry[6], self._mac(VERDICT, rel, *entry[:6])
        ):
            return None
        origin, written, state = entry[3:6]
        if state not in STATES or origin not in ORIGINS:
            return None
        return EffectiveOrigin(str(origin), str(written), str(state))

    def put(self, rel: str, key: list[int], verdict: EffectiveOrigin) -> None:
        fields = [*key, verdict.origin, verdict.written, verdict.state]
        self.entries[rel] = [*fields, self._mac(VERDICT, rel, *fields)]
        self.dirty = True

    def drop(self, rel: str) -> None:
        if self.entries.pop(rel, None) is not None:
            self.dirty = True

    def save(self) -> None:
        """Write the cache if it changed; silently skip when the tree is read-only."""
        if not self.dirty:
            return
        self.dirty = False
        for rel in [r for r in self.entries if r not in self.seen]:
            if not os.path.lexists(self.root / rel):
                del self.entries[rel]
        body = {"version": CACHE_VERSION, "entries": self.entries, "untrusted": self.untrusted}
        save_json(self.path, body)


class OriginReader:
    """``reader(file)`` → the file's effective origin; ``reader.verdict(file)`` says why.

    Without a key: the origin as written. With a key: the written origin only
    if its ``origin-sig`` verifies, else ``unknown``. Verdicts are cached in
    ``.rouse/cache/origins.json`` (best effort: saved when the reader is
    flushed or garbage-collected, never required).
    """

    def __init__(self, root: Path, key: StampKey | None, key_path: Path | None = None):
        self.root = root
        self.key = key
        self.key_path = key.path if key is not None else key_path
        self._cache = _Cache(root, key.secret) if key and key.secret is not None else None
        if self._cache is not None:
            weakref.finalize(self, self._cache.save)

    @property
    def cache_secret(self) -> bytes | None:
        """The stamp key's secret, for the caches that are MACed with it (or None)."""
        return self.key.secret if self.key is not None else None

    @property
    def keyed(self) -> bool:
        """True when a key file exists (even an unusable one: then all reads are unknown)."""
        return self.key is not None

    def __call__(self, file: File) -> str:
        return self.verdict(file).origin

    def verdict(self, file: File) -> EffectiveOrigin:
        if self.key is None:
            written = (file.get("origin") or "").strip()
            return EffectiveOrigin(
                as_written(written), written, "as-written" if written else "unstamped"
            )
        if self._cache is None:
            return EffectiveOrigin("unknown", (file.get("origin") or "").strip(), "bad-key")
        return self._verified(file.rel)

    def verdict_at(self, rel: str) -> EffectiveOrigin:
        """The verdict for a tree-relative path (with a key; without one, read its header)."""
        if self.key is None or self._cache is None:
            try:
                head = header.read_header(self.root / rel, rel)
            except HeaderError:
                return EffectiveOrigin("unknown", "", "unreadable")
            fake = File(rel=rel, header=head, size=0, mtime_ns=0)
            return self.verdict(fake)
        return self._verified(rel)

    def _verified(self, rel: str) -> EffectiveOrigin:
        assert self._cache is not None and self.key is not None and self.key.secret is not None
        path = self.root / rel
        try:
            info = os.lstat(path)
        except OSError:
            return EffectiveOrigin("unknown", "", "unreadable")
        key = [info.st_size, info.st_mtime_ns, info.st_ctime_ns]
        cached = self._cache.get(rel, key)
        if cached is not None:
            return self._once_untrusted(rel, cached)
        verdict = self._read(path, rel, info)
        racy = time.time_ns() - max(info.st_mtime_ns, info.st_ctime_ns) < RACY_NS
        if racy:
            self._cache.drop(rel)
        else:
            self._cache.put(rel, key, verdict)
        return self._once_untrusted(rel, verdict)

    def _once_untrusted(self, rel: str, verdict: EffectiveOrigin) -> EffectiveOrigin:
        """Tampering never lifts a fence (SPEC §5, 0.3): a file seen verified as
        ``untrusted`` is remembered (MACed, in the verdict cache) and stays untrusted —
        edited, re-stamped by the agent, its ``origin:`` lines deleted — until it
        verifies as the owner's."""
        assert self._cache is not None
        if verdict.origin == "untrusted":
            self._cache.remember(rel, True)
        elif self._cache.once_untrusted(rel):
            if verdict.origin == "owner":
                self._cache.remember(rel, False)
            else:
                return EffectiveOrigin("untrusted", verdict.written, "once-untrusted")
        return verdict

    def kept_fence(self, rel: str, origin: str) -> str:
        """``origin``, verified by the caller from bytes it read itself (recall), as the
        fence reads it: a file once stamped untrusted stays so until the owner vouches."""
        if self._cache is None:
            return origin
        return self._once_untrusted(rel, EffectiveOrigin(origin, "", "verified")).origin

    def stamped(self, rel: str, origin: str) -> None:
        """``rouse stamp`` just signed ``rel`` as ``origin``: remember an untrusted one,
        forget it once the owner vouches (saved at :meth:`flush`)."""
        if self._cache is not None and origin in ("untrusted", "owner"):
            self._cache.remember(rel, origin == "untrusted")

    def _read(self, path: Path, rel: str, info: os.stat_result) -> EffectiveOrigin:
        assert self.key is not None and self.key.secret is not None
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_FILE_BYTES:
            return EffectiveOrigin("unknown", "", "unreadable")
        try:
            data = header.read_capped(path, MAX_FILE_BYTES + 1)
            written, state = verify(self.key.secret, rel, data)
        except (OSError, HeaderError):
            return EffectiveOrigin("unknown", "", "unreadable")
        origin = as_written(written) if state in VERIFIED else "unknown"
        return EffectiveOrigin(origin, written, state)

    def flush(self) -> None:
        """Save the cache now (it is also saved when the reader is collected)."""
        if self._cache is not None:
            self._cache.save()


def origin_reader(root: Path, key_path: Path | None = None) -> OriginReader:
    """A reader for ``root`` with the key at ``key_path`` (default: ``home.stamp_key_path()``)."""
    path = key_path or home.stamp_key_path()
    return OriginReader(root, load_key(path), path)


# -- a finding of `rouse check` --------------------------------------------------


class Finding(Value):
    """One ``check`` finding; ``message`` says what is wrong and what to do. Most are
    :mod:`rouse.lint`'s; it lives here, below it, for the probe cache's
    (``rouse.probes.demand``, a layer under lint)."""

    __slots__ = ("level", "path", "message", "line")
    _fields = __slots__

    def __init__(
        self, level: Literal["error", "warn"], path: str, message: str, line: int | None = None
    ):
        self.level = level
        self.path = path
        self.message = message
        self.line = line

    def render(self) -> str:
        where = self.path if self.line is None else f"{self.path}:{self.line}"
        return f"{self.level}: {where}: {self.message}"

    def sort_key(self) -> tuple[int, str, int, str]:
        return (0 if self.level == "error" else 1, self.path, self.line or 0, self.message)
