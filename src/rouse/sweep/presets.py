"""How each agent CLI is started for one unattended run: data, one table.

Each preset is built from that tool's documented non-interactive mode (see
docs/sweeper.md for the pages): Claude Code's print mode with JSON output
(``claude -p --output-format json``, the prompt on stdin) and Codex's
``codex exec`` (``-`` as the prompt: read it from stdin). Permission and
sandbox flags are deliberately absent: the user chooses them, after ``--``
(``--run claude -- --permission-mode acceptEdits``); they go where ``extra``
sits in the command line.
"""

from __future__ import annotations

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


def command(kind: str, extra: list[str]) -> list[str]:
    """The argv of a run: the preset with the user's ``extra`` arguments, or ``extra``."""
    if kind == "exec":
        return list(extra)
    head, tail, _docs = PRESETS[kind]
    return [*head, *extra, *tail]
