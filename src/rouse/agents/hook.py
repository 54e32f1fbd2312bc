"""``rouse pack --hook claude|codex``: the pack as an agent's SessionStart hook.

This is what an agent runs at every session start, so it stays as light as
the pack itself (no ``wire``, which pulls in dataclasses and argparse).
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from collections.abc import Callable

from rouse.core.errors import RouseError

# typing costs ~5 ms to import on the pack's start-up path; annotations are
# strings here (__future__), so these are only imported for the type checker
TYPE_CHECKING = False
if TYPE_CHECKING:
    from argparse import Namespace

HOOK_LIMIT = 10_000  # Claude Code's cap on hook output, in characters
HOOK_MAX_CHARS = 9_000  # what the pack is asked to fit, leaving room to spare


def cap(text: str, limit: int = HOOK_LIMIT) -> str:
    """Hard-cap ``text`` at ``limit`` characters, saying so (the pack should already fit)."""
    if len(text) <= limit:
        return text
    tail = "\n… (cut to fit the hook limit: run `rouse pack` for the rest)\n"
    return text[: limit - len(tail)] + tail


def hook_output(kind: str, text: str) -> str:
    """What a SessionStart hook prints: plain text for Claude, strict JSON for Codex."""
    text = cap(text)
    if kind == "codex":
        payload = {
            "hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": text}
        }
        return json.dumps(payload, ensure_ascii=False) + "\n"
    return text if text.endswith("\n") else text + "\n"


def pack_hook(args: Namespace, run: Callable[[Namespace], int]) -> int:
    """Run the pack verb, capture it, and never fail the session.

    Whatever goes wrong (no tree, a broken file, a bug) becomes one line of
    context saying so, and the exit code is 0.
    """
    kind = args.hook
    args.hook, args.json = None, False
    args.max_chars = min(args.max_chars, HOOK_MAX_CHARS)
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            run(args)
        text = out.getvalue()
    except RouseError as exc:
        text = f"rouse: no memory pack this session: {exc.render()}\n"
    except Exception as exc:  # a session-start hook must never fail the session
        text = (
            f"rouse: no memory pack this session: internal error {type(exc).__name__}: {exc} "
            "(run `rouse pack` by hand to see it)\n"
        )
    sys.stdout.write(hook_output(kind, text))
    return 0
