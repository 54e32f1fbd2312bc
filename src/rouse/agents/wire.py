"""Wiring rouse into agents (SPEC §11): instruction blocks, hook files, rules, MCP.

Every writer here is idempotent: run it twice and the second run changes
nothing. Files rouse does not own (``CLAUDE.md``, ``AGENTS.md``, settings
JSON) are edited only between our markers or under our own hook entry, and
never created; everything else in them is kept.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rouse.core import layout
from rouse.core.errors import RouseError, UsageError

BEGIN = "<!-- rouse:begin (written by `rouse wire`; edits inside are replaced) -->"
END = "<!-- rouse:end -->"
_BEGIN_RE = re.compile(r"^<!-- rouse:begin\b.*-->\s*$", re.MULTILINE)
_END_RE = re.compile(r"^<!-- rouse:end -->\s*$", re.MULTILINE)
INSTRUCTION_FILES = ("CLAUDE.md", "AGENTS.md")

MATCHER = "startup|clear|compact"
_OUR_HOOK_RE = re.compile(r"(^|[\s;&|(])rouse\s+pack\b")

CURSOR_RULE = ".cursor/rules/rouse.mdc"
CLAUDE_LOCAL = ".claude/settings.local.json"
CLAUDE_SHARED = ".claude/settings.json"
CODEX_HOOKS = ".codex/hooks.json"


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


# -- the instruction block ----------------------------------------------------


def _pack_cmd(w: Wiring) -> str:
    return f"rouse pack --memory {shlex.quote(w.tree_ref)}"


def block_lines(w: Wiring, hooked: str | None = None) -> list[str]:
    """The guidance between the markers. ``hooked`` names the agent whose hook delivers the pack."""
    instructions = shlex.quote(os.path.join(w.tree_ref, layout.INSTRUCTIONS))
    if hooked == "Claude Code":
        first = (
            "- The memory pack arrives at the start of every session by itself (a SessionStart "
            f"hook runs `{_pack_cmd(w)}`): treat it as your memory and do not run it again."
        )
    elif hooked == "Codex":
        first = (
            "- In Codex the memory pack arrives at session start by itself (a SessionStart "
            "hook): treat it as your memory and do not run it again. Any other agent runs "
            f"`{_pack_cmd(w)}` at the start of every session and treats its output as memory."
        )
    else:
        first = (
            f"- At the start of every session run `{_pack_cmd(w)}` and treat its output as "
            "your memory."
        )
    where = "the global tree" if w.project is None else f"`{w.tree_ref}/`"
    return [
        "## Memory (rouse)",
        "",
        f"Your memory is {where}: plain markdown files with a small header, kept by rouse.",
        "",
        first,
        f"- Before writing memory, read `{instructions}`: it explains the tree, the header, "
        "the clock and the verbs.",
        f"- To find something the pack does not show, run `rouse recall QUERY --memory "
        f"{shlex.quote(w.tree_ref)}`.",
    ]


def render_block(w: Wiring, hooked: str | None = None) -> str:
    return "\n".join([BEGIN, *block_lines(w, hooked), END]) + "\n"


def splice_block(text: str, block: str, where: str, newline: str = "\n") -> str:
    """``text`` with our marked block replaced (or appended); everything else kept."""
    begins, ends = list(_BEGIN_RE.finditer(text)), list(_END_RE.finditer(text))
    if not begins and not ends:
        if not text or text.endswith(newline * 2):
            return text + block
        return text + (newline if text.endswith(newline) else newline * 2) + block
    if len(begins) != 1 or len(ends) != 1 or ends[0].start() < begins[0].start():
        raise RouseError(
            f"{where}: the rouse markers are unbalanced (one '<!-- rouse:begin' line, then one "
            "'<!-- rouse:end -->' line); fix or remove them by hand, then run `rouse wire` again"
        )
    end = ends[0].end()
    if text[end:].startswith(newline):
        end += len(newline)
    return text[: begins[0].start()] + block + text[end:]


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


def _read_text(path: Path) -> str:
    """The file's text with its line ends as they are (no newline translation)."""
    with open(path, encoding="utf-8", newline="") as handle:
        return handle.read()


def _update(path: Path, text: str, label: str) -> str:
    """Write ``text`` to ``path`` unless it already says that; say what happened."""
    try:
        old = _read_text(path) if path.exists() else None
    except (OSError, UnicodeDecodeError) as exc:
        raise RouseError(f"{path}: cannot read it ({exc}); nothing written") from None
    if old == text:
        return f"unchanged: {path} ({label})"
    _write_text(path, text)
    return f"{'updated' if old is not None else 'wrote'} {path} ({label})"


def _hooked_agent(w: Wiring, filename: str) -> str | None:
    if filename == "CLAUDE.md" and any(_has_our_hook(p) for p in _claude_paths(w)):
        return "Claude Code"
    if filename == "AGENTS.md" and _has_our_hook(_codex_path(w)):
        return "Codex"
    return None


def wire_blocks(w: Wiring, result: Wired) -> None:
    """Put the block in CLAUDE.md / AGENTS.md where they exist; never create them."""
    if w.project is None:
        result.printed += [
            f"The global tree {w.tree} has no project root. Put this block in your agent's "
            "global instruction file (for example ~/.claude/CLAUDE.md or ~/.codex/AGENTS.md):",
            "",
            render_block(w).rstrip("\n"),
        ]
        return
    found = False
    for name in INSTRUCTION_FILES:
        path = w.project / name
        if not path.is_file():
            continue
        found = True
        old = _read_text(path)
        newline = "\r\n" if "\r\n" in old else "\n"
        block = render_block(w, _hooked_agent(w, name)).replace("\n", newline)
        text = splice_block(old, block, str(path), newline)
        result.done.append(_update(path, text, "rouse block"))
    if not found:
        result.printed += [
            f"Neither CLAUDE.md nor AGENTS.md exists in {w.project}; rouse does not create "
            "them. Put this block in your agent's instruction file:",
            "",
            render_block(w).rstrip("\n"),
        ]


# -- hook files ---------------------------------------------------------------


def hook_command(w: Wiring, kind: str) -> str:
    """The SessionStart command: it pins this tree and exits 0 on every path."""
    if kind == "claude" and w.project is not None:
        ref = w.tree_ref.replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$")
        ref = ref.replace("`", "\\`")
        memory = f'"$CLAUDE_PROJECT_DIR/{ref}"'
    else:
        memory = shlex.quote(str(w.tree))
    return f"rouse pack --memory {memory} --hook {kind} || true"


def _claude_paths(w: Wiring) -> list[Path]:
    if w.project is None:
        return [w.home / ".claude" / "settings.json"]
    return [w.project / CLAUDE_LOCAL, w.project / CLAUDE_SHARED]


def _codex_path(w: Wiring) -> Path:
    base = w.home if w.project is None else w.project
    return base / CODEX_HOOKS


def _load_json(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text("utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise RouseError(
            f"{path}: not valid JSON ({exc}); fix it by hand, nothing written"
        ) from None
    if not isinstance(data, dict):
        raise RouseError(f"{path}: expected a JSON object at the top; nothing written")
    return data


def _is_ours(hook: Any) -> bool:
    return isinstance(hook, dict) and bool(_OUR_HOOK_RE.search(str(hook.get("command", ""))))


def _has_our_hook(path: Path) -> bool:
    try:
        groups = _load_json(path).get("hooks", {}).get("SessionStart", [])
    except (RouseError, AttributeError):
        return False
    return isinstance(groups, list) and any(
        _is_ours(h) for g in groups if isinstance(g, dict) for h in g.get("hooks", []) or []
    )


def merge_session_hook(data: dict[str, Any], command: str, where: str) -> dict[str, Any]:
    """``data`` with exactly one rouse SessionStart hook (ours), all else kept in order."""
    hooks = data.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise RouseError(f"{where}: 'hooks' is not a JSON object; fix it by hand, nothing written")
    groups = hooks.setdefault("SessionStart", [])
    if not isinstance(groups, list):
        raise RouseError(f"{where}: 'hooks.SessionStart' is not a list; nothing written")
    kept: list[Any] = []
    position: int | None = None
    for group in groups:
        inner = group.get("hooks") if isinstance(group, dict) else None
        if not isinstance(inner, list) or not any(_is_ours(h) for h in inner):
            kept.append(group)
            continue
        rest = [h for h in inner if not _is_ours(h)]
        if position is None:
            position = len(kept)
        if rest:
            kept.append({**group, "hooks": rest})
    ours = {"matcher": MATCHER, "hooks": [{"type": "command", "command": command}]}
    kept.insert(len(kept) if position is None else position, ours)
    hooks["SessionStart"] = kept
    return data


def wire_hook_file(path: Path, command: str, label: str) -> str:
    data = merge_session_hook(_load_json(path), command, str(path))
    return _update(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n", label)


def wire_claude_hooks(w: Wiring, shared: bool, result: Wired) -> None:
    if w.project is None:
        path = w.home / ".claude" / "settings.json"
    else:
        path = w.project / (CLAUDE_SHARED if shared else CLAUDE_LOCAL)
    result.done.append(wire_hook_file(path, hook_command(w, "claude"), "Claude Code SessionStart"))


def wire_codex_hooks(w: Wiring, result: Wired) -> None:
    path = _codex_path(w)
    result.done.append(wire_hook_file(path, hook_command(w, "codex"), "Codex SessionStart"))
    result.printed += [
        "Codex runs hooks only when they are on (recent releases turn them on by default);",
        "if yours does not, add to ~/.codex/config.toml:",
        "  [features]",
        "  codex_hooks = true",
    ]


def cursor_rule(w: Wiring) -> str:
    return (
        "\n".join(
            [
                "---",
                "description: rouse memory - read the pack at session start, read the guide "
                "before writing memory",
                "globs:",
                "alwaysApply: true",
                "---",
                *block_lines(w),
            ]
        )
        + "\n"
    )


def wire_cursor(w: Wiring, result: Wired) -> None:
    if w.project is None:
        result.printed += [
            "Cursor has no rules file for the global tree: paste this into Cursor Settings > "
            "Rules > User Rules:",
            "",
            *block_lines(w),
        ]
        return
    path = w.project / CURSOR_RULE
    result.done.append(_update(path, cursor_rule(w), "Cursor rule, always applied"))


def mcp_instructions(w: Wiring) -> list[str]:
    """How to register ``rouse mcp`` with Claude Code, Codex and Cursor (printed)."""
    tree = str(w.tree)
    args = ["mcp", "--memory", tree]
    cursor = {"mcpServers": {"rouse": {"command": "rouse", "args": args}}}
    return [
        "Register the rouse MCP server (needs `pipx install 'rouse-memory[mcp]'`):",
        "",
        "Claude Code (add `--scope project` to share it through .mcp.json):",
        f"  claude mcp add rouse -- rouse mcp --memory {shlex.quote(tree)}",
        "",
        "Codex, with its CLI:",
        f"  codex mcp add rouse -- rouse mcp --memory {shlex.quote(tree)}",
        "or in ~/.codex/config.toml:",
        "  [mcp_servers.rouse]",
        '  command = "rouse"',
        f"  args = {json.dumps(args)}",
        "",
        "Cursor, in .cursor/mcp.json (project) or ~/.cursor/mcp.json (everywhere):",
        *("  " + line for line in json.dumps(cursor, indent=2).splitlines()),
    ]


def wire(
    tree: Path,
    *,
    home: Path,
    claude_hooks: bool = False,
    shared: bool = False,
    codex_hooks: bool = False,
    cursor: bool = False,
    mcp: bool = False,
) -> Wired:
    """Wire the tree into agents. Hooks first, so the blocks can say the pack comes by itself."""
    if shared and not claude_hooks:
        raise UsageError("--shared goes with --claude-hooks (it picks .claude/settings.json)")
    w = wiring_for(tree, home)
    result = Wired()
    if claude_hooks:
        wire_claude_hooks(w, shared, result)
    if codex_hooks:
        wire_codex_hooks(w, result)
    wire_blocks(w, result)
    if cursor:
        wire_cursor(w, result)
    if mcp:
        result.printed += ["", *mcp_instructions(w)] if result.printed else mcp_instructions(w)
    return result
