"""The sweeper's verbs: sweep, log, status.

Each takes ``--ledger DSN`` (or ``ROUSE_LEDGER``) for a fleet's PostgreSQL
ledger; rouse.fleet (and psycopg) load only then.
"""

from __future__ import annotations

import os
import sys

from rouse.cli.common import (
    emit,
    emit_json,
    resolve_now,
    tree_root,
    verbosity_options,
)
from rouse.cli.read import MOST_LISTED, within
from rouse.core.errors import UsageError
from rouse.core.home import stamp_key_path

# typing costs ~5 ms to import on the pack's start-up path; annotations are
# strings here (__future__), so it is only imported for the type checker
TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from pathlib import Path
    from typing import Any

    from rouse.fleet.pg_ledger import PgLedger
    from rouse.fleet.sweeping import Joined
    from rouse.sweep.runner import Runner
    from rouse.trust.origins import OriginReader


def cmd_sweep(args: argparse.Namespace) -> int:
    from rouse.sweep import loop, sinks
    from rouse.sweep.heartbeat import Heartbeat
    from rouse.sweep.quiet import QuietHours
    from rouse.trust.origins import origin_reader

    loop.check_wait("--every", args.every)
    loop.check_wait("--timeout", args.timeout)  # (a nan or inf would never kill a hung exec)
    dsn = _dsn(args)
    _check_fleet_options(args, dsn)
    root = tree_root(args)
    given = getattr(args, "now", None) or os.environ.get("ROUSE_NOW")
    sink_spec, escalate_spec = args.sink or ["file"], args.escalate
    run_spec = [args.run] if args.run else None
    if run_spec and args.sink:
        raise UsageError(
            "--run takes the sink's place (the run is the delivery): drop --sink, or drop --run"
        )
    if not run_spec and (args.max_runs or args.run_timeout):
        raise UsageError("--max-runs and --run-timeout are for --run: add --run claude|codex|exec")
    specs = {"--sink": sink_spec, "--run": run_spec, "--escalate": escalate_spec}
    quoted = {"--sink": args.sink_cmd, "--run": args.run_cmd, "--escalate": args.escalate_cmd}
    wanted = _channel_specs(args)
    trailing = args.command
    needy = [name for name, (kind, rest) in wanted.items() if kind == "exec" and not rest]
    if trailing and needy:  # a channel's exec takes the command after -- when it is the only taker
        others = [n for n, sp in specs.items() if sp and sp[0] == "exec" and quoted.get(n) is None]
        if len(needy) > 1 or others:
            takers = [*others, *(_channel_option(n) for n in needy)]
            raise UsageError(
                f"{' and '.join(takers)} cannot all own the command after --: give each channel "
                "its command as one quoted word (--channel NAME=exec 'CMD ARG')"
            )
        wanted[needy[0]] = ("exec", [trailing])
        trailing = []
    commands = _commands(specs, quoted, trailing)
    sink: sinks.Sink
    if args.plan_only:
        from rouse.sweep.carrying import WorkerQueue

        sink = WorkerQueue()
    elif run_spec:
        sink = _runner(root, args.run, commands["--run"], args, clock_given=bool(given))
    else:
        sink = sinks.make_sink(
            sink_spec,
            commands["--sink"],
            root=root,
            timeout=args.timeout,
            secret=os.environ.get("ROUSE_WEBHOOK_SECRET"),
            base_env=os.environ,
        )
    if args.digest and sink.kind == "file":
        raise UsageError(
            "--digest is for the exec, webhook and stdout sinks: the file sink writes one "
            "nudge file per record for the pack (drop --digest, or give --sink exec/webhook)"
        )
    escalation = None
    if escalate_spec or args.escalate_after:
        from rouse.sweep.escalate import Escalation, Threshold

        if not (escalate_spec and args.escalate_after):
            raise UsageError(
                "--escalate and --escalate-after go together: e.g. --escalate-after 3 "
                "--escalate webhook https://…"
            )
        if escalate_spec[0] in ("file", "stdout"):
            raise UsageError(
                f"--escalate {escalate_spec[0]} would not reach a human: "
                "use --escalate webhook URL or --escalate exec -- CMD"
            )
        escalation = Escalation(
            Threshold.parse(args.escalate_after),
            sinks.make_sink(
                escalate_spec,
                commands["--escalate"],
                root=root,
                timeout=args.timeout,
                secret=os.environ.get("ROUSE_WEBHOOK_SECRET"),
                base_env=os.environ,
            ),
        )
    channels = _channels(wanted, root, args) if wanted else None
    if channels is not None and args.plan_only:
        raise UsageError(
            "--plan-only sends nothing, so --channel and --notify have nothing to do: a "
            "sweeper that sends (without --plan-only) delivers the tree's tells"
        )
    origins = origin_reader(root, stamp_key_path())
    joined = _join(dsn, root, args.lease, origins) if dsn is not None else None
    return loop.sweep(
        root,
        sink,
        once=args.once,
        every=args.every,
        now=resolve_now(args) if given else None,
        quiet=QuietHours.parse(args.quiet) if args.quiet else None,
        origins=origins,
        verbosity=args.verbosity,
        after_tick=Heartbeat(args.heartbeat) if args.heartbeat else None,
        digest=args.digest,
        escalation=escalation,
        ledger=joined.ledger if joined is not None else None,
        plan_only=args.plan_only,
        fleet=joined.member if joined is not None else None,
        channels=channels,
    )


#: The key of ``--notify``'s own sink among the channels being built.
NOTIFY = ""
#: What a channel may be: it has to reach a person.
CHANNEL_KINDS = ("webhook", "exec")


def _channel_option(name: str) -> str:
    return "--notify exec" if name == NOTIFY else f"--channel {name}=exec"


def _channel_specs(args: argparse.Namespace) -> dict[str, tuple[str, list[Any]]]:
    """``--channel NAME=KIND [ARG]`` (and ``--notify KIND [ARG]``, keyed ``NOTIFY``) as
    name → (kind, its argument): one-line errors for a malformed one."""
    from rouse.sweep.telling import CHANNEL_RE

    found: dict[str, tuple[str, list[Any]]] = {}
    for words in args.channel or []:
        name, equals, kind = words[0].partition("=")
        if not equals or not kind:
            raise UsageError(
                f"bad --channel {' '.join(words)!r}: want NAME=KIND, e.g. "
                "--channel phone=webhook https://… or --channel mail=exec 'CMD ARG'"
            )
        if not CHANNEL_RE.match(name):
            raise UsageError(
                f"bad channel name {name!r}: lowercase letters, digits and -, at most 40 "
                "(as a reminder's channel: names it)"
            )
        if name in found:
            raise UsageError(f"--channel {name} is given twice: one sink per channel")
        found[name] = (kind, list(words[1:]))
    if args.notify:
        first, *rest = args.notify
        if first in found and not rest:
            found[NOTIFY] = ("channel", [first])
        elif (
            CHANNEL_RE.match(first) and first not in (*CHANNEL_KINDS, "file", "stdout") and not rest
        ):
            known = ", ".join(n for n in found if n != NOTIFY) or "none"
            raise UsageError(
                f"--notify {first}: no --channel {first}=… is given (channels: {known}); "
                "name one, or give a sink: --notify webhook URL | exec 'CMD ARG'"
            )
        else:
            found[NOTIFY] = (first, rest)
    return found


def _channels(
    wanted: dict[str, tuple[str, list[Any]]], root: Path, args: argparse.Namespace
) -> Any:
    """Build the sweeper's channels, refusing at start what cannot reach a person."""
    import shlex

    from rouse.sweep import sinks
    from rouse.sweep.channels import Channels

    built: dict[str, sinks.Sink] = {}
    default = default_name = None
    for name, (kind, rest) in wanted.items():
        option = "--notify" if name == NOTIFY else f"--channel {name}"
        if kind == "channel":
            default_name = rest[0]
            continue
        if kind in ("file", "stdout"):
            raise UsageError(
                f"{option}={kind} would not reach a human: a channel is webhook URL or "
                "exec 'CMD ARG'"
            )
        if kind not in CHANNEL_KINDS:
            raise UsageError(
                f"{option}: unknown sink {kind!r}: a channel is webhook URL or exec 'CMD ARG'"
            )
        command: list[str] = []
        spec = [kind, *rest]
        if kind == "exec":
            if len(rest) != 1:
                raise UsageError(
                    f"{option}=exec needs its command: as one quoted word "
                    f"({option}=exec 'CMD ARG') or after -- when it is the only one"
                )
            given = rest[0]
            try:
                command = given if isinstance(given, list) else shlex.split(given)
            except ValueError as exc:
                raise UsageError(f"{option}: cannot split {given!r} ({exc})") from None
            spec = ["exec"]
        elif len(rest) != 1:
            raise UsageError(f"{option}=webhook needs exactly one URL: {option}=webhook https://…")
        try:
            sink = sinks.make_sink(
                spec,
                command,
                root=root,
                timeout=args.timeout,
                secret=os.environ.get("ROUSE_WEBHOOK_SECRET"),
                base_env=os.environ,
            )
        except UsageError as exc:
            raise UsageError(f"{option}: {exc}") from None
        if name == NOTIFY:
            default = sink
        else:
            built[name] = sink
    if default_name is not None:
        default = built[default_name]
    return Channels(built, default, default_name)


def _join(dsn: str, root: Path, lease: float | None, origins: OriginReader) -> Joined:
    """The tree's ledger in the fleet and its lease; says once to commit a new ``.rouse-tree``."""
    from rouse.fleet.lease import DEFAULT_LEASE, check_lease
    from rouse.fleet.sweeping import join

    joined = join(
        dsn,
        root,
        lease=check_lease(lease) if lease is not None else DEFAULT_LEASE,
        origins=origins,
    )
    if joined.made:
        sys.stderr.write(
            f"rouse sweep: made {root}/.rouse-tree (tree {joined.ledger.tree}), this tree's "
            "identity in the fleet: commit it, so every clone of the tree shares it\n"
        )
    return joined


def _dsn(args: argparse.Namespace) -> str | None:
    """``--ledger`` or ``ROUSE_LEDGER``; None (the SQLite ledger) without loading rouse.fleet."""
    given = getattr(args, "ledger", None)
    if given is None and not os.environ.get("ROUSE_LEDGER"):
        return None
    from rouse.fleet.pg import chosen_dsn

    return chosen_dsn(given)


def _check_fleet_options(args: argparse.Namespace, dsn: str | None) -> None:
    """Refuse (exit 2) what a fleet's options cannot mean: each error names the fix."""
    if dsn is None:
        if args.plan_only:
            raise UsageError(
                "--plan-only leaves delivery to `rouse deliver` workers, which share a "
                "PostgreSQL ledger: give --ledger postgresql://… (or set ROUSE_LEDGER)"
            )
        if args.lease is not None:
            raise UsageError(
                "--lease is a fleet leader's lease: give --ledger postgresql://… "
                "(or set ROUSE_LEDGER), or drop --lease"
            )
        return
    if not args.plan_only:
        return
    sends = [
        ("--sink", bool(args.sink)),
        ("--sink-cmd", args.sink_cmd is not None),
        ("--timeout", args.timeout is not None),
        ("--digest", args.digest),
        ("--run", bool(args.run)),
        ("--escalate", bool(args.escalate or args.escalate_after)),
        ("a command after --", bool(args.command)),
    ]
    for option, given in sends:
        if given:
            raise UsageError(
                f"--plan-only sends nothing, so {option} has nothing to do: the workers "
                "send each wake (`rouse deliver --sink …`); drop one of them"
            )


def _fleet_ledger(args: argparse.Namespace) -> PgLedger | None:
    """The tree's ledger in the fleet when ``--ledger``/``ROUSE_LEDGER`` names one."""
    dsn = _dsn(args)
    if dsn is None:
        return None
    from rouse.fleet.sweeping import open_ledger

    return open_ledger(dsn, tree_root(args))


def _commands(
    specs: dict[str, list[str] | None], quoted: dict[str, str | None], trailing: list[str]
) -> dict[str, list[str]]:
    """Each option's command: its own ``--X-cmd 'CMD ARGS'`` (shlex), or the one after ``--``.

    The command after ``--`` goes to the one option of kind exec that has no
    ``--X-cmd``; with none, to a ``--run`` preset (its extra flags), else to
    ``--sink`` (which refuses it unless it is exec).
    """
    import shlex

    commands: dict[str, list[str]] = {name: [] for name in specs}
    for name, text in quoted.items():
        if text is None:
            continue
        spec = specs.get(name)
        if not spec or (spec[0] != "exec" and name != "--run"):
            want = "--run claude|codex|exec" if name == "--run" else f"{name} exec"
            raise UsageError(f"{name}-cmd is for {want}: add it, or drop {name}-cmd")
        try:
            words = shlex.split(text)
        except ValueError as exc:
            raise UsageError(
                f"{name}-cmd {text!r} cannot be split ({exc}): check its quotes"
            ) from None
        if not words:
            raise UsageError(f"{name}-cmd is empty: give the command, e.g. {name}-cmd 'CMD ARG'")
        commands[name] = words
    if not trailing:
        return commands
    free = [name for name, spec in specs.items() if spec and quoted.get(name) is None]
    takers = [name for name in free if specs[name][0] == "exec"]  # type: ignore[index]
    if len(takers) > 1:
        forms = ", ".join(f"{name}-cmd 'CMD ARG'" for name in takers)
        raise UsageError(
            f"{' and '.join(f'{name} exec' for name in takers)} cannot all own the command "
            f"after --: give each its own ({forms})"
        )
    if takers:
        owner = takers[0]
    elif "--run" in free:
        owner = "--run"  # a preset's extra flags
    elif quoted.get("--sink") is None:
        owner = "--sink"  # refused there unless it is exec
    else:
        raise UsageError(
            "a command after -- but every option already has its --…-cmd: drop one of them"
        )
    commands[owner] = trailing
    return commands


def _runner(
    root: Path, kind: str, command: list[str], args: argparse.Namespace, *, clock_given: bool
) -> Runner:
    """``--run claude|codex|exec`` with its budget and timeout; under a given clock
    (``--now``, ``ROUSE_NOW``) each run gets the tick's instant as ``ROUSE_NOW``."""
    from rouse.runs import presets
    from rouse.sweep.runner import DEFAULT_TIMEOUT, Budget, Runner, parse_timeout

    return Runner(
        root,
        presets.command(kind, command),
        timeout=parse_timeout(args.run_timeout) if args.run_timeout else DEFAULT_TIMEOUT,
        budget=Budget.parse(args.max_runs) if args.max_runs else None,
        base_env=os.environ,
        hand_now=clock_given,
    )


def cmd_log(args: argparse.Namespace) -> int:
    from rouse.sweep import ledger

    within("--limit", args.limit, 1, MOST_LISTED)
    book = _fleet_ledger(args)
    if book is not None:
        with book:
            entries = book.recent(args.limit)
    else:
        entries = ledger.recent(tree_root(args), args.limit)
    from rouse.sweep.ledger_tells import tell_json
    from rouse.sweep.ledger_views import recent_tells, tell_lines

    told = recent_tells(tree_root(args), args.limit)  # tells: the tree's own SQLite file
    if args.json:
        rows = [entry.as_json() for entry in entries] + [tell_json(row) for row in told]
        rows.sort(key=lambda row: str(row["made_at"]), reverse=True)
        emit_json(rows[: args.limit])
    else:
        emit(ledger.log_lines(entries) + tell_lines(told))
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    from rouse.core import sweepstate
    from rouse.core.cache import cached_walk
    from rouse.sweep import status
    from rouse.trust.stampkey import cache_secret

    now = resolve_now(args)
    book = _fleet_ledger(args)
    leader = queue = None
    if book is not None:
        from rouse.fleet.sweeping import leader as lease_of
        from rouse.fleet.workers import queue_state

        try:
            leader = lease_of(book)
            if args.check:
                queue = queue_state(book.database, book.tree)
        except BaseException:
            book.close()
            raise
    try:
        if args.check:  # for monitors and cron: silent when well, else exit 1 and why
            problems = status.check(tree_root(args), now, ledger=book, leader=leader, queue=queue)
            if args.json:
                emit_json({"ok": not problems, "problems": problems})
            for line in problems:
                sys.stderr.write(f"rouse status --check: {line}\n")
            return 1 if problems else 0
        # the pack's walk cache, warm: headers and clock plans of what did not change
        root = tree_root(args)
        tree = cached_walk(root, cache_secret(stamp_key_path()), now)
        with sweepstate.one_reader(root):  # (its ledger reads share one connection)
            data = status.status(tree, now, ledger=book, leader=leader)
    finally:
        if book is not None:
            book.close()
    if args.json:
        emit_json(data)
    else:
        emit(status.status_lines(data))
    return 0


LEDGER_HELP = (
    "a fleet's PostgreSQL ledger, postgresql://… (default $ROUSE_LEDGER; "
    "without either, the tree's .rouse/ledger.sqlite3)"
)


def _ledger_option(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("--ledger", metavar="DSN", help=LEDGER_HELP)


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
    _ledger_option(sub)
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
    verbosity_options(sub, "also a line for every tick, idle or not, and how it started")
    sub.add_argument(
        "command", nargs="*", metavar="-- CMD ARG", help="the command of the one exec option"
    )


def args_log(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("--json", action="store_true", help="a JSON array of wakes, newest first")
    sub.add_argument("--limit", type=int, default=20, metavar="N", help="how many (default 20)")
    _ledger_option(sub)
