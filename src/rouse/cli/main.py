"""The command line's entry: read the arguments, run the verb, turn errors into exit codes.

One small function per verb — parse, call, print — lives in the verb group's
module (read, write, sweeping, agents); no behaviour lives only in the CLI:
every verb calls a library function that the MCP server can call too. A plain
``rouse pack``, ``status`` or ``due`` is read without argparse
(:mod:`rouse.cli.quick`); anything else builds the parser of just the verb
named (:mod:`rouse.cli.parser`).

``rouse pack --hook KIND`` runs at every prompt and every turn's end of an
agent's session, and with nothing new it should cost little more than
starting Python: it goes straight to :func:`rouse.agents.hook.pack_hook`,
and this module imports nothing else until a verb needs it (what the idle
hooks load is pinned by tests/test_hook_quick.py).
"""

from __future__ import annotations

import gc
import os
import sys

from rouse.cli.quick import quick_values

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence
    from typing import Any


LONG_RUNNING = frozenset({"sweep", "mcp", "deliver"})
#: Set once an agent's hook has run: its process ends without tearing down (see ``run``).
_hooked = False


class _Args:
    """What the quick parse gives: plain attributes, read like ``argparse.Namespace``
    (which is not imported for it)."""

    def __init__(self, **values: Any) -> None:
        self.__dict__.update(values)


def _quick(argv: Sequence[str], verb: str) -> argparse.Namespace | None:
    """``rouse VERB`` read without argparse (:mod:`rouse.cli.quick`), or None to let
    argparse read it."""
    values = quick_values(argv, verb)
    if values is None:
        return None
    if verb == "status":
        from rouse.cli.sweeping import cmd_status as handler
    else:
        from rouse.cli.read import cmd_due, cmd_pack

        handler = cmd_pack if verb == "pack" else cmd_due
    args: argparse.Namespace = _Args(verb=verb, handler=handler, **values)  # type: ignore[assignment]
    return args


def _pack_hook(args: argparse.Namespace) -> int:
    """``rouse pack --hook KIND`` (what ``cmd_pack`` does with it, without importing
    the pack's verb unless the hook is a session start)."""
    from rouse.agents.hook import pack_hook

    return pack_hook(args, _pack)


def _pack(args: argparse.Namespace) -> int:
    from rouse.cli.read import cmd_pack

    return cmd_pack(args)


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    values = quick_values(argv, "pack")
    args: argparse.Namespace | None
    if values is not None and values["hook"] is not None:
        # the hook reads what called it: a prompt or a turn's end imports no pack
        global _hooked
        _hooked = True
        args = _Args(verb="pack", handler=_pack_hook, **values)  # type: ignore[assignment]
    else:
        args = _quick(argv, "pack") or _quick(argv, "status") or _quick(argv, "due")
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
        from rouse.core.errors import RouseError  # (never an OSError)

        if isinstance(exc, RouseError):
            print(f"rouse: {exc.render()}", file=sys.stderr)
            return exc.exit_code
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
    percent of the run. An agent's hook (``--hook``) ends so too, once its answer
    is written: it runs at every prompt and turn's end, and the interpreter's own
    teardown (~2 ms, as much as a third of an idle hook's work) is time the agent
    waits for. Every other verb exits normally.
    """
    code = main()
    common = sys.modules.get("rouse.cli.common")  # not imported: nothing was left behind
    if _hooked or (common is not None and common.LEFT_BEHIND):
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except OSError:
            code = code or 1  # the reader went away: nothing more to say
        os._exit(code)
    raise SystemExit(code)
