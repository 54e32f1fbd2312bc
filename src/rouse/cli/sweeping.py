"""The sweeper's verbs: sweep, log, status."""

from __future__ import annotations

import os

from rouse.cli.common import (
    emit,
    emit_json,
    resolve_now,
    tree_root,
)
from rouse.cli.read import MOST_LISTED, within
from rouse.core.home import stamp_key_path

# typing costs ~5 ms to import on the pack's start-up path; annotations are
# strings here (__future__), so it is only imported for the type checker
TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse


def cmd_sweep(args: argparse.Namespace) -> int:
    from rouse.sweep import loop, sinks
    from rouse.sweep.ledger import QuietHours
    from rouse.trust.origins import origin_reader

    loop.check_wait("--every", args.every)
    loop.check_wait("--timeout", args.timeout)  # (a nan or inf would never kill a hung exec)
    root = tree_root(args)
    given = getattr(args, "now", None) or os.environ.get("ROUSE_NOW")
    sink = sinks.make_sink(
        args.sink,
        args.command,
        root=root,
        timeout=args.timeout,
        secret=os.environ.get("ROUSE_WEBHOOK_SECRET"),
        base_env=os.environ,
    )
    return loop.sweep(
        root,
        sink,
        once=args.once,
        every=args.every,
        now=resolve_now(args) if given else None,
        quiet=QuietHours.parse(args.quiet) if args.quiet else None,
        origins=origin_reader(root, stamp_key_path()),
        verbosity=args.verbosity,
    )


def cmd_log(args: argparse.Namespace) -> int:
    from rouse.sweep import ledger

    within("--limit", args.limit, 1, MOST_LISTED)
    entries = ledger.recent(tree_root(args), args.limit)
    if args.json:
        emit_json([entry.as_json() for entry in entries])
    else:
        emit(ledger.log_lines(entries))
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    from rouse.core.tree import walk
    from rouse.sweep import status

    now = resolve_now(args)
    data = status.status(walk(tree_root(args)), now)
    if args.json:
        emit_json(data)
    else:
        emit(status.status_lines(data))
    return 0


def args_status(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("--json", action="store_true", help="the status as JSON")


def args_sweep(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("--once", action="store_true", help="one tick (cron); exit 1 if undelivered")
    sub.add_argument(
        "--sink",
        nargs="+",
        metavar="KIND",
        help="file (default), stdout, webhook URL, or exec (command after --)",
    )
    sub.add_argument("--every", type=float, metavar="S", help="seconds between ticks (default 60)")
    sub.add_argument(
        "--timeout", type=float, metavar="S", help="sink timeout in seconds (exec 60, webhook 10)"
    )
    sub.add_argument(
        "--quiet", metavar="HH:MM-HH:MM", help="hold exec/webhook wakes in this window"
    )
    # verbosity: rouse.sweep.tick's ERRORS (0), EVENTS (1, the default), EVERY_TICK (2);
    # -q is --silent because --quiet is quiet hours
    talk = sub.add_mutually_exclusive_group()
    talk.add_argument(
        "-v",
        "--verbose",
        dest="verbosity",
        action="store_const",
        const=2,
        default=1,
        help="also a line for every tick, idle or not, and how it started",
    )
    talk.add_argument(
        "-q",
        "--silent",
        dest="verbosity",
        action="store_const",
        const=0,
        help="errors only (quiet hours are --quiet)",
    )
    sub.add_argument("command", nargs="*", metavar="-- CMD ARG", help="the exec sink's command")


def args_log(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("--json", action="store_true", help="a JSON array of wakes, newest first")
    sub.add_argument("--limit", type=int, default=20, metavar="N", help="how many (default 20)")
