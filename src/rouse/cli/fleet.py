"""The fleet's verbs: ``rouse deliver`` (a delivery worker: it claims owed wakes from the
shared ledger) and ``rouse fleet status|due|recall`` (one view of every tree mirrored
into the fleet's database)."""

from __future__ import annotations

import os
import re
import sys

from rouse.cli.common import emit, emit_json, given_now, resolve_now, verbosity_options
from rouse.cli.read import MOST_LISTED, within
from rouse.core.errors import RouseError, UsageError

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse

    from rouse.sweep.sinks import Sink

VIEWS = ("status", "due", "recall")
RECALL_LIMIT = 10


def cmd_fleet(args: argparse.Namespace) -> int:
    from rouse.fleet import due, recall, views
    from rouse.fleet.pg import chosen_dsn

    view, words = args.view, list(getattr(args, "query", None) or [])
    if view == "recall" and not words:  # (argparse requires them: a caller of cmd_fleet may not)
        raise UsageError("rouse fleet recall needs words to look for: rouse fleet recall QUERY")
    limit = args.limit
    if limit is not None:
        within("--limit", limit, 1, MOST_LISTED)
    dsn = chosen_dsn(args.ledger)
    if dsn is None:
        raise UsageError(
            "rouse fleet reads the fleet's database: give --ledger postgresql://… "
            "or set ROUSE_LEDGER"
        )
    now = resolve_now(args)
    db = views.open_fleet(dsn)
    try:
        trees = views.pick_trees(db, args.tree)
        if view == "status":
            found = views.status(db, trees)
            found = found if limit is None else found[:limit]
            if args.json:
                emit_json([item.to_json() for item in found])
            else:
                emit(views.status_lines(found))
                emit(views.worker_lines(views.workers(db, trees), views.database_now(db)))
            if not found:
                print(
                    f"rouse: no tree has reported to the fleet at {db.where} yet "
                    "(a sweeper with --ledger reports its tree at each tick)",
                    file=sys.stderr,
                )
            return 0
        if view == "due":
            items = due.due(db, now, trees, limit)
            if args.json:
                emit_json([item.to_json() for item in items])
            else:
                header = due.due_header(len(items), due.mirrored_tree_count(db, trees), now)
                if header:
                    print(header, file=sys.stderr, flush=True)
                emit(due.due_lines(items, now))
            return 0
        query = " ".join(words)
        limit = RECALL_LIMIT if limit is None else limit
        hits = recall.recall(db, query, trees, limit, getattr(args, "mode", None))
        if args.json:
            emit_json([hit.to_json() for hit in hits])
        else:
            emit(recall.recall_lines(hits, now))
        if not hits:
            raise RouseError(
                f"nothing recalled for {query!r} in the fleet's mirror: try other words"
            )
        return 0
    finally:
        db.close()


#: Each view's help line (``rouse fleet --help`` lists them).
VIEW_HELP = {
    "status": "every tree: its last tick and by whom, who leads, the ledger's wakes, the "
    "mirror; then the delivery workers (host, pid, live or not, last claim)",
    "due": "every mirrored record due now, across trees, as `rouse due` shows it",
    "recall": "search every mirrored tree for QUERY, ranked as `rouse recall` ranks",
}


def _options(parser: argparse.ArgumentParser) -> None:
    """The options every view takes: on ``fleet`` itself, and again after the view's name
    (a view's parser gives no option a default, so a value given before the view is kept)."""
    parser.add_argument(
        "--ledger",
        metavar="DSN",
        help="the fleet's PostgreSQL database, postgresql://… (else $ROUSE_LEDGER)",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="a JSON array instead, times in ISO 8601",
    )
    parser.add_argument(
        "--tree",
        action="extend",
        nargs="+",
        metavar="ID",
        help="only these trees (an id from .rouse-tree, or a unique start of one; default all)",
    )
    parser.add_argument(
        "--limit",
        type=int,
        metavar="N",
        help="at most N rows (recall: default 10; status and due: all)",
    )


def args_fleet(sub: argparse.ArgumentParser) -> None:
    import argparse

    _options(sub)
    views = sub.add_subparsers(dest="view", metavar="VIEW", required=True)
    for name in VIEWS:
        view = views.add_parser(
            name,
            help=VIEW_HELP[name],
            description=VIEW_HELP[name],
            argument_default=argparse.SUPPRESS,
        )
        for option, metavar, text in (
            (
                "--memory",
                "DIR",
                "the tree (else $ROUSE_HOME, the nearest memory/ tree up from here, ~/.rouse)",
            ),
            (
                "--now",
                "WHEN",
                "evaluate the clock at this instant, 'YYYY-MM-DD HH:MM' (else $ROUSE_NOW)",
            ),
        ):
            view.add_argument(option, metavar=metavar, help=text)
        _options(view)
        if name == "recall":
            view.add_argument(
                "query",
                nargs="+",
                metavar="QUERY",
                help="words to look for (any of them; -- before a word starting with -)",
            )
            view.add_argument(
                "--mode",
                choices=("words", "meaning", "both"),
                metavar="MODE",
                help="words (the default, and all the mirror can do: it holds no vectors; "
                "meaning or both is refused, saying so)",
            )


# -- rouse deliver --------------------------------------------------------------

_TREE_ID = re.compile(r"^[0-9a-f]{32}$")
#: The sinks a worker can use: the file sink writes into a tree, and a worker has none.
WORKER_SINKS = "exec (command after --), webhook URL or stdout"


def cmd_deliver(args: argparse.Namespace) -> int:
    import gc

    from rouse.fleet.claims import check_lease, default_lease
    from rouse.fleet.deliver import DEFAULT_BATCH, DEFAULT_EVERY, MOST_BATCH, DeliveryWorker
    from rouse.fleet.pg import chosen_dsn
    from rouse.sweep import loop
    from rouse.sweep.quiet import QuietHours

    gc.enable()  # a long-running verb: the cyclic collector is wanted here
    loop.check_wait("--every", args.every)
    loop.check_wait("--timeout", args.timeout)
    loop.check_wait("--lease", args.lease)
    batch = within("--batch", DEFAULT_BATCH if args.batch is None else args.batch, 1, MOST_BATCH)
    trees = _trees(args.tree)
    sink = _sink(args)
    if args.json and sink.kind == "stdout":
        raise UsageError(
            "--json and --sink stdout would share stdout: drop --json, or use another sink"
        )
    timeout = float(getattr(sink, "timeout", 0.0))
    lease = args.lease if args.lease is not None else default_lease(timeout)
    check_lease(lease, timeout)
    quiet = QuietHours.parse(args.quiet) if args.quiet else None
    dsn = chosen_dsn(args.ledger)
    if dsn is None:
        raise UsageError(
            "rouse deliver needs the fleet's ledger: give --ledger postgresql://USER@HOST/DB "
            "or set ROUSE_LEDGER (workers take wakes that sweepers run --plan-only left there)"
        )
    worker = DeliveryWorker(
        dsn,
        sink,
        timeout=timeout,
        lease=lease,
        batch=batch,
        every=args.every if args.every is not None else DEFAULT_EVERY,
        trees=trees,
        verbosity=args.verbosity,
        json_lines=args.json,
        now=given_now(args),
        once=args.once,
        quiet=quiet,
    )
    return worker.run()


def _trees(given: list[str] | None) -> list[str] | None:
    if not given:
        return None
    for tree in given:
        if not _TREE_ID.match(tree):
            raise UsageError(
                f"--tree {tree!r} is not a tree id: want 32 hex digits, the 'tree:' line of "
                "the tree's .rouse-tree file (rouse fleet status lists them)"
            )
    return sorted(set(given))


def _sink(args: argparse.Namespace) -> Sink:
    """The sink named by ``--sink`` (and its command): any of the sweeper's but the file sink."""
    from pathlib import Path

    from rouse.cli.sweep_options import commands
    from rouse.sweep import sinks

    spec = args.sink
    if not spec:
        raise UsageError(f"rouse deliver needs --sink: {WORKER_SINKS}")
    if spec[0] == "file":
        raise UsageError(
            "--sink file is not for a delivery worker: it writes nudge files into a tree, and "
            "a worker has no tree (its sweeper writes them); use --sink " + WORKER_SINKS
        )
    if args.sink_cmd is not None and args.command and spec[0] == "exec":
        raise UsageError("--sink-cmd and a command after -- both name the command: keep one")
    quoted = {"--sink": args.sink_cmd}
    return sinks.make_sink(
        spec,
        commands({"--sink": spec}, quoted, list(args.command))["--sink"],
        root=Path.cwd(),  # not used: each tree's exec gets that tree's recorded root
        timeout=args.timeout,
        secret=os.environ.get("ROUSE_WEBHOOK_SECRET"),
        base_env=os.environ,
    )


def args_deliver(sub: argparse.ArgumentParser) -> None:
    sub.add_argument(
        "--ledger",
        metavar="DSN",
        help="the fleet's PostgreSQL ledger, postgresql://… (else $ROUSE_LEDGER)",
    )
    sub.add_argument(
        "--sink",
        nargs="+",
        metavar="KIND",
        help="where wakes go: exec (command after --), webhook URL, or stdout",
    )
    sub.add_argument(
        "--sink-cmd",
        metavar="'CMD ARG'",
        help="the exec sink's command as one quoted string (instead of -- CMD ARG)",
    )
    sub.add_argument(
        "--once",
        action="store_true",
        help="deliver what is owed now, then exit; exit 1 if any failed",
    )
    sub.add_argument(
        "--every",
        type=float,
        metavar="S",
        help="seconds between looks for owed wakes when there were none (default 5)",
    )
    sub.add_argument(
        "--lease",
        type=float,
        metavar="S",
        help="seconds a claim lasts on the database's clock, at least timeout + 5 "
        "(default 2 x timeout + 30)",
    )
    sub.add_argument(
        "--timeout", type=float, metavar="S", help="sink timeout in seconds (exec 60, webhook 10)"
    )
    sub.add_argument(
        "--quiet",
        metavar="HH:MM-HH:MM",
        help="claim no wakes in this window (they wait in the ledger), e.g. 22:00-07:00",
    )
    sub.add_argument(
        "--batch",
        type=int,
        metavar="N",
        help="wakes claimed at a time, oldest first (default 10)",
    )
    sub.add_argument(
        "--tree",
        action="extend",
        nargs="+",
        metavar="ID",
        help="only these trees' wakes (ids from .rouse-tree; default every tree)",
    )
    sub.add_argument(
        "--json", action="store_true", help="one JSON line per wake handled, on stdout"
    )
    verbosity_options(sub, "also each batch claimed, and the start and idle summary of --once")
    sub.add_argument("command", nargs="*", metavar="-- CMD ARG", help="the exec sink's command")
