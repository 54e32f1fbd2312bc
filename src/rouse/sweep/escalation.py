"""Escalation to a human: a record woken N times (or for a while) without moving.

``--escalate-after 3`` (nudges) or ``--escalate-after 2d`` (a duration since
the first unanswered wake) with ``--escalate webhook URL`` /
``--escalate exec -- CMD``: when a wake lands at or past a threshold, a
message addressed to the owner also goes to that second sink, once per
escalation level (level k at k×N nudges, or k×D), until the record moves.
The ledger's outbox records each one (kind ``escalation``); the pack says so.
Each tick resends those that did not land while they are still true, by the
outbox's one retry rule (given up 24h after the first failure, said as an error).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path

from rouse.core import clock
from rouse.core.errors import UsageError
from rouse.core.timefmt import format_interval, format_stamp, parse_interval, parse_stamp
from rouse.core.tree import Tree
from rouse.state import acts, nudges
from rouse.sweep.ledger import GIVE_UP_AFTER, Ledger, gives_up, ready
from rouse.sweep.report import ERRORS, TickReport, Voice, moment
from rouse.sweep.sinks import Sink, SinkError
from rouse.sweep.wake import Wake, new_id

#: The most nudges ``--escalate-after`` takes.
MOST_NUDGES = 1000


@dataclass(frozen=True)
class Threshold:
    """After ``nudges`` wakes, or ``after`` since the first unanswered wake."""

    nudges: int | None = None
    after: timedelta | None = None

    @classmethod
    def parse(cls, text: str) -> Threshold:
        raw = text.strip()
        if re.fullmatch(r"\d+", raw):
            count = int(raw)
            if 1 <= count <= MOST_NUDGES:
                return cls(nudges=count)
        else:
            try:
                interval = parse_interval(raw)
            except ValueError:
                interval = timedelta(0)
            if interval > timedelta(0):
                return cls(after=interval)
        raise UsageError(
            f"bad --escalate-after {text!r}: want a number of nudges (1 to {MOST_NUDGES}, "
            "e.g. 3) or a duration (e.g. 12h, 2d)"
        )

    def level(self, woken: int, first_wake: datetime, now: datetime) -> int:
        """The level a record woken ``woken`` times since ``first_wake`` reaches (0: none)."""
        if self.nudges is not None:
            return woken // self.nudges
        assert self.after is not None
        return int((now - first_wake) / self.after)

    def __str__(self) -> str:
        if self.nudges is not None:
            return f"{self.nudges} nudge" + ("" if self.nudges == 1 else "s")
        assert self.after is not None
        return format_interval(self.after)


@dataclass(frozen=True)
class Escalation:
    threshold: Threshold
    sink: Sink

    def describe(self) -> str:
        return f"escalate after {self.threshold} via {self.sink.describe()}"


@dataclass(eq=False)
class Escalator:
    """Sends and resends one sweeper's escalations, recording each in its ledger."""

    root: Path
    ledger: Ledger
    escalation: Escalation
    voice: Voice
    #: asked before each send whether this sweeper still leads (in a fleet; for the
    #: seconds the send may take); if not, the escalation waits in the ledger
    fence: Callable[[float], bool]
    secret: bytes | None  # the stamp key's: acts.json is MACed with it
    #: escalations tried this tick: one try per tick
    tried: set[str] = field(default_factory=set)

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
        floor = int(unanswered_run and made.reason == "due" and threshold.nudges is not None)
        self._escalate(made, self.ledger.streak(made.path, made.last_moved), now, report, floor)

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
            self._escalate(made, self.ledger.streak(record.dir, moved), now, report)

    def _escalate(
        self,
        made: Wake,
        streak: tuple[datetime | None, int],
        now: datetime,
        report: TickReport,
        floor: int = 0,
    ) -> None:
        """Tell the owner if the record of ``made`` reached a new level (at least ``floor``)
        in its ``streak`` (:meth:`~rouse.sweep.ledger.Ledger.streak`): a wake-shaped
        message addressed to the owner, recorded in the ledger, then sent."""
        threshold = self.escalation.threshold
        first, woken = streak
        since = first or made.made_at
        level = max(threshold.level(woken, since, now), floor)
        if level < 1 or self.ledger.escalated(made.path, made.last_moved, level):
            return
        text = (
            f"To the owner of the memory at {self.root}: {made.record} needs you.\n"
            f"Your agent has been woken about it {woken} time(s) since {since:%Y-%m-%d %H:%M} "
            f"and it has not moved (last moved {made.last_moved}).\n"
            f"This is escalation {level} (after {threshold}); rouse says it once per level.\n"
            f"at: {made.path}\n"
            "Decide: move it, close it, or tell your agent what to do about it.\n"
            f"\nThe last wake (id {made.id}):\n\n{made.text}"
        )
        at = now.strftime("%Y-%m-%d %H:%M:%S")
        said = replace(made, id="e" + new_id(now), reason="escalate", nudge=level, at=at, text=text)
        self.ledger.add_escalation(said, made.id, level, self.escalation.sink.kind, now)
        self.send(said, now, report)

    def send(self, message: Wake, now: datetime, report: TickReport) -> None:
        """Send ``message`` within the tick's slice for sends to the owner
        (:class:`~rouse.sweep.report.Slice`); past it, it waits in the ledger."""
        sink = self.escalation.sink
        if report.slice.spent():
            return  # pending: the next tick, which comes at once, sends it
        self.tried.add(message.id)
        if not self.fence(float(getattr(sink, "timeout", 0) or 0)):
            return  # no longer the leader: the escalation stays pending for the new one
        what = f"{message.record} (escalation {message.nudge}) id={message.id}"
        try:
            receipt = sink.send(message, now)
        except SinkError as exc:
            self.ledger.tried(message.id, now, receipt=None, error=str(exc))
            self.voice.say(
                f"{moment(now)} could not escalate {what} via {sink.kind}: {exc}", ERRORS
            )
            return
        self.ledger.tried(message.id, now, receipt=receipt, error=None)
        report.escalated.append(message.id)
        self.voice.say(f"{moment(now)} escalated {what} to the owner via {sink.kind}: {receipt}")

    def retry(self, tree: Tree, now: datetime, report: TickReport) -> None:
        """Resend escalations that did not land while still true: one try per tick, by the
        ledger's retry rule (its backoff; given up 24h after the first failure)."""
        for message, tries in self.ledger.pending_escalations():
            if message.id in self.tried:  # one try per tick
                continue
            record = tree.records.get(message.path)
            if record is None or clock.moved_at(record)[0] > parse_stamp(message.last_moved):
                why = "its record moved or is gone"
                self.ledger.withdraw(message.id, now, why)
            elif gives_up(tries.first_failure, now):
                why = f"not delivered for {format_interval(GIVE_UP_AFTER)}: given up"
                self.ledger.given_up(message.id, now, why)
                self.voice.say(
                    f"{moment(now)} gave up on escalation {message.nudge} of {message.record} "
                    f"id={message.id}: the owner was not reached via "
                    f"{self.escalation.sink.kind} for {format_interval(GIVE_UP_AFTER)}",
                    ERRORS,
                )
            elif ready(tries.next_attempt, now):
                self.send(message, now, report)
