"""``rouse fleet status|due|recall``: one view of every tree mirrored into the fleet's database."""

from __future__ import annotations

import sys

from rouse.cli.common import emit, emit_json, resolve_now
from rouse.cli.read import MOST_LISTED, within
from rouse.core.errors import RouseError, UsageError

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse

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


def _options(parser: argparse.ArgumentParser, suppress: bool) -> None:
    """The options every view takes: on ``fleet`` itself, and again after the view's name
    (there without defaults, so a value given before the view is kept)."""
    import argparse

    default: dict[str, object] = {"default": argparse.SUPPRESS} if suppress else {}
    parser.add_argument(
        "--ledger",
        metavar="DSN",
        help="the fleet's PostgreSQL database, postgresql://… (else $ROUSE_LEDGER)",
        **default,  # type: ignore[arg-type]
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="a JSON array instead, times in ISO 8601",
        **default,  # type: ignore[arg-type]
    )
    parser.add_argument(
        "--tree",
        action="extend",
        nargs="+",
        metavar="ID",
        help="only these trees (an id from .rouse-tree, or a unique start of one; default all)",
        **default,  # type: ignore[arg-type]
    )
    parser.add_argument(
        "--limit",
        type=int,
        metavar="N",
        help="at most N rows (recall: default 10; status and due: all)",
        **default,  # type: ignore[arg-type]
    )


def args_fleet(sub: argparse.ArgumentParser) -> None:
    import argparse

    _options(sub, suppress=False)
    views = sub.add_subparsers(dest="view", metavar="VIEW", required=True)
    for name in VIEWS:
        view = views.add_parser(name, help=VIEW_HELP[name], description=VIEW_HELP[name])
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
            view.add_argument(option, metavar=metavar, default=argparse.SUPPRESS, help=text)
        _options(view, suppress=True)
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
