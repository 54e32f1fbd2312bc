"""Ask a running sweeper what changed in the tree since a token (the pack's side; the
sweeper answers in :mod:`rouse.sweep.watch`): git's fsmonitor pattern.

An answer is believed only on the terms docs/sweeper.md ("Keeping the tree's state
hot") lists — a real ``.rouse`` and a socket of ours, a server of our uid, our fresh
nonce under a MAC keyed as the walk cache is, bound to this tree and socket
(:func:`binding`), within :data:`DEADLINE`; anything else is None: walk everything.
Only :func:`ask` imports a socket module (``_socket``), and only when the socket file
exists.
"""

from __future__ import annotations

import json
import os
import stat
import sys
import time

from rouse.core import layout
from rouse.state.files import keyed_mac

SOCKET = "fsmon.sock"
PROTOCOL = b"rouse-fsmon 1"
#: the whole exchange, connect to last byte; late is the same as no answer
DEADLINE = 0.05
#: the most a reply may hold (a reply this big says "walk" anyway)
MAX_REPLY = 4 << 20

#: (the new token, the paths changed since the old one, or None: everything)
Answer = tuple[str, "list[str] | None"]


def mac(secret: bytes | None, nonce: bytes, body: bytes) -> bytes:
    """The reply's MAC over the client's nonce and the body, or ``-`` unkeyed."""
    if secret is None:
        return b"-"
    return keyed_mac(secret, b"rouse-fsmon-mac", nonce + b"\n" + body)


def binding(state: os.stat_result, sock: os.stat_result) -> str:
    """What a reply is bound to: the ``.rouse`` directory (device, inode) it was asked
    through, and the socket (inode, owner) — the same on both sides only when the
    watcher that answers is the one whose socket this is, in this tree."""
    return f"{state.st_dev}:{state.st_ino}:{sock.st_ino}:{sock.st_uid}"


def request(nonce: bytes, token: str | None) -> bytes:
    return b" ".join((PROTOCOL, nonce, (token or "-").encode())) + b"\n"


def reply(
    secret: bytes | None, nonce: bytes, since: str | None, answer: Answer, bound: str
) -> bytes:
    """The server's reply: the protocol, the MAC, then the JSON body."""
    token, paths = answer
    body = json.dumps({"since": since, "bound": bound, "token": token, "paths": paths}).encode()
    return b" ".join((PROTOCOL, mac(secret, nonce, body))) + b"\n" + body


def parse(
    data: bytes, secret: bytes | None, nonce: bytes, since: str | None, bound: str
) -> Answer | None:
    """A verified answer from ``data`` (for the tree and socket ``bound``), or None."""
    first, newline, body = data.partition(b"\n")
    parts = first.split(b" ")
    if not newline or len(parts) != 3 or b" ".join(parts[:2]) != PROTOCOL:
        return None
    import hmac

    if not hmac.compare_digest(parts[2], mac(secret, nonce, body)):
        return None
    try:
        state = json.loads(body)
    except ValueError:
        return None
    if type(state) is not dict or state.get("since") != since or state.get("bound") != bound:
        return None
    token, paths = state.get("token"), state.get("paths")
    if type(token) is not str or not token:
        return None
    if paths is None:
        return token, None
    if type(paths) is not list or not all(type(path) is str for path in paths):
        return None
    return token, paths


def socket_path(root: object) -> str:
    return f"{root}/{layout.STATE_DIR}/{SOCKET}"


def ask(root: object, token: str | None, secret: bytes | None) -> Answer | None:
    """What changed since ``token``, from the sweeper watching ``root``; None when
    there is no watcher, or no answer we can trust in time."""
    try:  # (first a plain lstat: most trees have no watcher)
        os.lstat(socket_path(root))
    except OSError:
        return None
    try:
        state = os.open(
            f"{root}/{layout.STATE_DIR}",
            os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC,
        )
    except OSError:  # no .rouse, or a link: no watcher to trust
        return None
    try:
        try:
            info = os.lstat(SOCKET, dir_fd=state)
        except OSError:
            return None
        if not stat.S_ISSOCK(info.st_mode) or info.st_uid != os.getuid():
            return None
        return _exchange(state, token, secret, binding(os.fstat(state), info))
    finally:
        os.close(state)


def _exchange(state: int, token: str | None, secret: bytes | None, bound: str) -> Answer | None:
    # the C module itself: ``socket`` (enums, selectors) costs ~4 ms more to import,
    # a twentieth of a warm pack, for a wrapper this needs none of
    import _socket

    end = time.monotonic() + DEADLINE
    nonce = os.urandom(16).hex().encode()
    try:
        conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    except OSError:
        return None
    try:
        conn.settimeout(DEADLINE)
        # through the directory we opened (no link on the way, any path length)
        conn.connect(f"/proc/self/fd/{state}/{SOCKET}")
        peercred = getattr(_socket, "SO_PEERCRED", None)
        if peercred is not None:  # (pid, uid, gid) as C ints: is the server us?
            creds = conn.getsockopt(_socket.SOL_SOCKET, peercred, 12)
            if int.from_bytes(creds[4:8], sys.byteorder) != os.getuid():
                return None
        conn.sendall(request(nonce, token))
        chunks: list[bytes] = []
        size = 0
        while True:
            left = end - time.monotonic()
            if left <= 0:
                return None
            conn.settimeout(left)
            chunk = conn.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if size > MAX_REPLY:
                return None
    except OSError:  # refused, reset, timed out, no /proc: walk
        return None
    finally:
        conn.close()
    return parse(b"".join(chunks), secret, nonce, token, bound)
