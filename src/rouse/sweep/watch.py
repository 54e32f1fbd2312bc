"""The long-running sweeper keeps the tree's state hot: inotify (through ctypes,
Linux only) on every directory the walk visits, and a unix socket in
``.rouse/`` that answers "what changed since token T" (:mod:`rouse.cache.fsmon`
is the asking side, and says what is checked there).

A token is ``<instance nonce>:<counter>``: the counter goes up with every
event, and each changed path remembers the counter it last changed at. Asked
since ``n``, the watcher first drains its inotify queue (an event is queued
before the write that made it returns, so every change made before the
question is in the answer), then names every path changed after ``n``. It
says "everything" (walk) for a token of another instance, or one older than
what it remembers: when the kernel's queue overflowed, a directory moved or
vanished (its watches are then made again), a watch could not be added, or
more than :data:`LIMIT` paths changed.

What inotify cannot see is not seen: a write through a shared memory map, a
hard link to a tree file from a directory outside the tree, a change made
on another machine (a network filesystem). The pack's racy-window rule still
holds for what the cache keeps.
"""

from __future__ import annotations

import contextlib
import os
import select
import socket
import stat
import struct
import threading
from collections.abc import Iterator
from pathlib import Path

from rouse.cache import fsmon
from rouse.cache.walk import HeaderCache
from rouse.core import inotify, layout
from rouse.core.inotify import Inotify
from rouse.core.tree import SKIP_NAMES

MASK = (
    inotify.IN_MODIFY
    | inotify.IN_ATTRIB
    | inotify.IN_CLOSE_WRITE
    | inotify.IN_MOVED_FROM
    | inotify.IN_MOVED_TO
    | inotify.IN_CREATE
    | inotify.IN_DELETE
    | inotify.IN_DELETE_SELF
    | inotify.IN_MOVE_SELF
    | inotify.IN_ONLYDIR
    | inotify.IN_DONT_FOLLOW
)
ENTRIES = inotify.IN_CREATE | inotify.IN_DELETE | inotify.IN_MOVED_FROM | inotify.IN_MOVED_TO
#: the most changed paths remembered; beyond it, older tokens get "everything"
LIMIT = 4096
_EVENT = struct.Struct("iIII")


class TreeWatcher:
    """Watch ``root`` and answer over ``.rouse/fsmon.sock``; :meth:`start` says if it could."""

    def __init__(self, root: Path, secret: bytes | None, *, limit: int = LIMIT):
        self.root = root
        self.secret = secret
        self.limit = limit
        self.nonce = os.urandom(8).hex()
        self.counter = 0
        self.floor = 0  # tokens below it get "everything"
        self.log: dict[str, int] = {}  # path -> the counter it last changed at
        self.wds: dict[int, str] = {}  # watch -> the directory it watches
        self.failed = False  # a watch could not be added: resync at the next question
        self.retired: set[int] = set()  # watches we removed (their last events still come)
        self.lock = threading.Lock()
        self.fd = -1
        self.server: socket.socket | None = None
        self.bound: int | None = None  # the inode of the socket we made
        self.binding = ""  # what our replies are bound to (rouse.cache.fsmon.binding)
        self.thread: threading.Thread | None = None
        self._stop_r, self._stop_w = -1, -1
        self.inotify: Inotify | None = None

    # -- the watches ----------------------------------------------------------

    def start(self) -> bool:
        """Watch and serve (a thread); False when this system cannot (not Linux,
        no inotify, the socket not makeable): the pack then walks, as without us."""
        if not self.open():
            return False
        try:
            self.server = self._bind()
        except OSError:
            self.close()
            return False
        self._stop_r, self._stop_w = os.pipe()
        self.thread = threading.Thread(target=self._serve, name="rouse-fsmon", daemon=True)
        self.thread.start()
        return True

    def open(self) -> bool:
        """Start watching (no socket yet); False where inotify is not to be had."""
        self.inotify = inotify.open_inotify()
        if self.inotify is None:
            return False
        self.fd = self.inotify.fd
        try:
            self.watch_tree("", mark=False)
        except OSError:
            self.close()
            return False
        if self.failed:  # (too many directories for the system's watches, say)
            self.close()
            return False
        return True

    def _watch(self, rel: str) -> bool:
        assert self.inotify is not None
        wd = self.inotify.add(f"{self.root}/{rel}" if rel else str(self.root), MASK)
        if wd < 0:
            self.failed = True
            return False
        self.wds[wd] = rel
        return True

    def watch_tree(self, rel: str, *, mark: bool) -> None:
        """Watch ``rel`` and every directory below it the walk would visit (each
        watched before it is listed, so nothing made meanwhile is missed)."""
        stack = [rel]
        while stack:
            where = stack.pop()
            if not self._watch(where):
                continue
            try:
                with os.scandir(f"{self.root}/{where}" if where else self.root) as entries:
                    found = list(entries)
            except OSError:
                self.failed = self.failed or where == ""
                continue
            for entry in found:
                name = entry.name
                if name in SKIP_NAMES or (not where and name.startswith(".")):
                    continue
                path = f"{where}/{name}" if where else name
                if mark:
                    self.log[path] = self.counter
                if entry.is_dir(follow_symlinks=False):
                    stack.append(path)

    def resync(self) -> None:
        """Forget everything (older tokens get "everything") and watch the tree afresh."""
        self.counter += 1
        self.floor = self.counter
        self.log.clear()
        old, self.wds, self.failed = self.wds, {}, False
        self.watch_tree("", mark=False)  # (a directory still there keeps its watch)
        for wd in set(old) - set(self.wds):
            assert self.inotify is not None
            self.inotify.remove(wd)  # moved out or gone
            self.retired.add(wd)

    def drain(self) -> None:
        """Take every event queued so far."""
        while True:
            try:
                data = os.read(self.fd, 65536)
            except BlockingIOError:
                return
            if not data:
                return
            self.events(data)

    def events(self, data: bytes) -> None:
        at, resync = 0, False
        while at + _EVENT.size <= len(data):
            wd, mask, _, size = _EVENT.unpack_from(data, at)
            raw = data[at + _EVENT.size : at + _EVENT.size + size].rstrip(b"\0")
            at += _EVENT.size + size
            resync = self.event(wd, mask, os.fsdecode(raw)) or resync
        if resync:
            self.resync()

    def event(self, wd: int, mask: int, name: str) -> bool:
        """Note one event; True when only a resync can vouch for the tree now."""
        if mask & inotify.IN_Q_OVERFLOW:
            return True
        where = self.wds.get(wd)
        if where is None:
            if wd in self.retired:  # (a watch we removed: its last events, then IN_IGNORED)
                if mask & inotify.IN_IGNORED:
                    self.retired.discard(wd)
                return False
            return not mask & inotify.IN_IGNORED
        if mask & (inotify.IN_IGNORED | inotify.IN_DELETE_SELF | inotify.IN_MOVE_SELF):
            return True  # a watched directory went away: its parent moved, say
        if name and (name in SKIP_NAMES or (not where and name.startswith("."))):
            return False  # .rouse/, .git/, hidden at the root: never walked
        if (
            name
            and mask & inotify.IN_ISDIR
            and mask & (inotify.IN_DELETE | inotify.IN_MOVED_FROM | inotify.IN_MOVED_TO)
        ):
            return True  # a directory moved or gone: its watches and paths, afresh
        self.counter += 1
        path = f"{where}/{name}" if where and name else name or where
        self.log[path] = self.counter
        if name and mask & ENTRIES:
            self.log[where] = self.counter  # its listing changed
        if name and mask & inotify.IN_ISDIR and mask & inotify.IN_CREATE:
            self.watch_tree(path, mark=True)
        if len(self.log) > self.limit:
            self.log.clear()
            self.floor = self.counter
        return False

    # -- the answers ----------------------------------------------------------

    def changes_since(self, token: str | None) -> fsmon.Answer:
        """(the token now, the paths changed since ``token`` or None: everything)."""
        with self.lock:
            self.drain()
            if self.failed:
                self.resync()
            now = f"{self.nonce}:{self.counter}"
            if self.failed or token is None:
                return now, None
            nonce, _, count = token.partition(":")
            if (
                nonce != self.nonce
                or not (count.isascii() and count.isdigit() and len(count) < 20)
                or not self.floor <= int(count) <= self.counter  # (ahead of us: forged)
            ):
                return now, None
            since = int(count)
            return now, sorted(path for path, at in self.log.items() if at > since)

    def ask(self, token: str | None) -> fsmon.Answer | None:
        """:meth:`changes_since` for the sweeper's own walks: a fault is "walk", never
        a failed tick."""
        try:
            return self.changes_since(token)
        except Exception:
            self.failed = True
            return None

    def _bind(self) -> socket.socket:
        state = f"{self.root}/{layout.STATE_DIR}"
        fd = os.open(state, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            with contextlib.suppress(FileNotFoundError):
                info = os.lstat(fsmon.SOCKET, dir_fd=fd)
                if not stat.S_ISSOCK(info.st_mode):  # not ours to remove: no watcher
                    raise OSError(f"{state}/{fsmon.SOCKET} is not a socket")
                os.unlink(fsmon.SOCKET, dir_fd=fd)  # a dead sweeper's (we hold the lock)
            server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            old = os.umask(0o177)  # the tree's owner alone may connect
            try:
                server.bind(f"/proc/self/fd/{fd}/{fsmon.SOCKET}")
            finally:
                os.umask(old)
            server.listen(16)
            made = os.lstat(fsmon.SOCKET, dir_fd=fd)
            self.bound = made.st_ino
            self.binding = fsmon.binding(os.fstat(fd), made)
            return server
        finally:
            os.close(fd)

    def _serve(self) -> None:
        assert self.server is not None
        watching: list[socket.socket | int] = [self.server, self.fd, self._stop_r]
        while True:
            try:
                ready, _, _ = select.select(watching, [], [])
            except (OSError, ValueError):
                return
            if self._stop_r in ready:
                return
            try:
                if self.fd in ready:
                    with self.lock:
                        self.drain()
                if self.server in ready:
                    conn, _ = self.server.accept()
                    with conn:
                        self._answer(conn)
            except OSError:
                continue  # a client gone, timed out or refused: the next one
            except Exception:  # never let the watcher die silently with its socket up
                with self.lock:
                    self.failed = True  # the next answer resyncs first

    def _answer(self, conn: socket.socket) -> None:
        conn.settimeout(0.5)  # a client that hangs holds no one up for long
        creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        if struct.unpack("3i", creds)[1] != os.getuid():
            return
        data = b""
        while b"\n" not in data and len(data) < 1024:
            chunk = conn.recv(1024)
            if not chunk:
                return
            data += chunk
        parts = data.partition(b"\n")[0].split(b" ")
        if len(parts) != 4 or b" ".join(parts[:2]) != fsmon.PROTOCOL:
            return
        nonce, token = parts[2], parts[3].decode("ascii", "replace")
        since = None if token == "-" else token
        answer = self.changes_since(since)
        conn.sendall(fsmon.reply(self.secret, nonce, since, answer, self.binding))

    def close(self) -> None:
        """Stop serving, remove our socket (only ours), stop watching."""
        if self._stop_w >= 0:
            os.write(self._stop_w, b"x")
        if self.thread is not None:
            self.thread.join(timeout=5)
        if self.server is not None:
            self.server.close()
            with contextlib.suppress(OSError):
                path = fsmon.socket_path(self.root)
                if os.lstat(path).st_ino == self.bound:
                    os.unlink(path)
        for fd in (self.fd, self._stop_r, self._stop_w):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self.fd, self._stop_r, self._stop_w, self.server = -1, -1, -1, None


@contextlib.contextmanager
def kept_hot(root: Path, headers: HeaderCache, *, on: bool) -> Iterator[TreeWatcher | None]:
    """While the loop runs (``on``): watch the tree, answer the pack, and let the
    sweeper's own walks ask too. Where it cannot watch, nothing changes."""
    watcher = TreeWatcher(root, headers.secret) if on else None
    if watcher is not None and not watcher.start():
        watcher = None
    if watcher is not None:
        headers.since = watcher.ask
    try:
        yield watcher
    finally:
        if watcher is not None:
            headers.since = None
            watcher.close()
