"""Where rouse's hooks go: agents' settings files (SPEC §11).

Merging the hooks (their commands are :mod:`rouse.agents.hook_commands`') into
Claude Code's, Codex's and Gemini CLI's settings JSON (event → groups → ``{"type":
"command", "command": …}``): exactly one rouse hook at each event it lays, in one
settings scope per tree, everything else in the file kept in order; and Cursor's
flat ``.cursor/hooks.json`` (``{"version": 1, "hooks": {"sessionStart": [{"command":
…}]}}``), whose ``sessionStart`` hook may return ``additional_context``.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rouse.agents.hook_commands import (
    EVENTS,
    MATCHERS,
    PROMISES,
    PROMPT,
    SESSION_END,
    SESSION_START,
    STOP,
    hook_command,
    is_ours,
)
from rouse.agents.hookio import (
    CLAUDE_LOCAL,
    CLAUDE_SHARED,
    CODEX_HOOKS,
    CURSOR_HOOKS,
    GEMINI_SETTINGS,
    PROMPT_EVENTS,
    SETTINGS_DEPTH,
    TURN_END_EVENTS,
)
from rouse.agents.stop_hook import HOOK_TIMEOUT
from rouse.agents.wiring import Wired, Wiring, exclude_locally, update_file
from rouse.core.errors import RouseError, UsageError
from rouse.state.files import decode

#: The promise check's timeout (seconds), in Claude Code's and Codex's Stop entry.
PROMISES_TIMEOUT = 30
#: Codex previews a hook's ``additionalContext`` past a per-hook limit in tokens (2,500 by
#: default, counted as bytes / 4); the hook sets its own, so that a pack of 10,000
#: characters at up to 4 bytes each arrives whole.
CODEX_CONTEXT_LIMIT = 10_000

CURSOR_EVENT = "sessionStart"
CURSOR_LABEL = "Cursor sessionStart hook"
#: Each agent's name, its settings file (from the scope's base: the project, else the home),
#: and what its SessionStart and prompt entries carry besides. Its prompt
#: hook's and promise check's events are :data:`~rouse.agents.hookio.PROMPT_EVENTS`' and
#: ``TURN_END_EVENTS``'; Gemini CLI's AfterAgent hook may deny the answer, which it sends to
#: the agent as a new prompt; its lifecycle matchers are exact strings, so its SessionStart
#: hook has none (:data:`MATCHERS`) and runs for every source.
AGENTS: dict[str, tuple[str, str, Mapping[str, Any] | None]] = {
    "claude": ("Claude Code", CLAUDE_SHARED, None),
    "codex": ("Codex", CODEX_HOOKS, {"additionalContextLimit": CODEX_CONTEXT_LIMIT}),
    "gemini": ("Gemini CLI", GEMINI_SETTINGS, None),
}
#: The instruction file each agent reads, by the agent whose hook may deliver its pack.
READERS = {"CLAUDE.md": "claude", "AGENTS.md": "codex", "GEMINI.md": "gemini"}


def settings_paths(w: Wiring, kind: str) -> list[Path]:
    """Every settings file of ``kind``'s this tree's hook may sit in: rouse keeps it in one
    (a project's Claude Code hook: its local settings, or the team's settings.json)."""
    if kind == "claude" and w.project is not None:
        return [w.project / CLAUDE_LOCAL, w.project / CLAUDE_SHARED]
    return [w.base / AGENTS[kind][1]]


def load_json(path: Path) -> dict[str, Any]:
    """A settings file as a dict ({} when missing); a broken one is a usage error (exit 2)."""
    if not path.exists():
        return {}
    try:
        data = decode(path.read_bytes(), max_depth=SETTINGS_DEPTH)
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


def has_our_hook(path: Path, events: Sequence[str] = (SESSION_START,)) -> bool:
    try:
        hooks = load_json(path).get("hooks", {})
        lists = [hooks.get(event, []) for event in events]
    except (RouseError, AttributeError):
        return False
    return any(
        isinstance(groups, list)
        and any(is_ours(h) for g in groups if isinstance(g, dict) for h in g.get("hooks", []) or [])
        for groups in lists
    )


def event_hooks(data: dict[str, Any], where: str, event: str = SESSION_START) -> list[Any]:
    """The list a settings file keeps at ``hooks.<event>``; a usage error (nothing written)
    when the file is not shaped so."""
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
        if not isinstance(inner, list) or not any(is_ours(h) for h in inner):
            kept.append(group)
            continue
        rest = [h for h in inner if not is_ours(h)]
        if position is None:
            position = len(kept)
        if rest:
            kept.append({**group, "hooks": rest})
    return kept, position


#: The hooks one agent's settings file is to hold: at each event, what its group carries
#: besides its hooks (SessionStart's ``matcher``), and each hook's entry.
Wanted = list[tuple[str, dict[str, Any], list[dict[str, Any]]]]


def merge_session_hook(data: dict[str, Any], wanted: Wanted, where: str) -> dict[str, Any]:
    """``data`` with exactly the rouse hooks ``wanted`` names (ours), one group at each of
    its events where the first one of ours was, all else kept in order."""
    for event, head, entries in wanted:
        kept, position = _without_ours(event_hooks(data, where, event))
        ours = {**head, "hooks": [{"type": "command", **entry} for entry in entries]}
        kept.insert(len(kept) if position is None else position, ours)
        data.setdefault("hooks", {})[event] = kept
    return data


def remove_session_hook(
    data: dict[str, Any], where: str, events: Sequence[str] = EVENTS
) -> dict[str, Any]:
    """``data`` without any rouse hook for ``events`` (every one rouse lays: SessionStart,
    UserPromptSubmit, Stop, SessionEnd, BeforeAgent, AfterAgent; empty containers left out)."""
    for event in events:
        kept, _ = _without_ours(event_hooks(data, where, event))
        hooks = data.get("hooks")
        if isinstance(hooks, dict):
            if kept:
                hooks[event] = kept
            else:
                hooks.pop(event, None)
                if not hooks:
                    del data["hooks"]
    return data


def dump(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def wire_hook_files(
    target: Path, others: Sequence[Path], wanted: Wanted, dropped: Sequence[str], label: str
) -> list[str]:
    """Our hooks in ``target`` (none left at the ``dropped`` events), and in none of
    ``others`` (the same tree's other scopes).

    Every file is read and checked before any is written, so a broken one
    stops the run with nothing changed.
    """
    loaded = {path: load_json(path) for path in (target, *others)}
    remove_session_hook(loaded[target], str(target), dropped)
    merged = merge_session_hook(loaded[target], wanted, str(target))
    texts = {target: dump(merged)}
    for path in others:
        if path.exists() and has_our_hook(path, EVENTS):
            texts[path] = dump(remove_session_hook(loaded[path], str(path)))
    done = [update_file(target, texts[target], label)]
    for path in others:
        if path in texts:
            update_file(path, texts[path], label)
            done.append(f"removed the rouse hook from {path} (one scope is enough: {target})")
    return done


def wire_hooks(
    w: Wiring,
    kind: str,
    result: Wired,
    executable: str | None,
    promises: bool = True,
    shared: bool = False,
) -> None:
    """``kind``'s hooks (claude, codex, gemini) in its settings file of this tree's scope.

    Claude Code's go in the project's local settings (kept out of git) or, ``shared``, in
    the team's settings.json, and out of the other; a project's ``.codex/`` and
    ``.gemini/`` are its own layer, committed with it. A file meant to be committed
    carries no path of this machine. ``promises=False`` leaves the promise check out.
    """
    name, _, extra = AGENTS[kind]
    prompt_event, promise_event = PROMPT_EVENTS[kind], TURN_END_EVENTS[kind]
    paths = settings_paths(w, kind)
    target = w.project / CLAUDE_SHARED if shared and w.project is not None else paths[0]
    others = [p for p in paths if p != target]
    shared = w.project is not None and (shared or kind != "claude")

    def entry(event: str = SESSION_START, **more: Any) -> dict[str, Any]:
        return {"command": hook_command(w, kind, executable, event, shared), **more}

    matcher = {"matcher": MATCHERS[kind]} if kind in MATCHERS else {}  # none: every source
    wanted: Wanted = [
        (SESSION_START, matcher, [entry(**(extra or {}))]),
        (prompt_event, {}, [entry(PROMPT, **(extra or {}))]),
    ]
    timeout = {"timeout": PROMISES_TIMEOUT} if promise_event == STOP else {}  # Gemini: ms
    promise = [entry(PROMISES, **timeout)] if promises else []
    if kind == "claude":  # the wait, in the background, waking the model; SessionEnd ends it
        stop = entry(STOP, asyncRewake=True, timeout=HOOK_TIMEOUT)
        wanted += [(STOP, {}, [stop, *promise]), (SESSION_END, {}, [entry(PROMPT)])]
    elif promise:
        wanted.append((promise_event, {}, promise))
    dropped = () if promise or kind == "claude" else (promise_event,)  # a check laid before
    label = f"{name} {', '.join(event for event, _, _ in wanted)}"
    result.done += wire_hook_files(target, others, wanted, dropped, label)
    if kind == "codex":
        result.printed += codex_notes(w)
    if w.project is not None and target.name == Path(CLAUDE_LOCAL).name:
        excluded = exclude_locally(w.project, CLAUDE_LOCAL)
        result.done += [excluded] if excluded else []


def codex_notes(w: Wiring) -> list[str]:
    """What Codex needs before it runs the hook (printed after wiring it)."""
    where = "your user hooks" if w.project is None else "this project's hooks"
    lines = [
        f"Codex runs {where} only once you trust them: start `codex`, open /hooks and trust "
        "the rouse SessionStart, UserPromptSubmit and Stop hooks (again whenever `rouse wire` "
        "changes their command)."
    ]
    if w.project is not None:
        lines.append(
            "It reads .codex/ only in a trusted project: accept its trust prompt, or run "
            "`codex exec --trust` here once."
        )
    return lines


def hooked_agent(w: Wiring, filename: str) -> str | None:
    """The agent whose hook delivers the pack to readers of ``filename``, if any."""
    kind = READERS.get(filename)
    if kind is not None and any(has_our_hook(p) for p in settings_paths(w, kind)):
        return AGENTS[kind][0]
    return None


def wire_cursor_hooks(w: Wiring, result: Wired, executable: str | None) -> None:
    """Cursor's hook, beside its rule (which the editor's agent reads where hooks do not
    run), exactly one where the first one was; the project's file is committed, so it
    calls ``rouse`` by name."""
    path = w.base / CURSOR_HOOKS
    command = hook_command(w, "cursor", executable, shared=w.project is not None)
    data = load_json(path)
    entries = event_hooks(data, str(path), CURSOR_EVENT)
    kept = [e for e in entries if not is_ours(e)]
    first = next((i for i, e in enumerate(entries) if is_ours(e)), len(kept))
    kept.insert(first, {"command": command})  # (every entry before the first of ours is kept)
    data.setdefault("version", 1)
    data.setdefault("hooks", {})[CURSOR_EVENT] = kept
    result.done.append(update_file(path, dump(data), CURSOR_LABEL))


def unwire_cursor_hooks(w: Wiring, result: Wired) -> None:
    path = w.base / CURSOR_HOOKS
    if not path.exists():
        return
    data = load_json(path)
    entries = event_hooks(data, str(path), CURSOR_EVENT)
    if not any(is_ours(e) for e in entries):
        return
    kept = [e for e in entries if not is_ours(e)]
    if kept:
        data["hooks"][CURSOR_EVENT] = kept
    else:
        data["hooks"].pop(CURSOR_EVENT, None)
    update_file(path, dump(data), CURSOR_LABEL)
    result.done.append(f"removed the rouse hook from {path}")


def remove_hooks(w: Wiring, result: Wired) -> None:
    """Our hooks out of every settings file this tree's may sit in (other hooks and
    settings kept); a file left with nothing else, ``{}``, is removed, and its folder
    when that is empty. Every file is read and checked first: a broken one stops the
    run with nothing changed."""
    paths = [path for kind in AGENTS for path in settings_paths(w, kind)]
    loaded = {p: load_json(p) for p in paths if p.exists()}
    for path, data in loaded.items():
        if not has_our_hook(path, EVENTS):
            continue
        left = remove_session_hook(data, str(path))
        if left:
            update_file(path, dump(left), "rouse hooks")
            result.done.append(f"removed the rouse hooks from {path}")
            continue
        path.unlink()  # it held our hooks and nothing else: rouse's own file, not left as {}
        with contextlib.suppress(OSError):
            path.parent.rmdir()  # (only when nothing else is in .codex/, .gemini/…)
        result.done.append(f"removed {path} (it held only the rouse hooks)")
