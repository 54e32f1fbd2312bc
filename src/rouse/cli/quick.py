"""``rouse pack`` read without argparse: the pack's and the hooks' start-up path.

``rouse pack`` runs at every session start, and ``rouse pack --hook KIND`` at
every prompt and every turn's end; importing and building argparse costs ~9 ms
of that. Only exact, well-formed spellings are taken here
(:func:`quick_values`); anything else (help, an abbreviation, a bad value, a
value that looks like an option) gives None, and argparse reads it and says
what is wrong. tests/test_cli.py checks that both read every accepted form
alike. Imports nothing: the idle hooks' import set is pinned
(tests/test_hook_quick.py).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

#: The agents ``--hook`` knows.
HOOK_KINDS = ("claude", "codex", "cursor", "gemini", "opencode")

#: ``rouse pack``'s values when not given (argparse's defaults for it too).
PACK_DEFAULTS: dict[str, Any] = {
    "memory": None,
    "now": None,
    "query": None,
    "json": False,
    "max_chars": 9000,
    "probe_budget": 150,
    "hook": None,
    "promises": False,
}

#: Each option the quick parse takes: its destination and how to read its value.
_PACK_OPTIONS: dict[str, tuple[str, Callable[[str], Any] | None]] = {
    "--memory": ("memory", str),
    "--now": ("now", str),
    "--query": ("query", str),
    "--json": ("json", None),
    "--max-chars": ("max_chars", int),
    "--probe-budget": ("probe_budget", int),
    "--hook": ("hook", str),
    "--promises": ("promises", None),
}
_GLOBAL_DESTS = frozenset({"memory", "now"})


def quick_values(argv: Sequence[str]) -> dict[str, Any] | None:
    """``rouse pack``'s values as argparse would read them, or None to let argparse read it."""
    values = dict(PACK_DEFAULTS)
    verb = False
    index = 0
    while index < len(argv):
        token = argv[index]
        index += 1
        if token == "pack" and not verb:
            verb = True
            continue
        name, equals, value = token.partition("=")
        option = _PACK_OPTIONS.get(name)
        if option is None:
            return None
        dest, read = option
        if not verb and dest not in _GLOBAL_DESTS:
            return None  # a pack option before the verb: argparse's error
        if read is None:  # a flag
            if equals:
                return None
            values[dest] = True
            continue
        if not equals:
            if index >= len(argv) or argv[index].startswith("-"):
                return None
            value = argv[index]
            index += 1
        try:
            values[dest] = read(value)
        except ValueError:
            return None
    if not verb or values["hook"] not in (None, *HOOK_KINDS):
        return None
    return values


def plain_values(argv: Sequence[str], verb: str) -> dict[str, Any] | None:
    """The values of ``[--memory DIR] [--now WHEN] VERB [--json]``, or None for any
    other spelling (argparse reads it and says what is wrong)."""
    values: dict[str, Any] = {"memory": None, "now": None, "json": False}
    seen = False
    index = 0
    while index < len(argv):
        token = argv[index]
        index += 1
        if token == verb and not seen:
            seen = True
        elif token == "--json" and seen and not values["json"]:
            values["json"] = True
        elif token in ("--memory", "--now") and not seen and index < len(argv):
            value = argv[index]
            if value.startswith("-") or not value:
                return None
            values[token[2:]] = value
            index += 1
        else:
            return None
    return values if seen else None
