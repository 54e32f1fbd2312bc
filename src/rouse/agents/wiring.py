"""Where one tree is wired (:class:`Wiring`), what a run of ``rouse wire`` did
(:class:`Wired`), and how it writes a file: atomically, keeping its mode and line ends,
saying whether anything changed (:func:`update_file`).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable
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

    @property
    def base(self) -> Path:
        """Where the agents' settings of this scope go: the project, else the home."""
        return self.home if self.project is None else self.project


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


def is_own(path: Path, ours: Callable[[str], bool]) -> bool:
    """Whether ``path`` is a file rouse wrote (``ours`` of its text says so)."""
    try:
        return path.is_file() and ours(read_text(path))
    except (OSError, UnicodeDecodeError):
        return False


def remove_own(
    path: Path, ours: Callable[[str], bool], what: str, result: Wired, rmdir: bool = True
) -> None:
    """Delete ``path`` when it is rouse's own (:func:`is_own`), and with ``rmdir`` its
    folder when nothing else of the user's is left there."""
    if not is_own(path, ours):
        return
    path.unlink()
    result.done.append(f"removed {path} ({what})")
    if rmdir:
        with contextlib.suppress(OSError):
            path.parent.rmdir()


def exclude_locally(project: Path, rel: str) -> str | None:
    """Leave ``rel`` (a file of this machine's, such as Claude Code's local settings) out
    of the project's git repository through ``info/exclude``, which is never committed
    (in a worktree, the repository's common one: git reads it for every worktree); what
    was done, or None when there is nothing to do or no repository."""
    git = _git_dir(project)
    if git is None:
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
    where = exclude.relative_to(project) if exclude.is_relative_to(project) else exclude
    return f"added {rel} to {where} (this machine's file, never committed)"


def _git_dir(project: Path) -> Path | None:
    """The folder whose ``info/exclude`` git reads for ``project``: its ``.git`` folder,
    or for a worktree (``.git`` a file: ``gitdir: PATH``) the common one, only when that
    worktree's own folder names this project's ``.git`` back (a ``.git`` file pointing
    anywhere else is not followed)."""
    dot = project / ".git"
    if dot.is_symlink():
        return None
    if dot.is_dir():
        return dot
    try:
        first = read_text(dot).partition("\n")[0] if dot.is_file() else ""
        if not first.startswith("gitdir: "):
            return None
        own = (project / first.removeprefix("gitdir: ").strip()).resolve()
        if (own / "gitdir").read_text().strip() != str(dot.resolve()):
            return None
        common = (own / (own / "commondir").read_text().strip()).resolve()
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    return common if (common / "HEAD").is_file() else None
