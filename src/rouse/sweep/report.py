"""What one tick did (:class:`TickReport`), and the types the tick's helpers share.

The Sweeper (:mod:`rouse.sweep.tick`) makes one report per tick and hands it to
its helpers — carrying, digesting, escalation, leading, the channels — which
note in it what they did; the loop and the heartbeat read it after. It lives
here, below all of them, so none imports the tick.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from rouse.core.tree import File

#: A file's effective origin (``trusted``, ``untrusted``, ``unknown``…), verified
#: against the stamp key when one exists (:func:`rouse.trust.origins.effective_origin`).
Origins = Callable[[File], str]


@dataclass
class TickReport:
    now: datetime
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
