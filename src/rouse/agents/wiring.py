"""Where one tree is wired, and how ``rouse wire`` writes a file it touches.

:class:`Wiring` names the tree, its project root and the home directory;
:class:`Wired` collects what a run did and what it leaves for the user to
place. :func:`update_file` writes atomically, keeps the file's mode and line
ends, and says whether anything changed.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from rouse.core.errors import RouseError


@dataclass
class Wiring:
    """Where one tree is wired: its project root (None for the global tree)."""

    tree: Path
    project: Path | None
    home: Path

    @property
    def tree_ref(self) -> str:
        """How instructions name the tree: relative to the project, else absolute."""
        if self.project is None:
            return str(self.tree)
        return os.path.relpath(self.tree, self.project)


@dataclass
class Wired:
    done: list[str] = field(default_factory=list)  # one line per file looked at
    printed: list[str] = field(default_factory=list)  # text for the user to place


def wiring_for(tree: Path, home: Path) -> Wiring:
    """The tree's project root is its parent directory; ``~/.rouse`` has none."""
    tree = tree.resolve()
    is_global = tree == (home / ".rouse").resolve()
    return Wiring(tree, None if is_global else tree.parent, home)


def _write_text(path: Path, text: str) -> None:
    """Atomic write keeping the file's mode (or 0644 less the umask for a new file)."""
    mode = os.stat(path).st_mode & 0o7777 if path.exists() else None
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
        if mode is None:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o644 & ~umask
        os.chmod(temp, mode)
        os.replace(temp, path)
    finally:
        if os.path.exists(temp):
            os.unlink(temp)


def read_text(path: Path) -> str:
    """The file's text with its line ends as they are (no newline translation)."""
    with open(path, encoding="utf-8", newline="") as handle:
        return handle.read()


def update_file(path: Path, text: str, label: str) -> str:
    """Write ``text`` to ``path`` unless it already says that; say what happened."""
    try:
        old = read_text(path) if path.exists() else None
    except (OSError, UnicodeDecodeError) as exc:
        raise RouseError(f"{path}: cannot read it ({exc}); nothing written") from None
    if old == text:
        return f"unchanged: {path} ({label})"
    _write_text(path, text)
    return f"{'updated' if old is not None else 'wrote'} {path} ({label})"


def exclude_locally(project: Path, rel: str) -> str | None:
    """Leave ``rel`` (a file of this machine's, such as Claude Code's local settings) out
    of the project's git repository through ``.git/info/exclude``, which is never
    committed; what was done, or None when there is nothing to do or no ``.git`` folder
    (a worktree's ``.git`` file, no repository: the caller says how instead)."""
    git = project / ".git"
    if not git.is_dir() or git.is_symlink():
        return None
    exclude = git / "info" / "exclude"
    line = "/" + rel
    try:
        text = read_text(exclude) if exclude.exists() else ""
    except (OSError, UnicodeDecodeError):
        return None
    if line in text.splitlines():
        return None
    exclude.parent.mkdir(exist_ok=True)
    _write_text(exclude, text + ("" if not text or text.endswith("\n") else "\n") + line + "\n")
    return f"added {rel} to {exclude.relative_to(project)} (this machine's file, never committed)"
