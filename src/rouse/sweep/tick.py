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

from rouse.core import clock
from rouse.core.cache import HeaderCache
from rouse.core.clock import Decision
from rouse.core.errors import RouseError
from rouse.core.statedir import require_safe
from rouse.core.sweepstate import write_state
from rouse.core.tree import File, Tree, display_ids
from rouse.sweep import wake
from rouse.sweep.archive import NudgeArchive
from rouse.sweep.ledger import Ledger, QuietHours
from rouse.sweep.plan import Step, plan
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
