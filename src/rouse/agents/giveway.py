"""One pack per session: a global tree's hook gives way to the project's own.

A hook for the global tree (``~/.rouse``) prints nothing when the session's
project has a rouse hook of its own for the same agent, so the inner tree
wins (:func:`gives_way`). Reading the project's settings takes json, re and
pathlib, so :mod:`rouse.agents.hook` comes here only for a tree that may be
the global one (:func:`rouse.core.home.surely_local` says when not).
"""

from __future__ import annotations

import re
from pathlib import Path

from rouse.core.errors import RouseError
from rouse.core.home import find_tree, global_tree
from rouse.state.files import decode

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

#: how deep a settings file may nest before it is read as unreadable (never a crash)
SETTINGS_DEPTH = 64

#: A settings entry that runs ``rouse pack … --hook KIND``, however rouse is named
#: (``rouse``, a path ending in it, or the ``"$R"`` of a pinned command).
HOOK_COMMAND = r"(?:^|[\s;&|(/])(?:rouse|\"\$R\")['\"]?\s+pack\b[^\n]*--hook[ =]{kind}\b"


def _commands(path: Path) -> list[str]:
    """The SessionStart hook commands in one settings or hooks file (none if unreadable)."""
    try:
        data = decode(path.read_bytes(), max_depth=SETTINGS_DEPTH)
        table = data["hooks"]
        groups = table.get("SessionStart") or table.get("sessionStart")  # Cursor: camelCase
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return []
    found: list[str] = []
    for group in groups if isinstance(groups, list) else []:
        hooks = group.get("hooks") if isinstance(group, dict) else None
        if hooks is None:
            hooks = [group]  # Cursor's entries are flat: {"command": ...}
        for entry in hooks if isinstance(hooks, list) else []:
            if isinstance(entry, dict) and isinstance(entry.get("command"), str):
                found.append(entry["command"])
    return found


def project_hook_files(kind: str, session: Mapping[str, Any], env: Mapping[str, str]) -> list[Path]:
    """The project-level files whose hooks this agent runs for this session."""
    if kind == "claude":
        where = env.get("CLAUDE_PROJECT_DIR") or session.get("cwd")
        if not isinstance(where, str) or not where:
            return []
        base = Path(where) / ".claude"
        return [base / "settings.local.json", base / "settings.json"]
    if kind == "gemini":
        where = env.get("GEMINI_PROJECT_DIR") or session.get("cwd")
        return [Path(where) / ".gemini" / "settings.json"] if isinstance(where, str) else []
    if kind == "cursor":
        roots = session.get("workspace_roots")
        roots = roots if isinstance(roots, list) else []
        return [Path(r) / ".cursor" / "hooks.json" for r in roots if isinstance(r, str) and r]
    cwd = session.get("cwd")
    if not isinstance(cwd, str) or not cwd:
        return []
    # Codex reads .codex/ from the working directory up to the project root
    # (the first directory holding .git); ~/.codex is the user's own layer
    home = Path.home().resolve()
    found: list[Path] = []
    for folder in [Path(cwd), *Path(cwd).parents]:
        if folder.resolve() == home:
            break
        found.append(folder / ".codex" / "hooks.json")
        if (folder / ".git").exists():
            return found
    return found[:1]


def _codex_runs(path: Path, env: Mapping[str, str]) -> bool:
    """Whether Codex will run the hooks of a project's ``.codex/hooks.json``.

    It loads them only in a trusted project, and runs a hook only once the
    user has trusted it (``/hooks``); both are recorded in its config.
    """
    import tomllib

    config = Path(env.get("CODEX_HOME") or Path.home() / ".codex") / "config.toml"
    try:
        data = tomllib.loads(config.read_text("utf-8"))
    except (OSError, ValueError):
        return False
    projects = data.get("projects") or {}
    root = path.parent.parent.resolve()
    trusted = any(
        isinstance(entry, dict)
        and entry.get("trust_level") == "trusted"
        and (root == Path(name).resolve() or Path(name).resolve() in root.parents)
        for name, entry in projects.items()
    )
    states = (data.get("hooks") or {}).get("state") or {}
    prefix = f"{path}:session_start:"
    hook_trusted = any(
        key.startswith(prefix) and isinstance(value, dict) and value.get("trusted_hash")
        for key, value in states.items()
    )
    return trusted and hook_trusted


def gives_way(
    kind: str, memory: str | None, session: Mapping[str, Any], env: Mapping[str, str]
) -> bool:
    """Whether this hook should print nothing: it serves the global tree and the
    session's project has its own rouse hook for the same agent (the inner tree wins)."""
    try:
        tree = find_tree(memory, env).resolve()
    except RouseError:
        return False
    outer = global_tree().resolve()
    if tree != outer:
        return False
    ours = re.compile(HOOK_COMMAND.format(kind=re.escape(kind)))
    for path in project_hook_files(kind, session, env):
        inner = [c for c in _commands(path) if ours.search(c) and str(outer) not in c]
        if inner and (kind != "codex" or _codex_runs(path, env)):
            return True
    return False
