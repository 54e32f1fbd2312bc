"""Best-effort JSON state in ``.rouse/``: caches that may be lost at no cost.

Writes go to a temp file in the same directory and are renamed over, so a
reader never sees half a file; a tree that cannot be written is not an
error (the caller just works without its cache). Neither reads nor writes go
through a symlink anywhere from ``.rouse`` down (see ``rouse.core.statedir``):
state behind a link is treated as missing. Kept free of ``tempfile``
and friends: this is on the pack's start-up path.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path

# typing costs ~5 ms to import on the pack's start-up path; annotations are
# strings here (__future__), so it is only imported for the type checker
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def through_link(path: Path) -> bool:
    """Is ``path``, or a directory above it up to ``.rouse``, a symlink (or unreadable)?"""
    current = path
    for _ in range(8):  # state files sit at most a few levels under .rouse/
        try:
            if os.path.islink(current):
                return True
        except OSError:
            return True
        if current.name == ".rouse" or current.parent == current:
            return False
        current = current.parent
    return False


def load_bytes(path: Path) -> bytes | None:
    """The file's bytes, or None if it is missing, unreadable or behind a link."""
    if through_link(path):
        return None
    try:
        return path.read_bytes()
    except OSError:
        return None


def load_json(path: Path) -> Any:
    """The decoded file, or None if it is missing, unreadable, behind a link, or not JSON
    (nesting too deep for the decoder included: damaged state is a miss, never fatal)."""
    data = load_bytes(path)
    try:
        return None if data is None else json.loads(data)
    except (ValueError, RecursionError):
        return None


def save_json(path: Path, data: Any) -> bool:
    """Write ``data`` atomically; return False (and leave no temp file) if we can't."""
    try:
        # dumps, not dump: dump streams through the pure-Python encoder (~7× slower)
        text = json.dumps(data, separators=(",", ":")).encode()
    except (TypeError, ValueError):
        return False
    return save_bytes(path, text)


def save_bytes(path: Path, text: bytes) -> bool:
    """Write ``text`` atomically; return False (and leave no temp file) if we can't."""
    temp = path.with_name(f".{path.name}.{os.getpid()}.{time.monotonic_ns()}.tmp")
    if through_link(path):
        return False
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        with os.fdopen(fd, "wb") as handle:
            handle.write(text)
        os.replace(temp, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        return False
    return True
