"""Carrying escalations out (``sweep --escalate``): the Sweeper's collaborator.

After a wake lands, :class:`Escalator` tells the owner through the escalation's
own sink if the record reached a new level, and each tick it resends the
escalations that did not land while they are still true. What an escalation
says and when one is due are :mod:`rouse.sweep.escalate`'s.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from rouse.core import clock
from rouse.core.timefmt import format_stamp, parse_stamp
from rouse.core.tree import Tree
from rouse.state import acts, nudges
from rouse.sweep import escalate
from rouse.sweep.ledger import Ledger
from rouse.sweep.report import TickReport
from rouse.sweep.sinks import SinkError
from rouse.sweep.voice import ERRORS, Voice, moment
from rouse.sweep.wake import Wake


class Escalator:
    """Sends and resends one sweeper's escalations, recording each in its ledger."""

    def __init__(
        self,
        root: Path,
        ledger: Ledger,
        escalation: escalate.Escalation,
        voice: Voice,
        *,
        fence: Callable[[float], bool] | None = None,
        secret: bytes | None = None,
    ) -> None:
        self.root = root
        self.secret = secret  # the stamp key's: acts.json is MACed with it
        #: in a fleet: asked before each send whether this sweeper still leads (for
        #: the seconds the send may take); if not, the escalation waits in the ledger
        self.fence = fence
        self.ledger = ledger
        self.escalation = escalation
        self.voice = voice
        #: escalations tried this tick: one try per tick
        self.tried: set[str] = set()

    def after_delivery(
        self, made: Wake, now: datetime, report: TickReport, *, unanswered_run: bool = False
    ) -> None:
        """After ``made`` landed: tell the owner if its record reached a new level.

        Every delivery the agent has not answered counts, an agent run that
        ended without answering included. A one-shot reminder is delivered
        once, so under a count it escalates as soon as a run leaves it
        unanswered (and under a duration, see :meth:`standing`).
        """
        threshold = self.escalation.threshold
        first, woken = self.ledger.streak(made.path, made.last_moved)
        level = threshold.level(woken, first or made.made_at, now)
        if unanswered_run and made.reason == "due" and threshold.nudges is not None:
            level = max(level, 1)
        self._escalate(made, level, woken, first or made.made_at, now, report)

    def standing(self, tree: Tree, now: datetime, report: TickReport) -> None:
        """Under a duration (``--escalate-after 2h``): tell the owner about each one-shot
        reminder still unanswered that long after its delivery. (Other records are
        woken again while they stand, and each landing asks :meth:`after_delivery`.)"""
        threshold = self.escalation.threshold
        if threshold.after is None:
            return
        fired = [(r, at) for r in tree.records.values() if (at := nudges.fired_at(r)) is not None]
        if not fired:
            return
        done = acts.load(self.root, self.secret, now)
        for record, at in fired:
            if nudges.acted_since(record, at, done, "due"):
                continue
            moved = format_stamp(clock.moved_at(record)[0])
            made = self.ledger.last_landed(record.dir, moved)
            if made is None:
                continue  # not delivered by this sweeper's ledger (yet): nothing to count
            first, woken = self.ledger.streak(record.dir, moved)
            start = first or made.made_at
            self._escalate(made, threshold.level(woken, start, now), woken, start, now, report)

    def _escalate(
        self, made: Wake, level: int, woken: int, first: datetime, now: datetime, report: TickReport
    ) -> None:
        threshold = self.escalation.threshold
        if level < 1 or self.ledger.escalated(made.path, made.last_moved, level):
            return
        message = escalate.message(self.root, made, level, threshold, woken, first, now)
        self.ledger.add_escalation(message, made.id, level, self.escalation.sink.kind, now)
        self.send(message, now, report)

    def send(self, message: Wake, now: datetime, report: TickReport) -> None:
        sink = self.escalation.sink
        self.tried.add(message.id)
        if self.fence is not None and not self.fence(float(getattr(sink, "timeout", 0) or 0)):
            return  # no longer the leader: the escalation stays pending for the new one
        what = f"{message.record} (escalation {message.nudge}) id={message.id}"
        try:
            receipt = sink.send(message, now)
        except SinkError as exc:
            self.ledger.escalation_attempt(message.id, now, receipt=None, error=str(exc))
            self.voice.say(
                f"{moment(now)} could not escalate {what} via {sink.kind}: {exc}", ERRORS
            )
            return
        self.ledger.escalation_attempt(message.id, now, receipt=receipt, error=None)
        report.escalated.append(message.id)
        self.voice.say(f"{moment(now)} escalated {what} to the owner via {sink.kind}: {receipt}")

    def retry(self, tree: Tree, now: datetime, report: TickReport) -> None:
        """Resend escalations that did not land (one try per tick) while still true."""
        for message, _level in self.ledger.pending_escalations():
            if message.id in self.tried:  # one try per tick
                continue
            record = tree.records.get(message.path)
            if record is None or clock.moved_at(record)[0] > parse_stamp(message.last_moved):
                self.ledger.withdraw_escalation(message.id, now, "its record moved or is gone")
                continue
            self.send(message, now, report)
