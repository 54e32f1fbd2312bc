"""The sweeper's verbs: sweep, log, status.

Each takes ``--ledger DSN`` (or ``ROUSE_LEDGER``) for a fleet's PostgreSQL
ledger; rouse.fleet (and psycopg) load only then.
"""

from __future__ import annotations

import sys

from rouse.cli.common import (
    emit,
    emit_json,
    ledger_dsn,
    resolve_now,
    tree_root,
    verbosity_options,
)
from rouse.cli.read import MOST_LISTED, within

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse

    from rouse.fleet.pg_schema import PgLedger


def cmd_sweep(args: argparse.Namespace) -> int:
    from rouse.cli.sweep_options import sweep_options
    from rouse.sweep import build, loop

    options = sweep_options(args)
    if options.ledger is None:
        return loop.sweep(options, build.parts(options))
    from rouse.fleet.sweeping import fleet_parts

    parts, made = fleet_parts(options)
    if made:
        assert parts.ledger is not None
        sys.stderr.write(
            f"rouse sweep: made {options.root}/.rouse-tree (tree {parts.ledger.tree}), this "
            "tree's identity in the fleet: commit it, so every clone of the tree shares it\n"
        )
    return loop.sweep(options, parts)


def _fleet_ledger(args: argparse.Namespace) -> PgLedger | None:
    """The tree's ledger in the fleet when ``--ledger``/``ROUSE_LEDGER`` names one."""
    dsn = ledger_dsn(args)
    if dsn is None:
        return None
    from rouse.fleet.sweeping import open_ledger

    return open_ledger(dsn, tree_root(args))


def cmd_log(args: argparse.Namespace) -> int:
    from rouse.sweep import ledger

    within("--limit", args.limit, 1, MOST_LISTED)
    book = _fleet_ledger(args)
    damaged: list[str] = []
    if book is not None:
        with book:
            entries = book.recent(args.limit)
            damaged = book.damaged
    else:
        entries = ledger.recent(tree_root(args), args.limit, damaged)
    for row in damaged:  # skipped: every other row is shown
        sys.stderr.write(f"rouse log: skipped the damaged ledger row {row}\n")
    from rouse.sweep.ledger.tells import tell_json
    from rouse.sweep.ledger.views import messages, tell_lines

    told = messages(tree_root(args), "tell", args.limit)  # tells: the tree's own SQLite file
    if args.json:
        rows = [entry.as_json() for entry in entries] + [tell_json(row) for row in told]
        rows.sort(key=lambda row: str(row["made_at"]), reverse=True)
        emit_json(rows[: args.limit])
    else:
        emit(ledger.log_lines(entries) + tell_lines(told))
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    from rouse.core.home import stamp_key_path
    from rouse.pack.findings import found
    from rouse.state import sweeper as sweepstate
    from rouse.sweep import status
    from rouse.trust.stampkey import cache_secret

    now = resolve_now(args)
    book = _fleet_ledger(args)
    leader = queue = None
    try:
        if book is not None:
            from rouse.fleet.sweeping import leader as lease_of
            from rouse.fleet.workers import queue_state

            leader = lease_of(book)
            if args.check:
                queue = queue_state(book.db, book.tree)
        if args.check:  # for monitors and cron: silent when well, else exit 1 and why
            problems = status.check(tree_root(args), now, ledger=book, leader=leader, queue=queue)
            if args.json:
                emit_json({"ok": not problems, "problems": problems})
            for line in problems:
                sys.stderr.write(f"rouse status --check: {line}\n")
            return 1 if problems else 0
        root = tree_root(args)
        # the tree's counts: as the last full walk kept them while they hold, else from
        # the walk cache, warm (headers and clock plans of what did not change)
        counts = found(root, cache_secret(stamp_key_path()), now, "status")[0]
        with sweepstate.one_reader(root):  # (its ledger reads share one connection)
            data = status.status_of(root, counts, now, ledger=book, leader=leader)
    finally:
        if book is not None:
            book.close()
    if args.json:
        emit_json(data)
    else:
        emit(status.status_lines(data))
    return 0


def _ledger_option(sub: argparse.ArgumentParser) -> None:
    sub.add_argument(
        "--ledger",
        metavar="DSN",
        help="a fleet's PostgreSQL ledger, postgresql://… (default $ROUSE_LEDGER; "
        "without either, the tree's .rouse/ledger.sqlite3)",
    )


def args_status(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("--json", action="store_true", help="the status as JSON")
    sub.add_argument(
        "--check",
        action="store_true",
        help="print nothing and exit 0 if all is well; else exit 1 with one line per reason "
        "(sweeper late by 3 intervals, a wake given up, a run budget spent, wakes queued "
        "for delivery workers over 5m with no live worker; with --ledger, no sweeper "
        "leading the tree)",
    )
    _ledger_option(sub)


def args_sweep(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("--once", action="store_true", help="one tick (cron); exit 1 if undelivered")
    _delivery_options(sub)
    sub.add_argument("--every", type=float, metavar="S", help="seconds between ticks (default 60)")
    sub.add_argument(
        "--timeout", type=float, metavar="S", help="sink timeout in seconds (exec 60, webhook 10)"
    )
    sub.add_argument(
        "--quiet", metavar="HH:MM-HH:MM", help="hold exec/webhook wakes in this window"
    )
    sub.add_argument(
        "--heartbeat",
        metavar="URL",
        help="GET URL after every tick (URL/fail after a failed one): a dead-man's switch",
    )
    _channel_options(sub)
    _ledger_option(sub)
    _fleet_options(sub)
    verbosity_options(sub, "also a line for every tick, idle or not, and how it started")
    sub.add_argument(
        "command", nargs="*", metavar="-- CMD ARG", help="the command of the one exec option"
    )


def _delivery_options(sub: argparse.ArgumentParser) -> None:
    """How `rouse sweep`'s wakes go out: the sink, a digest, escalation, agent runs."""
    sub.add_argument(
        "--sink",
        nargs="+",
        metavar="KIND",
        help="file (default), stdout, webhook URL, or exec (command after --)",
    )
    sub.add_argument(
        "--digest", action="store_true", help="all wakes of a tick as one message (not file)"
    )
    sub.add_argument(
        "--escalate",
        nargs="+",
        metavar="KIND",
        help="tell the owner too: webhook URL, or exec (command after --)",
    )
    sub.add_argument(
        "--escalate-after",
        metavar="N|D",
        help="escalate a record woken N times (or for D, e.g. 2d) without moving",
    )
    sub.add_argument(
        "--run",
        choices=("claude", "codex", "exec"),
        help="start one agent run per digest (exec: the command after --)",
    )
    sub.add_argument("--max-runs", metavar="N/day", help="run budget: N/day or N/hour")
    sub.add_argument(
        "--run-timeout", metavar="D", help="kill a run's process group after D (default 15m)"
    )
    owners = (("sink", "the exec sink's"), ("run", "--run's"), ("escalate", "the escalation's"))
    for name, what in owners:
        sub.add_argument(
            f"--{name}-cmd",
            metavar="'CMD ARG'",
            help=f"{what} command as one quoted string (several commands in one invocation)",
        )


def _channel_options(sub: argparse.ArgumentParser) -> None:
    """The owner's named channels, for `rouse tell` and reminders' ``channel:``."""
    sub.add_argument(
        "--channel",
        nargs="+",
        action="append",
        metavar="NAME=KIND",
        help="a named channel to the owner for `rouse tell` and reminders' channel: "
        "NAME=webhook URL, or NAME=exec 'CMD ARG' (or the command after --); repeatable",
    )
    sub.add_argument(
        "--notify",
        nargs="+",
        metavar="SINK",
        help="the default channel: a --channel NAME, webhook URL, or exec 'CMD ARG' "
        "(or the command after --); without one, a tell for no known channel waits",
    )


def _fleet_options(sub: argparse.ArgumentParser) -> None:
    """A sweeper on a shared --ledger: planning only, and its lease."""
    sub.add_argument(
        "--plan-only",
        action="store_true",
        help="queue new wakes in the --ledger for `rouse deliver` workers and send nothing "
        "(stamps what they delivered)",
    )
    sub.add_argument(
        "--lease",
        type=float,
        metavar="S",
        help="with --ledger: seconds a leading sweeper's lease lasts, 2 to 3600 (default 30); "
        "a standby takes over within two leases of the leader's death (a leader killed "
        "mid-send: after its send's timeout, so the send is never doubled)",
    )


def args_log(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("--json", action="store_true", help="a JSON array of wakes, newest first")
    sub.add_argument("--limit", type=int, default=20, metavar="N", help="how many (default 20)")
    _ledger_option(sub)
