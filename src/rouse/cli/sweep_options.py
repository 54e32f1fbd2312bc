"""``rouse sweep``'s arguments as one :class:`~rouse.sweep.options.SweepOptions`.

The command line's own rules live here: which option owns the command after
``--`` (and each ``--X-cmd 'CMD ARG'``), the ``--channel NAME=KIND`` syntax, and
the fleet's options that mean nothing without ``--ledger``. What the options
build, and what cannot go together, is :mod:`rouse.sweep.build`'s.
"""

from __future__ import annotations

import os
import shlex

from rouse.cli.common import given_now, ledger_dsn, tree_root
from rouse.core.errors import UsageError
from rouse.sweep.options import CHANNEL_KINDS, NOTIFY, SweepOptions

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from typing import Any


def sweep_options(args: argparse.Namespace) -> SweepOptions:
    """The parsed ``rouse sweep`` arguments as options; one-line errors for what the
    command line cannot mean."""
    from rouse.sweep import loop

    loop.check_wait("--every", args.every)
    loop.check_wait("--timeout", args.timeout)  # (a nan or inf would never kill a hung exec)
    dsn = ledger_dsn(args)
    check_fleet_options(args, dsn)
    root = tree_root(args)
    run_spec = [args.run] if args.run else None
    specs = {"--sink": args.sink or ["file"], "--run": run_spec, "--escalate": args.escalate}
    quoted = {"--sink": args.sink_cmd, "--run": args.run_cmd, "--escalate": args.escalate_cmd}
    wanted = channel_specs(args)
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
        wanted[needy[0]] = ("exec", (tuple(trailing),))
        trailing = []
    owned = commands(specs, quoted, trailing)
    return SweepOptions(
        root,
        now=given_now(args),
        sink=tuple(args.sink) if args.sink else None,
        sink_command=tuple(owned["--sink"]),
        run_command=tuple(owned["--run"]),
        escalate=tuple(args.escalate) if args.escalate else None,
        escalate_command=tuple(owned["--escalate"]),
        channels=wanted,
        ledger=dsn,
        secret=os.environ.get("ROUSE_WEBHOOK_SECRET"),
        environment=dict(os.environ),
        **{name: getattr(args, name) for name in AS_GIVEN},
    )


#: The options whose :class:`SweepOptions` field is their value as argparse read it.
AS_GIVEN = (
    *("once", "every", "timeout", "digest", "run", "run_timeout", "max_runs"),
    *("escalate_after", "quiet", "heartbeat", "verbosity", "plan_only", "lease"),
)


def _channel_option(name: str) -> str:
    return "--notify exec" if name == NOTIFY else f"--channel {name}=exec"


def channel_specs(args: argparse.Namespace) -> dict[str, tuple[str, tuple[Any, ...]]]:
    """``--channel NAME=KIND [ARG]`` (and ``--notify KIND [ARG]``, keyed ``NOTIFY``) as
    name → (kind, its argument): one-line errors for a malformed one."""
    from rouse.sweep.telling import CHANNEL_RE

    found: dict[str, tuple[str, tuple[Any, ...]]] = {}
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
        found[name] = (kind, tuple(words[1:]))
    if args.notify:
        first, *rest = args.notify
        if first in found and not rest:
            found[NOTIFY] = ("channel", (first,))
        elif (
            CHANNEL_RE.match(first) and first not in (*CHANNEL_KINDS, "file", "stdout") and not rest
        ):
            known = ", ".join(n for n in found if n != NOTIFY) or "none"
            raise UsageError(
                f"--notify {first}: no --channel {first}=… is given (channels: {known}); "
                "name one, or give a sink: --notify webhook URL | exec 'CMD ARG'"
            )
        else:
            found[NOTIFY] = (first, tuple(rest))
    return found


def check_fleet_options(args: argparse.Namespace, dsn: str | None) -> None:
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


def commands(
    specs: dict[str, list[str] | None], quoted: dict[str, str | None], trailing: list[str]
) -> dict[str, list[str]]:
    """Each option's command: its own ``--X-cmd 'CMD ARGS'`` (shlex), or the one after ``--``.

    The command after ``--`` goes to the one option of kind exec that has no
    ``--X-cmd``; with none, to a ``--run`` preset (its extra flags), else to
    ``--sink`` (which refuses it unless it is exec).
    """
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
