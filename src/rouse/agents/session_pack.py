"""The pack as a hook gives it: at session start, or at the first prompt of a session
no SessionStart hook served (Gemini CLI runs none over ACP).

Loaded by :mod:`rouse.agents.hook` only when a pack is to be built, never on an idle
prompt's path. Each writes the session's seen-set (:mod:`rouse.agents.prompt_hook`),
so a wake its pack shows is not handed to a later prompt again.
"""

from __future__ import annotations

import os
import sys

from rouse.agents.hookio import HOOK_WALL, MEASURES, gives_way, hook_output

TYPE_CHECKING = False
if TYPE_CHECKING:
    from argparse import Namespace
    from collections.abc import Callable, Mapping
    from pathlib import Path
    from typing import Any


def start(
    kind: str, args: Namespace, session: Mapping[str, Any], run: Callable[[Namespace], int]
) -> int:
    """SessionStart: the pack, and the session's seen-set of the wakes it shows."""
    try:
        memory = getattr(args, "memory", None)
        if gives_way(kind, memory, session, os.environ):
            return 0
        shown = nudges_now(memory, session)  # before the pack is built: it shows these
    except Exception as exc:  # a session-start hook must never fail the session
        sys.stdout.write(hook_output(kind, no_pack(exc)))
        return 0
    text = capture(kind, args, run)
    if shown is not None and not text.startswith(NO_PACK):
        from rouse.agents.prompt_hook import mark_seen

        mark_seen(shown[0], session.get("session_id"), *shown[1:])
    sys.stdout.write(hook_output(kind, text))
    return 0


NO_PACK = "rouse: no memory pack this session: "


def capture(kind: str, args: Namespace, run: Callable[[Namespace], int]) -> str:
    """The pack as the hook gives it, or one line saying why there is none."""
    import contextlib
    import io

    from rouse.pack.render import HardWall

    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out), HardWall(HOOK_WALL, MEASURES.get(kind, len)):
            run(args)
    except Exception as exc:  # a hook must never fail the session
        return no_pack(exc)
    return out.getvalue()


def no_pack(exc: Exception) -> str:
    from rouse.core.errors import RouseError

    if isinstance(exc, RouseError):
        return f"{NO_PACK}{exc.render()}\n"
    return (
        f"{NO_PACK}internal error {type(exc).__name__}: {exc} "
        "(run `rouse pack` by hand to see it)\n"
    )


def late_start(
    kind: str,
    args: Namespace,
    session: Mapping[str, Any],
    run: Callable[[Namespace], int],
    root: str | Path,
) -> int:
    """A prompt in a session no SessionStart hook gave a pack: the pack now, once (its
    seen-set is written first; where none can be kept, nothing, rather than a pack at
    every prompt)."""
    from rouse.agents import prompt_hook as prompt

    if not prompt.mark_seen(root, session.get("session_id"), *prompt.listing(root)):
        return 0
    text = capture(kind, args, run)
    sys.stdout.write(prompt.prompt_output(kind, text))
    return 0


def nudges_now(
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
