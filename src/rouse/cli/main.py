"""The command line's entry: read the arguments, run the verb, turn errors into exit codes.

One small function per verb — parse, call, print — lives in the verb group's
module (read, write, sweeping, agents); no behaviour lives only in the CLI:
every verb calls a library function that the MCP server can call too. A plain
``rouse pack`` is read here without argparse (:func:`_quick_pack`); anything
else builds the parser of just the verb named (:mod:`rouse.cli.parser`).
"""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Callable, Sequence
from types import SimpleNamespace

from rouse.cli.common import (
    _LEFT_BEHIND,
    HOOK_KINDS,
)
from rouse.cli.read import PACK_DEFAULTS, cmd_pack
from rouse.core.errors import RouseError

# typing costs ~5 ms to import on the pack's start-up path; annotations are
# strings here (__future__), so it is only imported for the type checker
TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from typing import Any


LONG_RUNNING = frozenset({"sweep", "mcp", "deliver"})


#: Each option the quick parse takes: its destination and how to read its value.
_PACK_OPTIONS: dict[str, tuple[str, Callable[[str], Any] | None]] = {
    "--memory": ("memory", str),
    "--now": ("now", str),
    "--query": ("query", str),
    "--json": ("json", None),
    "--max-chars": ("max_chars", int),
    "--probe-budget": ("probe_budget", int),
    "--hook": ("hook", str),
}
_GLOBAL_DESTS = frozenset({"memory", "now"})


def _quick_pack(argv: Sequence[str]) -> argparse.Namespace | None:
    """``rouse pack`` read without argparse, or None to let argparse read it.

    ``rouse pack`` runs at every session start, and importing and building
    argparse costs ~9 ms of it. Only exact, well-formed spellings are taken
    here; anything else (help, an abbreviation, a bad value, a value that
    looks like an option) returns None, and argparse reads it and says what is
    wrong. tests/test_cli.py checks that both read every accepted form alike.
    """
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
    # it reads like argparse.Namespace (plain attributes), which is not imported
    args: argparse.Namespace = SimpleNamespace(  # type: ignore[assignment]
        verb="pack", handler=cmd_pack, **values
    )
    return args


def _quick_status(argv: Sequence[str]) -> argparse.Namespace | None:
    """``rouse [--memory DIR] [--now WHEN] status [--json]`` read without argparse (a
    monitor's or an agent's look, ~9 ms less), or None to let argparse read it.

    Only these exact spellings; tests/test_cli.py checks that both read them alike.
    """
    values = _quick_plain(argv, "status")
    if values is None:
        return None
    from rouse.cli.sweeping import cmd_status

    args: argparse.Namespace = SimpleNamespace(  # type: ignore[assignment]
        verb="status", handler=cmd_status, check=False, ledger=None, **values
    )
    return args


def _quick_due(argv: Sequence[str]) -> argparse.Namespace | None:
    """``rouse [--memory DIR] [--now WHEN] due [--json]`` without argparse, as status."""
    values = _quick_plain(argv, "due")
    if values is None:
        return None
    from rouse.cli.read import cmd_due

    args: argparse.Namespace = SimpleNamespace(  # type: ignore[assignment]
        verb="due", handler=cmd_due, until=None, **values
    )
    return args


def _quick_plain(argv: Sequence[str], verb: str) -> dict[str, Any] | None:
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


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = _quick_pack(argv) or _quick_status(argv) or _quick_due(argv)
    if args is None:
        from rouse.cli.parser import build_parser, mistyped_verb, verb_named

        wrong = mistyped_verb(argv)
        if wrong is not None:
            print(f"rouse: {wrong}", file=sys.stderr)
            return 2
        parser = build_parser(verb_named(argv))
        args = parser.parse_args(argv)
        if not getattr(args, "handler", None):
            parser.print_help()
            return 2
    collecting = gc.isenabled()
    if args.verb not in LONG_RUNNING:
        # a short-lived process: reference counting frees what it builds, and
        # the cyclic collector would only rescan the tree's objects for nothing
        gc.disable()
    try:
        return int(args.handler(args))
    except RouseError as exc:
        print(f"rouse: {exc.render()}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    except OSError as exc:  # the environment: permissions, a full disk, a path in the way
        where = f" {exc.filename}" if exc.filename else ""
        print(
            f"rouse: cannot use{where}: {exc.strerror or exc} — check that the path exists "
            "and that you may read and write it (and its directory)",
            file=sys.stderr,
        )
        return 2
    except Exception as exc:
        if os.environ.get("ROUSE_DEBUG") == "1":
            import traceback

            traceback.print_exc()
        else:
            print(
                f"rouse: internal error: {type(exc).__name__}: {exc} "
                "(set ROUSE_DEBUG=1 for a traceback)",
                file=sys.stderr,
            )
        return 1
    finally:
        if collecting:
            gc.enable()


def run() -> None:
    """The console entry point (and ``python -m rouse``): ``main``, then exit.

    ``rouse pack`` runs at every session start. When it has finished (its
    caches saved, its output written), the process ends without tearing down
    the tree it built: on a large tree that teardown alone costs several
    percent of the run. Every other verb exits normally.
    """
    code = main()
    if _LEFT_BEHIND:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except OSError:
            code = code or 1  # the reader went away: nothing more to say
        os._exit(code)
    raise SystemExit(code)
