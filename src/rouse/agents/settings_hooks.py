"""The hooks rouse puts in agents' settings files (SPEC §11).

The hook's command (it pins the tree and, when stable, the rouse that wired
it: :func:`stable_executable`), and merging it into Claude Code's and Codex's
settings JSON: exactly one rouse SessionStart and UserPromptSubmit hook (and
for Claude Code one Stop and one SessionEnd hook), in one settings scope per
tree, everything else in the file kept in order.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rouse.agents.giveway import SETTINGS_DEPTH
from rouse.agents.hookio import context_json
from rouse.agents.wiring import Wired, Wiring, exclude_locally, update_file
from rouse.core.errors import RouseError, UsageError
from rouse.state.files import decode

#: The SessionStart sources each agent documents (Claude Code: startup, resume,
#: clear, compact, and fork since 2.1.214; Codex: startup, resume, clear): a fresh pack after each.
MATCHERS = {"claude": "startup|resume|clear|compact|fork", "codex": "startup|resume|clear"}
MATCHER = MATCHERS["claude"]
SESSION_START = "SessionStart"
#: At each prompt the same command hands the open session the wakes it has not
#: seen (it reads the event from its input); neither agent matches on this event.
PROMPT = "UserPromptSubmit"
#: Claude Code only: when a turn ends the same command waits, in the background
#: (``asyncRewake``), for the next wake of the idle session; SessionEnd ends that wait.
STOP = "Stop"
SESSION_END = "SessionEnd"
#: Gemini CLI's name for the moment after a prompt is submitted, before the model plans.
BEFORE_AGENT = "BeforeAgent"
#: ... and for the moment its agent has answered, before the turn ends (the promise check).
AFTER_AGENT = "AfterAgent"
EVENTS = (SESSION_START, PROMPT, STOP, SESSION_END, BEFORE_AGENT, AFTER_AGENT)
#: The Stop hook's timeout (seconds): Claude Code kills it then; rouse's own wait is shorter.
STOP_TIMEOUT = 24 * 3600
#: The second Stop hook (issue 33): run before the turn ends, it may continue the turn once
#: about a promise without a record (``--no-promises`` leaves it out). Not an event's name.
PROMISES, PROMISES_TIMEOUT = "Stop:promises", 30
#: one shell word as :func:`hook_command` writes it: bare, single-quoted (``shlex.quote``,
#: a quote inside as ``'"'"'``) or double-quoted (``"$CLAUDE_PROJECT_DIR/…"``)
_WORD = r"""(?:'[^']*'(?:"'"'[^']*')*|"(?:[^"\\]|\\.)*"|[^\s'"]+)"""
#: exactly a command rouse writes (:func:`hook_command`, and the shapes of earlier
#: versions: no pinned rouse, no ``--memory``, no ``--hook``, no fallback): a user's own
#: command that runs ``rouse pack`` another way (``my-wrapper && rouse pack …``) is not ours
_OUR_HOOK_RE = re.compile(
    rf"""(?:R={_WORD}; \[ -x "\$R" \] \|\| R=rouse; "\$R"|rouse) pack"""
    rf"(?: --memory {_WORD})?(?: --hook (?:claude|codex|gemini|cursor))?(?: --promises)?"
    r"(?: \|\| (?:true|exit \$\(\( \$\? == 2 \? 2 : 0 \)\)"
    rf"|echo {_WORD}|printf '%s\\n' {_WORD}))?"
)

#: What a hook prints when it cannot start rouse at all (the pinned path is
#: gone and there is no ``rouse`` on PATH): one line instead of nothing.
CANNOT_RUN = (
    "rouse: no memory pack this session: this hook could not start rouse (it is neither "
    "where `rouse wire` found it nor on PATH): reinstall rouse, then run `rouse wire` again"
)
#: The same line for a hook in a file meant to be committed, which calls rouse by name only.
CANNOT_RUN_SHARED = (
    "rouse: no memory pack this session: this project's hook runs `rouse`, which is not on "
    "PATH here: install it where the agent can find it (in a clone of rouse: pipx install .)"
)
#: Codex previews a hook's ``additionalContext`` past a per-hook limit in tokens (2,500 by
#: default, counted as bytes / 4); the hook sets its own, so that a pack of 10,000
#: characters at up to 4 bytes each arrives whole.
CODEX_CONTEXT_LIMIT = 10_000

CLAUDE_LOCAL = ".claude/settings.local.json"
CLAUDE_SHARED = ".claude/settings.json"
CODEX_HOOKS = ".codex/hooks.json"


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


#: The variable each agent sets to the project's directory in a hook's environment.
PROJECT_DIR = {"claude": "CLAUDE_PROJECT_DIR", "gemini": "GEMINI_PROJECT_DIR"}


def tree_arg(w: Wiring, kind: str) -> str:
    """How a hook's command names the tree, as a shell word.

    The global tree by its absolute path (it lives in personal files only). A
    project's tree by its path from the project, never this machine's: under
    the agent's project variable where it has one (``$CLAUDE_PROJECT_DIR``,
    ``$GEMINI_PROJECT_DIR``), else as it stands (Codex, Cursor), which the hook
    resolves from the session's directory up (:func:`rouse.agents.hookio.hook_memory`).
    """
    if w.project is None:
        return shlex.quote(str(w.tree))
    variable = PROJECT_DIR.get(kind)
    if variable is None:
        return shlex.quote(w.tree_ref)
    ref = w.tree_ref.replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$")
    ref = ref.replace("`", "\\`")
    if kind == "gemini":
        # Gemini CLI writes the project's path, shell-quoted, in place of a bare
        # $GEMINI_PROJECT_DIR; inside these double quotes its quotes would be kept (a path
        # with a space then names no folder). It leaves ${…} alone: the shell expands it.
        return f'"${{{variable}}}/{ref}"'
    return f'"${variable}/{ref}"'


def hook_command(
    w: Wiring,
    kind: str,
    executable: str | None = None,
    event: str = SESSION_START,
    shared: bool = False,
) -> str:
    """The hook's command: it pins this tree (and, when given and personal, this rouse).

    ``R=/path/to/rouse; [ -x "$R" ] || R=rouse; "$R" pack …``: the install that
    wired it, else whatever ``rouse`` is on PATH, else (at session start) one
    line saying why there is no pack; at a prompt, nothing. A ``shared``
    command (a file meant to be committed) carries no path of this machine:
    it calls ``rouse`` by name. It exits 0 on every path.
    """
    run = f"pack --memory {tree_arg(w, kind)} --hook {kind}"
    run += " --promises" if event == PROMISES else ""
    if executable and not shared:
        head = f'R={shlex.quote(executable)}; [ -x "$R" ] || R=rouse; "$R" {run}'
    else:
        head = f"rouse {run}"
    cannot = CANNOT_RUN_SHARED if shared else CANNOT_RUN
    if event == STOP:
        # exit 2 wakes the model with the wake on stderr; anything else (rouse missing
        # included) must not, so it becomes 0
        fallback = "exit $(( $? == 2 ? 2 : 0 ))"
    elif event in (PROMPT, SESSION_END, PROMISES):  # (PROMISES: exit 2 would block the stop)
        fallback = "true"  # the session start said it once; not again at every prompt
    elif kind != "claude":  # the agents that read JSON: the line, in their JSON
        payload = context_json(kind, cannot) or ""
        fallback = "printf '%s\\n' " + shlex.quote(payload.rstrip("\n"))
    else:
        fallback = "echo " + shlex.quote(cannot)
    return f"{head} || {fallback}"


def claude_paths(w: Wiring) -> list[Path]:
    """Every Claude Code settings file this tree's hook may sit in: rouse keeps it in one."""
    if w.project is None:
        return [w.home / ".claude" / "settings.json"]
    return [w.project / CLAUDE_LOCAL, w.project / CLAUDE_SHARED]


def codex_path(w: Wiring) -> Path:
    base = w.home if w.project is None else w.project
    return base / CODEX_HOOKS


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


def is_ours(hook: Any) -> bool:
    """Whether a hook entry is one rouse wrote (its whole command, nothing around it)."""
    return isinstance(hook, dict) and bool(_OUR_HOOK_RE.fullmatch(str(hook.get("command", ""))))


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
        if not isinstance(inner, list) or not any(is_ours(h) for h in inner):
            kept.append(group)
            continue
        rest = [h for h in inner if not is_ours(h)]
        if position is None:
            position = len(kept)
        if rest:
            kept.append({**group, "hooks": rest})
    return kept, position


def merge_session_hook(
    data: dict[str, Any],
    command: str,
    where: str,
    matcher: str | None = MATCHER,
    prompt_command: str | None = None,
    stop_command: str | None = None,
    extra: Mapping[str, Any] | None = None,
    prompt_event: str = PROMPT,
    promise_command: str | None = None,
    promise_event: str = STOP,
) -> dict[str, Any]:
    """``data`` with exactly one rouse SessionStart hook (ours), all else kept in order;
    with ``prompt_command``, exactly one rouse UserPromptSubmit hook too; with
    ``stop_command``, one Stop hook (in the background, waking the model) and one
    SessionEnd hook (the prompt command: it ends the wait); the ``promise_command`` when
    given, beside the Stop hook (it answers before the turn ends) or at its own
    ``promise_event`` (Codex's Stop, Gemini CLI's AfterAgent). ``extra`` goes into the
    SessionStart and UserPromptSubmit entries (Codex's ``additionalContextLimit``)."""
    more = dict(extra or {})
    head = {} if matcher is None else {"matcher": matcher}  # None: every source
    wanted: list[tuple[str, dict[str, Any], list[dict[str, Any]]]] = [
        (SESSION_START, head, [{"command": command, **more}])
    ]
    if prompt_command is not None:
        wanted.append((prompt_event, {}, [{"command": prompt_command, **more}]))
    promise: list[dict[str, Any]] = []
    if promise_command is not None:  # (Gemini CLI's timeouts are in ms: its default kept)
        timeout = {"timeout": PROMISES_TIMEOUT} if promise_event == STOP else {}
        promise.append({"command": promise_command, **timeout})
    if stop_command is not None and prompt_command is not None:  # Claude Code
        stops = [{"command": stop_command, "asyncRewake": True, "timeout": STOP_TIMEOUT}]
        wanted += [(STOP, {}, stops + promise), (SESSION_END, {}, [{"command": prompt_command}])]
    elif promise:
        wanted.append((promise_event, {}, promise))
    else:  # none, or --no-promises: a check laid before is taken out
        remove_session_hook(data, where, (promise_event,))
    for event, head, entries in wanted:
        kept, position = _without_ours(_session_groups(data, where, event))
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


def dump(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def wire_hook_files(
    target: Path,
    others: Sequence[Path],
    command: str,
    matcher: str | None,
    label: str,
    prompt_command: str | None = None,
    stop_command: str | None = None,
    extra: Mapping[str, Any] | None = None,
    prompt_event: str = PROMPT,
    promise_command: str | None = None,
    promise_event: str = STOP,
) -> list[str]:
    """Our hooks in ``target``, and in none of ``others`` (the same tree's other scopes).

    Every file is read and checked before any is written, so a broken one
    stops the run with nothing changed.
    """
    loaded = {path: load_json(path) for path in (target, *others)}
    merged = merge_session_hook(
        loaded[target],
        command,
        str(target),
        matcher,
        prompt_command,
        stop_command,
        extra,
        prompt_event,
        promise_command,
        promise_event,
    )
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


def wire_claude_hooks(
    w: Wiring, shared: bool, result: Wired, executable: str | None, promises: bool = True
) -> None:
    paths = claude_paths(w)
    target = (
        paths[0] if w.project is None else w.project / (CLAUDE_SHARED if shared else CLAUDE_LOCAL)
    )
    others = [p for p in paths if p != target]
    shared = shared and w.project is not None  # the team's file: no path of this machine
    command = hook_command(w, "claude", executable, shared=shared)
    prompt = hook_command(w, "claude", executable, PROMPT, shared)
    result.done += wire_hook_files(
        target,
        others,
        command,
        MATCHERS["claude"],
        "Claude Code SessionStart, UserPromptSubmit, Stop, SessionEnd",
        prompt,
        hook_command(w, "claude", executable, STOP, shared),
        promise_command=hook_command(w, "claude", executable, PROMISES, shared)
        if promises
        else None,
    )
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


def wire_codex_hooks(
    w: Wiring, result: Wired, executable: str | None, promises: bool = True
) -> None:
    shared = w.project is not None  # <repo>/.codex/ is the project's layer, committed with it
    command = hook_command(w, "codex", executable, shared=shared)
    prompt = hook_command(w, "codex", executable, PROMPT, shared)
    check = hook_command(w, "codex", executable, PROMISES, shared) if promises else None
    label = "Codex SessionStart, UserPromptSubmit" + (", Stop" if promises else "")
    limit = {"additionalContextLimit": CODEX_CONTEXT_LIMIT}
    result.done += wire_hook_files(
        codex_path(w),
        (),
        command,
        MATCHERS["codex"],
        label,
        prompt,
        None,
        limit,
        promise_command=check,
    )
    result.printed += codex_notes(w)


def hooked_agent(w: Wiring, filename: str) -> str | None:
    """The agent whose hook delivers the pack to readers of ``filename``, if any."""
    if filename == "CLAUDE.md" and any(has_our_hook(p) for p in claude_paths(w)):
        return "Claude Code"
    if filename == "AGENTS.md" and has_our_hook(codex_path(w)):
        return "Codex"
    base = w.home if w.project is None else w.project
    if filename == "GEMINI.md" and has_our_hook(base / ".gemini" / "settings.json"):
        return "Gemini CLI"
    return None
