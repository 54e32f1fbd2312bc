"""The argparse side: every verb's options, its help text and its handler, in one table."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence

from rouse import __version__
from rouse.cli.agents import args_wire, cmd_mcp, cmd_wire
from rouse.cli.common import global_options
from rouse.cli.deliver import args_deliver, cmd_deliver
from rouse.cli.fleet import args_fleet, cmd_fleet
from rouse.cli.read import (
    args_check,
    args_due,
    args_explain,
    args_pack,
    args_probe,
    args_recall,
    args_tree,
    cmd_check,
    cmd_due,
    cmd_explain,
    cmd_pack,
    cmd_probe,
    cmd_recall,
    cmd_tree,
)
from rouse.cli.service import args_service, cmd_service
from rouse.cli.stamp import args_stamp, cmd_stamp
from rouse.cli.sweeping import args_log, args_status, args_sweep, cmd_log, cmd_status, cmd_sweep
from rouse.cli.work import (
    args_cancel,
    args_checkpoint,
    args_work,
    cmd_cancel,
    cmd_checkpoint,
    cmd_work,
)
from rouse.cli.write import (
    args_close,
    args_forget,
    args_init,
    args_move,
    args_new,
    args_promote,
    args_remind,
    args_review,
    args_snooze,
    args_tell,
    cmd_close,
    cmd_forget,
    cmd_init,
    cmd_move,
    cmd_new,
    cmd_promote,
    cmd_remind,
    cmd_review,
    cmd_snooze,
    cmd_tell,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable

    Handler = Callable[[argparse.Namespace], int]


def cmd_help(args: argparse.Namespace) -> int:
    """``rouse help [VERB]``: the top help, or one verb's (as ``rouse VERB --help``)."""
    topic = args.topic
    if topic is None:
        build_parser().print_help()
        return 0
    if topic not in VERBS:
        from rouse.core.errors import UsageError

        raise UsageError(no_such_verb(topic))
    verb_parser(topic).print_help()
    return 0


def args_help(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("topic", nargs="?", metavar="VERB", help="the verb to explain")


#: Every verb: its handler, its one-line help, and what adds its arguments.
VERBS: dict[str, tuple[Handler, str, Callable[[argparse.ArgumentParser], None] | None]] = {
    "init": (
        cmd_init,
        "lay a new memory tree with examples and its own git repository",
        args_init,
    ),
    "pack": (cmd_pack, "print the block for the top of a session (read-only)", args_pack),
    "probe": (cmd_probe, "run one demand probe, or list every probe with its reading", args_probe),
    "recall": (cmd_recall, "search notes, backlog, records and context by keywords", args_recall),
    "due": (cmd_due, "what the clock would wake about now, one line each", args_due),
    "tree": (cmd_tree, "the ladder: context, records by nesting, inventory", args_tree),
    "check": (cmd_check, "lint the tree; exit 1 on errors", args_check),
    "new": (cmd_new, "write a record, context file or note with a fresh header", args_new),
    "move": (cmd_move, "stamp last-moved: now (the record moved)", args_move),
    "snooze": (cmd_snooze, "push a record so it next comes due at WHEN", args_snooze),
    "explain": (
        cmd_explain,
        "why a record is or is not due, and when it next will be",
        args_explain,
    ),
    "close": (cmd_close, "end a record out loud (nothing is deleted)", args_close),
    "review": (
        cmd_review,
        "say a note is still true: reviewed: now, its probes' readings its new baseline",
        args_review,
    ),
    "forget": (
        cmd_forget,
        "replace a note's or context file's text with the reason it was forgotten",
        args_forget,
    ),
    "promote": (cmd_promote, "turn a backlog item into an open intention", args_promote),
    "remind": (cmd_remind, "shorthand for a new reminder", args_remind),
    "tell": (
        cmd_tell,
        "reach the owner: a message about a record, delivered by the sweeper's channels",
        args_tell,
    ),
    "cancel": (
        cmd_cancel,
        "call a task off: a cancel: stamp (a running one is stopped, a pending one ends)",
        args_cancel,
    ),
    "checkpoint": (
        cmd_checkpoint,
        "a task's progress: a dated line in its log and a wake to whoever watches",
        args_checkpoint,
    ),
    "stamp": (cmd_stamp, "write origin (and origin-turn) into files: for wrappers", args_stamp),
    "status": (cmd_status, "counts per level, what is due, the sweeper and ledger", args_status),
    "sweep": (
        cmd_sweep,
        "run the clock: deliver a wake for each due record, then stamp",
        args_sweep,
    ),
    "work": (
        cmd_work,
        "the task worker: claim pending tasks once, run each in an agent, record the result",
        args_work,
    ),
    "log": (
        cmd_log,
        "the ledger's recent wakes: id, record, reason, sink, state, times",
        args_log,
    ),
    "deliver": (
        cmd_deliver,
        "a fleet's delivery worker: claim owed wakes from a shared ledger and send them",
        args_deliver,
    ),
    "fleet": (
        cmd_fleet,
        "one view of every tree in a fleet's database: status, due, recall",
        args_fleet,
    ),
    "service": (
        cmd_service,
        "run the sweeper as a service: install, status, uninstall (systemd, launchd, cron)",
        args_service,
    ),
    "wire": (cmd_wire, "wire the tree into agents: CLAUDE.md/AGENTS.md, hooks, rules", args_wire),
    "mcp": (cmd_mcp, "serve the memory as MCP tools over stdio (needs the mcp extra)", None),
    "help": (cmd_help, "this help, or one verb's: rouse help VERB", args_help),
}


def _columns() -> int:
    """The terminal's width as ``shutil.get_terminal_size`` would give it."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


def _formatter() -> type[argparse.HelpFormatter]:
    """argparse's help formatter, given its width so that it does not import
    ``shutil`` (~5 ms, with bz2 and lzma) at every start just to size help text."""
    import argparse

    class Formatter(argparse.HelpFormatter):
        def __init__(
            self,
            prog: str,
            indent_increment: int = 2,
            max_help_position: int = 24,
            width: int | None = None,
        ):
            if width is None:
                width = _columns() - 2
            super().__init__(prog, indent_increment, max_help_position, width)

    return Formatter


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser with every verb, or (``only``) with just that one verb's subparser.

    Building every verb's subparser costs ~13 ms, and ``rouse pack`` runs at every
    session start: ``main`` builds only the verb it was given (see ``verb_named``),
    and a plain ``rouse pack`` skips argparse altogether (see :mod:`rouse.cli.quick`).
    """
    import argparse

    formatter = _formatter()
    parser = argparse.ArgumentParser(
        prog="rouse",
        description="Agent memory with a clock: plain markdown that comes and finds the agent.",
        formatter_class=formatter,
    )
    parser.add_argument("--version", action="version", version=f"rouse {__version__}")
    global_options(parser, suppress=False)
    verbs = parser.add_subparsers(dest="verb", metavar="VERB")
    for name, (handler, help_text, add_arguments) in VERBS.items():
        if only is not None and name != only:
            continue
        sub = verbs.add_parser(
            name, help=help_text, description=help_text, formatter_class=formatter
        )
        global_options(sub, suppress=True)
        sub.set_defaults(handler=handler)
        if add_arguments is not None:
            add_arguments(sub)
    return parser


def verb_parser(name: str) -> argparse.ArgumentParser:
    """The subparser of one verb, built as ``rouse NAME --help`` builds it."""
    import argparse

    for action in build_parser(name)._actions:
        if isinstance(action, argparse._SubParsersAction):
            sub: argparse.ArgumentParser = action.choices[name]
            return sub
    raise LookupError(name)  # (build_parser always adds the verbs)


def no_such_verb(word: str) -> str:
    """The one-line error for a word that is not a verb, with the nearest verb if any."""
    from difflib import get_close_matches

    near = get_close_matches(word.lower(), VERBS, n=1, cutoff=0.6)
    hint = f"did you mean {near[0]}? " if near else ""
    return f"no verb {word!r}: {hint}(`rouse help` lists every verb)"


def mistyped_verb(argv: Sequence[str]) -> str | None:
    """The error for ``argv`` if the word in the verb's place is not a verb, else None."""
    word = _verb_word(argv)
    if word is None or word in VERBS:
        return None
    return no_such_verb(word)


#: Top-level options that take a value, and the spelled-out names argparse
#: accepts abbreviations of.
_VALUE_OPTIONS = ("--memory", "--now")


def verb_named(argv: Sequence[str]) -> str | None:
    """The verb ``argv`` names, if only --memory/--now come before it; else None.

    None (anything else before the verb, such as --help, or no known verb)
    means: build the whole parser, so help and errors read as they always have.
    """
    word = _verb_word(argv)
    return word if word in VERBS else None


def _verb_word(argv: Sequence[str]) -> str | None:
    """The word in the verb's place, if only --memory/--now come before it; else None."""
    index = 0
    while index < len(argv):
        token = argv[index]
        if not token.startswith("-"):
            return token
        name, equals, _ = token.partition("=")
        if len(name) < 3 or not any(option.startswith(name) for option in _VALUE_OPTIONS):
            return None
        index += 1 if equals else 2
    return None
