"""A MACed state file: one first line of magic, version and MAC, then its body.

The walk cache, the snapshot, the acts and the probes' baselines are kept this
way: a file of another format or version, or (with the stamp key) not MACed
under the key derived for its use, reads as missing. A watching sweeper's
replies are MACed with :func:`keyed_mac` too.
"""

from __future__ import annotations

from rouse.state.files import load_bytes, save_bytes

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path


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
