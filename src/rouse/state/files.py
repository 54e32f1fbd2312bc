"""Best-effort JSON state in ``.rouse/``: caches that may be lost at no cost.

Every state file is read through one bounded reader (:func:`read_bounded`, then
:func:`decode`; a file's :class:`rouse.state.shapes.StateFile` does both): at
most ``max_bytes`` (default 1 MiB) are read, nesting deeper than ``max_depth``
(default 16) is refused before the decoder sees it,
``NaN``, ``Infinity`` and numbers beyond ±1e15 are refused, and the decoded
value must fit the file's *shape* (see :func:`conform`). Anything refused is
a miss — the caller re-derives, rewrites or reports it; it is never trusted
and never fatal — and :class:`Damaged` says why, for ``rouse check``.

Writes go to a temp file in the same directory and are renamed over, so a
reader never sees half a file; a tree that cannot be written is not an
error (the caller just works without its cache). Neither reads nor writes go
through a symlink anywhere from ``.rouse`` down (see ``rouse.core.statedir``):
state behind a link is treated as missing.

Light to import: the agent hooks run at every prompt and turn's end and read
their state through here, so it imports nothing Python has not loaded at
start-up but json's C half (no pathlib, json, re, contextlib, tempfile).

A MACed state file (the walk cache, the snapshot, the acts, the probes' baselines)
is one first line of magic, version and MAC, then its body (:func:`write_signed`):
one of another format or version, or (with the stamp key) not MACed under the key
derived for its use, reads as missing. A watching sweeper's replies are MACed with
:func:`keyed_mac` too.
Paths are ``str`` or ``Path``. JSON is read by the C scanner json itself
uses, under the bounds; what that fast reading cannot decide cheaply (another
encoding, a BOM, a bound crossed, anything json would refuse) goes to json
itself, which says why.
"""

from __future__ import annotations

import os
import stat
import time

from rouse.core.home import STATE_DIR as STATE_DIR  # (core's name for the folder)
from rouse.state.bounded import MAX_DEPTH as MAX_DEPTH
from rouse.state.bounded import Damaged as Damaged
from rouse.state.bounded import Num as Num
from rouse.state.bounded import conform as conform
from rouse.state.bounded import decode as decode
from rouse.state.bounded import dumps as dumps
from rouse.state.bounded import suppress as suppress

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

    from _typeshed import StrPath

#: the folder every state file is in, under the tree's root (``rouse.core.layout``'s too),
#: and the one nudge files are delivered to in it (``rouse.state.nudges``'s)
NUDGES_DIR = "nudges"

#: the default bounds of a state file
MAX_BYTES = 1 << 20
#: a file's stat is trusted by a cache only once the file is this old: one touched more
#: recently may change again within its mtime tick, unseen (git's "racy" rule)
RACY_NS = 2_000_000_000
# -- reading and writing --------------------------------------------------------


def through_link(path: StrPath) -> bool:
    """Is ``path``, or a directory above it up to ``.rouse``, a symlink?"""
    current = os.fspath(path)
    for _ in range(8):  # state files sit at most a few levels under .rouse/
        if os.path.islink(current):
            return True
        parent = os.path.dirname(current)
        if os.path.basename(current) == STATE_DIR or parent == current:
            return False
        current = parent
    return False


def read_bounded(path: StrPath, max_bytes: int = MAX_BYTES) -> bytes | None:
    """The file's bytes; None if it is missing, unreadable or behind a link;
    :class:`Damaged` if it is larger than ``max_bytes`` or not a regular file."""
    if through_link(path):
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    chunks = []
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise Damaged("not a regular file")
        # at most max_bytes + 1, asked for in the size the file has (a buffer of
        # max_bytes, 8 MiB for a seen-set, costs a hook more than the read)
        want, total = min(info.st_size, max_bytes) + 1, 0
        while total <= max_bytes:
            chunk = os.read(fd, min(want, max_bytes + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            want = 1 << 16
    except OSError:
        return None
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > max_bytes:
        raise Damaged(f"larger than {max_bytes:,} bytes")
    return data


def load_bytes(path: StrPath, max_bytes: int = MAX_BYTES) -> bytes | None:
    """The file's bytes, or None if it is missing, unreadable, behind a link, or too large."""
    try:
        return read_bounded(path, max_bytes)
    except Damaged:
        return None


def save_json(path: StrPath, data: Any) -> bool:
    """Write ``data`` atomically; return False (and leave no temp file) if we can't."""
    try:
        text = dumps(data)
    except (TypeError, ValueError, RecursionError):
        return False
    return save_bytes(path, text)


def make_parent(path: StrPath) -> bool:
    """Make the folder ``path`` goes in (never through a link); False if we can't."""
    if through_link(path):
        return False
    try:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    except OSError:
        return False
    return True


def save_bytes(path: StrPath, text: bytes) -> bool:
    """Write ``text`` atomically; return False (and leave no temp file) if we can't."""
    folder, name = os.path.split(path)
    temp = os.path.join(folder, f".{name}.{os.getpid()}.{time.monotonic_ns()}.tmp")
    if not make_parent(path):
        return False
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        with os.fdopen(fd, "wb") as handle:
            handle.write(text)
        os.replace(temp, path)
    except OSError:
        with suppress(OSError):
            os.unlink(temp)
        return False
    return True


# -- a MACed file --------------------------------------------------------------


def keyed_mac(secret: bytes, label: bytes, body: bytes) -> bytes:
    """HMAC-SHA256 of ``body`` (hex) under a key derived from the stamp key's secret for
    ``label``: one key per use (the walk cache, a watching sweeper's replies)."""
    import hashlib
    import hmac

    derived = hmac.new(secret, label, hashlib.sha256).digest()
    return hmac.new(derived, body, hashlib.sha256).hexdigest().encode()


def read_signed(
    path: Path, max_bytes: int, magic: bytes, version: int, secret: bytes | None, label: bytes
) -> bytes | None:
    """The body of a file :func:`write_signed` wrote, or None: missing, of another
    format or version, or (with a key) not MACed with it (``label``: which key)."""
    data = load_bytes(path, max_bytes)
    if data is None:
        return None
    first, _, body = data.partition(b"\n")
    parts = first.split(b" ")
    if len(parts) != 3 or parts[0] != magic or parts[1] != str(version).encode():
        return None
    if secret is not None:
        import hmac

        if not hmac.compare_digest(parts[2], keyed_mac(secret, label, body)):
            return None
    return body


def write_signed(
    path: Path, magic: bytes, version: int, secret: bytes | None, label: bytes, body: bytes
) -> bool:
    """Save ``body`` under one line of magic, version and MAC (``-`` unkeyed), best effort
    (False when it could not be written)."""
    signed = keyed_mac(secret, label, body) if secret is not None else b"-"
    return save_bytes(path, b" ".join((magic, str(version).encode(), signed)) + b"\n" + body)
