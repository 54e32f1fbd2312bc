"""The sweeper: plan a tick (pure) → deliver one wake at a time → stamp after success.

A tick walks the headers, asks the clock what is due at the tick's ``now``,
and plans, without touching anything, what to do about each due record and
each wake the ledger still owes. Then it carries the plan out one wake at a
time: write it to the ledger, send it, and only after the sink says it landed
stamp the record's machine fields. Nudge files whose record has since moved
or ended are archived to ``.rouse/nudges/done/``.

The plan is made by :mod:`rouse.sweep.plan`, the loop around ticks is
:mod:`rouse.sweep.loop`, nudge files are archived by :mod:`rouse.sweep.archive`
and the record stamps are written by :mod:`rouse.sweep.stamping`.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from rouse.core import clock, nudges
from rouse.core.cache import HeaderCache
from rouse.core.clock import Decision
from rouse.core.errors import RouseError
from rouse.core.statedir import require_safe
from rouse.core.sweepstate import write_state
from rouse.core.timefmt import parse_stamp
from rouse.core.tree import File, Tree, display_ids
from rouse.sweep import digest, escalate, wake
from rouse.sweep.archive import NudgeArchive
from rouse.sweep.ledger import Ledger, QuietHours
from rouse.sweep.plan import Step, plan
from rouse.sweep.runner import Runner, RunWaits
from rouse.sweep.sinks import Sink, SinkError, write_nudge
from rouse.sweep.stamping import already_stamped, stamp_after_delivery
from rouse.trust.origins import effective_origin

TIME_FORMAT = "%Y-%m-%d %H:%M:%S"

Log = Callable[[str], None]
Say = Callable[[str, int], None]
Origins = Callable[[File], str]

#: How much the sweeper says (``verbosity``): only what went wrong (``-q``) …
ERRORS = 0
#: … also what it did: a delivery, a hold, a withdrawal, a skipped file (the default) …
EVENTS = 1
#: … also every tick, idle or not, and how it started (``-v``).
EVERY_TICK = 2


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


class Sweeper:
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
        self.root = root
        #: a file's effective origin (verified when a stamp key exists)
        self.origins: Origins = origins or effective_origin
        self.sink = sink
        self.quiet = quiet
        self.interval = interval
        self.log: Log = log or _stderr
        self.verbosity = verbosity
        #: all wakes of a tick go out as one message (``--digest``)
        #: one agent run per digest (``--run``): it takes the sink's place
        self.runner = runner or (sink if isinstance(sink, Runner) else None)
        self.digest = digest or self.runner is not None
        self._batch: list[tuple[wake.Wake, Decision]] = []
        #: a second sink, for the owner, when a record is woken without moving
        self.escalation = escalation
        self._eventful = False
        self.stop = threading.Event()
        self.ledger = Ledger(root)
        # an idle tick reads no unchanged file; MACed with the stamp key when the
        # origins reader has one
        self.headers = HeaderCache(root, getattr(self.origins, "cache_secret", None))
        self.nudges = NudgeArchive(root)
        self._told: set[str] = set()

    def close(self) -> None:
        self.ledger.close()

    def __enter__(self) -> Sweeper:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def say(self, line: str, level: int = EVENTS) -> None:
        """Log ``line`` if the sweeper's verbosity reaches ``level``.

        A line of ``EVENTS`` or ``ERRORS`` makes the tick eventful, said or not.
        """
        if level <= EVENTS:
            self._eventful = True
        if level <= self.verbosity:
            self.log(line)

    def _tell_once(self, line: str) -> None:
        if line not in self._told:
            self._told.add(line)
            self.say(line)

    # -- one tick -----------------------------------------------------------

    def tick(self, now: datetime) -> TickReport:
        report = TickReport(now)
        self._eventful = False
        tree = self.headers.walk()
        for problem in tree.untrackable:
            self._tell_once(f"skipped {problem.render()}")
        the_plan = plan(
            tree, now, self.ledger.open_entries(), holdable=self.sink.holdable, quiet=self.quiet
        )
        ids = display_ids(tree)
        self._batch = []
        self._tried: set[str] = set()  # escalations tried this tick
        for step in the_plan.steps:
            if self.stop.is_set():
                report.interrupted = True
                break
            try:
                self._carry_out(step, tree, ids, now, report)
            except Exception as exc:  # one bad record never stops the tick
                report.errors += 1
                where = step.decision.record.rel if step.decision else step.action
                self.say(
                    f"{_t(now)} error on {where}: {type(exc).__name__}: {exc} (skipped)", ERRORS
                )
        if self._batch:  # wakes already in the ledger go out even if we were stopped
            self._send_digest(self._batch, now, report)
            self._batch = []
        if self.escalation is not None:
            self._retry_escalations(tree, now, report)
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

    def _carry_out(
        self, step: Step, tree: Tree, ids: Mapping[str, str], now: datetime, report: TickReport
    ) -> None:
        if step.action == "new":
            assert step.decision is not None
            record = step.decision.record
            made = wake.build(
                step.decision,
                ids[record.dir],
                now,
                wake.read_body(self.root, record.rel),
                self.origins(record),
            )
            held = self.sink.holdable and self.quiet is not None and self.quiet.holds(now)
            self.ledger.add(made, self.sink.kind, now, held=held)
            if held:
                report.held.append(made.id)
                self.say(f"{_t(now)} held {_what(made)} until {self.quiet} ends")
                return
            if self.digest:
                self._batch.append((made, step.decision))
                return
            self._send(made, step.decision, now, report)
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
            if self.digest:
                self._batch.append((entry.wake, step.decision))
                return
            self._send(entry.wake, step.decision, now, report)
        elif step.action == "hold":
            self.ledger.hold(entry.id)
            report.held.append(entry.id)
        elif step.action == "withdraw":
            self.ledger.withdraw(entry.id, now, step.why)
            report.withdrawn.append(entry.id)
            self.say(f"{_t(now)} withdrew {_what(entry.wake)}: {step.why}")
        elif step.action == "confirm":
            self.ledger.delivered(entry.id, now, "its stamp landed before a crash", stamped=True)
            report.delivered.append(entry.id)
        elif step.action == "restamp":
            done = step.decision is None or _stamp(
                self.root, entry.wake, step.decision, now, report, self.say
            )
            if done:
                self.ledger.mark_stamped(entry.id)
        elif step.action == "give_up":
            assert step.decision is not None
            trailer = (
                f"\n(rouse could not deliver this wake via {entry.sink} for 24h "
                f"— {entry.error or 'no answer'} — so it was given up and written here.)\n"
            )
            written = write_nudge(self.root, entry.wake, now, trailer)
            stamped = _stamp(self.root, entry.wake, step.decision, now, report, self.say)
            self.ledger.given_up(entry.id, now, written, stamped=stamped)
            report.given_up.append(entry.id)
            self.say(f"{_t(now)} gave up on {_what(entry.wake)} after 24h: wrote {written}", ERRORS)

    def _send(self, made: wake.Wake, decision: Decision, now: datetime, report: TickReport) -> None:
        try:
            receipt = self.sink.send(made, now)
        except SinkError as exc:
            self.ledger.failed(made.id, now, str(exc))
            report.failed.append(made.id)
            self.say(f"{_t(now)} not delivered {_what(made)} via {self.sink.kind}: {exc}", ERRORS)
            return
        # landed: say so first, so a crash from here on restamps instead of resending
        self.ledger.delivered(made.id, now, receipt, stamped=False)
        if _stamp(self.root, made, decision, now, report, self.say):
            self.ledger.mark_stamped(made.id)
        report.delivered.append(made.id)
        self.say(f"{_t(now)} delivered {_what(made)} via {self.sink.kind}: {receipt}")
        self._maybe_escalate(made, now, report)

    # -- escalation -----------------------------------------------------------

    def _maybe_escalate(self, made: wake.Wake, now: datetime, report: TickReport) -> None:
        """After ``made`` landed: tell the owner if its record reached a new level."""
        if self.escalation is None:
            return
        threshold = self.escalation.threshold
        first, woken = self.ledger.streak(made.path, made.last_moved)
        level = threshold.level(woken, first or made.made_at, now)
        if level < 1 or self.ledger.escalated(made.path, made.last_moved, level):
            return
        message = escalate.message(
            self.root, made, level, threshold, woken, first or made.made_at, now
        )
        self.ledger.add_escalation(message, made.id, level, self.escalation.sink.kind, now)
        self._send_escalation(message, now, report)

    def _send_escalation(self, message: wake.Wake, now: datetime, report: TickReport) -> None:
        assert self.escalation is not None
        sink = self.escalation.sink
        self._tried.add(message.id)
        what = f"{message.record} (escalation {message.nudge}) id={message.id}"
        try:
            receipt = sink.send(message, now)
        except SinkError as exc:
            self.ledger.escalation_attempt(message.id, now, receipt=None, error=str(exc))
            self.say(f"{_t(now)} could not escalate {what} via {sink.kind}: {exc}", ERRORS)
            return
        self.ledger.escalation_attempt(message.id, now, receipt=receipt, error=None)
        report.escalated.append(message.id)
        self.say(f"{_t(now)} escalated {what} to the owner via {sink.kind}: {receipt}")

    def _retry_escalations(self, tree: Tree, now: datetime, report: TickReport) -> None:
        """Resend escalations that did not land (one try per tick) while still true."""
        for message, _level in self.ledger.pending_escalations():
            if message.id in self._tried:  # one try per tick
                continue
            record = tree.records.get(message.path)
            if record is None or clock.moved_at(record)[0] > parse_stamp(message.last_moved):
                self.ledger.withdraw_escalation(message.id, now, "its record moved or is gone")
                continue
            self._send_escalation(message, now, report)

    def _send_digest(
        self, batch: list[tuple[wake.Wake, Decision]], now: datetime, report: TickReport
    ) -> None:
        """Send the tick's wakes as one digest; each wake lands, fails or is stamped on its own.

        A retry keeps the digest's id when every wake in it was carried by that
        digest before (a wake withdrawn meanwhile has simply dropped out).
        """
        wake_ids = [made.id for made, _ in batch]
        digest_id = self.ledger.digest_of(wake_ids) or digest.new_id(now)
        self.ledger.start_digest(digest_id, wake_ids, self.sink.kind, now)
        made = digest.build(digest_id, [w for w, _ in batch], now)
        what = f"digest {digest_id} of {len(batch)} wake(s)"
        ran = None
        try:
            if self.runner is not None:
                ran = self.runner.run(made, now, self.ledger)
                receipt = ran.describe()
            else:
                receipt = self.sink.send(made, now)
        except RunWaits as exc:  # no run now: the wakes wait, held, not failed
            self.ledger.digest_done(digest_id, now, receipt=None, error=str(exc))
            for one, _ in batch:
                self.ledger.defer(one.id, str(exc))
                report.held.append(one.id)
            self._tell_once(f"{what} waits: {exc}")
            return
        except SinkError as exc:
            self.ledger.digest_done(digest_id, now, receipt=None, error=str(exc))
            for one, _ in batch:
                self.ledger.failed(one.id, now, str(exc))
                report.failed.append(one.id)
            self.say(f"{_t(now)} not delivered {what} via {self.sink.kind}: {exc}", ERRORS)
            return
        self.ledger.digest_done(digest_id, now, receipt=receipt, error=None)
        answered = {one.id for one, _ in batch}
        if ran is not None:  # did the run move or end the records it was woken about?
            fresh = self.headers.walk()
            answered = {one.id for one, _ in batch if _answered(fresh, one)}
            self.ledger.run_answered(ran.id, len(answered))
            receipt += f", answered {len(answered)} of {len(batch)}"
        for one, _ in batch:
            landed = f"digest {digest_id}: {receipt}"
            if ran is not None:
                landed = receipt if one.id in answered else f"{receipt}: ran, not answered"
            self.ledger.delivered(one.id, now, landed, stamped=False)
        for one, decision in batch:
            if _stamp(self.root, one, decision, now, report, self.say):
                self.ledger.mark_stamped(one.id)
            report.delivered.append(one.id)
        self.say(f"{_t(now)} delivered {what} via {self.sink.kind}: {receipt}")
        for one, _ in batch:
            if ran is None or one.id not in answered:  # an answered record needs no human
                self._maybe_escalate(one, now, report)
        for one, _ in batch:
            self.say(f"{_t(now)}   in it: {_what(one)}", EVERY_TICK)


def _answered(tree: Tree, made: wake.Wake) -> bool:
    """Whether the agent moved or ended ``made``'s record since the wake (gone counts)."""
    record = tree.records.get(made.path)
    return record is None or nudges.acted_since(record, made.made_at)


def _what(made: wake.Wake) -> str:
    return f"{made.record} ({made.reason}, nudge {made.nudge}) id={made.id}"


def _t(value: datetime) -> str:
    return value.strftime(TIME_FORMAT)


def _stderr(line: str) -> None:
    print(f"rouse sweep: {line}", file=sys.stderr, flush=True)


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
