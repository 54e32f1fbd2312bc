"""``rouse pack --hook KIND``: every hook an agent runs, dispatched on the event its input names.

SessionStart: the pack, fitted inside a hard wall measured the way that agent counts
(Claude Code: characters, as UTF-16 units; Codex: bytes of ``additionalContext``; see
:class:`rouse.pack.render.HardWall`), since past its limit an agent swaps the whole output
for a short preview. UserPromptSubmit (Gemini CLI's BeforeAgent): only the wakes the
session has not seen (:mod:`rouse.agents.prompt_hook`). Claude Code's Stop: the wait for
an idle session's next wake, which SessionEnd ends (:mod:`rouse.agents.stop_hook`); with
``--promises``, the promise check (:mod:`rouse.agents.promise_hook`).

It never fails the session: whatever goes wrong is one line saying so, and exit 0. One
pack per session: a global tree's hook gives way when the session's project has a rouse
hook of its own for the same agent (two copies of one command in several settings scopes
the agents run once themselves). It stays light (issue 24; ``bench/hooks_bench.py``):
until something is new it imports only :mod:`~rouse.agents.hookio`, ``prompt_hook``,
``stop_hook`` and the light core and state modules (``str`` paths, no pathlib, json or
typing); the pack, the project's settings and the ledger come in only when needed.
"""

from __future__ import annotations

import os
import sys

from rouse.agents.hookio import (
    HOOK_LIMIT,
    HOOK_MAX_CHARS,
    HOOK_WALL,
    MEASURES,
    cap,
    gives_way,
    hook_memory,
    hook_output,
    prompt_output,
    read_session,
)
from rouse.core.home import explicit_tree, surely_local

TYPE_CHECKING = False
if TYPE_CHECKING:
    from argparse import Namespace
    from collections.abc import Callable, Mapping
    from datetime import datetime
    from pathlib import Path
    from typing import Any


def _serving(kind: str, memory: str | None, session: Mapping[str, Any]) -> str | Path | None:
    """The tree this hook serves, or None when it gives way (the core's lookup raises
    when there is none)."""
    root = explicit_tree(memory, os.environ)
    if root is not None and surely_local(root):
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
    return session_start(kind, args, session, run)


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
        named = explicit_tree(memory, os.environ)
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
            return _late_start(kind, args, session, run, root)
        if prompt.nothing_new(root, sid):
            return 0
        found = prompt.take_new(root, sid)[0]
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
    sys.stdout.write(prompt_output(kind, text))
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


# -- the pack a hook gives: at session start, or at a session's first prompt ------


def session_start(
    kind: str, args: Namespace, session: Mapping[str, Any], run: Callable[[Namespace], int]
) -> int:
    """SessionStart: the pack, and the session's seen-set of the wakes it shows (written,
    so a wake its pack shows is not handed to a later prompt again)."""
    try:
        memory = getattr(args, "memory", None)
        if gives_way(kind, memory, session, os.environ):
            return 0
        shown = _nudges_now(memory, session)  # before the pack is built: it shows these
    except Exception as exc:  # a session-start hook must never fail the session
        sys.stdout.write(hook_output(kind, _no_pack(exc)))
        return 0
    text = _capture(kind, args, run)
    if shown is not None and not text.startswith(NO_PACK):
        from rouse.agents.prompt_hook import mark_seen

        mark_seen(shown[0], session.get("session_id"), *shown[1:])
    sys.stdout.write(hook_output(kind, text))
    return 0


NO_PACK = "rouse: no memory pack this session: "


def _capture(kind: str, args: Namespace, run: Callable[[Namespace], int]) -> str:
    """The pack as the hook gives it, or one line saying why there is none."""
    import contextlib
    import io

    from rouse.pack.render import HardWall

    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out), HardWall(HOOK_WALL, MEASURES.get(kind, len)):
            run(args)
    except Exception as exc:  # a hook must never fail the session
        return _no_pack(exc)
    return out.getvalue()


def _no_pack(exc: Exception) -> str:
    from rouse.core.errors import RouseError

    if isinstance(exc, RouseError):
        return f"{NO_PACK}{exc.render()}\n"
    return f"{NO_PACK}internal error {_detail(exc)} (run `rouse pack` by hand to see it)\n"


def _late_start(
    kind: str,
    args: Namespace,
    session: Mapping[str, Any],
    run: Callable[[Namespace], int],
    root: str | Path,
) -> int:
    """A prompt in a session no SessionStart hook gave a pack (Gemini CLI runs none over
    ACP): the pack now, once (its seen-set is written first; where none can be kept,
    nothing, rather than a pack at every prompt)."""
    from rouse.agents import prompt_hook as prompt

    if not prompt.mark_seen(root, session.get("session_id"), *prompt.listing(root)):
        return 0
    text = _capture(kind, args, run)
    sys.stdout.write(prompt_output(kind, text))
    return 0


def _nudges_now(
    memory: str | None, session: Mapping[str, Any]
) -> tuple[Path, list[str], list[int] | None] | None:
    """The tree, the nudge files in it now and the folder's stamp, when this session
    can keep a seen-set."""
    if not session.get("session_id"):
        return None
    from rouse.agents.prompt_hook import listing
    from rouse.core.home import find_tree

    root = find_tree(memory, os.environ)
    return (root, *listing(root))


def _now(given: str | None) -> datetime:
    """``--now``, else ``$ROUSE_NOW``, else the wall clock (a bad value: the wall clock)."""
    import contextlib
    from datetime import datetime

    from rouse.core.humantime import parse_when
    from rouse.core.timefmt import parse_stamp

    given = given or os.environ.get("ROUSE_NOW")
    wall = datetime.now().replace(microsecond=0)
    if given:
        with contextlib.suppress(ValueError):
            return parse_stamp(given)
        with contextlib.suppress(ValueError):
            return parse_when(given, wall)  # a human form: tomorrow 09:00, +2h
    return wall
