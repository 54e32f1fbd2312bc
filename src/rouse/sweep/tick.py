"""The sweeper: plan a tick (pure) → deliver one wake at a time → stamp after success.

A tick walks the headers, asks the clock what is due at the tick's ``now``,
and plans, without touching anything, what to do about each due record and
each wake the ledger still owes. Then it carries the plan out one wake at a
time: write it to the ledger, send it, and only after the sink says it landed
stamp the record's machine fields. Nudge files whose record has since moved
or ended are archived to ``.rouse/nudges/done/``.

The plan is made by :mod:`rouse.sweep.plan`, the loop around ticks is
:mod:`rouse.sweep.loop`, nudge files are archived by :mod:`rouse.sweep.archive`
and the record stamps are written by :mod:`rouse.sweep.stamping`. The Sweeper's
collaborators send digests and agent runs (:mod:`rouse.sweep.digesting`) and
escalations (:mod:`rouse.sweep.escalating`); what it says, and how much, is
:mod:`rouse.sweep.voice`'s.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from rouse.core import clock
from rouse.core.cache import HeaderCache
from rouse.core.clock import Decision
from rouse.core.errors import RouseError
from rouse.core.statedir import require_safe
from rouse.core.sweepstate import write_state
from rouse.core.tree import File, display_ids
from rouse.sweep import escalate, wake
from rouse.sweep.archive import NudgeArchive
from rouse.sweep.carrying import Carrier
from rouse.sweep.digesting import DigestSender
from rouse.sweep.escalating import Escalator
from rouse.sweep.ledger import Ledger
from rouse.sweep.plan import plan
from rouse.sweep.quiet import QuietHours
from rouse.sweep.runner import Runner
from rouse.sweep.sinks import Sink
from rouse.sweep.stamping import already_stamped, stamp_after_delivery
from rouse.sweep.voice import ERRORS, EVENTS, EVERY_TICK, Log, Say, Voice, _t
from rouse.trust.origins import effective_origin

#: The verbosity levels are the Sweeper's to take (``Sweeper(verbosity=tick.EVENTS)``).
__all__ = ["ERRORS", "EVENTS", "EVERY_TICK", "Origins", "Sweeper", "TickReport"]

Origins = Callable[[File], str]


# -- carrying it out ------------------------------------------------------------


@dataclass
class TickReport:
    now: datetime
    delivered: list[str] = field(default_factory=list)  # wake ids
    failed: list[str] = field(default_factory=list)
    held: list[str] = field(default_factory=list)
    given_up: list[str] = field(default_factory=list)
    withdrawn: list[str] = field(default_factory=list)
    escalated: list[str] = field(default_factory=list)  # escalation ids delivered
    archived: list[str] = field(default_factory=list)
    stamped: int = 0
    errors: int = 0
    undelivered: int = 0  # pending (not held) in the ledger after the tick
    interrupted: bool = False
    next_at: datetime | None = None
    #: the tick had something to say (a wake, a failure, a skipped file): not idle
    eventful: bool = False


class Sweeper(Voice):
    """One tree's sweeper: its ledger, its sink, and caches that live across ticks."""

    def __init__(
        self,
        root: Path,
        sink: Sink,
        *,
        quiet: QuietHours | None = None,
        log: Log | None = None,
        interval: float | None = None,
        origins: Origins | None = None,
        verbosity: int = EVENTS,
        digest: bool = False,
        escalation: escalate.Escalation | None = None,
        runner: Runner | None = None,
    ):
        require_safe(root)  # no ledger, lock or nudge file goes through a link
        super().__init__(log, verbosity)
        self.root = root
        #: a file's effective origin (verified when a stamp key exists)
        self.origins: Origins = origins or effective_origin
        self.sink = sink
        self.quiet = quiet
        self.interval = interval
        #: all wakes of a tick go out as one message (``--digest``)
        #: one agent run per digest (``--run``): it takes the sink's place
        self.runner = runner or (sink if isinstance(sink, Runner) else None)
        self.digest = digest or self.runner is not None
        #: a second sink, for the owner, when a record is woken without moving
        self.escalation = escalation
        self.stop = threading.Event()
        self.ledger = Ledger(root)
        # an idle tick reads no unchanged file; MACed with the stamp key when the
        # origins reader has one
        self.headers = HeaderCache(root, getattr(self.origins, "cache_secret", None))
        self.nudges = NudgeArchive(root)
        self.escalator = (
            Escalator(root, self.ledger, escalation, self) if escalation is not None else None
        )
        self.digests = DigestSender(
            self.ledger,
            sink,
            self.runner,
            self.headers,
            self,
            stamp=self._stamp_wake,
            landed=self._maybe_escalate,
        )
        self.carrier = Carrier(
            root,
            sink,
            self.ledger,
            self,
            origins=self.origins,
            quiet=quiet,
            digests=self.digests if self.digest else None,
            stamp=self._stamp_wake,
            landed=self._maybe_escalate,
        )

    def close(self) -> None:
        self.ledger.close()

    def __enter__(self) -> Sweeper:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- one tick -----------------------------------------------------------

    def tick(self, now: datetime) -> TickReport:
        report = TickReport(now)
        self._eventful = False
        tree = self.headers.walk()
        for problem in tree.untrackable:
            self.tell_once(f"skipped {problem.render()}")
        the_plan = plan(
            tree, now, self.ledger.open_entries(), holdable=self.sink.holdable, quiet=self.quiet
        )
        ids = display_ids(tree)
        self.digests.batch = []
        if self.escalator is not None:
            self.escalator.tried = set()  # escalations tried this tick
        for step in the_plan.steps:
            if self.stop.is_set():
                report.interrupted = True
                break
            try:
                self.carrier.carry_out(step, ids, now, report)
            except Exception as exc:  # one bad record never stops the tick
                report.errors += 1
                where = step.decision.record.rel if step.decision else step.action
                self.say(
                    f"{_t(now)} error on {where}: {type(exc).__name__}: {exc} (skipped)", ERRORS
                )
        self.digests.flush(now, report)  # even if we were stopped: they are in the ledger
        if self.escalator is not None:
            self.escalator.retry(tree, now, report)
        try:
            report.archived += self.nudges.archive(tree)
        except OSError as exc:
            self.say(f"{_t(now)} could not archive nudge files: {exc}", ERRORS)
        report.undelivered = sum(e.state == "pending" for e in self.ledger.open_entries())
        report.next_at = the_plan.next_at
        flush = getattr(self.origins, "flush", None)
        if callable(flush):
            flush()
        write_state(self.root, now, self.interval, self.sink.describe())
        report.eventful = self._eventful
        return report

    def _stamp_wake(
        self, made: wake.Wake, decision: Decision, now: datetime, report: TickReport
    ) -> bool:
        """Stamp ``made``'s record after delivery (see :func:`_stamp`)."""
        return _stamp(self.root, made, decision, now, report, self.say)

    def _maybe_escalate(self, made: wake.Wake, now: datetime, report: TickReport) -> None:
        """After ``made`` landed: tell the owner if its record reached a new level."""
        if self.escalator is not None:
            self.escalator.after_delivery(made, now, report)


def _stamp(
    root: Path, made: wake.Wake, decision: Decision, now: datetime, report: TickReport, say: Say
) -> bool:
    """Stamp after delivery. False: try again next tick (the wake stays owed a stamp)."""
    record = decision.record
    if already_stamped(record, made):
        return True
    if record.type == "reminder" and not decision.is_due:
        return True  # the agent already acted on it: nothing left to write
    as_sent = decision.replace(reason=made.reason, nudge=made.nudge)
    updates = clock.stamps_after_delivery(as_sent, now)
    try:
        written = stamp_after_delivery(root, record, updates)
    except (RouseError, OSError) as exc:  # busy, vanished or unreadable: next tick
        say(f"{_t(now)} delivered but not yet stamped {record.rel}: {exc}", ERRORS)
        return False
    if written:
        report.stamped += 1
    return True
