"""inotify(7) through ctypes, Linux only: the one binding, for the sweeper's watch
(:mod:`rouse.sweep.watch`) and the Stop hook's wait (:mod:`rouse.agents.stop_hook`).

Light to import: ctypes is loaded by :func:`open_inotify`, so the Stop hook pays
for it only when it has a wait to sleep through. What the events mean is each
caller's.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

IN_MODIFY, IN_ATTRIB, IN_CLOSE_WRITE = 0x2, 0x4, 0x8
IN_MOVED_FROM, IN_MOVED_TO, IN_CREATE, IN_DELETE = 0x40, 0x80, 0x100, 0x200
IN_DELETE_SELF, IN_MOVE_SELF = 0x400, 0x800
IN_Q_OVERFLOW, IN_IGNORED, IN_ISDIR = 0x4000, 0x8000, 0x40000000
IN_ONLYDIR, IN_DONT_FOLLOW = 0x01000000, 0x02000000


class Inotify:
    """One inotify instance: its non-blocking, close-on-exec ``fd`` (its owner reads
    and closes it), watches added and removed on it."""

    def __init__(self, fd: int, add: Callable[..., int], remove: Callable[..., int]) -> None:
        self.fd = fd
        self._add, self._remove = add, remove

    def add(self, path: str | bytes, mask: int) -> int:
        """Watch ``path`` for ``mask``: the watch descriptor, or a negative number."""
        return int(self._add(self.fd, os.fsencode(path), mask))

    def remove(self, wd: int) -> None:
        self._remove(self.fd, wd)


def open_inotify() -> Inotify | None:
    """A new instance, or None where inotify is not to be had (another system, no such
    call in libc, the system's limit of instances reached)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)  # the process's own symbols: libc's
        add, remove = libc.inotify_add_watch, libc.inotify_rm_watch
        add.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
        fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
    except (OSError, AttributeError):
        return None
    return Inotify(fd, add, remove) if fd >= 0 else None
