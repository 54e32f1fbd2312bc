"""Gemini CLI: a SessionStart hook (the pack), a BeforeAgent hook (new wakes) and an
AfterAgent hook (a promise left without a record, issue 33).

Gemini CLI reads hooks from ``.gemini/settings.json`` (the project's,
committed with it) and ``~/.gemini/settings.json`` (the user's), in Claude
Code's shape: event → groups → ``{"type": "command", "command": …}``. A hook
answers on stdout with JSON only; ``hookSpecificOutput.additionalContext``
of a ``SessionStart`` hook opens the session, of a ``BeforeAgent`` hook is
added before the model sees the prompt (rouse's UserPromptSubmit, under
Gemini's name). Gemini CLI sets ``$GEMINI_PROJECT_DIR`` in the hook's
environment and substitutes it into the command, so the project's file
names the tree by ``"$GEMINI_PROJECT_DIR/memory"``: no path of this machine.
Lifecycle matchers are exact strings there, so the SessionStart hook has
none: it runs for every source (startup, resume, clear). The AfterAgent hook may
answer ``{"decision": "deny", "reason": …}``, which Gemini CLI sends to the agent
as a new prompt (:mod:`rouse.agents.promise_hook`).
"""

from __future__ import annotations

from pathlib import Path

from rouse.agents import settings_hooks as hooks
from rouse.agents.wiring import Wired, Wiring

GEMINI_SETTINGS = ".gemini/settings.json"
LABEL = "Gemini CLI SessionStart, BeforeAgent"
LABEL_PROMISES = LABEL + ", AfterAgent"


def gemini_path(w: Wiring) -> Path:
    return (w.home if w.project is None else w.project) / GEMINI_SETTINGS


def wire_gemini_hooks(
    w: Wiring, result: Wired, executable: str | None, promises: bool = True
) -> None:
    shared = w.project is not None
    command = hooks.hook_command(w, "gemini", executable, shared=shared)
    prompt = hooks.hook_command(w, "gemini", executable, hooks.PROMPT, shared)
    check = hooks.hook_command(w, "gemini", executable, hooks.PROMISES, shared)
    result.done += hooks.wire_hook_files(
        gemini_path(w),
        (),
        command,
        None,
        LABEL_PROMISES if promises else LABEL,
        prompt,
        prompt_event=hooks.BEFORE_AGENT,
        promise_command=check if promises else None,
        promise_event=hooks.AFTER_AGENT,
    )
