"""Carrying one planned step out: the Sweeper's collaborator for each wake.

A new wake is written to the ledger before it is sent (held in quiet hours,
or gathered into the tick's digest); a wake the ledger owes is resent, held,
withdrawn, confirmed, restamped or given up as :mod:`rouse.sweep.plan` said.
A single wake goes through the sink here, and its record is stamped only after
the sink says it landed.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from rouse.core.clock import Decision
from rouse.sweep.digesting import DigestSender, Landed, Stamp
from rouse.sweep.ledger import Ledger
from rouse.sweep.ledger_entry import Entry
from rouse.sweep.plan import Step
from rouse.sweep.quiet import QuietHours
from rouse.sweep.sink_base import SinkError
from rouse.sweep.sinks import Sink, write_nudge
from rouse.sweep.voice import ERRORS, Voice, _t, _what
from rouse.sweep.wake import Wake, build, key, read_body

if TYPE_CHECKING:
    from rouse.sweep.tick import Origins, TickReport


class Carrier:
    """Carries a tick's steps out, one at a time: the ledger, the sink, then the stamp."""

    def __init__(
        self,
        root: Path,
        sink: Sink,
        ledger: Ledger,
        voice: Voice,
        *,
        origins: Origins,
        quiet: QuietHours | None,
        digests: DigestSender | None,
        stamp: Stamp,
        landed: Landed,
    ) -> None:
        self.root = root
        self.sink = sink
        self.ledger = ledger
        self.voice = voice
        self.origins = origins
        self.quiet = quiet
        #: where new and resent wakes go instead of the sink (``--digest``, ``--run``)
        self.digests = digests
        self.stamp = stamp
        self.landed = landed

    def carry_out(
        self, step: Step, ids: Mapping[str, str], now: datetime, report: TickReport
    ) -> None:
        """Carry ``step`` out; ``ids`` are the display ids of the records' folders."""
        if step.action == "new":
            assert step.decision is not None
            record = step.decision.record
            made = build(
                step.decision,
                ids[record.dir],
                now,
                read_body(self.root, record.rel),
                self.origins(record),
                wake_id=key(self.ledger.tree, step.decision),
            )
            held = self.sink.holdable and self.quiet is not None and self.quiet.holds(now)
            known = self.ledger.add(made, self.sink.kind, now, held=held)
            if known is not None:
                self.already_known(known, step.decision, now, report)
                return
            if held:
                report.held.append(made.id)
                self.voice.say(f"{_t(now)} held {_what(made)} until {self.quiet} ends")
                return
            if self.digests is not None:
                self.digests.add(made, step.decision)
                return
            self.send(made, step.decision, now, report)
            return
        entry = step.entry
        assert entry is not None
        if step.action == "send":
            assert step.decision is not None
            if entry.in_flight:
                self.ledger.failed(
                    entry.id,
                    now,
                    "no result recorded: the sweeper stopped mid-send",
                    when=entry.last_attempt,
                )
            self.ledger.start_attempt(entry.id, self.sink.kind, now)
            if self.digests is not None:
                self.digests.add(entry.wake, step.decision)
                return
            self.send(entry.wake, step.decision, now, report)
        elif step.action == "hold":
            self.ledger.hold(entry.id)
            report.held.append(entry.id)
        elif step.action == "withdraw":
            self.ledger.withdraw(entry.id, now, step.why)
            report.withdrawn.append(entry.id)
            self.voice.say(f"{_t(now)} withdrew {_what(entry.wake)}: {step.why}")
        elif step.action == "confirm":
            self.ledger.delivered(entry.id, now, "its stamp landed before a crash", stamped=True)
            report.delivered.append(entry.id)
        elif step.action == "restamp":
            done = step.decision is None or self.stamp(entry.wake, step.decision, now, report)
            if done:
                self.ledger.mark_stamped(entry.id)
        elif step.action == "give_up":
            assert step.decision is not None
            trailer = (
                f"\n(rouse could not deliver this wake via {entry.sink} for 24h "
                f"— {entry.error or 'no answer'} — so it was given up and written here.)\n"
            )
            written = write_nudge(self.root, entry.wake, now, trailer)
            stamped = self.stamp(entry.wake, step.decision, now, report)
            self.ledger.given_up(entry.id, now, written, stamped=stamped)
            report.given_up.append(entry.id)
            self.voice.say(
                f"{_t(now)} gave up on {_what(entry.wake)} after 24h: wrote {written}", ERRORS
            )

    def already_known(
        self, known: Entry, decision: Decision, now: datetime, report: TickReport
    ) -> None:
        """The ledger had this wake already (a clone's sweeper, or a worker, made it).

        Delivered or given up: stamp this clone's record from the ledger's row,
        without sending again. Still owed: it is another sweeper's or a worker's
        to send, and it is in the ledger, so nothing here is lost.
        """
        landed = known.state in ("delivered", "given_up")
        if landed and self.stamp(known.wake, decision, now, report):
            state = known.state.replace("_", " ")
            self.voice.say(f"{_t(now)} stamped {_what(known.wake)}: {state} per the ledger")

    def send(self, made: Wake, decision: Decision, now: datetime, report: TickReport) -> None:
        try:
            receipt = self.sink.send(made, now)
        except SinkError as exc:
            self.ledger.failed(made.id, now, str(exc))
            report.failed.append(made.id)
            self.voice.say(
                f"{_t(now)} not delivered {_what(made)} via {self.sink.kind}: {exc}", ERRORS
            )
            return
        # landed: say so first, so a crash from here on restamps instead of resending
        self.ledger.delivered(made.id, now, receipt, stamped=False)
        if self.stamp(made, decision, now, report):
            self.ledger.mark_stamped(made.id)
        report.delivered.append(made.id)
        self.voice.say(f"{_t(now)} delivered {_what(made)} via {self.sink.kind}: {receipt}")
        self.landed(made, now, report)
