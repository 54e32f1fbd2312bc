"""The only code that writes memory files.

Every write is atomic (a temp file in the same directory, renamed over),
keeps the file's mode, refuses paths outside the tree or through a symlink,
and refuses to clobber a file whose bytes changed since it was read.
rouse's own writers serialize on an advisory lock in ``.rouse/``.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
import tempfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path, PurePosixPath

from rouse import header, layout
from rouse.errors import ChangedUnderfoot, UsageError

WRITE_LOCK = "write.lock"
RETRIES = 20


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
        state = self.root / layout.STATE_DIR
        state.mkdir(exist_ok=True)
        fd = os.open(state / WRITE_LOCK, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    # -- writing ------------------------------------------------------------

    def _write_temp(self, target: Path, data: bytes, mode: int) -> Path:
        fd, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
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
        temp = self._write_temp(target, text.encode("utf-8"), 0o644 & ~_umask())
        try:
            os.link(temp, target)  # atomic, and fails if the target exists
        except FileExistsError:
            raise UsageError(f"{rel} already exists: pick another slug") from None
        finally:
            os.unlink(temp)
        return target

    def update(self, rel: str, change: Callable[[bytes], bytes]) -> bytes:
        """Rewrite ``rel`` through ``change``; retry if the file moves under us.

        The file is re-read right before the rename; if its bytes differ from
        what ``change`` saw, the attempt is dropped and made again.
        """
        target = self.path(rel)
        for _ in range(RETRIES):
            before = _read_regular(target, rel)
            after = change(before)
            if after == before:
                return after
            mode = stat.S_IMODE(os.stat(target).st_mode)
            temp = self._write_temp(target, after, mode)
            try:
                if _read_regular(target, rel) != before:
                    continue
                os.replace(temp, target)
                return after
            finally:
                if temp.exists():
                    temp.unlink()
        raise ChangedUnderfoot(
            f"the file kept changing while rouse tried to write it ({RETRIES} tries); "
            "try again when it is quiet",
            path=rel,
        )

    def set_fields(self, rel: str, updates: Mapping[str, str | None]) -> bytes:
        """Set (or remove, with None) header fields; body bytes are untouched."""
        return self.update(rel, lambda data: header.set_fields(data, updates, rel))

    def append_body(self, rel: str, updates: Mapping[str, str | None], line: str) -> bytes:
        """Set header fields and append one line to the end of the body."""

        def change(data: bytes) -> bytes:
            data = header.set_fields(data, updates, rel)
            newline = b"\r\n" if b"\r\n" in data[:200] else b"\n"
            if data and not data.endswith(b"\n"):
                data += newline
            return data + line.encode("utf-8") + newline

        return self.update(rel, change)

    def rename(self, src: str, dst: str) -> None:
        """Move a file or directory within the tree; refuse to replace anything."""
        source, target = self.path(src), self.path(dst)
        if target.exists():
            raise UsageError(f"{dst} already exists: refusing to replace it")
        target.parent.mkdir(parents=True, exist_ok=True)
        os.rename(source, target)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _read_regular(path: Path, rel: str) -> bytes:
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        raise UsageError(f"{rel} does not exist") from None
    if not stat.S_ISREG(info.st_mode):
        raise UsageError(f"{rel} is not a regular file (symlinks are never followed)")
    with open(path, "rb") as handle:
        return handle.read()
