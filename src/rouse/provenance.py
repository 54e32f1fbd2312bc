"""Provenance: ``origin:`` classes, stamping, and the effective origin.

Signing (``origin-sig:``) comes with the stamp key; without a key, an origin
reads as written.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from rouse.errors import RouseError, UsageError
from rouse.store import Store
from rouse.tree import File

ORIGINS = ("owner", "system", "agent", "untrusted", "unknown")
TRUST_ORDER = ("owner", "system", "agent", "untrusted")


def effective_origin(file: File) -> str:
    """The origin to show and act on: as written when known, else ``unknown``."""
    value = (file.get("origin") or "").strip().lower()
    return value if value in ORIGINS else "unknown"


@dataclass
class Stamped:
    written: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)


def _tree_relative(root: Path, given: str, cwd: Path) -> str | None:
    """A FILE argument as a tree-relative path, or None if it is not in the tree."""
    real_root = root.resolve()
    for base in (cwd, root):
        candidate = Path(given) if os.path.isabs(given) else base / given
        if not candidate.exists() and not candidate.is_symlink():
            continue
        try:
            rel = candidate.parent.resolve().relative_to(real_root) / candidate.name
        except ValueError:
            return None
        return rel.as_posix()
    return None


def stamp(
    root: Path, files: Iterable[str], origin: str, turn: str | None, cwd: Path | None = None
) -> Stamped:
    """Write ``origin`` (and ``origin-turn``) into each file's header.

    Files that do not exist or are not in the tree are named in the error
    raised after the others are stamped (exit 1), never skipped silently.
    """
    if origin not in ORIGINS:
        raise UsageError(f"unknown origin class {origin!r}: use one of {', '.join(ORIGINS)}")
    if turn is not None and (not turn.strip() or "\n" in turn):
        raise UsageError("--turn must be a one-line id")
    cwd = Path.cwd() if cwd is None else cwd
    store = Store(root)
    result = Stamped()
    updates: dict[str, str | None] = {"origin": origin, "origin-turn": turn}
    with store.lock():
        for given in files:
            rel = _tree_relative(root, given, cwd)
            if rel is None or not (root / rel).is_file() or (root / rel).is_symlink():
                result.missing.append(given)
                continue
            store.set_fields(rel, updates)
            result.written.append(rel)
    if result.missing:
        raise RouseError(
            f"not stamped (missing, not a regular file, or not in the tree {root}): "
            + ", ".join(result.missing)
            + (f"; stamped {len(result.written)} other file(s)" if result.written else "")
        )
    return result
