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

from rouse.agents.hook_commands import AFTER_AGENT, BEFORE_AGENT, PROMISES, PROMPT, hook_command
from rouse.agents.settings_hooks import HookSet, gemini_path, wire_hook_files
from rouse.agents.wiring import Wired, Wiring

LABEL = "Gemini CLI SessionStart, BeforeAgent"
LABEL_PROMISES = LABEL + ", AfterAgent"


def wire_gemini_hooks(
    w: Wiring, result: Wired, executable: str | None, promises: bool = True
) -> None:
    shared = w.project is not None
    check = hook_command(w, "gemini", executable, PROMISES, shared) if promises else None
    wanted = HookSet(
        hook_command(w, "gemini", executable, shared=shared),
        None,
        prompt_command=hook_command(w, "gemini", executable, PROMPT, shared),
        prompt_event=BEFORE_AGENT,
        promise_command=check,
        promise_event=AFTER_AGENT,
    )
    label = LABEL_PROMISES if promises else LABEL
    result.done += wire_hook_files(gemini_path(w), (), wanted, label)
