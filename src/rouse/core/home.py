"""Finding the tree: ``--memory``, ``$ROUSE_HOME``, the nearest ``memory/`` that is a
rouse tree (here or in a parent, as git finds ``.git``), ``~/.rouse``."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path

from rouse.core.errors import UsageError

LOOKUP_ORDER = (
    "--memory DIR, then $ROUSE_HOME, then the nearest memory/ holding a rouse tree "
    "in this directory or a parent, then ~/.rouse"
)
#: What makes a directory a rouse tree (either is enough): the instruction file
#: ``rouse init`` lays, or the tree's identity file.
TREE_MARKS = ("entrypoint/rouse.md", ".rouse-tree")


def is_tree(path: Path) -> bool:
    """Does ``path`` hold a rouse tree (not just any directory called ``memory``)?"""
    return any(os.path.isfile(path / mark) for mark in TREE_MARKS)


def global_tree() -> Path:
    return Path.home() / ".rouse"


def stamp_key_path(env: Mapping[str, str] | None = None) -> Path:
    """Where the stamp key lives: ``$ROUSE_STAMP_KEY``, else ``~/.config/rouse/stamp.key``."""
    env = os.environ if env is None else env
    given = env.get("ROUSE_STAMP_KEY")
    if given:
        return Path(given).expanduser().absolute()
    return Path.home() / ".config" / "rouse" / "stamp.key"


def find_tree(
    memory: str | None,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    warn: Callable[[str], None] | None = None,
) -> Path:
    """Resolve the tree root, or raise a UsageError that says how to make one.

    Explicit rungs (``--memory``, ``$ROUSE_HOME``) are taken as given: a
    missing directory there is an error, never a fall-through. Then the
    nearest ``memory/`` that is a rouse tree (:func:`is_tree`), from ``cwd``
    (the physical working directory) up to the root; a ``memory/`` that is
    not one is passed over, and if the global tree is then used, ``warn`` is
    told which (rouse's verbs print it on stderr).
    """
    env = os.environ if env is None else env
    cwd = Path.cwd() if cwd is None else cwd
    for label, value in (("--memory", memory), ("$ROUSE_HOME", env.get("ROUSE_HOME"))):
        if value:
            path = Path(value).expanduser()
            path = path if path.is_absolute() else cwd / path
            if not path.is_dir():
                raise UsageError(
                    f"{label} names {path}, which is not a directory "
                    f"(lookup order: {LOOKUP_ORDER}); create it with `rouse init`"
                )
            return path
    passed: Path | None = None
    for folder in (cwd, *cwd.parents):
        local = folder / "memory"
        if local.is_dir():
            if is_tree(local):
                return local
            passed = passed or local  # a source package called memory/, say: never ours
    home = global_tree()
    if home.is_dir():
        if passed is not None and warn is not None:
            warn(
                f"rouse: {passed} is not a rouse tree (no entrypoint/rouse.md): using the "
                f"global tree {home}"
            )
        return home
    skipped = f"; {passed} is not a rouse tree" if passed is not None else ""
    raise UsageError(
        f"no memory tree found (looked at {LOOKUP_ORDER}{skipped}); "
        "make one with `rouse init` (./memory) or `rouse init --global` (~/.rouse)"
    )
