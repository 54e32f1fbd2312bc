"""What one tick did (:class:`TickReport`), and the types the tick's helpers share.

The Sweeper (:mod:`rouse.sweep.tick`) makes one report per tick and hands it to
its helpers — carrying, digesting, escalation, leading, the channels — which
note in it what they did; the loop and the heartbeat read it after. It carries
the tick's :class:`Slice`, the one bound on its sends to the owner (tells,
escalations). It lives here, below all of them, so none imports the tick.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from rouse.core.tree import File

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
