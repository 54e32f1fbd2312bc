"""Carrying a digest out (``sweep --digest``, ``sweep --run``): the Sweeper's collaborator.

:class:`DigestSender` gathers a tick's wakes and sends them as one message
through the sink, or hands them to one agent run; each wake then lands, fails
or is stamped on its own. What a digest says is :mod:`rouse.sweep.wake`'s,
how a run goes is :mod:`rouse.sweep.runner`'s.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from rouse.cache.walk import HeaderCache
from rouse.core.clock import Decision
from rouse.core.errors import RouseError
from rouse.core.tree import Tree
from rouse.state import acts, nudges
from rouse.sweep.ledger import Ledger
from rouse.sweep.report import ERRORS, EVERY_TICK, TickReport, Voice, moment, named
from rouse.sweep.runner import Runner, RunResult, RunWaits
from rouse.sweep.sinks import Sink, SinkError, write_nudge
from rouse.sweep.wake import Wake, build_digest, new_digest_id

#: The stamp after delivery: False means try again next tick.
Stamp = Callable[[Wake, Decision | None, datetime, TickReport], bool]
#: What follows a wake that landed (an escalation, if one is due); the flag says
#: it landed in an agent run that ended without answering it.
Landed = Callable[[Wake, datetime, TickReport, bool], None]
#: Whether an exception is the ledger's database gone (a fleet's; never the SQLite file).
Outage = Callable[[BaseException], bool]


@dataclass(eq=False)
class Receipts:
    """Deliveries the sink confirmed that the ledger could not record (its database was lost).

    The sink said yes, so the wake must not be sent again: the receipt is kept
    here, in memory, and written first thing at the next tick (before anything
    else is planned or sent). A process killed meanwhile forgets it, and the
    wake, still owed in the ledger, is sent again: at least once, same id.
    """

    ledger: Ledger
    outage: Outage
    #: wake id → (when it landed, the sink's receipt), in the order they landed
    waiting: dict[str, tuple[datetime, str]] = field(default_factory=dict)

    def record(self, landed: list[tuple[str, str]], now: datetime) -> None:
        """Write ``landed`` (wake id, receipt) as delivered (not yet stamped).

        If the database is lost on the way, the rest are kept for the next tick
        and the outage is raised again: the tick ends.
        """
        for done, (wake_id, receipt) in enumerate(landed):
            try:
                self.ledger.delivered(wake_id, now, receipt, stamped=False)
            except Exception as exc:
                if self.outage(exc):
                    self.keep(landed[done:], now)
                raise

    def keep(self, landed: list[tuple[str, str]], now: datetime) -> None:
        """Keep ``landed`` for the next tick without trying the ledger now."""
        for wake_id, receipt in landed:
            self.waiting[wake_id] = (now, receipt)

    def flush(self) -> None:
        """Write the deliveries kept since the outage. Raises if still unreachable."""
        for wake_id, (when, receipt) in list(self.waiting.items()):
            self.ledger.delivered(wake_id, when, receipt, stamped=False)
            del self.waiting[wake_id]


@dataclass(eq=False)
class NudgeNotes:
    """In a fleet: the nudge files this sweeper writes in its tree, noted in the tree's
    own SQLite ledger, so the pack (which reads only that file, and never loads a
    database driver) shows them. The tree's own ledger says so already: nothing to do."""

    root: Path
    ledger: Ledger
    sink: str
    voice: Voice
    #: the tree's own SQLite ledger when ``ledger`` is a fleet's, opened once
    _local: Ledger | None = field(default=None, init=False)

    def own(self) -> Ledger:
        """The tree's own SQLite ledger (tells live there too): ``ledger`` itself, or
        the one this sweeper opens beside a fleet's, once."""
        if not self.ledger.shared:
            return self.ledger
        if self._local is None:
            self._local = Ledger(self.root)
        return self._local

    def vouch(self, made: Wake, state: str, when: datetime, written: str) -> None:
        """Note the nudge file ``written`` (``made`` ``state`` at ``when``). Best effort:
        a failure is said once."""
        if not self.ledger.shared:
            return
        try:
            self.own().vouch(made, self.sink, state, when, written)
        except (RouseError, sqlite3.Error, OSError) as exc:
            self.voice.tell_once(
                f"could not note {written} in .rouse/ledger.sqlite3 ({exc}): the pack will "
                "not show it as a wake (the fleet's ledger has it)"
            )

    def close(self) -> None:
        if self._local is not None:
            self._local.close()
            self._local = None


@dataclass(frozen=True)
class AfterDelivery:
    """What follows a wake that landed, for the carrier and the digests alike."""

    stamp: Stamp
    landed: Landed
    #: deliveries the ledger could not record yet (its database was lost)
    receipts: Receipts
    #: in a fleet, the nudge files written here are noted in the tree's own ledger
    notes: NudgeNotes


@dataclass(eq=False)
class DigestSender:
    """One tick's batch of wakes, sent as one digest or one agent run."""

    ledger: Ledger
    sink: Sink
    runner: Runner | None
    headers: HeaderCache
    voice: Voice
    #: (a run's unanswered wakes are nudge files: noted for the pack)
    after: AfterDelivery
    batch: list[tuple[Wake, Decision | None]] = field(default_factory=list)

    def flush(self, now: datetime, report: TickReport) -> None:
        """Send the batch if there is one (its wakes are in the ledger: they go out even
        when the tick was stopped)."""
        if self.batch:
            self.send(self.batch, now, report)
            self.batch = []

    def _unanswered(self, made: Wake, receipt: str, now: datetime) -> str:
        """A wake a run left unanswered stays woken: written as a nudge file, which the
        pack and the session hooks show, and which is its receipt (so the pack vouches
        for it). Without a place to write it, the receipt says so instead."""
        trailer = (
            f"\n(rouse ran an agent for this wake — {receipt} — and the run ended without "
            "answering it, so it is written here for the next session.)\n"
        )
        try:
            written = write_nudge(self.headers.root, made, now, trailer)
        except OSError as exc:
            self.voice.tell_once(f"could not write the nudge file of an unanswered wake: {exc}")
            return f"{receipt}: ran, not answered"
        self.after.notes.vouch(made, "delivered", now, written)
        return written

    def _carry(
        self,
        digest_id: str,
        batch: list[tuple[Wake, Decision | None]],
        what: str,
        now: datetime,
        report: TickReport,
    ) -> tuple[str, RunResult | None] | None:
        """Send the digest through the sink or hand it to a run: its receipt and the run's
        result; None when it did not go (its wakes then wait held, or failed)."""
        made = build_digest(digest_id, [w for w, _ in batch], now)
        try:
            if self.runner is not None:
                ran = self.runner.run(made, now, self.ledger)
                return ran.describe(), ran
            return self.sink.send(made, now), None
        except RunWaits as exc:  # no run now: the wakes wait, held, not failed
            self.ledger.finish(digest_id, now, receipt=None, error=str(exc))
            for one, _ in batch:
                self.ledger.defer(one.id, str(exc))
                report.held.append(one.id)
            self.voice.tell_once(f"{what} waits: {exc}")
        except SinkError as exc:
            self.ledger.finish(digest_id, now, receipt=None, error=str(exc))
            for one, _ in batch:
                self.ledger.failed(one.id, now, str(exc))
                report.failed.append(one.id)
            self.voice.say(
                f"{moment(now)} not delivered {what} via {self.sink.kind}: {exc}", ERRORS
            )
        return None

    def send(
        self, batch: list[tuple[Wake, Decision | None]], now: datetime, report: TickReport
    ) -> None:
        """Send the tick's wakes as one digest; each wake lands, fails or is stamped on its own.

        A retry keeps the digest's id when every wake in it was carried by that
        digest before (a wake withdrawn meanwhile has simply dropped out).
        """
        say = self.voice.say
        wake_ids = [made.id for made, _ in batch]
        digest_id = self.ledger.digest_of(wake_ids) or new_digest_id(now)
        self.ledger.start_digest(digest_id, wake_ids, self.sink.kind, now)
        what = f"digest {digest_id} of {len(batch)} wake(s)"
        carried = self._carry(digest_id, batch, what, now, report)
        if carried is None:
            return
        receipt, ran = carried
        sent = receipt
        answered = {one.id for one, _ in batch}
        if ran is not None:  # did the run answer the wakes it was given?
            fresh = self.headers.walk()
            done = acts.load(self.headers.root, self.headers.secret, now)
            answered = {one.id for one, _ in batch if _answered(fresh, one, done)}
            receipt += f", answered {len(answered)} of {len(batch)}"
        landed: list[tuple[str, str]] = []
        for one, _ in batch:
            text = f"digest {digest_id}: {receipt}"
            if ran is not None:
                text = receipt if one.id in answered else self._unanswered(one, receipt, now)
            landed.append((one.id, text))
        try:
            self.ledger.finish(digest_id, now, receipt=sent, error=None)
            if ran is not None:
                self.ledger.run_answered(ran.id, len(answered))
        except Exception as exc:
            if self.after.receipts.outage(exc):
                self.after.receipts.keep(landed, now)  # it landed: never send it again
            raise
        self.after.receipts.record(landed, now)
        for one, decision in batch:
            if self.after.stamp(one, decision, now, report):
                self.ledger.mark_stamped(one.id)
            report.delivered.append(one.id)
        say(f"{moment(now)} delivered {what} via {self.sink.kind}: {receipt}")
        for one, _ in batch:
            if ran is None or one.id not in answered:  # an answered record needs no human
                self.after.landed(one, now, report, ran is not None)
        for one, _ in batch:
            say(f"{moment(now)}   in it: {named(one)}", EVERY_TICK)


def _answered(tree: Tree, made: Wake, done: acts.Acts) -> bool:
    """Whether the agent answered ``made`` (``nudges.acted_since``; a record gone counts)."""
    if made.reason == nudges.DRIFTED:  # a note's: it has no record
        return nudges.note_answered(tree, made.path, made.made_at, done)
    record = tree.records.get(made.path)
    return record is None or nudges.acted_since(record, made.made_at, done, made.reason)
