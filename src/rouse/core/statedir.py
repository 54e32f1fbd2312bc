"""``.rouse/``, the tree's machine state, and the one rule for reaching into it.

rouse keeps its ledger, caches, locks and nudge files (which hold record
bodies) inside the tree, and never follows a symlink to get there: a linked
``.rouse`` (or a linked directory or file inside it) would carry state — and
record bodies — outside the tree, or feed rouse state it did not write.
Writers refuse with :class:`StateError` (exit 2, naming the link); readers
that must always work (the pack) treat unusable state as absent and say so.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from rouse.core import layout
from rouse.core.errors import UsageError

#: The directories rouse makes inside ``.rouse/``.
SUBDIRS = ("cache", "nudges", "nudges/done")


class StateError(UsageError):
    """``.rouse/`` (or something in it) cannot be used safely: exit 2."""


def _problem_at(path: Path, shown: str, *, directory: bool) -> str | None:
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"{shown} cannot be read ({exc.strerror}): check its permissions"
    if stat.S_ISLNK(info.st_mode):
        return (
            f"{shown} is a symlink: rouse keeps its state inside the tree and never follows "
            f"a link there — remove the link (rm {path}) and run again"
        )
    if directory and not stat.S_ISDIR(info.st_mode):
        return f"{shown} is not a directory: move it aside (mv {path} {path}.old) and run again"
    if not directory and not stat.S_ISREG(info.st_mode):
        return f"{shown} is not a regular file: move it aside and run again"
    return None


def path_problem(root: Path, rel: str, *, directory: bool = False) -> str | None:
    """Why ``.rouse/<rel>`` (a file, or a ``directory``) cannot be used: a link, or
    something of the wrong kind, on the way."""
    parts = rel.split("/")
    current = root / layout.STATE_DIR
    shown = layout.STATE_DIR
    found = _problem_at(current, shown, directory=True)
    for index, part in enumerate(parts):
        if found is not None:
            return found
        current, shown = current / part, f"{shown}/{part}"
        found = _problem_at(current, shown, directory=directory or index < len(parts) - 1)
    return found


def state_path(root: Path, rel: str, *, create: bool = True) -> Path:
    """``root/.rouse/<rel>``, its directories made (``create``); StateError if unsafe."""
    problem = path_problem(root, rel)
    if problem is not None:
        raise StateError(problem)
    path = root / layout.STATE_DIR / rel
    if create:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StateError(
                f"cannot make {path.parent} ({exc.strerror}): rouse needs to write its state "
                "there — check the tree's permissions"
            ) from None
    return path


def open_lock(root: Path, rel: str, what: str) -> int:
    """The file descriptor of the lock file ``root/.rouse/<rel>`` (made if missing, never
    through a symlink), for its holder to ``flock``; StateError naming ``what`` if not."""
    path = state_path(root, rel)
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    except OSError as exc:
        raise StateError(
            f"cannot open {what} {path} ({exc.strerror}): rouse needs to write there — "
            "check the permissions of the tree and its .rouse/"
        ) from None


def pid_alive(pid: int) -> bool:
    """Whether a process ``pid`` lives (a lock's holder, a leftover's writer): one this
    user may not signal counts as alive, and so does a number no pid can be."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return True  # someone else's process (or no pid at all): not ours to call gone
    return True


def problems(root: Path) -> list[str]:
    """Every reason ``.rouse/`` is unsafe: links at it, in it, or in its subdirectories."""
    state = root / layout.STATE_DIR
    top = _problem_at(state, layout.STATE_DIR, directory=True)
    if top is not None:
        return [top]
    found: list[str] = []
    for where in ("", *SUBDIRS):
        directory = state / where if where else state
        shown = f"{layout.STATE_DIR}/{where}".rstrip("/")
        if where and _problem_at(directory, shown, directory=True) is not None:
            continue  # a link or a file: already named by its parent's listing
        try:
            entries = list(os.scandir(directory))
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError as exc:
            found.append(f"{shown} cannot be read ({exc.strerror}): check its permissions")
            continue
        for entry in sorted(entries, key=lambda e: e.name):
            if entry.is_symlink():
                found.append(
                    f"{shown}/{entry.name} is a symlink: rouse never follows a link in its "
                    f"state — remove it (rm {entry.path}) and run again"
                )
    return found


def quick_problems(root: Path) -> list[str]:
    """:func:`problems` for the pack's start-up path: ``.rouse`` and its two busy
    directories, by lstat alone (no listing)."""
    top = _problem_at(root / layout.STATE_DIR, layout.STATE_DIR, directory=True)
    if top is not None:
        return [top]
    busy = [f"{layout.STATE_DIR}/{where}" for where in ("cache", "nudges")]
    found = [_problem_at(root / shown, shown, directory=True) for shown in busy]
    return [problem for problem in found if problem is not None]


def require_safe(root: Path) -> None:
    """For writers of state (the sweeper): StateError naming the first unsafe path."""
    found = problems(root)
    if found:
        raise StateError(found[0])
