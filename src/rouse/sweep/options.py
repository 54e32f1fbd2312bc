"""What ``rouse sweep`` was asked to do: :class:`SweepOptions`, plain values as parsed.

The command line turns its arguments into one :class:`SweepOptions` (the
command after ``--`` already handed to the option that owns it); nothing is
built or checked yet beyond the syntax: that is :func:`rouse.sweep.build.parts`'.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from rouse.sweep.report import EVENTS

#: The key of ``--notify``'s own sink among :attr:`SweepOptions.channels`.
NOTIFY = ""
#: What a channel may be: it has to reach a person.
CHANNEL_KINDS = ("webhook", "exec")


@dataclass(frozen=True)
class SweepOptions:
    """``rouse sweep``'s options: each field is the option of the same name."""

    root: Path
    once: bool = False
    #: seconds between ticks (None: the default, and ``--once`` writes no interval)
    every: float | None = None
    #: the clock's start (``--now``, ``ROUSE_NOW``); None: the wall clock. A run then
    #: gets the tick's instant as ``ROUSE_NOW``
    now: datetime | None = None
    #: ``--sink KIND [URL]`` (None: not given, the file sink)
    sink: tuple[str, ...] | None = None
    sink_command: tuple[str, ...] = ()
    #: the sinks' timeout in seconds (None: each kind's default)
    timeout: float | None = None
    digest: bool = False
    #: ``--run claude|codex|exec`` and its command (a preset's extra flags)
    run: str | None = None
    run_command: tuple[str, ...] = ()
    run_timeout: str | None = None
    max_runs: str | None = None
    escalate: tuple[str, ...] | None = None
    escalate_command: tuple[str, ...] = ()
    escalate_after: str | None = None
    #: ``--channel NAME=KIND ARG`` as name → (kind, its arguments); ``--notify`` is
    #: keyed :data:`NOTIFY`, its kind ``channel`` when it names a channel
    channels: Mapping[str, tuple[str, tuple[str | tuple[str, ...], ...]]] = field(
        default_factory=dict
    )
    quiet: str | None = None
    heartbeat: str | None = None
    verbosity: int = EVENTS
    plan_only: bool = False
    #: a fleet's PostgreSQL ledger (``--ledger``, ``ROUSE_LEDGER``); None: the tree's SQLite file
    ledger: str | None = None
    lease: float | None = None
    #: ``ROUSE_WEBHOOK_SECRET``: the webhook sinks sign with it
    secret: str | None = None
    #: the environment the commands rouse starts inherit (less rouse's own secrets)
    environment: Mapping[str, str] = field(default_factory=dict)
