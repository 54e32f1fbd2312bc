"""``rouse pack``, ``status`` and ``due`` read without argparse: their start-up path.

``rouse pack`` runs at every session start, and ``rouse pack --hook KIND`` at
every prompt and every turn's end; ``status`` and ``due`` are a monitor's and an
agent's quick looks. Importing and building argparse costs ~6–13 ms of CPU
for each, and loading the pack verb's module before an idle hook knows that
nothing is new ~35 ms (measured in issue 30). Only exact, well-formed
spellings are taken here (:func:`quick_values`); anything else (help, an
abbreviation, a bad value, a value that looks like an option, an option not in
:data:`VERBS`) gives None, and argparse reads it and says what is wrong.
tests/test_cli.py checks that both read every accepted form alike. Imports
nothing: the idle hooks' import set is pinned (tests/test_hook_quick.py).
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

Options = dict[str, tuple[str, "Callable[[str], Any] | None"]]
#: The options taken before the verb: each one's destination and how to read its value.
GLOBAL: Options = {"--memory": ("memory", str), "--now": ("now", str)}
_JSON: Options = {"--json": ("json", None)}  # (a reader of None: a flag)
#: Each verb read here: the options taken after it, and the values when not given.
VERBS: dict[str, tuple[Options, dict[str, Any]]] = {
    "pack": (
        {
            **GLOBAL,
            **_JSON,
            "--query": ("query", str),
            "--max-chars": ("max_chars", int),
            "--probe-budget": ("probe_budget", int),
            "--hook": ("hook", str),
            "--promises": ("promises", None),
        },
        PACK_DEFAULTS,
    ),
    "status": (_JSON, {"memory": None, "now": None, "json": False, "check": False, "ledger": None}),
    "due": (_JSON, {"memory": None, "now": None, "json": False, "until": None}),
}


def quick_values(argv: Sequence[str], verb: str) -> dict[str, Any] | None:
    """``rouse VERB``'s values as argparse would read them, or None to let argparse read it."""
    options, defaults = VERBS[verb]
    values = dict(defaults)
    seen = False
    index = 0
    while index < len(argv):
        token = argv[index]
        index += 1
        if token == verb and not seen:
            seen = True
            continue
        name, equals, value = token.partition("=")
        option = (options if seen else GLOBAL).get(name)
        if option is None:
            return None  # (a verb's option before the verb: argparse's error)
        dest, read = option
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
    if not seen or values.get("hook") not in (None, *HOOK_KINDS):
        return None
    return values
