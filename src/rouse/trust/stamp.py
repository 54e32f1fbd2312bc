"""Writing provenance: ``rouse stamp``, the signing of files rouse laid itself, and the
one writer rouse's verbs write through.

``stamp`` writes ``origin`` and ``origin-turn`` and, with a stamp key,
``origin-sig:`` — an HMAC-SHA256 over a versioned canonical message
(:func:`rouse.trust.stampkey.signing_message_v2`).

:class:`SigningStore` is the core ``Store`` with the stamp key in hand. A file it
creates for a speaker is signed with the speaker's origin (:mod:`rouse.trust.speaker`
decides who that is); a file it rewrites keeps the origin it had — re-signed when
its signature verified before the change, left as it was otherwise. So a
lifecycle verb (move, snooze, close, cancel, tell, a checkpoint) never costs a
file its origin and never gives it one. Without a usable key it writes exactly
as ``Store`` does.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from rouse.core import header
from rouse.core.errors import HeaderError, RouseError, UsageError
from rouse.core.home import stamp_key_path
from rouse.core.store import Store
from rouse.core.tree import File, Tree
from rouse.trust.origins import ORIGINS, VERIFIED, OriginReader
from rouse.trust.stampkey import StampKey, load_key, sign, verify


def stamp_bytes(
    data: bytes, rel: str, origin: str, turn: str | None, secret: bytes | None
) -> bytes:
    updates: dict[str, str | None] = {"origin": origin, "origin-turn": turn, "origin-sig": None}
    data = header.set_fields(data, updates, rel)
    if secret is None:
        return data
    return header.set_fields(data, {"origin-sig": sign(secret, rel, data)}, rel)


_FROM_ENV = object()


class SigningStore(Store):
    """Writes inside one tree, signing what it creates and keeping what it rewrites.

    ``key``: the stamp key (default: the one at ``$ROUSE_STAMP_KEY`` or its default
    place). ``origin``: who is speaking, for the files it creates (None: unsigned).
    """

    def __init__(
        self, root: Path, key: StampKey | object | None = _FROM_ENV, origin: str | None = None
    ):
        super().__init__(root)
        loaded = load_key(stamp_key_path()) if key is _FROM_ENV else key
        self.key = loaded if isinstance(loaded, StampKey) else None
        self.origin = origin

    @property
    def secret(self) -> bytes | None:
        return self.key.secret if self.key is not None else None

    def create(self, rel: str, text: str) -> Path:
        """A new file, signed with the speaker's origin when there is a key and a speaker."""
        if self.secret is not None and self.origin is not None:
            data = stamp_bytes(text.encode("utf-8"), rel, self.origin, None, self.secret)
            text = data.decode("utf-8")
        return super().create(rel, text)

    def update(self, rel: str, change: Callable[[bytes], bytes]) -> bytes:
        """Rewrite ``rel`` through ``change``, keeping the origin it verified with."""
        secret = self.secret
        if secret is None:
            return super().update(rel, change)

        def kept(data: bytes) -> bytes:
            return keep_origin(secret, rel, data, change(data))

        return super().update(rel, kept)

    def sign(self, rel: str, origin: str) -> bytes:
        """Sign ``rel`` as ``origin`` (a file rouse just made for the speaker, as ``promote``
        does); without a key, nothing is written."""
        secret = self.secret
        if secret is None:
            return (self.root / rel).read_bytes()
        return super().update(rel, lambda data: stamp_bytes(data, rel, origin, None, secret))

    def verified_origin(self, rel: str) -> str | None:
        """The origin ``rel`` verifies as under the key (v2 only), else None."""
        secret = self.secret
        if secret is None:
            return None
        try:
            written, state = verify(secret, rel, self.path(rel).read_bytes())
        except (OSError, HeaderError):
            return None
        return written if state == "verified" else None


def keep_origin(secret: bytes, rel: str, before: bytes, after: bytes) -> bytes:
    """``after`` re-signed with the origin ``before`` verified with (a v2 signature), when
    the change kept that origin; otherwise ``after`` as it is (never an upgrade)."""
    if after == before:
        return after
    try:
        written, state = verify(secret, rel, before)
        if state != "verified":
            return after
        head = header.parse_header(after, rel)
    except HeaderError:
        return after
    if (head.get("origin") or "").strip() != written:
        return after  # the change itself rewrote the origin (a rewritten note): not ours
    return stamp_bytes(after, rel, written, head.get("origin-turn"), secret)


@dataclass
class Stamped:
    """What ``stamp`` did."""

    written: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # still verified (--if-changed)
    signed: bool = False


def stamped_files(tree: Tree) -> list[File]:
    """Every file of the tree that can carry a stamp, by path."""
    files: list[File] = [*tree.context, *tree.records.values(), *tree.notes, *tree.plugins]
    if tree.probes is not None:
        files.append(tree.probes)
    return sorted(files, key=lambda f: f.rel)


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


def _usable_secret(key: StampKey) -> bytes:
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
    secret = None if key is None else _usable_secret(key)
    turn = turn.strip() if turn is not None else None
    cwd = Path.cwd() if cwd is None else cwd
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
            store.update(
                rel, partial(stamp_bytes, rel=rel, origin=origin, turn=turn, secret=secret)
            )
            result.written.append(rel)
    if secret is not None and key is not None and result.written:
        reader = OriginReader(root, key)
        for rel in result.written:
            reader.stamped(rel, origin)
        reader.flush()
    if result.missing:
        raise RouseError(
            f"not stamped (missing, not a regular file, or not in the tree {root}): "
            + ", ".join(result.missing)
            + (f"; stamped {len(result.written)} other file(s)" if result.written else "")
        )
    return result


def _verifies(root: Path, rel: str, secret: bytes) -> bool:
    try:
        return verify(secret, rel, (root / rel).read_bytes())[1] in VERIFIED
    except (OSError, HeaderError):
        return False


def sign_laid_files(root: Path, key: StampKey, rels: Iterable[str]) -> int:
    """Sign the origins rouse itself just wrote (``init``'s example files).

    Only for files rouse laid down a moment ago: signing whatever origin a
    file claims is exactly what a forger wants, so no verb offers this.
    """
    secret = _usable_secret(key)
    count = 0
    store = Store(root)
    for rel in rels:
        head = header.read_header(root / rel, rel)
        written, turn = head.get("origin"), head.get("origin-turn")
        if written:
            store.update(
                rel, partial(stamp_bytes, rel=rel, origin=written, turn=turn, secret=secret)
            )
            count += 1
    return count


# -- re-signing what the owner vouches for (from outside the agent) ---------------


@dataclass
class Unvouched:
    """A file whose written origin does not verify (or verifies only as v1)."""

    rel: str
    origin: str  # as written in the file
    state: str  # a verdict state: mismatch, unsigned or verified-v1
    digest: str  # sha256 of the file as listed: re-signed only if unchanged


#: The origin a file that was never stamped gets when the owner vouches for it.
VOUCHED = "owner"


def unvouched(root: Path, key: StampKey, states: frozenset[str]) -> list[Unvouched]:
    """Files whose verdict is one of ``states``, by path: what ``--changed`` (mismatch,
    unsigned, unstamped) and ``--upgrade`` (verified-v1) offer to re-sign. A file never
    stamped is listed with :data:`VOUCHED`, the origin vouching gives it."""
    from rouse.core.tree import walk  # writers only

    secret = _usable_secret(key)
    found: list[Unvouched] = []
    for file in stamped_files(walk(root)):
        try:
            data = (root / file.rel).read_bytes()
            written, state = verify(secret, file.rel, data)
        except (OSError, HeaderError):
            continue
        if state in states and (written or state == "unstamped"):
            found.append(Unvouched(file.rel, written or VOUCHED, state, _digest(data)))
    return found


def _digest(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()


def resign(root: Path, key: StampKey, chosen: Iterable[Unvouched]) -> Stamped:
    """Re-sign each chosen file with the origin (and turn) it carries — if it still
    carries the origin and state it was listed with; anything else is skipped."""
    secret = _usable_secret(key)
    store = Store(root)
    result = Stamped(signed=True)
    with store.lock():
        for item in chosen:

            def change(data: bytes, item: Unvouched = item) -> bytes:
                if _digest(data) != item.digest:
                    return data  # it changed since the owner saw it listed: leave it
                turn = header.parse_header(data, item.rel).get("origin-turn")
                return stamp_bytes(data, item.rel, item.origin, turn, secret)

            before = (root / item.rel).read_bytes()
            after = store.update(item.rel, change)
            (result.written if after != before else result.skipped).append(item.rel)
    return result
