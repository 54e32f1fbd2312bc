"""How each agent CLI is started for one unattended run: data, one table.

Each preset is built from that tool's documented non-interactive mode (see
docs/sweeper.md for the pages): Claude Code's print mode with JSON output
(``claude -p --output-format json``, the prompt on stdin) and Codex's
``codex exec`` (``-`` as the prompt: read it from stdin). Permission and
sandbox flags are deliberately absent: the user chooses them, after ``--``
(``--run claude -- --permission-mode acceptEdits``); they go where ``extra``
sits in the command line.

A task's ``model`` and ``reasoning`` fields map to each CLI's documented
flags (``TASK_FLAGS``); where a CLI has no such setting the worker says it in
the prompt instead. How a run's result is read back is ``RESULTS``: Claude
Code's JSON ``result``, Codex's last agent message (``--output-last-message``),
and for any other command the tail of its output.
"""

from __future__ import annotations

import json
import re

#: name → (the command before the user's extra arguments, the part after them,
#: the documentation it follows)
PRESETS: dict[str, tuple[tuple[str, ...], tuple[str, ...], str]] = {
    "claude": (
        ("claude", "-p", "--output-format", "json"),
        (),
        "https://docs.claude.com/en/docs/claude-code/headless",
    ),
    "codex": (
        ("codex", "exec"),
        ("-",),
        "https://developers.openai.com/codex/noninteractive",
    ),
}
#: what ``--run`` takes: a preset, or ``exec`` with the whole command after ``--``
KINDS = (*PRESETS, "exec")

#: preset → task field → the flags that carry its value (``{}`` is the value).
#: Claude Code 2.1: ``--model``, ``--effort low|medium|high|xhigh|max``;
#: Codex 0.171: ``--model``, and the ``model_reasoning_effort`` config key.
TASK_FLAGS: dict[str, dict[str, tuple[str, ...]]] = {
    "claude": {"model": ("--model", "{}"), "reasoning": ("--effort", "{}")},
    "codex": {"model": ("--model", "{}"), "reasoning": ("-c", "model_reasoning_effort={}")},
}
#: The flag with which Codex writes its last agent message to a file.
CODEX_LAST_MESSAGE = "--output-last-message"
#: The most of a run's result the task's log keeps, in characters.
MAX_RESULT = 2000


#: What a task's ``model`` or ``reasoning`` may be to become a flag: one plain word of a
#: model's name (``opus``, ``gpt-5.1-codex``, ``openai/gpt-4o``, ``sonnet[1m]``), never
#: an option (``-…``), a space or anything a CLI or a TOML value could read as more.
FLAG_VALUE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@/+\[\]-]{0,99}")


def task_command(
    kind: str,
    extra: list[str],
    fields: dict[str, str],
    last_message: str | None = None,
    origin: str = "owner",
) -> tuple[list[str], list[str]]:
    """The argv of a task's run, and the fields it did not pass as flags (said in the
    prompt instead, by the fence rule of the task's origin): all of them for a command
    with no such flags (``exec``), an untrusted task's (it does not choose how it runs),
    and a value that is not one plain word (:data:`FLAG_VALUE`).
    ``last_message``: where Codex writes its last message."""
    wanted = [name for name in ("model", "reasoning") if fields.get(name, "").strip()]
    if kind == "exec":
        return list(extra), wanted
    flags: list[str] = []
    unflagged: list[str] = []
    for name, shape in TASK_FLAGS[kind].items():
        value = fields.get(name, "").strip()
        if not value:
            continue
        if origin == "untrusted" or not FLAG_VALUE.fullmatch(value):
            unflagged.append(name)
            continue
        flags += [part.replace("{}", value) for part in shape]
    if kind == "codex" and last_message:
        flags += [CODEX_LAST_MESSAGE, last_message]
    head, tail, _docs = PRESETS[kind]
    return [*head, *flags, *extra, *tail], unflagged


def result_of(kind: str, output: bytes, last_message: bytes | None = None) -> str:
    """A run's final message, as its CLI documents it; '' when there is none."""
    text = ""
    if kind == "claude":
        for line in reversed(output.decode("utf-8", "replace").strip().splitlines()):
            try:
                found = json.loads(line)
            except ValueError:
                continue
            if isinstance(found, dict) and isinstance(found.get("result"), str):
                text = found["result"]
                break
    elif kind == "codex" and last_message is not None:
        text = last_message.decode("utf-8", "replace")
    if not text and kind != "claude":
        lines = output.decode("utf-8", "replace").strip().splitlines()
        text = "\n".join(lines[-20:])
    text = text.strip()
    return text if len(text) <= MAX_RESULT else "…" + text[-(MAX_RESULT - 1) :]
