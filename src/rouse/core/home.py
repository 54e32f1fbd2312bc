"""Finding the tree: ``--memory``, ``$ROUSE_HOME``, ``./memory``, ``~/.rouse``."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from rouse.core.errors import UsageError

LOOKUP_ORDER = "--memory DIR, then $ROUSE_HOME, then ./memory, then ~/.rouse"


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
    memory: str | None, env: Mapping[str, str] | None = None, cwd: Path | None = None
) -> Path:
    """Resolve the tree root, or raise a UsageError that says how to make one.

    Explicit rungs (``--memory``, ``$ROUSE_HOME``) are taken as given: a
    missing directory there is an error, never a fall-through.
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
    local = cwd / "memory"
    if local.is_dir():
        return local
    home = global_tree()
    if home.is_dir():
        return home
    raise UsageError(
        f"no memory tree found (looked at {LOOKUP_ORDER}); "
        "make one with `rouse init` (./memory) or `rouse init --global` (~/.rouse)"
    )
