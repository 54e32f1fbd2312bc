"""Provenance: ``origin:`` classes, stamping, signing, and the effective origin.

Without a stamp key an origin reads as written. With one (SPEC §7), ``stamp``
also writes ``origin-sig:``, an HMAC-SHA256 over a versioned canonical message
(:func:`signing_message`), and an origin counts only when its signature
verifies; anything else reads ``unknown``. :func:`origin_reader` answers
"what is this file's effective origin?" cheaply, from a cache in ``.rouse/``
whose entries are themselves authenticated with the key, so editing the cache
forges nothing.
"""

from __future__ import annotations

import json
import os
import stat
import time
import weakref
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from rouse.core import header, home, layout
from rouse.core.errors import HeaderError, RouseError, UsageError
from rouse.core.statefile import load_json, save_json
from rouse.core.tree import File, Tree
from rouse.core.value import Frozen, Value
from rouse.trust.stampkey import (
    SIG_VERSION,
    StampKey,
    init_key,
    load_key,
    sign,
    signing_message,
    verify,
)

# typing costs ~5 ms to import on the pack's start-up path; annotations are
# strings here (__future__), so it is only imported for the type checker
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Literal

__all__ = [
    "ORIGINS",
    "SIG_VERSION",
    "OriginReader",
    "StampKey",
    "Verdict",
    "effective_origin",
    "init_key",
    "load_key",
    "origin_reader",
    "probes_allowed",
    "probes_allowed_at",
    "sign",
    "signing_message",
    "stamp",
    "stamp_findings",
    "verify",
]

ORIGINS = ("owner", "system", "agent", "untrusted", "unknown")
#: Origins whose probes.md may run under a key (SPEC §6).
PROBE_ORIGINS = frozenset({"owner", "system", "agent"})

CACHE_FILE = "origins.json"
CACHE_VERSION = 1
RACY_NS = 2_000_000_000  # a file touched this recently is re-verified next time
MAX_FILE_BYTES = 8 * 1024 * 1024

#: Why an origin reads the way it does, by verdict state.
STATES = {
    "as-written": "no stamp key: read as written, unverified",
    "verified": "its signature verifies",
    "unstamped": "it was never stamped",
    "unsigned": "its origin has no origin-sig (typed by hand, or stamped before the key existed)",
    "mismatch": (
        "its origin-sig does not match (edited since it was stamped, copied from another "
        "file, or signed with another key)"
    ),
    "bad-key": "the stamp key cannot be used",
    "unreadable": "the file cannot be read",
}


def effective_origin(file: File) -> str:
    """The origin as written (unverified): for callers that have no tree root.

    Prefer :func:`origin_reader`, which verifies signatures when a key exists.
    """
    return _normal(file.get("origin"))


def _normal(value: str | None) -> str:
    value = (value or "").strip().lower()
    return value if value in ORIGINS else "unknown"


def _stamp_bytes(
    data: bytes, rel: str, origin: str, turn: str | None, secret: bytes | None
) -> bytes:
    updates: dict[str, str | None] = {"origin": origin, "origin-turn": turn, "origin-sig": None}
    data = header.set_fields(data, updates, rel)
    if secret is None:
        return data
    _, body = header.split(data, rel)
    return header.set_fields(data, {"origin-sig": sign(secret, rel, origin, turn or "", body)}, rel)


def _stamper(
    rel: str, origin: str, turn: str | None, secret: bytes | None
) -> Callable[[bytes], bytes]:
    def change(data: bytes) -> bytes:
        return _stamp_bytes(data, rel, origin, turn, secret)

    return change


# -- stamping -----------------------------------------------------------------


class Stamped(Value):
    """What ``stamp`` did."""

    __slots__ = ("written", "missing", "skipped", "signed")
    _fields = __slots__

    def __init__(self, signed: bool = False) -> None:
        self.written: list[str] = []
        self.missing: list[str] = []
        self.skipped: list[str] = []  # still verified (--if-changed)
        self.signed = signed


def _tree_relative(root: Path, given: str, cwd: Path) -> str | None:
    """A FILE argument as a tree-relative path, or None if it is not in the tree."""
    real_root = root.resolve()
    for base in (cwd, root):
        candidate = Path(given) if os.path.isabs(given) else base / given
        if not candidate.exists() and not candidate.is_symlink():
            continue
        try:
            rel = candidate.parent.resolve().relative_to(real_root) / candidate.name
        except ValueError:
            return None
        return rel.as_posix()
    return None


def _usable_secret(key: StampKey | None) -> bytes | None:
    if key is None:
        return None
    if key.secret is None:
        raise UsageError(f"the stamp key {key.path} {key.problem}: fix it before stamping")
    return key.secret


def stamp(
    root: Path,
    files: Iterable[str],
    origin: str,
    turn: str | None,
    cwd: Path | None = None,
    key: StampKey | None = None,
    if_changed: bool = False,
) -> Stamped:
    """Write ``origin`` (and ``origin-turn``, and with a key ``origin-sig``) into each file.

    Files that do not exist or are not in the tree are named in the error
    raised after the others are stamped (exit 1), never skipped silently.
    With ``if_changed`` (and a key), a file whose stamp still verifies is left
    as it is: a wrapper can pass every file a turn may have touched without
    re-stamping the owner's files as the agent's.
    """
    if origin not in ORIGINS:
        raise UsageError(f"unknown origin class {origin!r}: use one of {', '.join(ORIGINS)}")
    if turn is not None and (not turn.strip() or "\n" in turn or "\r" in turn):
        raise UsageError("--turn must be a one-line id")
    secret = _usable_secret(key)
    turn = turn.strip() if turn is not None else None
    cwd = Path.cwd() if cwd is None else cwd
    from rouse.core.store import Store  # writers only: the pack's path never loads it

    store = Store(root)
    result = Stamped(signed=secret is not None)
    with store.lock():
        for given in files:
            rel = _tree_relative(root, given, cwd)
            if rel is None or not (root / rel).is_file() or (root / rel).is_symlink():
                result.missing.append(given)
                continue
            if if_changed and secret is not None and _verifies(root, rel, secret):
                result.skipped.append(rel)
                continue
            store.update(rel, _stamper(rel, origin, turn, secret))
            result.written.append(rel)
    if result.missing:
        raise RouseError(
            f"not stamped (missing, not a regular file, or not in the tree {root}): "
            + ", ".join(result.missing)
            + (f"; stamped {len(result.written)} other file(s)" if result.written else "")
        )
    return result


def _verifies(root: Path, rel: str, secret: bytes) -> bool:
    try:
        return verify(secret, rel, (root / rel).read_bytes())[1] == "verified"
    except (OSError, HeaderError):
        return False


def sign_laid_files(root: Path, key: StampKey, rels: Iterable[str]) -> int:
    """Sign the origins rouse itself just wrote (``init``'s example files).

    Only for files rouse laid down a moment ago: signing whatever origin a
    file claims is exactly what a forger wants, so no verb offers this.
    """
    secret = _usable_secret(key)
    assert secret is not None
    count = 0
    from rouse.core.store import Store  # writers only: the pack's path never loads it

    store = Store(root)
    for rel in rels:
        head = header.read_header(root / rel, rel)
        written, turn = head.get("origin"), head.get("origin-turn")
        if written:
            store.update(rel, _stamper(rel, written, turn, secret))
            count += 1
    return count


# -- reading origins ----------------------------------------------------------


class Verdict(Frozen):
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
        self.seen: set[str] = set()
        self.dirty = False
        raw = load_json(self.path)
        if isinstance(raw, dict) and raw.get("version") == CACHE_VERSION:
            entries = raw.get("entries")
            self.entries = entries if isinstance(entries, dict) else {}

    def _mac(self, rel: str, fields: list[Any]) -> str:
        import hashlib
        import hmac

        message = json.dumps(["rouse-origin-cache", CACHE_VERSION, rel, *fields])
        return hmac.new(self.secret, message.encode("utf-8"), hashlib.sha256).hexdigest()

    def get(self, rel: str, key: list[int]) -> Verdict | None:
        import hmac

        self.seen.add(rel)
        entry = self.entries.get(rel)
        if not isinstance(entry, list) or len(entry) != 7 or entry[:3] != key:
            return None
        if not isinstance(entry[6], str) or not hmac.compare_digest(
            entry[6], self._mac(rel, entry[:6])
        ):
            return None
        origin, written, state = entry[3:6]
        if state not in STATES or origin not in ORIGINS:
            return None
        return Verdict(str(origin), str(written), str(state))

    def put(self, rel: str, key: list[int], verdict: Verdict) -> None:
        fields = [*key, verdict.origin, verdict.written, verdict.state]
        self.entries[rel] = [*fields, self._mac(rel, fields)]
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
        save_json(self.path, {"version": CACHE_VERSION, "entries": self.entries})


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
    def keyed(self) -> bool:
        """True when a key file exists (even an unusable one: then all reads are unknown)."""
        return self.key is not None

    def __call__(self, file: File) -> str:
        return self.verdict(file).origin

    def verdict(self, file: File) -> Verdict:
        if self.key is None:
            written = (file.get("origin") or "").strip()
            return Verdict(_normal(written), written, "as-written" if written else "unstamped")
        if self._cache is None:
            return Verdict("unknown", (file.get("origin") or "").strip(), "bad-key")
        return self._verified(file.rel)

    def verdict_at(self, rel: str) -> Verdict:
        """The verdict for a tree-relative path (with a key; without one, read its header)."""
        if self.key is None or self._cache is None:
            try:
                head = header.read_header(self.root / rel, rel)
            except HeaderError:
                return Verdict("unknown", "", "unreadable")
            fake = File(rel=rel, header=head, size=0, mtime_ns=0)
            return self.verdict(fake)
        return self._verified(rel)

    def _verified(self, rel: str) -> Verdict:
        assert self._cache is not None and self.key is not None and self.key.secret is not None
        path = self.root / rel
        try:
            info = os.lstat(path)
        except OSError:
            return Verdict("unknown", "", "unreadable")
        key = [info.st_size, info.st_mtime_ns, info.st_ctime_ns]
        cached = self._cache.get(rel, key)
        if cached is not None:
            return cached
        verdict = self._read(path, rel, info)
        racy = time.time_ns() - max(info.st_mtime_ns, info.st_ctime_ns) < RACY_NS
        if racy:
            self._cache.drop(rel)
        else:
            self._cache.put(rel, key, verdict)
        return verdict

    def _read(self, path: Path, rel: str, info: os.stat_result) -> Verdict:
        assert self.key is not None and self.key.secret is not None
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_FILE_BYTES:
            return Verdict("unknown", "", "unreadable")
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
        try:
            fd = os.open(path, flags)
            with os.fdopen(fd, "rb") as handle:
                data = handle.read(MAX_FILE_BYTES + 1)
            written, state = verify(self.key.secret, rel, data)
        except (OSError, HeaderError):
            return Verdict("unknown", "", "unreadable")
        origin = _normal(written) if state == "verified" else "unknown"
        return Verdict(origin, written, state)

    def flush(self) -> None:
        """Save the cache now (it is also saved when the reader is collected)."""
        if self._cache is not None:
            self._cache.save()


def origin_reader(root: Path, key_path: Path | None = None) -> OriginReader:
    """A reader for ``root`` with the key at ``key_path`` (default: ``home.stamp_key_path()``)."""
    path = key_path or home.stamp_key_path()
    return OriginReader(root, load_key(path), path)


# -- what check and the probe runner ask --------------------------------------


class StampFinding(Value):
    """A ``check`` finding about stamps (check.py turns it into its own Finding)."""

    __slots__ = ("level", "path", "message", "line")
    _fields = __slots__

    def __init__(
        self, level: Literal["error", "warn"], path: str, message: str, line: int | None = None
    ):
        self.level = level
        self.path = path
        self.message = message
        self.line = line


def _stamped_files(tree: Tree) -> list[File]:
    files: list[File] = [*tree.context, *tree.records.values(), *tree.notes, *tree.plugins]
    if tree.probes is not None:
        files.append(tree.probes)
    return sorted(files, key=lambda f: f.rel)


def stamp_findings(tree: Tree, reader: OriginReader) -> list[StampFinding]:
    """Without a key: one warning that stamps are unsigned and probes unprotected.
    With a key: each written origin that does not verify, by file."""
    probes_rel = tree.probes.rel if tree.probes is not None else "."
    if reader.key is None:
        return [
            StampFinding(
                "warn",
                probes_rel,
                f"stamps are unsigned (no stamp key at {reader.key_path}): an origin reads as "
                "written, so a typed 'origin: owner' counts, and probes run unprotected — "
                "make a key with `rouse stamp --init-key`, then re-stamp what you trust",
            )
        ]
    key = reader.key
    if key.secret is None:
        return [
            StampFinding(
                "warn",
                probes_rel,
                f"the stamp key {key.path} {key.problem}: every origin reads as unknown and "
                "no probe runs — fix the key file (or remove it to go unsigned)",
            )
        ]
    findings: list[StampFinding] = []
    if key.mode is not None and key.mode & 0o077:
        findings.append(
            StampFinding(
                "warn",
                probes_rel,
                f"the stamp key {key.path} is readable by others (mode {key.mode:o}): "
                f"chmod 600 {key.path}",
            )
        )
    for file in _stamped_files(tree):
        verdict = reader.verdict(file)
        if verdict.state in ("mismatch", "unsigned", "unreadable"):
            shown = verdict.written or "(none)"
            findings.append(
                StampFinding(
                    "warn",
                    file.rel,
                    f"origin {shown!r} does not verify: {verdict.why}; it reads as unknown — "
                    "review the file, then re-stamp it from outside the agent",
                    file.header.line_of("origin"),
                )
            )
    reader.flush()
    return findings


def probes_allowed(tree: Tree, reader: OriginReader, env: Mapping[str, str]) -> tuple[bool, str]:
    """May the tree's probes run? ``(allowed, reason)`` — the reason is shown when they may not.

    ``ROUSE_PROBES=off`` disables probes. With a stamp key, ``probes.md`` runs
    only when its verified origin is owner, system or agent.
    """
    return _probes_allowed(tree.root, tree.probes is not None, reader, env)


def probes_allowed_at(root: Path, reader: OriginReader, env: Mapping[str, str]) -> tuple[bool, str]:
    """:func:`probes_allowed` for a caller that has not walked the tree (no walk needed)."""
    return _probes_allowed(root, os.path.lexists(root / layout.PROBES), reader, env)


def _probes_allowed(
    root: Path, present: bool, reader: OriginReader, env: Mapping[str, str]
) -> tuple[bool, str]:
    if env.get("ROUSE_PROBES", "").strip().lower() == "off":
        return False, "probes are off (ROUSE_PROBES=off): every probe reads <unknown>"
    rel = layout.PROBES
    if not present:
        return True, "no probes file"
    if not reader.keyed:
        return True, f"{rel} runs unprotected: no stamp key (`rouse stamp --init-key` makes one)"
    verdict = reader.verdict_at(rel)
    reader.flush()
    if verdict.origin in PROBE_ORIGINS:
        return True, f"{rel} verified as {verdict.origin}"
    return False, (
        f"probes did not run: {rel} reads as {verdict.origin} ({verdict.why}), so every "
        "probe reads <unknown>. The owner reviews the file and re-stamps it from outside "
        f"the agent: rouse --memory {root} stamp --origin owner {root / rel}"
    )
