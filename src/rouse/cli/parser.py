"""The argparse side: every verb's options, its help text and its handler, in one table."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from rouse import __version__
from rouse.cli import agents, fleet, read, service, stamp, sweeping, work, write
from rouse.cli.common import global_options

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from types import ModuleType


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


#: Every verb: the module of its ``cmd_VERB`` (and of its ``args_VERB``, when it takes
#: options), and its one-line help.
VERBS: dict[str, tuple[ModuleType, str]] = {
    "init": (write, "lay a new memory tree with examples and its own git repository"),
    "pack": (read, "print the block for the top of a session (read-only)"),
    "probe": (read, "run one demand probe, or list every probe with its reading"),
    "recall": (read, "search notes, backlog, records and context by keywords"),
    "due": (read, "what the clock would wake about now, one line each"),
    "tree": (read, "the ladder: context, records by nesting, inventory"),
    "check": (read, "lint the tree; exit 1 on errors"),
    "new": (write, "write a record, context file or note with a fresh header"),
    "move": (write, "stamp last-moved: now (the record moved)"),
    "snooze": (write, "push a record so it next comes due at WHEN"),
    "explain": (read, "why a record is or is not due, and when it next will be"),
    "close": (write, "end a record out loud (nothing is deleted)"),
    "review": (
        write,
        "say a note is still true: reviewed: now, its probes' readings its new baseline",
    ),
    "forget": (write, "replace a note's or context file's text with the reason it was forgotten"),
    "promote": (write, "turn a backlog item into an open intention"),
    "remind": (write, "shorthand for a new reminder"),
    "tell": (
        write,
        "reach the owner: a message about a record, delivered by the sweeper's channels",
    ),
    "cancel": (
        work,
        "call a task off: a cancel: stamp (a running one is stopped, a pending one ends)",
    ),
    "checkpoint": (
        work,
        "a task's progress: a dated line in its log and a wake to whoever watches",
    ),
    "stamp": (stamp, "write origin (and origin-turn) into files: for wrappers"),
    "status": (sweeping, "counts per level, what is due, the sweeper and ledger"),
    "sweep": (sweeping, "run the clock: deliver a wake for each due record, then stamp"),
    "work": (
        work,
        "the task worker: claim pending tasks once, run each in an agent, record the result",
    ),
    "log": (sweeping, "the ledger's recent wakes: id, record, reason, sink, state, times"),
    "deliver": (
        fleet,
        "a fleet's delivery worker: claim owed wakes from a shared ledger and send them",
    ),
    "fleet": (fleet, "one view of every tree in a fleet's database: status, due, recall"),
    "service": (
        service,
        "run the sweeper as a service: install, status, uninstall (systemd, launchd, cron)",
    ),
    "wire": (agents, "wire the tree into agents: CLAUDE.md/AGENTS.md, hooks, rules"),
    "mcp": (agents, "serve the memory as MCP tools over stdio (needs the mcp extra)"),
    "help": (sys.modules[__name__], "this help, or one verb's: rouse help VERB"),
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
    for name, (module, help_text) in VERBS.items():
        if only is not None and name != only:
            continue
        sub = verbs.add_parser(
            name, help=help_text, description=help_text, formatter_class=formatter
        )
        global_options(sub, suppress=True)
        sub.set_defaults(handler=getattr(module, f"cmd_{name}"))
        add_arguments = getattr(module, f"args_{name}", None)
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
    word = verb_named(argv)
    if word is None or word in VERBS:
        return None
    return no_such_verb(word)


#: Top-level options that take a value, and the spelled-out names argparse
#: accepts abbreviations of.
_VALUE_OPTIONS = ("--memory", "--now")


def verb_named(argv: Sequence[str]) -> str | None:
    """The word in the verb's place, if only --memory/--now come before it; else None.

    None (anything else before the verb, such as --help) means: build the whole
    parser, so help and errors read as they always have. A word that is no verb
    is :func:`mistyped_verb`'s, asked first.
    """
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
