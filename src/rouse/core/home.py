"""Finding the tree: ``--memory``, ``$ROUSE_HOME``, the nearest ``memory/`` that is a
rouse tree (here or in a parent, as git finds ``.git``), ``~/.rouse``.

Light to import (pathlib is loaded by what needs it): the hooks find their tree
here at every prompt. :func:`explicit_tree` and :func:`surely_local` are the
answers they can have without pathlib, spelled as pathlib spells them."""

from __future__ import annotations

import os

#: A tree's folder of machine state (rouse.state's files); defined here, in the light
#: module the hooks load anyway, so core's layout and rouse.state share one name.
STATE_DIR = ".rouse"

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from pathlib import Path

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
    from pathlib import Path

    return Path.home() / STATE_DIR


def stamp_key_path(env: Mapping[str, str] | None = None) -> Path:
    """Where the stamp key lives: ``$ROUSE_STAMP_KEY``, else ``~/.config/rouse/stamp.key``."""
    from pathlib import Path

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
    from pathlib import Path

    from rouse.core.errors import UsageError  # (not on the idle hooks' path)

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


# -- the hooks' answers, without pathlib ---------------------------------------


def pure(path: str) -> str:
    """``str(PurePosixPath(path))``: no empty or ``.`` parts, no trailing slash."""
    lead = "/" if path.startswith("/") else ""
    if path.startswith("//") and not path.startswith("///"):
        lead = "//"  # POSIX leaves exactly two leading slashes to the system
    parts = [part for part in path.split("/") if part and part != "."]
    return lead + "/".join(parts) or "."


def joined(folder: str, name: str) -> str:
    """``str(Path(folder) / name)``, for a ``folder`` spelled as :func:`pure` spells it
    and a relative ``name``."""
    rest = pure(name)
    if rest == ".":
        return folder
    return folder + rest if folder in ("/", "//") else f"{folder}/{rest}"


def explicit_tree(memory: str | None, env: Mapping[str, str]) -> str | None:
    """The tree :func:`find_tree` takes from ``--memory`` or ``$ROUSE_HOME``, or None
    when only it can say (no such rung, no such directory, no home for ``~``)."""
    value = memory or env.get("ROUSE_HOME")
    if not value:
        return None
    path = os.path.expanduser(value) if value.startswith("~") else value
    if path.startswith("~"):
        return None  # pathlib raises for a home it cannot find: find_tree says so
    if path.startswith("/"):
        path = pure(path)
    else:
        try:
            path = joined(pure(os.getcwd()), path)
        except OSError:
            return None
    return path if os.path.isdir(path) else None


def surely_local(root: str) -> bool:
    """Is ``root`` certainly not the global tree (:func:`global_tree`)? False when it may
    be, or when pathlib would raise on the way (no home, a symlink loop)."""
    home = os.path.expanduser("~")
    if home.startswith("~"):
        return False
    outer = os.path.realpath(joined(home, STATE_DIR))
    try:
        os.stat(outer)
    except FileNotFoundError:
        pass
    except OSError:
        return False
    return os.path.realpath(root) != outer
