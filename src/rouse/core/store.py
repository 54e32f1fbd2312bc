"""The only code that writes memory files.

Every write is atomic (a temp file in the same directory, renamed over),
keeps the file's mode, refuses paths outside the tree or through a symlink,
and refuses to clobber a file whose bytes changed since it was read — or
that an editor holds open for writing (see ``_guarded_attempt``): every
writer (the verbs, ``stamp``, the MCP tools, the sweeper) goes through the
same guarded rewrite. rouse's own writers serialize on an advisory lock in
``.rouse/``.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import os
import random
import re
import signal
import stat
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path, PurePosixPath

from rouse.core import header
from rouse.core.body import append_log
from rouse.core.errors import ChangedUnderfoot, UsageError
from rouse.core.statedir import open_lock, pid_alive

WRITE_LOCK = "write.lock"
GUARDED_RETRIES = 50  # with short growing sleeps: ~2 s in all before giving up
#: The copy a writer makes beside a file: ``.<name>.md.<pid>.<random>.tmp`` (older
#: writers left out the pid). A writer killed between writing it and renaming it over
#: (or, after a swap, before deleting the old bytes it then names) leaves it behind.
LEFTOVER_RE = re.compile(r"^\.(?P<name>.+\.md)\.(?:(?P<pid>\d{1,10})\.)?[A-Za-z0-9_]+\.tmp\Z")
#: A leftover whose writer cannot be told alive is removed once it is this old (a live
#: write holds its copy for a few seconds at most).
STALE_LEFTOVER_SECONDS = 60
#: The .gitignore line that keeps writers' copies out of the tree's git.
LEFTOVER_IGNORE = ".*.md.*.tmp"


class Store:
    """Writes inside one tree."""

    def __init__(self, root: Path):
        self.root = root

    # -- paths --------------------------------------------------------------

    def path(self, rel: str) -> Path:
        """The absolute path for a tree-relative one, refusing escapes and symlinks."""
        pure = PurePosixPath(rel)
        if not rel or pure.is_absolute() or ".." in pure.parts:
            raise UsageError(f"refusing path {rel!r}: it must stay inside the tree")
        current = self.root
        for part in pure.parts:
            current = current / part
            if current.is_symlink():
                raise UsageError(f"refusing path {rel!r}: {part} is a symlink (never followed)")
        return current

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """The writers' lock: short, blocking, released by the OS if we die."""
        fd = open_lock(self.root, WRITE_LOCK, "the writers' lock")
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    # -- writing ------------------------------------------------------------

    def _write_temp(self, target: Path, data: bytes, mode: int) -> Path:
        try:
            fd, name = tempfile.mkstemp(
                prefix=f".{target.name}.{os.getpid()}.", suffix=".tmp", dir=target.parent
            )
        except OSError as exc:
            raise UsageError(
                f"cannot write in {target.parent} ({exc.strerror}): rouse writes a new copy "
                "beside the file and renames it over — make the directory writable"
            ) from None
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.chmod(name, mode)
        except BaseException:
            os.unlink(name)
            raise
        return Path(name)

    def create(self, rel: str, text: str) -> Path:
        """Write a new file; never overwrite one that exists."""
        target = self.path(rel)
        target.parent.mkdir(parents=True, exist_ok=True)
        clear_leftovers(target.parent)
        temp = self._write_temp(target, text.encode("utf-8"), 0o644 & ~_umask())
        try:
            os.link(temp, target)  # atomic, and fails if the target exists
        except FileExistsError:
            raise UsageError(f"{rel} already exists: pick another slug") from None
        finally:
            os.unlink(temp)
        return target

    def update(self, rel: str, change: Callable[[bytes], bytes]) -> bytes:
        """Rewrite ``rel`` through ``change``, retrying while anyone else writes it (the
        guarded rewrite below); after ~2 s of a busy file, ChangedUnderfoot, nothing written."""
        target = self.path(rel)
        clear_leftovers(target.parent)
        for attempt in range(GUARDED_RETRIES):
            written = _guarded_attempt(self, target, rel, change)
            if written is not None:
                return written
            time.sleep(min(0.002 * 2**attempt, 0.05) * (0.5 + random.random()))
        raise ChangedUnderfoot(
            "the file kept changing (or stayed open for writing) while rouse tried to "
            "write it; try again when it is quiet",
            path=rel,
        )

    def set_fields(self, rel: str, updates: Mapping[str, str | None]) -> bytes:
        """Set (or remove, with None) header fields; body bytes are untouched."""
        return self.update(rel, lambda data: header.set_fields(data, updates, rel))

    def append_log(self, rel: str, updates: Mapping[str, str | None], line: str) -> bytes:
        """Set header fields and append one line to the body's log (see ``rouse.core.body``):
        never to the authored part, which a signature covers."""
        return self.update(
            rel, lambda data: with_log(header.set_fields(data, updates, rel), rel, line)
        )

    def rename(self, src: str, dst: str) -> None:
        """Move a file or directory within the tree; refuse to replace anything."""
        source, target = self.path(src), self.path(dst)
        if target.exists():
            raise UsageError(f"{dst} already exists: refusing to replace it")
        target.parent.mkdir(parents=True, exist_ok=True)
        os.rename(source, target)


def with_log(data: bytes, rel: str, line: str) -> bytes:
    """The file ``data`` (at ``rel``) with ``line`` appended to its body's log."""
    _, rest = header.split(data, rel)
    return append_log(data, len(data) - len(rest), line)


def leftovers(directory: Path) -> list[Path]:
    """Writers' copies in ``directory`` (see :data:`LEFTOVER_RE`), live or not."""
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    return [directory / name for name in sorted(names) if LEFTOVER_RE.match(name)]


def clear_leftovers(directory: Path, now: float | None = None) -> list[Path]:
    """Remove the writers' copies in ``directory`` that no live write can still need:
    its writer's process is gone, or (its writer unknown or still running under a pid
    that may have been reused) it is older than :data:`STALE_LEFTOVER_SECONDS`.
    Only regular files are touched; what cannot be removed stays. Returns the removed."""
    now = time.time() if now is None else now
    removed = []
    for path in leftovers(directory):
        match = LEFTOVER_RE.match(path.name)
        try:
            info = os.lstat(path)
        except OSError:
            continue
        if match is None or not stat.S_ISREG(info.st_mode):
            continue
        pid = int(match["pid"]) if match["pid"] else None
        gone = pid is not None and pid != os.getpid() and not pid_alive(pid)
        if gone or now - info.st_mtime > STALE_LEFTOVER_SECONDS:
            with contextlib.suppress(OSError):
                os.unlink(path)
                removed.append(path)
    return removed


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


# -- guarded rewrites (Linux: read leases and RENAME_EXCHANGE) ----------------
#
# A plain "re-read, compare, rename" loses an editor's write when it lands
# between the compare and the rename, and that gap is not microseconds under
# load: an editor that writes in place (truncate, then write) can be preempted
# between the two, and the re-read then sees the empty file as unchanged. A
# guarded attempt closes both holes where the OS lets it:
#
# - a read lease (F_SETLEASE) is refused while anyone has the file open for
#   writing, and while we hold it, an open-for-write elsewhere blocks and
#   breaks the lease, which we can see — so no in-place write can be under way
#   or start unseen while we read, decide and swap;
# - renameat2(RENAME_EXCHANGE) swaps our new file in and hands back, under the
#   temp name, exactly what was at the path. If that is not the file we read
#   (an editor renamed over it), or it changed, or the lease broke, we swap
#   back at once: the editor's bytes stay, and we try again later.
#
# Without either primitive (another OS, NFS, a file owned by another user)
# the attempt falls back to the plain re-read-and-compare.

F_SETLEASE = getattr(fcntl, "F_SETLEASE", 1024)
F_GETLEASE = getattr(fcntl, "F_GETLEASE", 1025)
RENAME_EXCHANGE = 2
AT_FDCWD = -100


@functools.cache
def _renameat2() -> Callable[[bytes, bytes], int] | None:
    """libc's renameat2(…, RENAME_EXCHANGE) as a function of two paths, or None."""
    try:
        import ctypes

        raw = getattr(ctypes.CDLL(None, use_errno=True), "renameat2", None)
    except (ImportError, OSError, AttributeError):
        return None
    if raw is None:
        return None

    def exchange(a: bytes, b: bytes) -> int:
        if raw(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE) == 0:
            return 0
        return ctypes.get_errno() or 1

    return exchange


def _exchange(a: Path, b: Path) -> bool:
    """Atomically swap two names; False when this system or file system cannot."""
    fn = _renameat2()
    if fn is None:
        return False
    error = fn(os.fsencode(a), os.fsencode(b))
    if error == 0:
        return True
    if error in (22, 38, 95):  # EINVAL, ENOSYS, EOPNOTSUPP: not here
        return False
    raise OSError(error, os.strerror(error), str(b))


class _Busy(Exception):
    """Someone has the file open for writing: come back in a moment."""


def prepare_leases() -> None:
    """Let guarded writes use leases on every thread: call once, on the main thread,
    in a process whose writers may run elsewhere (the MCP server's tools)."""
    if threading.current_thread() is threading.main_thread():
        _sigio_handled()


def _sigio_handled() -> bool:
    """A broken lease sends SIGIO, whose default action ends the process."""
    current = signal.getsignal(signal.SIGIO)
    if current is None:
        return False  # set outside Python: leave it alone
    if current is not signal.SIG_DFL:
        return True
    if threading.current_thread() is not threading.main_thread():
        return False
    signal.signal(signal.SIGIO, signal.SIG_IGN)  # we poll the lease instead
    return True


def _take_lease(fd: int) -> bool:
    """A read lease on ``fd``: True if held, False if unsupported; _Busy if a writer is in."""
    if not _sigio_handled():
        return False
    try:
        fcntl.fcntl(fd, F_SETLEASE, fcntl.F_RDLCK)
    except BlockingIOError:
        raise _Busy() from None
    except OSError:
        return False  # not the owner, or a file system without leases
    return True


def _lease_intact(fd: int) -> bool:
    return int(fcntl.fcntl(fd, F_GETLEASE)) == fcntl.F_RDLCK


def _read_fd(fd: int, size: int) -> bytes:
    chunks: list[bytes] = []
    offset = 0
    while True:
        chunk = os.pread(fd, max(size - offset, 0) + 65536, offset)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        offset += len(chunk)


def _holds(path: Path, fd: int, info: os.stat_result, before: bytes) -> bool:
    """Whether ``path`` names the file ``fd`` read (``info``) and it still holds ``before``."""
    seen = os.lstat(path)
    same = (seen.st_ino, seen.st_dev) == (info.st_ino, info.st_dev)
    return same and _read_fd(fd, info.st_size) == before


def _put_back(temp: Path, target: Path, ours: os.stat_result) -> Path | None:
    """Put back what someone wrote as we swapped (``temp`` names it); what is left to delete."""
    try:
        _exchange(temp, target)
    except FileNotFoundError:
        # the path was removed after our swap: ``temp`` holds the only copy of
        # what was there — put it back at the path rather than delete it
        os.rename(temp, target)
        return None
    back = os.lstat(temp)
    if (back.st_ino, back.st_dev) != (ours.st_ino, ours.st_dev):
        # yet another write landed between our two swaps: two versions now hold
        # someone's lines and neither holds them all; keep the other one beside
        # the file (visible, not walked) rather than delete anyone's bytes
        os.rename(temp, target.with_name(f"{target.name}.conflict-{time.time_ns()}"))
        return None
    return temp


def _guarded_attempt(
    store: Store, target: Path, rel: str, change: Callable[[bytes], bytes]
) -> bytes | None:
    """One guarded rewrite: the new bytes, or None to try again shortly.

    The slow part (reading, deciding, writing and syncing the temp file) runs
    unleased; the lease is held only to verify, swap and check — a few system
    calls — so a busy editor is kept waiting for microseconds, not for a sync.
    """
    try:
        fd = os.open(target, header.READ_FLAGS)
    except FileNotFoundError:
        raise UsageError(f"{rel} does not exist") from None
    leased = False
    temp: Path | None = None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UsageError(f"{rel} is not a regular file (symlinks are never followed)")
        before = _read_fd(fd, info.st_size)
        after = change(before)
        if after == before:
            return after
        temp = store._write_temp(target, after, stat.S_IMODE(info.st_mode))
        ours = os.lstat(temp)
        try:
            leased = _take_lease(fd)
            # Leased: no in-place write is under way or can start unseen. Is the
            # path still the file we read, holding the bytes we read?
            if not _holds(target, fd, info, before):
                return None
            swapped = _exchange(temp, target)
        except (_Busy, FileNotFoundError):
            # an editor has it open for writing right now, or is saving by rename
            # (the new file is not there yet, or the path vanished under us)
            return None
        if not swapped:
            os.replace(temp, target)  # no exchange on this system: the plain way
            temp = None
            return after
        # ``temp`` now names whatever was at the path at the instant of the swap
        if (not leased or _lease_intact(fd)) and _holds(temp, fd, info, before):
            return after
        temp = _put_back(temp, target, ours)  # someone wrote meanwhile: their bytes stay
        return None
    finally:
        if temp is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temp)
        if leased:
            with contextlib.suppress(OSError):
                fcntl.fcntl(fd, F_SETLEASE, fcntl.F_UNLCK)
        os.close(fd)
