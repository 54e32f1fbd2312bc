"""`rouse wire` (SPEC §11): hooks, instruction blocks, rules, how to register MCP; and
``--remove``, every piece taken back out.

Every writer is idempotent, and edits a file rouse does not own (``CLAUDE.md``,
``AGENTS.md``, settings JSON) only between our markers or under our own hook entry,
keeping the rest; ``CLAUDE.md`` and ``AGENTS.md`` are never created. The pieces live
beside this module (:mod:`~rouse.agents.wiring`, ``hook_commands``, ``settings_hooks``,
``instructions``, ``opencode``); this one runs them in order and says how to register
``rouse mcp``.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import TypedDict, Unpack

from rouse.agents.hook_commands import (
    CANNOT_RUN,
    CANNOT_RUN_SHARED,
    MATCHERS,
    PROMPT,
    SESSION_END,
    STOP,
    hook_command,
    stable_executable,
)
from rouse.agents.instructions import (
    BEGIN,
    END,
    check_blocks,
    remove_blocks,
    remove_rule,
    remove_skills,
    wire_blocks,
    wire_cursor,
    wire_skills,
)
from rouse.agents.opencode import unwire_opencode, wire_opencode
from rouse.agents.settings_hooks import (
    CODEX_CONTEXT_LIMIT,
    remove_hooks,
    unwire_cursor_hooks,
    wire_cursor_hooks,
    wire_hooks,
)
from rouse.agents.wiring import Wired, Wiring, wiring_for
from rouse.core.errors import UsageError
from rouse.core.extras import install_hint
from rouse.core.home import stamp_key_path

#: What callers of ``rouse wire``'s library reach through this module.
__all__ = [
    "BEGIN",
    "CANNOT_RUN",
    "CANNOT_RUN_SHARED",
    "CODEX_CONTEXT_LIMIT",
    "END",
    "MATCHERS",
    "PROMPT",
    "SESSION_END",
    "STOP",
    "Wired",
    "Wiring",
    "hook_command",
    "mcp_instructions",
    "stable_executable",
    "wire",
]


def mcp_instructions(w: Wiring) -> list[str]:
    """How to register ``rouse mcp`` with Claude Code, Codex and Cursor (printed).

    Personal registrations pin the tree's absolute path. The team's (Claude
    Code's ``.mcp.json``, a project's ``.cursor/mcp.json``) are committed, so
    they name no path of this machine: ``rouse mcp`` finds the tree from the
    directory the client starts it in, as every verb does.
    """
    tree = str(w.tree)
    args = ["mcp", "--memory", tree]
    lines = [
        f"Register the rouse MCP server (it needs the mcp extra: {install_hint('mcp')}):",
        "",
        "Claude Code, for you:",
        f"  claude mcp add rouse -- rouse mcp --memory {shlex.quote(tree)}",
    ]
    shared = ["mcp"] if w.tree_ref == "memory" else ["mcp", "--memory", w.tree_ref]
    if w.project is not None:
        lines += [
            "or for the team, in .mcp.json (no path of this machine: it finds the tree from "
            "where the session starts):",
            f"  claude mcp add --scope project rouse -- rouse {shlex.join(shared)}",
        ]
    cursor_args = args if w.project is None else shared
    cursor = {"mcpServers": {"rouse": {"command": "rouse", "args": cursor_args}}}
    where = "~/.cursor/mcp.json" if w.project is None else ".cursor/mcp.json (this project)"
    return [
        *lines,
        "",
        "Codex, with its CLI:",
        f"  codex mcp add rouse -- rouse mcp --memory {shlex.quote(tree)}",
        "or in ~/.codex/config.toml:",
        "  [mcp_servers.rouse]",
        '  command = "rouse"',
        f"  args = {json.dumps(args)}",
        "",
        f"Cursor, in {where}:",
        *("  " + line for line in json.dumps(cursor, indent=2).splitlines()),
    ]


def key_guard(key: Path, home: Path) -> list[str]:
    """Claude Code's settings that keep the stamp key out of the agent's reach: offered
    (printed), never written — a deny rule is the owner's choice to make."""
    folder = key.parent
    try:
        rule = f"~/{folder.relative_to(home).as_posix()}/**"
    except ValueError:
        rule = f"/{folder.as_posix()}/**"  # Claude Code reads //path as absolute
    settings = {
        "permissions": {"deny": [f"Read({rule})", f"Edit({rule})"]},
        "sandbox": {
            "enabled": True,
            "allowUnsandboxedCommands": False,
            "filesystem": {"denyRead": [rule]},
        },
    }
    return [
        "",
        "To keep the stamp key out of the agent's reach (docs/provenance.md), add to "
        "Claude Code's settings (~/.claude/settings.json):",
        *("  " + line for line in json.dumps(settings, indent=2).splitlines()),
    ]


class Pieces(TypedDict, total=False):
    """What `rouse wire` is asked to lay besides the instruction blocks and skills, by
    its flags' names (each off unless given): each agent's hooks (``shared``: Claude
    Code's in the team's settings.json), the Cursor rule and hook, how to register MCP."""

    claude_hooks: bool
    shared: bool
    codex_hooks: bool
    cursor: bool
    gemini: bool
    opencode: bool
    mcp: bool


#: The pieces that lay a hook, which runs the rouse the wiring pins.
HOOKED = ("claude_hooks", "codex_hooks", "cursor", "gemini", "opencode")


def wire(
    tree: Path,
    *,
    home: Path,
    executable: str | None = None,
    remove: bool = False,
    promises: bool = True,
    **pieces: Unpack[Pieces],
) -> Wired:
    """Wire the tree into agents. Hooks first, so the blocks can say the pack comes by itself.

    ``pieces`` are what to lay (:class:`Pieces`). ``executable`` is the rouse the hooks
    pin: None finds this one when it is a stable install (:func:`stable_executable`); ""
    pins none (``rouse`` on PATH).
    ``remove`` takes every piece back out instead (:func:`unwire`).
    ``promises=False`` leaves the promise check out (``--no-promises``): Claude Code's
    second Stop hook, Codex's Stop hook, Gemini CLI's AfterAgent hook.
    """
    asked = {name for name, on in pieces.items() if on}
    if "shared" in asked and "claude_hooks" not in asked:
        raise UsageError("--shared goes with --claude-hooks (it picks .claude/settings.json)")
    w = wiring_for(tree, home)
    check_blocks(w)  # (a refusal here leaves every file as it was)
    if remove:
        if asked:
            raise UsageError("--remove takes every piece out: give it alone")
        return unwire(w)
    result = Wired()
    pinned: str | None = None
    if asked & set(HOOKED):
        pinned = stable_executable() if executable is None else executable
        if "claude_hooks" in asked:
            wire_hooks(w, "claude", result, pinned, promises, shared="shared" in asked)
            result.printed += key_guard(stamp_key_path(), home)
        if "codex_hooks" in asked:
            wire_hooks(w, "codex", result, pinned, promises)
        if "gemini" in asked:
            wire_hooks(w, "gemini", result, pinned, promises)
        if "opencode" in asked:
            wire_opencode(w, result, pinned)
    wire_blocks(w, result)
    wire_skills(w, result)
    if "cursor" in asked:
        wire_cursor(w, result)
        wire_cursor_hooks(w, result, pinned)
    if "mcp" in asked:
        result.printed += ["", *mcp_instructions(w)] if result.printed else mcp_instructions(w)
    return result


def unwire(w: Wiring) -> Wired:
    """Every piece ``rouse wire`` laid, taken back out: our hooks, block, rule, plugin and
    skills (the rest of each file the user's is kept)."""
    result = Wired()
    remove_hooks(w, result)
    unwire_cursor_hooks(w, result)
    unwire_opencode(w, result)
    remove_blocks(w, result)
    remove_rule(w, result)
    remove_skills(w, result)
    if not result.done:
        result.done.append(f"nothing of rouse's is wired for {w.tree}")
    return result
