"""Wiring rouse into agents (SPEC §11): instruction blocks, hook files, rules, MCP.

Every writer here is idempotent: run it twice and the second run changes
nothing. Files rouse does not own (``CLAUDE.md``, ``AGENTS.md``, settings
JSON) are edited only between our markers or under our own hook entry, and
everything else in them is kept; ``CLAUDE.md`` and ``AGENTS.md`` are never
created. A tree's hook sits in one settings scope: wiring it into one takes
it out of the others rouse manages for that tree.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rouse.agents.hook import HOOK_COMMAND
from rouse.core import layout
from rouse.core.errors import RouseError, UsageError
from rouse.records.scaffold import AGENT_LINE

BEGIN = "<!-- rouse:begin (written by `rouse wire`; edits inside are replaced) -->"
END = "<!-- rouse:end -->"
_BEGIN_RE = re.compile(r"^<!-- rouse:begin\b.*-->\s*$", re.MULTILINE)
_END_RE = re.compile(r"^<!-- rouse:end -->\s*$", re.MULTILINE)
INSTRUCTION_FILES = ("CLAUDE.md", "AGENTS.md")

#: The SessionStart sources each agent documents (Claude Code: startup, resume,
#: clear, compact; Codex: startup, resume, clear): a fresh pack after each.
MATCHERS = {"claude": "startup|resume|clear|compact", "codex": "startup|resume|clear"}
MATCHER = MATCHERS["claude"]
SESSION_START = "SessionStart"
#: At each prompt the same command hands the open session the wakes it has not
#: seen (it reads the event from its input); neither agent matches on this event.
PROMPT = "UserPromptSubmit"
EVENTS = (SESSION_START, PROMPT)
_OUR_HOOK_RE = re.compile(
    HOOK_COMMAND.format(kind="(?:claude|codex)") + r"|(?:^|[\s;&|(])rouse\s+pack\b"
)

#: What a hook prints when it cannot start rouse at all (the pinned path is
#: gone and there is no ``rouse`` on PATH): one line instead of nothing.
CANNOT_RUN = (
    "rouse: no memory pack this session: this hook could not start rouse (it is neither "
    "where `rouse wire` found it nor on PATH): reinstall rouse, then run `rouse wire` again"
)

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


def _memory_flag(w: Wiring) -> str:
    """`` --memory TREE`` unless a plain ``rouse`` in the project root finds the tree itself."""
    if w.project is not None and w.tree_ref == "memory":
        return ""
    return f" --memory {shlex.quote(w.tree_ref)}"


def _pack_cmd(w: Wiring) -> str:
    return f"rouse pack{_memory_flag(w)}"


def instruction_line(w: Wiring) -> str:
    """The line ``rouse init`` suggests, for this tree (the same sentence, the same words)."""
    instructions = f"`{os.path.join(w.tree_ref, layout.INSTRUCTIONS)}`"
    return AGENT_LINE.replace("`rouse pack`", f"`{_pack_cmd(w)}`").format(instructions=instructions)


def block_lines(w: Wiring, hooked: str | None = None) -> list[str]:
    """The guidance between the markers. ``hooked`` names the agent whose hook delivers the pack."""
    instructions = f"`{os.path.join(w.tree_ref, layout.INSTRUCTIONS)}`"
    if hooked == "Claude Code":
        first = (
            "- The memory pack arrives at the start of every session by itself (a SessionStart "
            f"hook runs `{_pack_cmd(w)}`): treat it as your memory and do not run it again; "
            f"before writing memory, read {instructions}."
        )
    elif hooked == "Codex":
        first = (
            "- In Codex the memory pack arrives at session start by itself (a SessionStart "
            "hook): treat it as your memory and do not run it again. Any other agent: "
            + instruction_line(w)
        )
    else:
        first = "- " + instruction_line(w)
    where = "the global tree" if w.project is None else f"`{w.tree_ref}/`"
    return [
        "## Memory (rouse)",
        "",
        f"Your memory is {where}: plain markdown files with a small header, kept by rouse; "
        f"{instructions} explains the tree, the header, the clock and the verbs.",
        "",
        first,
        f"- To find something the pack does not show, run `rouse recall QUERY{_memory_flag(w)}`.",
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


def _unstable(path: str, roots: Sequence[str]) -> bool:
    """A path that may vanish: under a temp directory or a cache (``pipx run``, ``uvx``)."""
    candidates = {os.path.abspath(path), os.path.realpath(path)}
    caches = (".cache", "Caches", "__pycache__")
    if any(part in caches for candidate in candidates for part in Path(candidate).parts):
        return True
    try:
        return any(
            os.path.commonpath([candidate, os.path.abspath(root)]) == os.path.abspath(root)
            for candidate in candidates
            for root in roots
        )
    except ValueError:  # paths on different drives (Windows): not under that root
        return False


def stable_executable(
    argv0: str | None = None, on_path: str | None = None, unstable: Sequence[str] | None = None
) -> str | None:
    """The absolute path of the ``rouse`` that runs now, when it is a stable install.

    The script this process was started as, else the ``rouse`` on PATH; never
    one under a temp directory or a cache, which may be gone by the next
    session. Symlinks are kept (``~/.local/bin/rouse`` outlives a reinstall).
    """
    argv0 = sys.argv[0] if argv0 is None else argv0
    on_path = shutil.which("rouse") if on_path is None else on_path
    roots = [tempfile.gettempdir(), "/tmp", "/var/tmp"] if unstable is None else unstable
    candidates = [argv0] if Path(argv0).name in ("rouse", "rouse.exe") else []
    candidates += [on_path] if on_path else []
    for candidate in candidates:
        path = os.path.abspath(candidate)
        if os.path.isfile(path) and os.access(path, os.X_OK) and not _unstable(path, roots):
            return path
    return None


def hook_command(
    w: Wiring, kind: str, executable: str | None = None, event: str = SESSION_START
) -> str:
    """The hook's command: it pins this tree (and, when given, this rouse).

    ``R=/path/to/rouse; [ -x "$R" ] || R=rouse; "$R" pack …``: the install that
    wired it, else whatever ``rouse`` is on PATH, else (at session start) one
    line saying why there is no pack; at a prompt, nothing. It exits 0 on
    every path.
    """
    if kind == "claude" and w.project is not None:
        ref = w.tree_ref.replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$")
        ref = ref.replace("`", "\\`")
        memory = f'"$CLAUDE_PROJECT_DIR/{ref}"'
    else:
        memory = shlex.quote(str(w.tree))
    run = f"pack --memory {memory} --hook {kind}"
    if executable:
        head = f'R={shlex.quote(executable)}; [ -x "$R" ] || R=rouse; "$R" {run}'
    else:
        head = f"rouse {run}"
    if event == PROMPT:
        fallback = "true"  # the session start said it once; not again at every prompt
    elif kind == "codex":
        payload = {"hookSpecificOutput": {"hookEventName": "SessionStart"}}
        payload["hookSpecificOutput"]["additionalContext"] = CANNOT_RUN
        fallback = "printf '%s\\n' " + shlex.quote(json.dumps(payload))
    else:
        fallback = "echo " + shlex.quote(CANNOT_RUN)
    return f"{head} || {fallback}"


def _claude_paths(w: Wiring) -> list[Path]:
    """Every Claude Code settings file this tree's hook may sit in: rouse keeps it in one."""
    if w.project is None:
        return [w.home / ".claude" / "settings.json"]
    return [w.project / CLAUDE_LOCAL, w.project / CLAUDE_SHARED]


def _codex_path(w: Wiring) -> Path:
    base = w.home if w.project is None else w.project
    return base / CODEX_HOOKS


def _load_json(path: Path) -> dict[str, Any]:
    """A settings file as a dict ({} when missing); a broken one is a usage error (exit 2)."""
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text("utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        reason = " ".join(str(exc).split())
        raise UsageError(
            f"{path}: not valid JSON ({reason}); fix it by hand and run `rouse wire` again "
            "(nothing was written)"
        ) from None
    if not isinstance(data, dict):
        raise UsageError(
            f"{path}: expected a JSON object at the top; fix it by hand (nothing was written)"
        )
    return data


def _is_ours(hook: Any) -> bool:
    return isinstance(hook, dict) and bool(_OUR_HOOK_RE.search(str(hook.get("command", ""))))


def _has_our_hook(path: Path, events: Sequence[str] = (SESSION_START,)) -> bool:
    try:
        hooks = _load_json(path).get("hooks", {})
        lists = [hooks.get(event, []) for event in events]
    except (RouseError, AttributeError):
        return False
    return any(
        isinstance(groups, list)
        and any(
            _is_ours(h) for g in groups if isinstance(g, dict) for h in g.get("hooks", []) or []
        )
        for groups in lists
    )


def _session_groups(data: dict[str, Any], where: str, event: str = SESSION_START) -> list[Any]:
    hooks = data.get("hooks", {})
    if not isinstance(hooks, dict):
        raise UsageError(f"{where}: 'hooks' is not a JSON object; fix it by hand, nothing written")
    groups = hooks.get(event, [])
    if not isinstance(groups, list):
        raise UsageError(f"{where}: 'hooks.{event}' is not a list; nothing written")
    return groups


def _without_ours(groups: list[Any]) -> tuple[list[Any], int | None]:
    """The groups with every rouse hook taken out, and where the first one was."""
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
    return kept, position


def merge_session_hook(
    data: dict[str, Any],
    command: str,
    where: str,
    matcher: str = MATCHER,
    prompt_command: str | None = None,
) -> dict[str, Any]:
    """``data`` with exactly one rouse SessionStart hook (ours), all else kept in order;
    with ``prompt_command``, exactly one rouse UserPromptSubmit hook too."""
    wanted: list[tuple[str, dict[str, Any]]] = [(SESSION_START, {"matcher": matcher})]
    if prompt_command is not None:
        wanted.append((PROMPT, {}))
    for event, head in wanted:
        kept, position = _without_ours(_session_groups(data, where, event))
        run = command if event == SESSION_START else prompt_command
        ours = {**head, "hooks": [{"type": "command", "command": run}]}
        kept.insert(len(kept) if position is None else position, ours)
        data.setdefault("hooks", {})[event] = kept
    return data


def remove_session_hook(data: dict[str, Any], where: str) -> dict[str, Any]:
    """``data`` without any rouse SessionStart or UserPromptSubmit hook (empty
    containers left out)."""
    for event in EVENTS:
        kept, _ = _without_ours(_session_groups(data, where, event))
        hooks = data.get("hooks")
        if isinstance(hooks, dict):
            if kept:
                hooks[event] = kept
            else:
                hooks.pop(event, None)
                if not hooks:
                    del data["hooks"]
    return data


def _dump(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def wire_hook_files(
    target: Path,
    others: Sequence[Path],
    command: str,
    matcher: str,
    label: str,
    prompt_command: str | None = None,
) -> list[str]:
    """Our hooks in ``target``, and in none of ``others`` (the same tree's other scopes).

    Every file is read and checked before any is written, so a broken one
    stops the run with nothing changed.
    """
    loaded = {path: _load_json(path) for path in (target, *others)}
    merged = merge_session_hook(loaded[target], command, str(target), matcher, prompt_command)
    texts = {target: _dump(merged)}
    for path in others:
        if path.exists() and _has_our_hook(path, EVENTS):
            texts[path] = _dump(remove_session_hook(loaded[path], str(path)))
    done = [_update(target, texts[target], label)]
    for path in others:
        if path in texts:
            _update(path, texts[path], label)
            done.append(f"removed the rouse hook from {path} (one scope is enough: {target})")
    return done


def wire_hook_file(
    path: Path, command: str, label: str, matcher: str = MATCHER, prompt_command: str | None = None
) -> str:
    return wire_hook_files(path, (), command, matcher, label, prompt_command)[0]


def wire_claude_hooks(w: Wiring, shared: bool, result: Wired, executable: str | None) -> None:
    paths = _claude_paths(w)
    target = (
        paths[0] if w.project is None else w.project / (CLAUDE_SHARED if shared else CLAUDE_LOCAL)
    )
    others = [p for p in paths if p != target]
    command = hook_command(w, "claude", executable)
    prompt = hook_command(w, "claude", executable, PROMPT)
    result.done += wire_hook_files(
        target,
        others,
        command,
        MATCHERS["claude"],
        "Claude Code SessionStart, UserPromptSubmit",
        prompt,
    )


def codex_notes(w: Wiring) -> list[str]:
    """What Codex needs before it runs the hook (printed after wiring it)."""
    where = "your user hooks" if w.project is None else "this project's hooks"
    lines = [
        f"Codex runs {where} only once you trust them: start `codex`, open /hooks and trust "
        "the rouse SessionStart and UserPromptSubmit hooks (again whenever `rouse wire` "
        "changes their command)."
    ]
    if w.project is not None:
        lines.append(
            "It reads .codex/ only in a trusted project: accept its trust prompt, or run "
            "`codex exec --trust` here once."
        )
    return lines


def wire_codex_hooks(w: Wiring, result: Wired, executable: str | None) -> None:
    command = hook_command(w, "codex", executable)
    prompt = hook_command(w, "codex", executable, PROMPT)
    path = _codex_path(w)
    label = "Codex SessionStart, UserPromptSubmit"
    result.done.append(wire_hook_file(path, command, label, MATCHERS["codex"], prompt))
    result.printed += codex_notes(w)


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
    executable: str | None = None,
) -> Wired:
    """Wire the tree into agents. Hooks first, so the blocks can say the pack comes by itself.

    ``executable`` is the rouse the hooks pin: None finds this one when it is a
    stable install (:func:`stable_executable`); "" pins none (``rouse`` on PATH).
    """
    if shared and not claude_hooks:
        raise UsageError("--shared goes with --claude-hooks (it picks .claude/settings.json)")
    w = wiring_for(tree, home)
    result = Wired()
    if claude_hooks or codex_hooks:
        pinned = stable_executable() if executable is None else executable
        if claude_hooks:
            wire_claude_hooks(w, shared, result, pinned)
        if codex_hooks:
            wire_codex_hooks(w, result, pinned)
    wire_blocks(w, result)
    if cursor:
        wire_cursor(w, result)
    if mcp:
        result.printed += ["", *mcp_instructions(w)] if result.printed else mcp_instructions(w)
    return result
