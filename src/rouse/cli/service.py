"""The ``service`` verb: install, show or remove the sweeper as a service of the OS."""

from __future__ import annotations

import os
from pathlib import Path

from rouse.cli.common import emit, emit_json, global_options, tree_root
from rouse.core.errors import UsageError

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse

    from rouse.agents.service_units import Service

ACTIONS = ("install", "status", "uninstall")
#: The service verb's own switches, also found among the sweep flags after ACTION.
_SWITCHES = {"--dry-run": "dry_run", "--no-start": "no_start", "--json": "json", "--work": "work"}


def _own_options(args: argparse.Namespace) -> list[str]:
    """Take the service verb's options out of the words after ACTION; the sweep flags left.

    argparse hands every word after ACTION to the sweep flags (they are the
    sweep verb's options, not ours), so ``install --dry-run --every 30``
    puts --dry-run there too; it is picked out here, up to a ``--``.
    """
    flags: list[str] = list(args.flags)
    rest: list[str] = []
    index = 0
    while index < len(flags):
        word = flags[index]
        if word == "--":
            rest += flags[index:]
            break
        if word in _SWITCHES:
            setattr(args, _SWITCHES[word], True)
        elif word == "--kind":
            index += 1
            if index == len(flags):
                raise UsageError("--kind needs a value: systemd, launchd or cron")
            args.kind = flags[index]
        elif word.startswith("--kind="):
            args.kind = word.partition("=")[2]
        else:
            rest.append(word)
        index += 1
    return rest


def _sweep_flags(flags: list[str], verb: str = "sweep") -> argparse.Namespace:
    """The flags parsed by the sweep (or work) verb's own arguments, so a bad one fails now."""
    import argparse

    from rouse.cli.sweeping import args_sweep
    from rouse.cli.work import args_work

    parser = argparse.ArgumentParser(prog=f"rouse {verb}")
    global_options(parser, suppress=True)
    (args_work if verb == "work" else args_sweep)(parser)
    parsed = parser.parse_args(flags)
    for option in ("memory", "now"):
        if getattr(parsed, option, None) is not None:
            raise UsageError(
                f"--{option} has no place among the service's sweep flags: the service pins "
                "the tree (give it before the verb: rouse --memory DIR service install …)"
                if option == "memory"
                else "--now has no place in a service: it sweeps by the wall clock"
            )
    from rouse.sweep.heartbeat import Heartbeat
    from rouse.sweep.loop import check_wait

    if verb == "work":
        return parsed
    check_wait("--every", parsed.every)  # what `rouse sweep` would refuse, refused now
    if getattr(parsed, "heartbeat", None):
        Heartbeat(parsed.heartbeat)
    return parsed


def cmd_service(args: argparse.Namespace) -> int:
    from rouse.agents import service, service_control
    from rouse.agents.service_units import Loop

    flags = _own_options(args)
    if args.action != "install" and flags:
        raise UsageError(
            f"`rouse service {args.action}` takes no sweep flags (got {' '.join(flags)}): "
            "they belong to `rouse service install`"
        )
    verb = "work" if args.work else "sweep"
    loop = Loop(verb)
    if args.action == "install":
        parsed = _sweep_flags(flags, verb)
        loop = Loop(verb, getattr(parsed, "every", None), parsed.once)
    root = Path(os.path.abspath(tree_root(args)))
    plan = service.plan(
        root,
        flags,
        kind=args.kind or service.default_kind(),
        home=Path.home(),
        loop=loop,
        ledger=os.environ.get("ROUSE_LEDGER") if args.action == "install" else None,
    )
    if args.action != "status":
        act = service_control.install if args.action == "install" else service_control.uninstall
        emit(act(plan, dry_run=args.dry_run, start=not args.no_start))
        return 0
    plan = _as_installed(plan, root, verb)
    data = service_control.status(plan)
    if args.json:
        emit_json(data)
    else:
        emit(service_control.status_lines(data))
    return 0 if data["installed"] is not False else 1


def _as_installed(plan: Service, root: Path, verb: str) -> Service:
    """For ``status``: the plan with the options the installed file was written with
    (``--every 300``…, the fleet's DSN), so a fresh install is current; ``plan`` as it is
    without one."""
    from rouse.agents import service, service_control, service_units

    text = service_control.installed_text(plan)
    installed = None if text is None else service_units.installed_flags(plan, text, root, verb)
    if installed is None:
        return plan
    try:
        parsed = _sweep_flags(installed, verb)
    except (UsageError, SystemExit):
        return plan  # (options no longer valid: compared without them, and differ)
    every = getattr(parsed, "every", None)
    ledger = service_units.installed_ledger(plan.kind, text) if text is not None else None
    loop = service_units.Loop(verb, every)
    return service.plan(root, installed, kind=plan.kind, home=Path.home(), loop=loop, ledger=ledger)


def args_service(sub: argparse.ArgumentParser) -> None:
    import argparse

    sub.add_argument("action", choices=ACTIONS, help="install, status or uninstall")
    sub.add_argument(
        "--kind",
        choices=("systemd", "launchd", "cron"),
        help="systemd user service (Linux default), launchd agent (macOS), or a crontab line",
    )
    sub.add_argument(
        "--dry-run", action="store_true", help="print what it would write and run; change nothing"
    )
    sub.add_argument(
        "--no-start",
        action="store_true",
        help="write or remove the files only: never run systemctl/launchctl",
    )
    sub.add_argument("--json", action="store_true", help="status as JSON")
    sub.add_argument(
        "--work",
        action="store_true",
        help="the task worker's service (`rouse work` and its flags), beside the sweeper's",
    )
    sub.add_argument(
        "flags",
        nargs=argparse.REMAINDER,
        metavar="SWEEP FLAGS",
        help="install: the options of `rouse sweep` the service runs with (e.g. --every 30 "
        "--heartbeat URL --sink webhook URL)",
    )
