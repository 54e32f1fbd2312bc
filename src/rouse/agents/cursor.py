"""Cursor: a ``sessionStart`` hook in ``.cursor/hooks.json`` beside the always-applied rule.

Cursor's hooks file is flat, unlike Claude Code's: ``{"version": 1, "hooks":
{"sessionStart": [{"command": …}]}}``. Its ``sessionStart`` hook may return
``additional_context``, which Cursor adds to the conversation's start (the
``cursor-agent`` CLI runs the same hooks). rouse merges exactly one such hook
(everything else in the file kept) and keeps the rule too, because the rule
is what the editor's agent reads where hooks do not run or are turned off.
The project's file is committed: it calls ``rouse`` by name and names the
tree from the project (:func:`rouse.agents.hook_commands.tree_arg`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rouse.agents.hook_commands import hook_command, is_ours
from rouse.agents.settings_hooks import dump, event_hooks, load_json
from rouse.agents.wiring import Wired, Wiring, update_file

CURSOR_HOOKS = ".cursor/hooks.json"
EVENT = "sessionStart"
LABEL = "Cursor sessionStart hook"


def cursor_hooks_path(w: Wiring) -> Path:
    return w.base / CURSOR_HOOKS


def merge_cursor_hook(data: dict[str, Any], command: str, where: str) -> dict[str, Any]:
    """``data`` with exactly one rouse ``sessionStart`` hook, where the first one was."""
    entries = event_hooks(data, where, EVENT)
    kept = [e for e in entries if not is_ours(e)]
    first = next((i for i, e in enumerate(entries) if is_ours(e)), None)
    position = len(kept) if first is None else sum(1 for e in entries[:first] if e in kept)
    kept.insert(position, {"command": command})
    data.setdefault("version", 1)
    data.setdefault("hooks", {})[EVENT] = kept
    return data


def remove_cursor_hook(data: dict[str, Any], where: str) -> dict[str, Any]:
    kept = [e for e in event_hooks(data, where, EVENT) if not is_ours(e)]
    table = data.get("hooks")
    if isinstance(table, dict):
        if kept:
            table[EVENT] = kept
        else:
            table.pop(EVENT, None)
    return data


def wire_cursor_hooks(w: Wiring, result: Wired, executable: str | None) -> None:
    path = cursor_hooks_path(w)
    command = hook_command(w, "cursor", executable, shared=w.project is not None)
    data = merge_cursor_hook(load_json(path), command, str(path))
    result.done.append(update_file(path, dump(data), LABEL))


def unwire_cursor_hooks(w: Wiring, result: Wired) -> None:
    path = cursor_hooks_path(w)
    if not path.exists():
        return
    data = load_json(path)
    if any(is_ours(e) for e in event_hooks(data, str(path), EVENT)):
        update_file(path, dump(remove_cursor_hook(data, str(path))), LABEL)
        result.done.append(f"removed the rouse hook from {path}")
