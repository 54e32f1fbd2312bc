"""How a run's starter and its supervisor talk: framed ``marshal`` messages over a pipe.

Each message is 4 bytes of length (big-endian) and one value in ``marshal``'s
format (dicts, lists, strings, numbers, None): both ends are the same Python
(the supervisor is started with the starter's ``sys.executable``), and
``marshal`` is built in, so the supervisor, which starts once per run, loads
no ``json`` (and with it ``re``) to read its spec. Nothing else reads this.
"""

from __future__ import annotations

import marshal

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: The longest message either side accepts (a spec carries the prompt).
MOST = 64 * 1024 * 1024


class WireError(ValueError):
    """A message that is not one: cut short, too long, or not a value."""


def frame(value: Any) -> bytes:
    body = marshal.dumps(value)
    return len(body).to_bytes(4, "big") + body


class Frames:
    """Bytes in, messages out: :meth:`feed` what was read, :meth:`next` each whole one."""

    def __init__(self) -> None:
        self.buffer = b""

    def feed(self, chunk: bytes) -> None:
        self.buffer += chunk

    def next(self) -> object | None:
        """The next whole message, None until one has arrived (a None message is never
        sent)."""
        if len(self.buffer) < 4:
            return None
        size = int.from_bytes(self.buffer[:4], "big")
        if size > MOST:
            raise WireError(f"a message of {size} bytes, over {MOST}")
        if len(self.buffer) < 4 + size:
            return None
        body, self.buffer = self.buffer[4 : 4 + size], self.buffer[4 + size :]
        try:
            found: object = marshal.loads(body)
        except (EOFError, ValueError, TypeError) as exc:
            raise WireError(f"not a message: {exc}") from None
        return found

    @property
    def whole(self) -> bool:
        """Whether a whole message is waiting."""
        return len(self.buffer) >= 4 and len(self.buffer) >= 4 + int.from_bytes(
            self.buffer[:4], "big"
        )
