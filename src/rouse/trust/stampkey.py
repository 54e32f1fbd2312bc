"""The stamp key and signatures: the key file, the canonical message, sign, verify.

An ``origin-sig:`` is ``v1:`` and the hex HMAC-SHA256, under the stamp key, of
:func:`signing_message` — the tree-relative path, the origin, the origin-turn
and the SHA-256 of the body bytes. See docs/provenance.md.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterable
from pathlib import Path

from rouse.core import header, layout
from rouse.core.errors import UsageError
from rouse.core.value import Frozen

SIG_VERSION = "v1"
KEY_BYTES = 32


class StampKey(Frozen):
    """A stamp key file. ``secret`` is None when the file exists but cannot be used:
    then every origin reads ``unknown`` (fail closed), and ``problem`` says why."""

    __slots__ = ("path", "secret", "problem", "mode")
    _fields = __slots__

    def __init__(
        self,
        path: Path,
        secret: bytes | None,
        problem: str | None = None,
        mode: int | None = None,
    ):
        self.path = path
        self.secret = secret
        self.problem = problem
        self.mode = mode


def load_key(path: Path) -> StampKey | None:
    """Read the key at ``path``; None when there is no key file at all."""
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode):
            return StampKey(path, None, "is not a regular file")
        text = path.read_text("ascii")
    except (FileNotFoundError, NotADirectoryError):
        return None
    except PermissionError:
        return StampKey(path, None, "cannot be read (permission denied)")
    except OSError as exc:
        return StampKey(path, None, f"cannot be read ({exc.strerror})")
    except UnicodeDecodeError:
        return StampKey(path, None, "is not a rouse stamp key (not hex text)")
    try:
        secret = bytes.fromhex(text.strip())
    except ValueError:
        secret = b""
    if len(secret) < KEY_BYTES:
        return StampKey(path, None, f"is not a rouse stamp key ({KEY_BYTES * 2}+ hex digits)")
    return StampKey(path, secret, None, stat.S_IMODE(info.st_mode))


def cache_secret(path: Path) -> bytes | None:
    """The key's secret for MACing rouse's caches, or None (no key, or an unusable one)."""
    key = load_key(path)
    return key.secret if key is not None else None


def _looks_like_tree(path: Path) -> bool:
    return (path / layout.INSTRUCTIONS).is_file() or (path / layout.STATE_DIR).is_dir()


def init_key(path: Path, trees: Iterable[Path] = ()) -> Path:
    """Create a new stamp key at ``path`` (and its directory), mode 0600.

    Refuses a location inside a memory tree (one of ``trees``, or any
    directory above ``path`` that looks like one) and an existing key.
    """
    path = path.expanduser().absolute()
    real = path.parent.resolve() / path.name
    for tree in trees:
        root = tree.resolve()
        if real == root or root in real.parents:
            raise UsageError(
                f"refusing to put the stamp key inside the memory tree {root}: the agent "
                "edits that tree; set $ROUSE_STAMP_KEY to a path outside it"
            )
    for ancestor in real.parents:
        if _looks_like_tree(ancestor):
            raise UsageError(
                f"refusing to put the stamp key inside the memory tree {ancestor}: "
                "set $ROUSE_STAMP_KEY to a path outside it"
            )
    if os.path.lexists(path):
        raise UsageError(
            f"a stamp key already exists at {path}: refusing to overwrite it (every stamp "
            "signed with it would stop verifying); move it away yourself to start over"
        )
    if not path.parent.is_dir():
        path.parent.mkdir(parents=True, mode=0o700)
        os.chmod(path.parent, 0o700)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags, 0o600)
    except FileExistsError:
        raise UsageError(
            f"a stamp key already exists at {path}: refusing to overwrite it"
        ) from None
    with os.fdopen(fd, "w", encoding="ascii") as handle:
        os.fchmod(handle.fileno(), 0o600)
        import secrets  # only here: keeps it off the pack's start-up path

        handle.write(secrets.token_hex(KEY_BYTES) + "\n")
    return path


def signing_message(rel: str, origin: str, turn: str, body: bytes) -> bytes:
    """The canonical, versioned message an ``origin-sig`` covers.

    A compact JSON array, so no field can bleed into another:
    ``["rouse-origin-sig","v1",<tree-relative path>,<origin>,<origin-turn or "">,
    <sha256 hex of the body bytes>]``. The body is every byte after the
    header's closing fence.
    """
    import hashlib

    digest = hashlib.sha256(body).hexdigest()
    fields = ["rouse-origin-sig", SIG_VERSION, rel, origin, turn, digest]
    return json.dumps(fields, ensure_ascii=True, separators=(",", ":")).encode("ascii")


def sign(secret: bytes, rel: str, origin: str, turn: str, body: bytes) -> str:
    """The ``origin-sig:`` value: ``v1:`` and the hex HMAC-SHA256 of the message."""
    import hashlib
    import hmac

    mac = hmac.new(secret, signing_message(rel, origin, turn, body), hashlib.sha256)
    return f"{SIG_VERSION}:{mac.hexdigest()}"


def verify(secret: bytes, rel: str, data: bytes) -> tuple[str, str]:
    """Check a whole file's stamp; return ``(written origin, state)``."""
    import hmac

    head, body = header.split(data, rel)
    written = (head.get("origin") or "").strip()
    sig = (head.get("origin-sig") or "").strip()
    if not written:
        return "", "unstamped"
    if not sig:
        return written, "unsigned"
    expected = sign(secret, rel, written, (head.get("origin-turn") or "").strip(), body)
    return written, ("verified" if hmac.compare_digest(expected, sig) else "mismatch")
