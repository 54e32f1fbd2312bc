"""What one tick did (:class:`TickReport`) and says (:class:`Voice`): the types the
tick's helpers share.

The Sweeper (:mod:`rouse.sweep.tick`) makes one report per tick and hands it to
its helpers — carrying, digesting, escalation, leading, the channels — which
note in it what they did; the loop and the heartbeat read it after. It carries
the tick's :class:`Slice`, the one bound on its sends to the owner (tells,
escalations). It lives here, below all of them, so none imports the tick.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from rouse.core.layout import shown
from rouse.core.tree import File
from rouse.state.sweeper import TIME_FORMAT
from rouse.sweep.wake import Wake

#: A file's effective origin (``trusted``, ``untrusted``, ``unknown``…), verified
#: against the stamp key when one exists (:func:`rouse.trust.origins.effective_origin`).
Origins = Callable[[File], str]


#: Seconds a tick may spend starting what it owes the owner besides its wakes (tells,
#: escalations; each send is bounded by its sink's timeout): the rest wait for the next
#: tick, which comes at once (:data:`AGAIN`), wakes first.
SLICE_SECONDS = 5.0
#: How soon the next tick comes when sends were left for it.
AGAIN = timedelta(seconds=1)


@dataclass
class Slice:
    """One tick's time for sends to the owner: they start only within
    :data:`SLICE_SECONDS` of the first, and never once the sweeper is asked to stop, so
    a silent sink delays the next tick's wakes (and a shutdown) by one slice and one
    send's timeout at most."""

    #: the sweeper's stop flag
    stop: threading.Event | None = None
    began: float | None = None
    #: sends were left for the next tick
    left: bool = False

    def spent(self) -> bool:
        """No more sends may start this tick (the first ask starts the slice)."""
        clock = time.monotonic()
        if self.began is None:
            self.began = clock
        if (self.stop is not None and self.stop.is_set()) or clock - self.began >= SLICE_SECONDS:
            self.left = True
        return self.left


@dataclass
class TickReport:
    now: datetime
    #: the tick's time for sends to the owner (tells, escalations)
    slice: Slice = field(default_factory=Slice)
    delivered: list[str] = field(default_factory=list)  # wake ids
    failed: list[str] = field(default_factory=list)
    held: list[str] = field(default_factory=list)
    given_up: list[str] = field(default_factory=list)
    withdrawn: list[str] = field(default_factory=list)
    queued: list[str] = field(default_factory=list)  # left to the delivery workers
    #: in a fleet: whether this sweeper led the tick (None: no fleet)
    leading: bool | None = None
    escalated: list[str] = field(default_factory=list)  # escalation ids delivered
    told: list[str] = field(default_factory=list)  # tells delivered to the owner
    tells_failed: list[str] = field(default_factory=list)
    tells_given_up: list[str] = field(default_factory=list)
    archived: list[str] = field(default_factory=list)
    stamped: int = 0
    #: records stamped from the ledger this tick (a clone's, or a stamp lost after its
    #: delivery): their next step may be due already, so the tick plans them again
    restamped: list[str] = field(default_factory=list)
    errors: int = 0
    undelivered: int = 0  # pending (not held) in the ledger after the tick
    interrupted: bool = False
    next_at: datetime | None = None
    #: the tick had something to say (a wake, a failure, a skipped file): not idle
    eventful: bool = False


Log = Callable[[str], None]

#: How much the sweeper says (``verbosity``): only what went wrong (``-q``) …
ERRORS = 0
#: … also what it did: a delivery, a hold, a withdrawal, a skipped file (the default) …
EVENTS = 1
#: … also every tick, idle or not, and how it started (``-v``).
EVERY_TICK = 2


class Voice:
    """Lines said at a verbosity, and whether a tick had anything to say (the sweeper's base)."""

    def __init__(self, log: Log | None, verbosity: int) -> None:
        self.log: Log = log or _stderr
        self.verbosity = verbosity
        self._eventful = False
        self._told: set[str] = set()

    def say(self, line: str, level: int = EVENTS) -> None:
        """Log ``line`` if the sweeper's verbosity reaches ``level``.

        A line of ``EVENTS`` or ``ERRORS`` makes the tick eventful, said or not.
        """
        if level <= EVENTS:
            self._eventful = True
        if level <= self.verbosity:
            self.log(line)

    def tell_once(self, line: str) -> None:
        """Say ``line`` the first time only (a skipped file, a run that waits)."""
        if line not in self._told:
            self._told.add(line)
            self.say(line)


def named(made: Wake) -> str:
    return f"{made.record} ({made.reason}, nudge {made.nudge}) id={made.id}"


def moment(value: datetime) -> str:
    return value.strftime(TIME_FORMAT)


def _stderr(line: str) -> None:
    print(f"rouse sweep: {shown(line, lines=True)}", file=sys.stderr, flush=True)
