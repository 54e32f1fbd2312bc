"""``rouse pack --hook claude|codex``: the pack as an agent's SessionStart hook.

The same command is the UserPromptSubmit hook: called for that event (the
hook's input says which), it prints only the wakes the session has not seen
(:mod:`rouse.agents.prompt_hook`), never the pack. For Claude Code it is the
Stop hook too, which waits for the next wake of an idle session, and the
SessionEnd hook that ends that wait (:mod:`rouse.agents.stop_hook`).

This is what an agent runs at every session start, at every prompt and at
every turn's end, so it stays light: with nothing new, a prompt or a turn's
end costs little more than starting Python (issue 24; ``bench/hooks_bench.py``).
Until it knows that something is new it imports only :mod:`rouse.agents.hookstate`,
:mod:`~rouse.agents.prompt_hook` and :mod:`~rouse.agents.stop_hook` (``str``
paths, no pathlib, json or typing); the pack, the project's settings
(:mod:`rouse.agents.giveway`) and the ledger come in only when needed.

Three promises, each kept here:

- **It fits.** Past its limit an agent swaps the whole output for a short
  preview, so the pack is fitted inside a hard wall measured the way that
  agent counts (Claude Code: characters, as UTF-16 units; Codex: bytes of
  ``additionalContext``); see :class:`rouse.pack.render.HardWall`.
- **It never fails the session.** Whatever goes wrong becomes one line of
  context saying so, and the exit code is 0.
- **One pack per session.** A hook for the global tree (``~/.rouse``) gives
  way when the session's project has a rouse hook of its own for the same
  agent, so the inner tree wins. (Two copies of one command in several
  settings scopes are run once by the agents themselves.)
"""

from __future__ import annotations

import os
import select
import sys
import time

from rouse.agents import hookstate
from rouse.agents.hookstate import suppress

# typing costs ~5 ms to import on the hooks' start-up path; annotations are
# strings here (__future__), so these are only imported for the type checker
TYPE_CHECKING = False
if TYPE_CHECKING:
    from argparse import Namespace
    from collections.abc import Callable, Mapping
    from datetime import datetime
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
#: how deep a settings file may nest before it is read as unreadable (never a crash)
SETTINGS_DEPTH = 64
STDIN_MOST = 1 << 20

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
        value = hookstate.loads(data, STDIN_DEPTH)
    except hookstate.Declined:  # the core's reader decides (and refuses) the rest
        from rouse.state.files import decode

        try:
            value = decode(data, max_depth=STDIN_DEPTH)
        except ValueError:
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
        folder = hookstate.pure(start)
        while True:
            found = hookstate.joined(folder, memory)
            if any(os.path.isfile(hookstate.joined(found, m)) for m in hookstate.TREE_MARKS):
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
    session's project has its own rouse hook for the same agent (the inner tree wins);
    see :mod:`rouse.agents.giveway`, not imported for a tree that is surely not global."""
    root = hookstate.explicit_tree(memory, env)
    if root is not None and hookstate.surely_local(root):
        return False
    from rouse.agents import giveway

    return giveway.gives_way(kind, memory, session, env)


def _serving(kind: str, memory: str | None, session: Mapping[str, Any]) -> str | Path | None:
    """The tree this hook serves, or None when it gives way (the core's lookup raises
    when there is none)."""
    root = hookstate.explicit_tree(memory, os.environ)
    if root is not None and hookstate.surely_local(root):
        return root  # what find_tree gives, and a tree that gives way to no project's
    if gives_way(kind, memory, session, os.environ):
        return None
    from rouse.core.home import find_tree

    return find_tree(memory, os.environ)


# -- the hook -----------------------------------------------------------------


def pack_hook(args: Namespace, run: Callable[[Namespace], int]) -> int:
    """Run the pack verb, capture it, and never fail the session.

    Whatever goes wrong (no tree, a broken file, a bug) becomes one line of
    context saying so, and the exit code is 0.
    """
    kind = args.hook
    args.hook, args.json = None, False
    args.max_chars = min(args.max_chars, HOOK_MAX_CHARS)
    session = read_session()
    args.memory = hook_memory(getattr(args, "memory", None), session)
    event = session.get("hook_event_name")
    if event in ("UserPromptSubmit", "BeforeAgent"):  # BeforeAgent: Gemini CLI's
        return prompt_hook(kind, args, session, run)
    if event in ("Stop", "AfterAgent") and getattr(args, "promises", False):  # issue 33
        from rouse.agents import promise_hook

        return promise_hook.stop(kind, args.memory, session, _serving)
    if event in ("Stop", "SessionEnd"):
        return idle_hook(kind, args, session, event)
    from rouse.agents import session_pack

    return session_pack.start(kind, args, session, run)


def _detail(exc: Exception) -> str:
    from rouse.core.errors import RouseError

    return exc.render() if isinstance(exc, RouseError) else f"{type(exc).__name__}: {exc}"


def prompt_hook(
    kind: str, args: Namespace, session: Mapping[str, Any], run: Callable[[Namespace], int]
) -> int:
    """UserPromptSubmit: the wakes this session has not seen yet, or nothing at all;
    the pack itself at the first prompt of a session no SessionStart hook served.

    It never fails the prompt: a problem is one line on stderr (the agent
    shows it in its debug output) and no context; the SessionStart hook has
    already said what is wrong with the tree.
    """
    from rouse.agents import prompt_hook as prompt

    sid = session.get("session_id")
    try:
        memory = getattr(args, "memory", None)
        named = hookstate.explicit_tree(memory, os.environ)
        if (
            named is not None
            and not prompt.unstarted(named, sid)
            and prompt.nothing_new(named, sid)
        ):
            return 0  # nothing new prints nothing, whether or not this hook gives way
        root = _serving(kind, memory, session)
        if root is None:
            return 0
        if prompt.unstarted(root, sid):
            from rouse.agents import session_pack

            return session_pack.late_start(kind, args, session, run, root)
        if prompt.nothing_new(root, sid):
            return 0
        found = prompt.new_wakes(root, sid)
        if not found:
            return 0
        now = _now(getattr(args, "now", None))
        text = cap(prompt.render(found, now), HOOK_LIMIT, MEASURES.get(kind, len))
    except prompt.Busy as exc:  # waited a moment for the sessions lock: not longer
        sys.stderr.write(f"rouse: {exc}\n")
        return 0
    except Exception as exc:  # a prompt hook must never fail the prompt
        sys.stderr.write(f"rouse: no wakes at this prompt: {_detail(exc)}\n")
        return 0
    sys.stdout.write(prompt.prompt_output(kind, text))
    return 0


def idle_hook(kind: str, args: Namespace, session: Mapping[str, Any], event: str) -> int:
    """Stop: wait for the next wake this idle session has not seen, and exit 2 with it
    on stderr (Claude Code's ``asyncRewake`` wakes the model with it); else exit 0,
    saying nothing. SessionEnd: the session's waiter leaves.

    Like the prompt hook it never fails the session: a problem is one line on
    stderr and exit 0 (Claude Code shows it only in its debug output).
    """
    from rouse.agents import stop_hook as stop

    try:
        if kind != "claude":
            return 0
        root = _serving(kind, getattr(args, "memory", None), session)
        if root is None:
            return 0
        if event == "SessionEnd":
            stop.end_session(root, session.get("session_id"))
            return 0
        wait = stop.max_wait(os.environ.get("ROUSE_STOP_WAIT"))
        watch = os.environ.get("ROUSE_STOP_WATCH", "").lower() != "poll"
        found = stop.wait_for_wake(root, session, wait, watch)
        if not found:
            return 0
        from rouse.agents import prompt_hook as prompt

        now = _now(getattr(args, "now", None))
        text = cap(prompt.render(found, now, idle=True), HOOK_LIMIT, MEASURES[kind])
    except Exception as exc:  # a Stop hook must never fail the session
        sys.stderr.write(f"rouse: no wake for this idle session: {_detail(exc)}\n")
        return 0
    sys.stderr.write(text)
    return 2


def _now(given: str | None) -> datetime:
    """``--now``, else ``$ROUSE_NOW``, else the wall clock (a bad value: the wall clock)."""
    import contextlib
    from datetime import datetime

    from rouse.core.timefmt import parse_stamp, parse_when

    given = given or os.environ.get("ROUSE_NOW")
    wall = datetime.now().replace(microsecond=0)
    if given:
        with contextlib.suppress(ValueError):
            return parse_stamp(given)
        with contextlib.suppress(ValueError):
            return parse_when(given, wall)  # a human form: tomorrow 09:00, +2h
    return wall
