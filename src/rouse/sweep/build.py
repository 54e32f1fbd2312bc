"""From :class:`~rouse.sweep.options.SweepOptions` to a sweeper's :class:`Parts`.

:func:`parts` builds the sink (or the agent runner that takes its place), the
escalation, the channels, the quiet hours and the origins reader, and refuses
(exit 2, one line naming the fix) what cannot go together. A fleet's
:func:`rouse.fleet.sweeping.fleet_parts` calls it, then adds the shared ledger
and the lease; a test makes :class:`Parts` by hand.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass

from rouse.core.errors import UsageError
from rouse.core.home import stamp_key_path
from rouse.runs import presets
from rouse.sweep.carrying import WorkerQueue
from rouse.sweep.channels import Channels
from rouse.sweep.escalation import Escalation, Threshold
from rouse.sweep.leading import Fleet
from rouse.sweep.ledger import Ledger
from rouse.sweep.options import CHANNEL_KINDS, NOTIFY, SweepOptions
from rouse.sweep.quiet import QuietHours
from rouse.sweep.report import Origins
from rouse.sweep.runner import DEFAULT_TIMEOUT, Budget, Runner, parse_timeout
from rouse.sweep.sinks import Sink, make_sink
from rouse.trust.origins import origin_reader


@dataclass
class Parts:
    """A sweeper's sink and the rest of what it sends with; each None is "none"."""

    #: where each wake goes (unused when ``plan_only``; a :class:`Runner` runs an agent)
    sink: Sink
    #: hold the holdable sinks' wakes in this window
    quiet: QuietHours | None = None
    #: a file's effective origin (default: verified when a stamp key exists)
    origins: Origins | None = None
    #: all wakes of a tick go out as one message (``--digest``; always with a runner)
    digest: bool = False
    #: a second sink, for the owner, when a record is woken without moving
    escalation: Escalation | None = None
    #: one agent run per digest (``--run``): it takes the sink's place
    runner: Runner | None = None
    #: where tells to the owner go (none: they wait)
    channels: Channels | None = None
    #: the delivery ledger (default: the tree's SQLite file)
    ledger: Ledger | None = None
    #: queue new wakes for a fleet's delivery workers and send nothing
    plan_only: bool = False
    #: lead or stand by among the clones sharing ``ledger``
    fleet: Fleet | None = None


def parts(options: SweepOptions, *, origins: Origins | None = None) -> Parts:
    """The sweeper's parts as ``options`` ask (``origins``: default the tree's reader,
    verified with the stamp key when one exists)."""
    if options.run and options.sink:
        raise UsageError(
            "--run takes the sink's place (the run is the delivery): drop --sink, or drop --run"
        )
    if not options.run and (options.max_runs or options.run_timeout):
        raise UsageError("--max-runs and --run-timeout are for --run: add --run claude|codex|exec")
    sink: Sink
    runner = None
    if options.plan_only:
        sink = WorkerQueue()
    elif options.run:
        sink = runner = _runner(options)
    else:
        sink = _sink(options, options.sink or ("file",), options.sink_command)
    if options.digest and sink.kind == "file":
        raise UsageError(
            "--digest is for the exec, webhook and stdout sinks: the file sink writes one "
            "nudge file per record for the pack (drop --digest, or give --sink exec/webhook)"
        )
    escalation = _escalation(options)
    channels = _channels(options) if options.channels else None
    if channels is not None and options.plan_only:
        raise UsageError(
            "--plan-only sends nothing, so --channel and --notify have nothing to do: a "
            "sweeper that sends (without --plan-only) delivers the tree's tells"
        )
    return Parts(
        sink,
        quiet=QuietHours.parse(options.quiet) if options.quiet else None,
        origins=origins or origin_reader(options.root, stamp_key_path()),
        digest=options.digest,
        escalation=escalation,
        runner=runner,
        channels=channels,
        plan_only=options.plan_only,
    )


def _sink(options: SweepOptions, spec: Sequence[str], command: Sequence[str]) -> Sink:
    return make_sink(
        spec,
        command,
        root=options.root,
        timeout=options.timeout,
        secret=options.secret,
        base_env=options.environment,
    )


def _runner(options: SweepOptions) -> Runner:
    """``--run claude|codex|exec`` with its budget and timeout; under a given clock
    (``--now``, ``ROUSE_NOW``) each run gets the tick's instant as ``ROUSE_NOW``."""
    assert options.run is not None
    return Runner(
        options.root,
        presets.task_command(options.run, list(options.run_command), {})[0],
        timeout=parse_timeout(options.run_timeout) if options.run_timeout else DEFAULT_TIMEOUT,
        budget=Budget.parse(options.max_runs) if options.max_runs else None,
        base_env=options.environment,
        hand_now=options.now is not None,
    )


def _escalation(options: SweepOptions) -> Escalation | None:
    spec = options.escalate
    if not (spec or options.escalate_after):
        return None
    if not (spec and options.escalate_after):
        raise UsageError(
            "--escalate and --escalate-after go together: e.g. --escalate-after 3 "
            "--escalate webhook https://…"
        )
    if spec[0] in ("file", "stdout"):
        raise UsageError(
            f"--escalate {spec[0]} would not reach a human: "
            "use --escalate webhook URL or --escalate exec -- CMD"
        )
    return Escalation(
        Threshold.parse(options.escalate_after),
        _sink(options, spec, options.escalate_command),
    )


def _channels(options: SweepOptions) -> Channels:
    """The sweeper's channels, refusing at start what cannot reach a person."""
    built: dict[str, Sink] = {}
    default = default_name = None
    for name, (kind, rest) in options.channels.items():
        option = "--notify" if name == NOTIFY else f"--channel {name}"
        if kind == "channel":
            default_name = str(rest[0])
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
        spec = [kind, *(str(word) for word in rest)]
        if kind == "exec":
            if len(rest) != 1:
                raise UsageError(
                    f"{option}=exec needs its command: as one quoted word "
                    f"({option}=exec 'CMD ARG') or after -- when it is the only one"
                )
            given = rest[0]
            try:
                command = list(given) if isinstance(given, tuple) else shlex.split(given)
            except ValueError as exc:
                raise UsageError(f"{option}: cannot split {given!r} ({exc})") from None
            spec = ["exec"]
        elif len(rest) != 1:
            raise UsageError(f"{option}=webhook needs exactly one URL: {option}=webhook https://…")
        try:
            sink = _sink(options, spec, command)
        except UsageError as exc:
            raise UsageError(f"{option}: {exc}") from None
        if name == NOTIFY:
            default = sink
        else:
            built[name] = sink
    if default_name is not None:
        default = built[default_name]
    return Channels(built, default, default_name)
