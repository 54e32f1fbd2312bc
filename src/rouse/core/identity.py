"""The tree's identity: one line in ``.rouse-tree`` at its root, shared by its clones.

A fleet (a PostgreSQL ledger shared by several machines) tells trees apart by
this id, and two clones of one tree are the same tree because the file is
committed with it (``.rouse/`` is not). ``rouse init`` writes it; a tree made
before it existed gets one the first time a fleet verb needs it.

The file holds ``tree: <32 hex digits>`` and nothing else that rouse reads.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from rouse.core.errors import UsageError
from rouse.core.header import read_capped

IDENTITY_FILE = ".rouse-tree"
_LINE = re.compile(r"^tree: ([0-9a-f]{32})$")


def tree_id(root: Path) -> str | None:
    """The tree's id, or None when it has none yet (or the file is not one line we wrote)."""
    try:  # (never through a link; a directory or a FIFO holds no id)
        data = read_capped(root / IDENTITY_FILE, 256)
    except OSError:
        return None
    for line in data.decode("utf-8", "replace").splitlines():
        found = _LINE.match(line.strip())
        if found:
            return found.group(1)
    return None


def ensure_tree_id(root: Path) -> tuple[str, bool]:
    """The tree's id, made now if it has none: ``(id, made)``.

    A file that exists but holds no id is refused rather than overwritten.
    """
    found = tree_id(root)
    if found is not None:
        return found, False
    path = root / IDENTITY_FILE
    if path.exists() or path.is_symlink():
        raise UsageError(
            f"{path} exists but holds no 'tree: <id>' line: fix or remove it, then try again"
        )
    import uuid

    made = uuid.uuid4().hex
    text = f"tree: {made}\n# rouse's identity for this tree: commit it, so clones share it\n"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags, 0o644)
    except FileExistsError:  # another process made it first: theirs is the id
        again = tree_id(root)
        if again is None:
            raise UsageError(f"{path} appeared but holds no id: remove it and try again") from None
        return again, False
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    return made, True
