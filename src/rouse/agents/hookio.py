"""What every hook shares: the limits an agent puts on a hook's output, the session's
JSON on stdin, the output each agent reads, the tree a hook's ``--memory`` names, and
whether a hook for the global tree gives way to the project's own (:func:`gives_way`:
one pack per session, the inner tree wins).

Below :mod:`rouse.agents.hook` (the dispatcher) and what it loads; light: on every
hook's start-up path.
"""

from __future__ import annotations

import os
import select
import sys
import time

from rouse.core.home import TREE_MARKS, explicit_tree, joined, pure, surely_local
from rouse.state.files import Damaged, decode, suppress

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from pathlib import Path
    from typing import Any, BinaryIO, TextIO

HOOK_LIMIT = 10_000  # Claude Code's cap on hook output (Codex's is the hook's own: 10,000 tokens)
HOOK_MAX_CHARS = 9_000  # what the pack is asked to fit, leaving room to spare
HOOK_WALL = HOOK_LIMIT - 100  # what it may never pass (whole context files give way)
STDIN_WAIT = 0.25  # seconds to wait for more of the hook's input before giving up
#: seconds the whole input may take: a writer that trickles it is not waited for longer
STDIN_DEADLINE = 2.0
#: how deep the hook's input may nest (the agents' inputs are a few levels deep)
STDIN_DEPTH = 32
STDIN_MOST = 1 << 20
#: The event each agent runs its prompt hook at (Gemini CLI: BeforeAgent, before the model
#: plans), and its turn's-end hook, the promise check (Gemini CLI: AfterAgent).
PROMPT_EVENTS = {"claude": "UserPromptSubmit", "codex": "UserPromptSubmit", "gemini": "BeforeAgent"}
TURN_END_EVENTS = {"claude": "Stop", "codex": "Stop", "gemini": "AfterAgent"}
#: how deep a settings file may nest before it is read as unreadable (never a crash)
SETTINGS_DEPTH = 64
#: Where each agent keeps the hooks rouse lays, from the project (or the home directory).
CLAUDE_LOCAL = ".claude/settings.local.json"
CLAUDE_SHARED = ".claude/settings.json"
CODEX_HOOKS = ".codex/hooks.json"
GEMINI_SETTINGS = ".gemini/settings.json"
CURSOR_HOOKS = ".cursor/hooks.json"
#: A settings entry that runs ``rouse pack … --hook KIND``, however rouse is named
#: (``rouse``, a path ending in it, or the ``"$R"`` of a pinned command).
HOOK_COMMAND = r"(?:^|[\s;&|(/])(?:rouse|\"\$R\")['\"]?\s+pack\b[^\n]*--hook[ =]{kind}\b"


def utf16_units(text: str) -> int:
    """How JavaScript (Claude Code) counts a string's length."""
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


#: How each agent counts the hook's text against its limit. Codex counts bytes / 4 as
#: tokens against the hook's ``additionalContextLimit``, which rouse sets to 10,000 when it
#: wires the hook: 10,000 characters fit at any width, so the pack is fitted in characters.
MEASURES: dict[str, Callable[[str], int]] = {"claude": utf16_units, "codex": len}


def cap(text: str, limit: int = HOOK_LIMIT, measure: Callable[[str], int] = len) -> str:
    """``text`` within ``limit``, cut at a line end and saying so (the pack should fit)."""
    if measure(text) <= limit:
        return text
    tail = "… (cut to fit the hook limit: run `rouse pack` for the rest)\n"
    room = limit - measure(tail)
    kept: list[str] = []
    used = 0
    for line in text.splitlines(keepends=True):
        used += measure(line)
        if used > room:
            break
        kept.append(line)
    return "".join(kept) + tail


def context_json(kind: str, text: str, event: str = "SessionStart") -> str | None:
    """``text`` as the JSON an agent reads context from, or None for plain stdout (Claude).

    Codex and Gemini CLI: ``hookSpecificOutput.additionalContext`` with the event's
    name; Cursor's ``sessionStart``: ``additional_context``.
    """
    import json

    payload: dict[str, Any]
    if kind in ("codex", "gemini"):
        payload = {"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}}
    elif kind == "cursor":
        payload = {"additional_context": text}
    else:
        return None
    return json.dumps(payload, ensure_ascii=False) + "\n"


def prompt_output(kind: str, text: str) -> str:
    """What a prompt hook prints: plain text for Claude Code, JSON for Codex and Gemini CLI
    (whose event is BeforeAgent); nothing when nothing is new."""
    if not text or kind not in ("codex", "gemini"):
        return text
    return context_json(kind, text, PROMPT_EVENTS[kind]) or ""


def hook_output(kind: str, text: str) -> str:
    """What a SessionStart hook prints: plain text for Claude, JSON for the others."""
    text = cap(text, HOOK_LIMIT, MEASURES.get(kind, len))
    wrapped = context_json(kind, text)
    if wrapped is not None:
        return wrapped
    return text if text.endswith("\n") else text + "\n"


# -- the hook's input ---------------------------------------------------------


def read_session(stream: TextIO | BinaryIO | None = None) -> dict[str, Any]:
    """The JSON object the agent writes to a hook's stdin, or {} (never blocks long).

    Agents write it at once and close the pipe; a terminal, a closed stdin or
    a pipe nobody writes to gives {} after at most :data:`STDIN_WAIT`.
    """
    stream = sys.stdin if stream is None else stream
    chunks: list[bytes] = []
    try:
        if stream is None or stream.isatty():
            return {}
        fd = stream.fileno()
        size = 0
        end = time.monotonic() + STDIN_DEADLINE
        while size < STDIN_MOST:
            left = min(STDIN_WAIT, end - time.monotonic())
            if left <= 0:
                return {}  # trickled past the deadline: no session, but still the pack
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                break
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except (OSError, ValueError, AttributeError):
        return {}
    data = b"".join(chunks) or b"{}"
    try:  # bounded: nesting that would exhaust the parser is refused before it is parsed
        value = decode(data, max_depth=STDIN_DEPTH)
    except Damaged:
        return {}
    return value if isinstance(value, dict) else {}


def hook_memory(memory: str | None, session: Mapping[str, Any]) -> str | None:
    """The tree a hook's ``--memory`` names; a relative one is the project's.

    A hook in a file committed with the project names its tree by its path
    from the project (``--memory memory``), never by this machine's. The
    agent starts the hook in the session's directory and says which that is
    (``cwd``; Cursor: ``workspace_roots``), which may be below the project's
    root: the tree is the nearest such path that is a rouse tree, from there
    up, as git finds ``.git``. Absolute paths are taken as given. (Spelled as
    pathlib spells ``Path(folder) / memory``, without importing it.)
    """
    if not memory or os.path.isabs(os.path.expanduser(memory)):
        return memory
    starts: list[str] = []
    cwd = session.get("cwd")
    if isinstance(cwd, str) and os.path.isabs(cwd):
        starts.append(cwd)
    roots = session.get("workspace_roots")
    if isinstance(roots, list):
        starts += [r for r in roots if isinstance(r, str) and os.path.isabs(r)]
    with suppress(OSError):
        starts.append(os.getcwd())
    for start in starts:
        folder = pure(start)
        while True:
            found = joined(folder, memory)
            if any(os.path.isfile(joined(found, m)) for m in TREE_MARKS):
                return found
            lead = "//" if folder.startswith("//") else "/"
            parent = lead + folder[len(lead) :].rpartition("/")[0]
            if parent == folder:
                break
            folder = parent
    return memory  # the lookup then says, from here, that it is missing


def gives_way(
    kind: str, memory: str | None, session: Mapping[str, Any], env: Mapping[str, str]
) -> bool:
    """Whether this hook should print nothing: it serves the global tree and the
    session's project has its own rouse hook for the same agent (the inner tree wins).
    Reading the project's settings takes json, re and pathlib: a tree that is surely
    not the global one (:func:`rouse.core.home.surely_local`) never pays for them."""
    root = explicit_tree(memory, env)
    if root is not None and surely_local(root):
        return False
    import re

    from rouse.core.errors import RouseError
    from rouse.core.home import find_tree, global_tree

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
    from pathlib import Path

    if kind == "claude":
        where = env.get("CLAUDE_PROJECT_DIR") or session.get("cwd")
        if not isinstance(where, str) or not where:
            return []
        return [Path(where) / CLAUDE_LOCAL, Path(where) / CLAUDE_SHARED]
    if kind == "gemini":
        where = env.get("GEMINI_PROJECT_DIR") or session.get("cwd")
        return [Path(where) / GEMINI_SETTINGS] if isinstance(where, str) else []
    if kind == "cursor":
        roots = session.get("workspace_roots")
        roots = roots if isinstance(roots, list) else []
        return [Path(r) / CURSOR_HOOKS for r in roots if isinstance(r, str) and r]
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
        found.append(folder / CODEX_HOOKS)
        if (folder / ".git").exists():
            return found
    return found[:1]


def _codex_runs(path: Path, env: Mapping[str, str]) -> bool:
    """Whether Codex will run the hooks of a project's ``.codex/hooks.json``.

    It loads them only in a trusted project, and runs a hook only once the
    user has trusted it (``/hooks``); both are recorded in its config.
    """
    import tomllib
    from pathlib import Path

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
