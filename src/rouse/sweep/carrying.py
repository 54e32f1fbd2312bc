"""Carrying one planned step out: the Sweeper's collaborator for each wake.

A new wake is written to the ledger before it is sent (held in quiet hours,
or gathered into the tick's digest); a wake the ledger owes is resent, held,
withdrawn, confirmed, restamped or given up as :mod:`rouse.sweep.plan` said.
A single wake goes through the sink here, and its record is stamped only after
the sink says it landed.

A sweeper run ``--plan-only`` sends nothing: its sink is the :class:`WorkerQueue`,
new wakes go to the ledger queued for a fleet's delivery workers, and it
stamps the records of the wakes they delivered (or writes the nudge file of
one they gave up on). A sweeper that sends itself takes queued wakes back and
sends them. A wake a worker holds a live claim on, or has delivered since the
tick read the ledger, is not withdrawn, held, given up, taken back, queued or
marked failed: that step is skipped this tick (each of those writes is
conditional in the ledger).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import suppress
from dataclasses import KW_ONLY, dataclass
from datetime import datetime
from pathlib import Path

from rouse.core.clock import Decision
from rouse.core.layout import STATE_DIR
from rouse.state.nudges import DIR as NUDGES_DIR
from rouse.sweep.digesting import AfterDelivery, DigestSender
from rouse.sweep.ledger import NOTICE_SINK, WORKERS, Entry, Ledger, said
from rouse.sweep.plan import Step
from rouse.sweep.quiet import QuietHours
from rouse.sweep.report import ERRORS, EVERY_TICK, Origins, TickReport, Voice, moment, named
from rouse.sweep.sinks import Sink, SinkError, write_nudge
from rouse.sweep.wake import NOTICES, Wake, aged, build, key, read_body


class WorkerQueue:
    """The "sink" of a sweeper run ``--plan-only``: the ledger's queue; it sends nothing.

    Quiet hours hold queued wakes (the workers' sinks reach people).
    """

    kind = WORKERS
    holdable = True

    def describe(self) -> str:
        return "none: wakes are queued in the ledger for `rouse deliver` workers"

    def send(self, wake: Wake, now: datetime) -> str:
        raise SinkError("a sweeper run --plan-only sends nothing: the workers do")


def nudge_file(entry: Entry) -> str | None:
    """The nudge file a delivered or given-up wake was written as, if it was one."""
    if entry.state not in ("delivered", "given_up") or not entry.receipt:
        return None
    path = entry.receipt.split(" (", 1)[0]
    prefix = f"{STATE_DIR}/{NUDGES_DIR}/"
    return path if path.startswith(prefix) and path.endswith(".md") else None


@dataclass(eq=False)
class Carrier:
    """Carries a tick's steps out, one at a time: the ledger, the sink, then the stamp."""

    root: Path
    sink: Sink
    ledger: Ledger
    voice: Voice
    _: KW_ONLY
    origins: Origins
    quiet: QuietHours | None
    #: where new and resent wakes go instead of the sink (``--digest``, ``--run``)
    digests: DigestSender | None
    after: AfterDelivery

    def __post_init__(self) -> None:
        #: ``--plan-only``: wakes are queued for the delivery workers, never sent here
        self.queue = self.sink.kind == WORKERS

    def carry_out(
        self, step: Step, ids: Mapping[str, str], now: datetime, report: TickReport
    ) -> None:
        """Carry ``step`` out; ``ids`` are the display ids of the records' folders."""
        if step.action == "new":
            self._new(step, ids, now, report)
            return
        assert step.entry is not None
        _ACTIONS[step.action](self, step, step.entry, now, report)

    def _new(self, step: Step, ids: Mapping[str, str], now: datetime, report: TickReport) -> None:
        assert step.decision is not None
        record = step.decision.record
        origin = self.origins(record)
        made = build(
            step.decision,
            ids[record.dir],
            now,
            read_body(self.root, record.rel),
            origin,
            wake_id=key(self.ledger.tree, step.decision),
        )
        self.offer(made, step.decision, now, report)

    def _send(self, step: Step, entry: Entry, now: datetime, report: TickReport) -> None:
        if entry.wake.reason in NOTICES:  # a task's news goes out alone, never in a run
            # queued (held) for whoever takes it first: a worker's --sink, a fleet
            # carrier or this tick; one of ours that failed is retried (pending)
            if entry.state != "held":
                self.ledger.start_attempt(entry.id, self.sink.kind, now)
            elif not self.ledger.take_to_send(entry.id, NOTICE_SINK, self.sink.kind, now):
                return
            self.send(entry.wake, step.decision, now, report)
        elif entry.sink == WORKERS and not self.queue:  # queued by a --plan-only sweeper
            if self.ledger.take_to_send(entry.id, WORKERS, self.sink.kind, now):
                self._go(entry.wake, step.decision, now, report)
            else:
                self._claimed(entry, "send", now)
        else:
            self._resend(step, entry, now, report)

    def _resend(self, step: Step, entry: Entry, now: datetime, report: TickReport) -> None:
        why = "no result recorded: the sweeper stopped mid-send"
        if entry.in_flight and not self.ledger.failed(entry.id, now, why, when=entry.last_attempt):
            self._claimed(entry, "send", now)  # a worker's since the tick read it
            return
        if self.queue:  # owed from before --plan-only: the workers send it now
            self._to_workers(entry, "queued", "for", now, report)
            return
        self.ledger.start_attempt(entry.id, self.sink.kind, now)
        self._go(entry.wake, step.decision, now, report)

    def _hold(self, step: Step, entry: Entry, now: datetime, report: TickReport) -> None:
        if self.ledger.hold(entry.id):
            report.held.append(entry.id)
        else:
            self._claimed(entry, "hold", now)

    def _release(self, step: Step, entry: Entry, now: datetime, report: TickReport) -> None:
        self._to_workers(entry, "released", "to", now, report)

    def _to_workers(
        self, entry: Entry, done: str, to: str, now: datetime, report: TickReport
    ) -> None:
        if not self.ledger.queue(entry.id):
            self._claimed(entry, "queue", now)
            return
        report.queued.append(entry.id)
        self.voice.say(f"{moment(now)} {done} {named(entry.wake)} {to} the delivery workers")

    def _withdraw(self, step: Step, entry: Entry, now: datetime, report: TickReport) -> None:
        if not self.ledger.withdraw(entry.id, now, step.why):
            self._claimed(entry, "withdraw", now)
            return
        report.withdrawn.append(entry.id)
        self.voice.say(f"{moment(now)} withdrew {named(entry.wake)}: {step.why}")

    def _confirm(self, step: Step, entry: Entry, now: datetime, report: TickReport) -> None:
        self.ledger.delivered(entry.id, now, "its stamp landed before a crash", stamped=True)
        report.delivered.append(entry.id)

    def _restamp(self, step: Step, entry: Entry, now: datetime, report: TickReport) -> None:
        # stamped as of when it landed, as every clone of a fleet stamps it from this
        # row: clones that disagreed on `swept` would make different wakes (ids) next time
        when = entry.finished or now
        written = nudge_file(entry)
        if written is not None:  # noted again for the pack: idempotent
            self.after.notes.vouch(entry.wake, entry.state, when, written)
        if step.decision is None or self.after.stamp(entry.wake, step.decision, when, report):
            self.ledger.mark_stamped(entry.id)

    def _give_up(self, step: Step, entry: Entry, now: datetime, report: TickReport) -> None:
        assert step.decision is not None
        if entry.sink == WORKERS:  # theirs until it is given up: claim-checked first
            why = f"given up after 24h by the sweeper — {entry.error or 'no answer'}"
            if self.ledger.given_up(entry.id, now, why, stamped=False):
                self._nudge(step, entry, now, report, why)
            else:
                self._claimed(entry, "give up", now)
            return
        trailer = (
            f"\n(rouse could not deliver this wake via {entry.sink} for 24h "
            f"— {entry.error or 'no answer'} — so it was given up and written here.)\n"
        )
        written = write_nudge(self.root, aged(entry.wake, step.decision, now), now, trailer)
        if not self.ledger.given_up(entry.id, now, written, stamped=False):
            with suppress(OSError):  # it landed meanwhile (another sweeper's send)
                (self.root / written).unlink()
            self._claimed(entry, "give up", now)
            return
        self.after.notes.vouch(entry.wake, "given_up", now, written)
        if self.after.stamp(entry.wake, step.decision, now, report):
            self.ledger.mark_stamped(entry.id)
        report.given_up.append(entry.id)
        self.voice.say(
            f"{moment(now)} gave up on {named(entry.wake)} after 24h: wrote {written}", ERRORS
        )

    def _go(self, made: Wake, decision: Decision | None, now: datetime, report: TickReport) -> None:
        """A wake owed now: gathered into the tick's digest (or run), else sent alone."""
        if self.digests is not None:
            self.digests.batch.append((made, decision))
        else:
            self.send(made, decision, now, report)

    def offer(
        self, made: Wake, decision: Decision | None, now: datetime, report: TickReport
    ) -> None:
        """A new wake: into the ledger first, then held, queued, gathered or sent.
        ``decision``: its record's, None for a wake about a note (it stamps nothing)."""
        held = self.sink.holdable and self.quiet is not None and self.quiet.holds(now)
        known = self.ledger.add(made, self.sink.kind, now, held=held, queued=self.queue)
        if known is not None:
            if decision is not None:
                self.already_known(known, decision, now, report)
            return
        if held:
            report.held.append(made.id)
            self.voice.say(f"{moment(now)} held {named(made)} until {self.quiet} ends")
            return
        if self.queue:
            report.queued.append(made.id)
            self.voice.say(f"{moment(now)} queued {named(made)} for the delivery workers")
            return
        self._go(made, decision, now, report)

    def _nudge(
        self,
        step: Step,
        entry: Entry,
        now: datetime,
        report: TickReport,
        why: str | None = None,
    ) -> None:
        """A queued wake given up after 24h: write it as a nudge file, stamp, mark it so.

        The row is marked stamped once its nudge file is written (so it is
        written once); if the record's own stamp could not land, the record is
        still due and the next tick stamps it from this row.
        """
        if step.action == "nudge":  # a worker gave it up: its receipt says why
            why = entry.receipt
        if step.decision is None:  # its record moved, ended or is gone: nothing left to say
            self.ledger.mark_stamped(entry.id)
            self.voice.say(
                f"{moment(now)} wrote no (further) nudge file for {named(entry.wake)}, given up "
                f"by a delivery worker: {step.why or 'its record is gone'}"
            )
            return
        trailer = (
            f"\n(rouse's delivery workers could not deliver this wake for 24h "
            f"— {entry.error or 'no answer'} — so it was given up and written here.)\n"
        )
        written = write_nudge(self.root, aged(entry.wake, step.decision, now), now, trailer)
        # noted for the pack at once: a database lost from here on must not hide it
        self.after.notes.vouch(entry.wake, "given_up", entry.finished or now, written)
        self.after.stamp(entry.wake, step.decision, entry.finished or now, report)
        self.ledger.nudged(
            entry.id, entry.finished or now, f"{written} ({why})" if why else written
        )
        report.given_up.append(entry.id)
        self.voice.say(
            f"{moment(now)} gave up on {named(entry.wake)} after 24h: wrote {written}", ERRORS
        )

    def _claimed(self, entry: Entry, what: str, now: datetime) -> None:
        """A worker holds a live claim on ``entry`` (or its row changed since the tick read
        it: delivered meanwhile): the step waits for the next tick's look."""
        self.voice.say(
            f"{moment(now)} did not {what} {named(entry.wake)}: a delivery worker is sending it "
            "or has just sent it (next tick)",
            EVERY_TICK,
        )

    def already_known(
        self, known: Entry, decision: Decision, now: datetime, report: TickReport
    ) -> None:
        """The ledger had this wake already (a clone's sweeper, or a worker, made it).

        Delivered or given up: stamp this clone's record from the ledger's row,
        without sending again. Still owed: it is another sweeper's or a worker's
        to send, and it is in the ledger, so nothing here is lost.
        """
        landed = known.state == "delivered" or (
            known.state == "given_up" and (known.stamped or known.sink != WORKERS)
        )  # (a worker's give-up is owed its nudge file first: the plan's, next tick)
        if not landed:
            return
        # stamped as of the delivery, so every clone writes the same stamp; a record
        # whose stamp was lost after the delivery gets it back the same way
        stamped = report.stamped
        if self.after.stamp(known.wake, decision, known.finished or now, report):
            state = said(known.state)
            if report.stamped > stamped:
                # its next step may have come already: the tick looks at it again
                report.restamped.append(decision.record.dir)
                self.voice.say(f"{moment(now)} stamped {named(known.wake)}: {state} per the ledger")
            else:
                self.voice.say(
                    f"{moment(now)} {named(known.wake)} is {state} per the ledger and its "
                    "record says so",
                    EVERY_TICK,
                )

    def send(
        self, made: Wake, decision: Decision | None, now: datetime, report: TickReport
    ) -> None:
        try:
            if made.reason in NOTICES and self.sink.kind == "run":
                receipt = write_nudge(self.root, made, now)  # a run takes digests only
            else:
                receipt = self.sink.send(made, now)
        except SinkError as exc:
            self.ledger.failed(made.id, now, str(exc))
            report.failed.append(made.id)
            self.voice.say(
                f"{moment(now)} not delivered {named(made)} via {self.sink.kind}: {exc}", ERRORS
            )
            return
        if self.sink.kind == "file" or (made.reason in NOTICES and self.sink.kind == "run"):
            # the receipt is the nudge file: noted for the pack at once
            self.after.notes.vouch(made, "delivered", now, receipt)
        # landed: say so first, so a crash from here on restamps instead of resending
        try:
            self.after.receipts.record([(made.id, receipt)], now)
        except Exception as exc:
            if self.after.receipts.outage(exc):
                self.voice.say(
                    f"{moment(now)} delivered {named(made)} via {self.sink.kind}: {receipt} "
                    "(the ledger is unreachable: recorded there once it is back)",
                    ERRORS,
                )
            raise
        if self.after.stamp(made, decision, now, report):
            self.ledger.mark_stamped(made.id)
        report.delivered.append(made.id)
        self.voice.say(f"{moment(now)} delivered {named(made)} via {self.sink.kind}: {receipt}")
        if made.reason not in NOTICES:  # news of a task escalates nothing
            self.after.landed(made, now, report, False)


#: each step a plan makes of an owed wake, and what carries it out
_ACTIONS: dict[str, Callable[[Carrier, Step, Entry, datetime, TickReport], None]] = {
    "send": Carrier._send,
    "hold": Carrier._hold,
    "release": Carrier._release,
    "withdraw": Carrier._withdraw,
    "confirm": Carrier._confirm,
    "restamp": Carrier._restamp,
    "give_up": Carrier._give_up,
    "nudge": Carrier._nudge,
}
