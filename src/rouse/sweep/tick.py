"""The sweeper: plan a tick (pure) → deliver one wake at a time → stamp after success.

A tick walks the headers, asks the clock what is due at the tick's ``now``,
and plans, without touching anything, what to do about each due record and
each wake the ledger still owes. Then it carries the plan out one wake at a
time: write it to the ledger, send it, and only after the sink says it landed
stamp the record's machine fields. Nudge files whose record has since moved
or ended are archived to ``.rouse/nudges/done/``.

In a fleet one sweeper per tree leads and the others stand by
(:mod:`rouse.sweep.leading`). A tick that loses the database ends there; the wakes stay owed, and a
delivery the sink confirmed but the ledger could not record is written first
at the next tick.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from datetime import datetime, timedelta
from pathlib import Path

from rouse.cache.walk import HeaderCache
from rouse.core import home, nextdue
from rouse.core.clock import Decision
from rouse.core.errors import RouseError
from rouse.core.statedir import require_safe
from rouse.core.tree import Tree, display_ids
from rouse.state import acts
from rouse.state.nudges import DRIFTED
from rouse.state.sweeper import write_state
from rouse.sweep import drifting, wake
from rouse.sweep.archive import NudgeArchive
from rouse.sweep.build import Parts
from rouse.sweep.carrying import Carrier, WorkerQueue
from rouse.sweep.channels import Channels, Teller
from rouse.sweep.digesting import AfterDelivery, DigestSender, NudgeNotes, Receipts
from rouse.sweep.escalation import Escalator
from rouse.sweep.leading import Leading
from rouse.sweep.ledger import Ledger
from rouse.sweep.plan import Step, plan
from rouse.sweep.report import (
    AGAIN,
    ERRORS,
    EVENTS,
    EVERY_TICK,
    Log,
    Origins,
    Slice,
    TickReport,
    moment,
)
from rouse.sweep.runner import Runner
from rouse.sweep.sinks import Sink
from rouse.sweep.stamping import already_stamped, stamp_after_delivery
from rouse.trust.origins import OriginReader, effective_origin, origin_reader

#: The verbosity levels are the Sweeper's to take (``Sweeper(verbosity=tick.EVENTS)``).
__all__ = ["ERRORS", "EVENTS", "EVERY_TICK", "Sweeper"]


def _seconds(value: object) -> float:
    """A sink's or runner's timeout in seconds (0 when it has none)."""
    if isinstance(value, timedelta):
        return value.total_seconds()
    return float(value) if isinstance(value, int | float) else 0.0


class Sweeper(Leading):
    """One tree's sweeper: its ledger, its sink, and caches that live across ticks."""

    def __init__(
        self,
        root: Path,
        parts: Parts,
        *,
        log: Log | None = None,
        verbosity: int = EVENTS,
        interval: float | None = None,
        stop: threading.Event | None = None,
    ):
        """``parts``: what it sweeps with (:func:`rouse.sweep.build.parts`); ``log`` and
        ``verbosity``: what it says and how much; ``interval``: the loop's, for ``status``;
        ``stop``: set to stop it (the loop's signal handlers set it from before the lock)."""
        require_safe(root)  # no ledger, lock or nudge file goes through a link
        senders = (parts.runner, parts.escalation, parts.channels)
        if parts.plan_only and (parts.digest or any(part is not None for part in senders)):
            raise ValueError(
                "a plan-only sweeper sends nothing: no digest, run, escalation or channel"
            )
        super().__init__(log, verbosity)
        self.root = root
        self.plan_only = parts.plan_only
        #: where each wake goes (``--plan-only``: the ledger's queue for the workers)
        self.sink: Sink = WorkerQueue() if parts.plan_only else parts.sink
        #: a file's effective origin (verified when a stamp key exists)
        self.origins: Origins = parts.origins or effective_origin
        self.quiet = parts.quiet
        #: the quiet hours that hold its wakes (None: none, or a sink never held)
        self._holds = parts.quiet if self.sink.holdable else None
        self.interval = interval
        #: one agent run per digest (``--run``): it takes the sink's place
        self.runner = parts.runner or (self.sink if isinstance(self.sink, Runner) else None)
        #: all wakes of a tick go out as one message (``--digest``; always with a run)
        self.digest = parts.digest or self.runner is not None
        #: a second sink, for the owner, when a record is woken without moving
        self.escalation = parts.escalation
        self.stop = stop or threading.Event()
        self.ledger = parts.ledger if parts.ledger is not None else Ledger(root)
        self.fleet = parts.fleet
        #: the tree as this tick walked it (for the outreach of a reminder that landed)
        self._tree: Tree | None = None
        self.channels = parts.channels or Channels()
        #: in a fleet, the nudge files it writes are noted in the tree's own ledger
        self.notes = NudgeNotes(root, self.ledger, self.sink.kind, self)
        #: what the last tick's lease said (None: not asked yet), to say each change once
        self._led: bool | None = None
        self.receipts = Receipts(self.ledger, self._outage)
        # an idle tick reads no unchanged file; MACed with the stamp key when the
        # origins reader has one
        # its own walks ask only its own watcher (sweep.watch), in process: never a socket
        self.headers = HeaderCache(
            root, getattr(self.origins, "cache_secret", None), ask_socket=False
        )
        self.nudges = NudgeArchive(root, self.headers.secret)
        self._assemble_senders(root)

    def _assemble_senders(self, root: Path) -> None:
        """What sends for it: tells, escalations, digests, and the carrier of each wake."""
        #: tells live in the tree's own SQLite ledger, even when the wakes are a fleet's
        self.teller = (
            None
            if self.plan_only
            else Teller(root, self.notes.own(), self.channels, self, self.quiet, self._fence)
        )
        self.escalator = (
            None
            if self.escalation is None
            else Escalator(
                root, self.ledger, self.escalation, self, self._fence, self.headers.secret
            )
        )
        after = AfterDelivery(self._stamp_wake, self._maybe_escalate, self.receipts, self.notes)
        self.digests = DigestSender(self.ledger, self.sink, self.runner, self.headers, self, after)
        self.carrier = Carrier(
            root,
            self.sink,
            self.ledger,
            self,
            origins=self.origins,
            quiet=self.quiet,
            digests=self.digests if self.digest else None,
            after=after,
        )
        #: how long one send may take: the lease is renewed to outlive it
        escalation = self.escalation
        self.send_cover = _seconds(getattr(self.runner or self.sink, "timeout", 0)) + (
            _seconds(getattr(escalation.sink, "timeout", 0)) if escalation is not None else 0.0
        )

    def close(self) -> None:
        try:
            if self.fleet is not None:
                try:
                    self.fleet.release()
                except Exception as exc:  # unreachable: the lease lapses on its own
                    self.say(f"could not release the lease: {type(exc).__name__}: {exc}", ERRORS)
        finally:
            self.notes.close()
            self.ledger.close()

    def __enter__(self) -> Sweeper:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- one tick -----------------------------------------------------------

    def tick(self, now: datetime) -> TickReport:
        report = TickReport(now, Slice(self.stop))
        self._eventful = False
        if self.fleet is not None:
            # deliveries a lost database could not record go first: never sent twice
            self.receipts.flush()
            report.leading = self._lead(now)
        tree = self.headers.walk()
        self._tree = tree
        for problem in tree.untrackable:
            self.tell_once(f"skipped {problem.render()}")
        if report.leading is False:
            self._stand_by(tree, now, report)
        else:
            self._lead_tick(tree, now, report)
        try:
            report.archived += self.nudges.archive(tree, now)
        except OSError as exc:
            self.say(f"{moment(now)} could not archive nudge files: {exc}", ERRORS)
        report.undelivered = self.ledger.counts()["pending"]
        self._finish(tree, now, report)
        return report

    def _lead_tick(self, tree: Tree, now: datetime, report: TickReport) -> None:
        """Plan the tick and carry the plan out (alone, or leading the tree's clones)."""
        entries = self.ledger.open_entries()
        for row in self.ledger.damaged:
            self.tell_once(f"skipped the damaged ledger row {row}: no wake rouse wrote")
        the_plan = plan(
            tree,
            now,
            entries,
            quiet=self._holds,
            sends=not self.plan_only,
            done=acts.load(self.root, self.headers.secret, now) if entries else None,
        )
        ids = display_ids(tree)
        self.digests.batch = []
        if self.escalator is not None:
            self.escalator.tried = set()  # escalations tried this tick
        next_at = the_plan.next_at
        carried = self._carry(the_plan.steps, ids, now, report)
        if carried and report.restamped:
            tree, next_at = self._wake_restamped(now, report, next_at)
        if carried and drifting.cited(tree) and self._may_carry(Step("new"), now):
            self._wake_drifted(tree, now, report)
        if self.digests.batch and not self._fence(self.send_cover):
            self.digests.batch = []  # owed in the ledger: the new leader sends them
            report.interrupted = True
        self.digests.flush(now, report)  # even if we were stopped: they are in the ledger
        if self.escalator is not None:
            self.escalator.retry(tree, now, report)
            self.escalator.standing(tree, now, report)
        if self.teller is not None:
            self.teller.deliver(now, report)
        report.next_at = next_at
        if report.slice.left:  # sends were left for the next tick: it comes at once
            soon = now + AGAIN
            report.next_at = soon if report.next_at is None else min(report.next_at, soon)

    def _wake_restamped(
        self, now: datetime, report: TickReport, next_at: datetime | None
    ) -> tuple[Tree, datetime | None]:
        """Records stamped from the ledger this tick (a stamp lost after its delivery, a
        clone's): their next step may have come already, so they are planned again and
        woken now, never left silent. The tree as walked again, and the next instant."""
        tree = self._tree = self.headers.walk()
        again = plan(tree, now, [], quiet=self._holds)
        restamped = set(report.restamped)
        steps = [
            step
            for step in again.steps
            if step.action == "new" and step.decision and step.decision.record.dir in restamped
        ]
        self._carry(steps, display_ids(tree), now, report)
        found = [at for at in (next_at, again.next_at) if at is not None]
        return tree, min(found) if found else None

    def _wake_drifted(self, tree: Tree, now: datetime, report: TickReport) -> None:
        """One wake per note whose probes read differently now (:mod:`rouse.sweep.drifting`)."""
        reader = self.origins
        if not isinstance(reader, OriginReader):
            reader = origin_reader(self.root, home.stamp_key_path())
        try:
            for note, found in drifting.drifted(tree, reader, os.environ):
                origin = self.origins(note)
                made = drifting.build(self.root, self.ledger.tree, note, found, origin, now)
                self.carrier.offer(made, None, now, report)
        except Exception as exc:
            self._skip(exc, now, report, "notes' drift", skipped=False)

    def _carry(
        self, steps: list[Step], ids: Mapping[str, str], now: datetime, report: TickReport
    ) -> bool:
        """Carry ``steps`` out, one at a time; False when the tick was stopped first."""
        for step in steps:
            if self.stop.is_set() or not self._may_carry(step, now):
                report.interrupted = True
                return False
            try:
                self.carrier.carry_out(step, ids, now, report)
            except Exception as exc:
                self._skip(
                    exc, now, report, step.decision.record.rel if step.decision else step.action
                )
        return True

    def _finish(self, tree: Tree, now: datetime, report: TickReport) -> None:
        flush = getattr(self.origins, "flush", None)
        if callable(flush):
            flush()
        default = self.channels.default
        write_state(
            self.root,
            now,
            self.interval,
            self.sink.describe(),
            channels=self.channels.summary(),
            notify=None if default is None else default.describe(),
        )
        if self.fleet is not None:
            if report.leading and report.stamped:
                tree = self.headers.walk()  # the mirror copies the files as stamped, not as read
            try:
                self.fleet.ticked(tree, now, leading=bool(report.leading))
            except Exception as exc:  # the tick's work is done; the mirror catches up next tick
                if self._outage(exc):
                    raise
                self.say(
                    f"{moment(now)} could not record the tick in the fleet: "
                    f"{type(exc).__name__}: {exc}",
                    ERRORS,
                )
        report.eventful = self._eventful

    def _stamp_wake(
        self, made: wake.Wake, decision: Decision | None, now: datetime, report: TickReport
    ) -> bool:
        """Stamp ``made``'s record after delivery. False: try again next tick (the wake
        stays owed a stamp)."""
        if made.reason in wake.NOTICES or decision is None:
            return True  # a task's news, a note's drift: nothing of a record's clock to write
        record = decision.record
        if already_stamped(record, made):
            return True
        if record.type == "reminder" and not decision.is_due:
            return True  # the agent already acted on it: nothing left to write
        as_sent = decision.replace(reason=made.reason, nudge=made.nudge)
        updates = nextdue.stamps_after_delivery(as_sent, now)
        try:
            written = stamp_after_delivery(self.root, record, updates)
        except (RouseError, OSError) as exc:  # busy, vanished or unreadable: next tick
            self.say(f"{moment(now)} delivered but not yet stamped {record.rel}: {exc}", ERRORS)
            return False
        if written:
            report.stamped += 1
        return True

    def _maybe_escalate(
        self, made: wake.Wake, now: datetime, report: TickReport, unanswered_run: bool
    ) -> None:
        """After ``made`` landed: tell the owner if its record reached a new level; a
        reminder with a ``channel:`` reaches it too (not under ``--run``: the run's
        agent reaches the owner itself, with ``rouse tell``)."""
        if made.reason == DRIFTED:
            return  # a note's news: nothing to escalate, nobody else to reach
        if self.escalator is not None:
            self.escalator.after_delivery(made, now, report, unanswered_run=unanswered_run)
        if self.teller is not None and self.runner is None and self._tree is not None:
            self.teller.outreach(made, self._tree.records.get(made.path))
