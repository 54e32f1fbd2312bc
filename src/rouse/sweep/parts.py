"""What a Sweeper sweeps with: :class:`Parts`, built once before the first tick.

:func:`rouse.sweep.build.parts` makes them from :class:`~rouse.sweep.options.SweepOptions`
(and :func:`rouse.fleet.sweeping.fleet_parts` adds a fleet's ledger and lease);
a test makes them by hand.
"""

from __future__ import annotations

from dataclasses import dataclass

from rouse.sweep.channels import Channels
from rouse.sweep.escalation import Escalation
from rouse.sweep.leading import Fleet
from rouse.sweep.ledger import Ledger
from rouse.sweep.quiet import QuietHours
from rouse.sweep.report import Origins
from rouse.sweep.runner import Runner
from rouse.sweep.sinks import Sink


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
