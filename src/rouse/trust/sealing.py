"""What rouse's own writes do to signatures: the one writer its verbs write through.

:class:`SigningStore` is the core ``Store`` with the stamp key in hand. A file it
creates for a speaker is signed with the speaker's origin (:mod:`rouse.trust.speaker`
decides who that is); a file it rewrites keeps the origin it had — re-signed when
its signature verified before the change, left as it was otherwise. So a
lifecycle verb (move, snooze, close, cancel, tell, a checkpoint) never costs a
file its origin and never gives it one. Without a usable key it writes exactly
as ``Store`` does.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from rouse.core import header
from rouse.core.errors import HeaderError
from rouse.core.home import stamp_key_path
from rouse.core.store import Store
from rouse.trust.stamp import stamp_bytes
from rouse.trust.stampkey import StampKey, load_key, verify

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
