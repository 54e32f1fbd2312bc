"""The stamp key and signatures: the key file, the canonical message, sign, verify.

An ``origin-sig:`` is ``v2:`` and the hex HMAC-SHA256, under the stamp key, of
:func:`signing_message_v2` — the tree-relative path, the origin, the
origin-turn, every header field but the machine fields and those rouse's
lifecycle verbs own (sorted, so their order is free), and the SHA-256 of the
body's authored part (never its log). So ``move``, ``snooze``, ``close`` and
the sweeper never cost a file its origin, and what they add never gains one.
Signatures made before (``v1:``: path, origin, turn and the whole body) keep
verifying as v1. See docs/provenance.md.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterable
from pathlib import Path

from rouse.core import header, layout
from rouse.core.body import authored
from rouse.core.errors import UsageError
from rouse.core.value import Frozen

KEY_BYTES = 32
#: Fields the lifecycle verbs write (a reminder's ``due`` too): outside the signature.
LIFECYCLE_FIELDS = frozenset({"status", "last-moved", "outcome", "snoozed-until"})


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
        if (ancestor / layout.INSTRUCTIONS).is_file() or (ancestor / layout.STATE_DIR).is_dir():
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


def signed_fields(rel: str, head: header.Header) -> list[list[str]]:
    """The header fields a v2 signature covers, as sorted ``[key, value]`` pairs."""
    skip = layout.MACHINE_FIELDS | LIFECYCLE_FIELDS
    if rel.rpartition("/")[2] == "reminder.md":
        skip = skip | {"due"}
    return sorted([key, value] for key, value in head.fields.items() if key not in skip)


def signing_message_v2(rel: str, origin: str, turn: str, head: header.Header, body: bytes) -> bytes:
    """The canonical message a ``v2:`` signature covers: a compact JSON array
    ``["rouse-origin-sig","v2",<path>,<origin>,<turn>,[[key,value],…],<sha256 of
    the authored body>]``, so no field can bleed into another."""
    import hashlib

    digest = hashlib.sha256(authored(body)).hexdigest()
    fields = ["rouse-origin-sig", "v2", rel, origin, turn, signed_fields(rel, head), digest]
    return json.dumps(fields, ensure_ascii=True, separators=(",", ":")).encode("ascii")


def signing_message(rel: str, origin: str, turn: str, body: bytes) -> bytes:
    """The v1 message (verified still, never written now): path, origin, turn, body.

    A compact JSON array, so no field can bleed into another:
    ``["rouse-origin-sig","v1",<tree-relative path>,<origin>,<origin-turn or "">,
    <sha256 hex of the body bytes>]``. The body is every byte after the
    header's closing fence.
    """
    import hashlib

    digest = hashlib.sha256(body).hexdigest()
    fields = ["rouse-origin-sig", "v1", rel, origin, turn, digest]
    return json.dumps(fields, ensure_ascii=True, separators=(",", ":")).encode("ascii")


def mac(secret: bytes, message: bytes) -> str:
    """The hex HMAC-SHA256 of ``message`` under ``secret``: a signature, a cache entry's MAC."""
    import hashlib
    import hmac

    return hmac.new(secret, message, hashlib.sha256).hexdigest()


def sign(secret: bytes, rel: str, data: bytes) -> str:
    """The ``origin-sig:`` value for a whole file (its origin fields already written):
    ``v2:`` and the hex HMAC-SHA256 of :func:`signing_message_v2`."""
    head, body = header.split(data, rel)
    origin = (head.get("origin") or "").strip()
    turn = (head.get("origin-turn") or "").strip()
    return f"v2:{mac(secret, signing_message_v2(rel, origin, turn, head, body))}"


def sign_v1(secret: bytes, rel: str, origin: str, turn: str, body: bytes) -> str:
    """A v1 ``origin-sig:`` (kept for verifying, and for tests of v1 files)."""
    return f"v1:{mac(secret, signing_message(rel, origin, turn, body))}"


def verify(secret: bytes, rel: str, data: bytes) -> tuple[str, str]:
    """Check a whole file's stamp; return ``(written origin, state)``.

    ``verified`` (v2), ``verified-v1`` (an older signature, still good for what
    it covers), ``unstamped``, ``unsigned`` or ``mismatch``.
    """
    import hmac

    head, body = header.split(data, rel)
    written = (head.get("origin") or "").strip()
    sig = (head.get("origin-sig") or "").strip()
    if not written:
        return "", "unstamped"
    if not sig:
        return written, "unsigned"
    turn = (head.get("origin-turn") or "").strip()
    if sig.startswith("v1:"):
        expected = sign_v1(secret, rel, written, turn, body)
        return written, ("verified-v1" if hmac.compare_digest(expected, sig) else "mismatch")
    expected = sign(secret, rel, data)
    return written, ("verified" if hmac.compare_digest(expected, sig) else "mismatch")
