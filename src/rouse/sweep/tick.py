"""The sweeper: plan a tick (pure) → deliver one wake at a time → stamp after success.

A tick walks the headers, asks the clock what is due at the tick's ``now``,
and plans, without touching anything, what to do about each due record and
each wake the ledger still owes. Then it carries the plan out one wake at a
time: write it to the ledger, send it, and only after the sink says it landed
stamp the record's machine fields. Nudge files whose record has since moved
or ended are archived to ``.rouse/nudges/done/``.

One sweeper per tree (``rouse.sweeplock``). The record stamps are written
by ``rouse.stamping``.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from types import FrameType

from rouse.core import clock, nudges
from rouse.core.cache import HeaderCache
from rouse.core.clock import Decision
from rouse.core.errors import RouseError, UsageError
from rouse.core.sweepstate import last_tick, sweeper_lock, write_state
from rouse.core.tree import File, Tree, display_ids
from rouse.sweep import wake
from rouse.sweep.ledger import GIVE_UP_AFTER, Entry, Ledger, QuietHours
from rouse.sweep.sinks import Sink, SinkError, write_nudge
from rouse.sweep.stamping import already_stamped, stamp_after_delivery
from rouse.trust.origins import effective_origin

DEFAULT_EVERY = 60.0
TIME_FORMAT = "%Y-%m-%d %H:%M:%S"
__all__ = ["Sweeper", "last_tick", "plan", "sweep"]

Log = Callable[[str], None]
Origins = Callable[[File], str]


# -- the plan (pure) ------------------------------------------------------------


@dataclass
class Step:
    """One thing a tick will do.

    ``new``: make a wake for a due record and send it (or hold it);
    ``send``: resend a wake the ledger owes; ``hold``: keep it through quiet
    hours; ``give_up``: 24h of failures, write it as a nudge file and stamp;
    ``withdraw``: its record moved or ended first; ``confirm``: its stamp
    landed but the ledger missed it (a crash); ``restamp``: delivered but the
    record could not be stamped yet.
    """

    action: str
    decision: Decision | None = None
    entry: Entry | None = None
    why: str = ""


@dataclass
class Plan:
    steps: list[Step] = field(default_factory=list)
    next_at: datetime | None = None  # the next instant something known comes due


def plan(
    tree: Tree,
    now: datetime,
    entries: list[Entry],
    *,
    holdable: bool = False,
    quiet: QuietHours | None = None,
) -> Plan:
    """What a tick at ``now`` does: a pure function of the tree, the ledger and now."""
    decided = {d.record.dir: d for d in clock.decisions(tree, now)}
    untrackable = {p.path for p in tree.untrackable}
    quiet_now = holdable and quiet is not None and quiet.holds(now)
    result = Plan()
    upcoming: list[datetime] = []
    owed: set[str] = set()
    for entry in entries:
        owed.add(entry.wake.path)
        step = _plan_entry(tree, decided, untrackable, entry, now, quiet_now)
        if step is not None:
            result.steps.append(step)
        elif entry.state == "pending" and entry.next_attempt is not None and not quiet_now:
            upcoming.append(entry.next_attempt)
    # the same order as clock.due(): earliest due first
    due = sorted(
        (d for d in decided.values() if d.is_due),
        key=lambda d: (d.due_at or now, d.record.dir),
    )
    result.steps += [Step("new", d) for d in due if d.record.dir not in owed]
    upcoming += [d.due_at for d in decided.values() if d.due_at and d.due_at > now]
    waiting = any(s.action in ("new", "hold") for s in result.steps)
    if quiet_now and quiet is not None and (waiting or any(e.state == "held" for e in entries)):
        upcoming.append(quiet.ends_after(now))
    result.next_at = min(upcoming) if upcoming else None
    return result


def _plan_entry(
    tree: Tree,
    decided: dict[str, Decision],
    untrackable: set[str],
    entry: Entry,
    now: datetime,
    quiet_now: bool,
) -> Step | None:
    found = tree.records.get(entry.wake.path)
    record = found if found is not None and found.rel == entry.wake.file else None
    if record is None and entry.wake.file in untrackable:
        return None  # a bad file is skipped, not given up on: try again next tick
    decision = decided[record.dir] if record is not None else None
    if entry.state == "delivered":
        return Step("restamp", decision, entry)
    if record is None:
        return Step("withdraw", None, entry, "its record is gone")
    assert decision is not None
    if already_stamped(record, entry.wake):
        return Step("confirm", decision, entry)
    if not decision.is_due:
        return Step("withdraw", decision, entry, "its record moved or ended first")
    if entry.first_failure is not None and now - entry.first_failure >= GIVE_UP_AFTER:
        return Step("give_up", decision, entry)
    if quiet_now:
        return Step("hold", decision, entry) if entry.state != "held" else None
    ready = entry.next_attempt is None or now >= entry.next_attempt
    if entry.in_flight or entry.state == "held" or ready:
        return Step("send", decision, entry)
    return None


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
    ):
        self.root = root
        #: a file's effective origin (verified when a stamp key exists)
        self.origins: Origins = origins or effective_origin
        self.sink = sink
        self.quiet = quiet
        self.interval = interval
        self.log: Log = log or _stderr
        self.stop = threading.Event()
        self.ledger = Ledger(root)
        self.headers = HeaderCache(root)  # an idle tick reads no unchanged file
        self._nudge_names: frozenset[str] = frozenset()
        self._nudges: list[nudges.Nudge] = []
        self._told: set[str] = set()

    def close(self) -> None:
        self.ledger.close()

    def __enter__(self) -> Sweeper:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _tell_once(self, line: str) -> None:
        if line not in self._told:
            self._told.add(line)
            self.log(line)

    # -- one tick -----------------------------------------------------------

    def tick(self, now: datetime) -> TickReport:
        report = TickReport(now)
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
                self.log(f"{_t(now)} error on {where}: {type(exc).__name__}: {exc} (skipped)")
        try:
            self._archive(tree, report)
        except OSError as exc:
            self.log(f"{_t(now)} could not archive nudge files: {exc}")
        report.undelivered = sum(e.state == "pending" for e in self.ledger.open_entries())
        report.next_at = the_plan.next_at
        flush = getattr(self.origins, "flush", None)
        if callable(flush):
            flush()
        write_state(self.root, now, self.interval, self.sink.describe())
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
                self.log(f"{_t(now)} held {_what(made)} until {self.quiet} ends")
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
            self.log(f"{_t(now)} withdrew {_what(entry.wake)}: {step.why}")
        elif step.action == "confirm":
            self.ledger.delivered(entry.id, now, "its stamp landed before a crash", stamped=True)
            report.delivered.append(entry.id)
        elif step.action == "restamp":
            done = step.decision is None or self._stamp(entry.wake, step.decision, now, report)
            if done:
                self.ledger.mark_stamped(entry.id)
        elif step.action == "give_up":
            assert step.decision is not None
            trailer = (
                f"\n(rouse could not deliver this wake via {entry.sink} for 24h "
                f"— {entry.error or 'no answer'} — so it was given up and written here.)\n"
            )
            written = write_nudge(self.root, entry.wake, now, trailer)
            stamped = self._stamp(entry.wake, step.decision, now, report)
            self.ledger.given_up(entry.id, now, written, stamped=stamped)
            report.given_up.append(entry.id)
            self.log(f"{_t(now)} gave up on {_what(entry.wake)} after 24h: wrote {written}")

    def _send(self, made: wake.Wake, decision: Decision, now: datetime, report: TickReport) -> None:
        try:
            receipt = self.sink.send(made, now)
        except SinkError as exc:
            self.ledger.failed(made.id, now, str(exc))
            report.failed.append(made.id)
            self.log(f"{_t(now)} not delivered {_what(made)} via {self.sink.kind}: {exc}")
            return
        # landed: say so first, so a crash from here on restamps instead of resending
        self.ledger.delivered(made.id, now, receipt, stamped=False)
        if self._stamp(made, decision, now, report):
            self.ledger.mark_stamped(made.id)
        report.delivered.append(made.id)
        self.log(f"{_t(now)} delivered {_what(made)} via {self.sink.kind}: {receipt}")

    def _stamp(
        self, made: wake.Wake, decision: Decision, now: datetime, report: TickReport
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
            written = stamp_after_delivery(self.root, record, updates)
        except (RouseError, OSError) as exc:  # busy, vanished or unreadable: next tick
            self.log(f"{_t(now)} delivered but not yet stamped {record.rel}: {exc}")
            return False
        if written:
            report.stamped += 1
        return True

    # -- nudge files --------------------------------------------------------

    def _archive(self, tree: Tree, report: TickReport) -> None:
        """Move nudge files whose record the agent acted on to ``.rouse/nudges/done/``.

        Acted on = ``nudges.acted_since`` (the pack's own test): moved later than
        the wake, or ended. A record that is gone counts as acted on; one whose
        file cannot be read right now does not.
        """
        directory = nudges.nudge_dir(self.root)
        try:
            names = frozenset(e.name for e in os.scandir(directory) if e.name.endswith(".md"))
        except FileNotFoundError:
            return
        if names != self._nudge_names:  # nudge files never change: re-read only new ones
            self._nudges = nudges.read_nudges(self.root)
            self._nudge_names = names
        untrackable = {p.path for p in tree.untrackable}
        kept: list[nudges.Nudge] = []
        moved: set[str] = set()
        for nudge in self._nudges:
            record = tree.records.get(nudge.record_dir)
            if record is None:
                acted = not any(p.startswith(nudge.record_dir + "/") for p in untrackable)
            else:
                acted = nudges.acted_since(record, nudge.at)
            if acted and nudge.path.exists():
                archive_nudge(nudge.path)
                moved.add(nudge.path.name)
                report.archived.append(nudge.path.name)
            else:
                kept.append(nudge)
        self._nudges = kept
        self._nudge_names = names - moved

    # -- the loop -----------------------------------------------------------

    def run(self, now: Callable[[], datetime], *, once: bool, every: float) -> int:
        """Tick (once, or until stopped); the exit code for ``rouse sweep``."""
        while True:
            at = now()
            try:
                report = self.tick(at)
            except Exception as exc:  # never fatal: log it, and tick again later
                self.log(f"{_t(at)} tick failed: {type(exc).__name__}: {exc}")
                if once:
                    return 1
                if self.stop.wait(every):
                    return 0
                continue
            summary = (
                f"{_t(at)} tick: {len(report.delivered)} delivered, {len(report.failed)} failed, "
                f"{len(report.held)} held, {len(report.given_up)} given up, "
                f"{report.undelivered} owed"
            )
            if once:
                self.log(summary)
                return 1 if report.undelivered and not report.interrupted else 0
            if self.stop.is_set():
                return 0
            delay = every
            if report.next_at is not None and report.next_at > at:
                delay = min(delay, (report.next_at - at).total_seconds() + 0.05)
            if self.stop.wait(max(delay, 0.05)):
                return 0


def archive_nudge(path: Path) -> Path:
    """Move a nudge file into ``done/`` beside it, never overwriting (``-2``, ``-3``…)."""
    done = path.parent / "done"
    done.mkdir(exist_ok=True)
    number = 1
    while True:
        target = done / (path.name if number == 1 else f"{path.stem}-{number}.md")
        try:
            os.link(path, target)  # atomic, and fails if the name is taken
        except FileExistsError:
            number += 1
            continue
        os.unlink(path)
        return target


def _what(made: wake.Wake) -> str:
    return f"{made.record} ({made.reason}, nudge {made.nudge}) id={made.id}"


def _t(value: datetime) -> str:
    return value.strftime(TIME_FORMAT)


def _stderr(line: str) -> None:
    print(f"rouse sweep: {line}", file=sys.stderr, flush=True)


# -- the verb -------------------------------------------------------------------


def sweep(
    root: Path,
    sink: Sink,
    *,
    once: bool,
    every: float | None = None,
    now: datetime | None = None,
    quiet: QuietHours | None = None,
    log: Log | None = None,
    origins: Origins | None = None,
) -> int:
    """``rouse sweep``: take the lock, tick once or loop, exit 0/1 (2 if refused).

    With ``now`` the clock starts at that instant and runs on with the wall
    clock, so a loop under ``--now`` behaves like one started then.
    """
    if every is not None and every <= 0:
        raise UsageError("--every must be a positive number of seconds")
    period = every if every is not None else DEFAULT_EVERY
    interval = period if not once or every is not None else None
    started = time.monotonic()

    def tick_now() -> datetime:
        if now is None:
            return datetime.now().replace(microsecond=0)
        if once:
            return now
        return (now + timedelta(seconds=time.monotonic() - started)).replace(microsecond=0)

    with (
        sweeper_lock(root),
        Sweeper(root, sink, quiet=quiet, log=log, interval=interval, origins=origins) as sw,
    ):
        restore = _on_signals(sw.stop)
        try:
            return sw.run(tick_now, once=once, every=period)
        finally:
            restore()


def _on_signals(stop: threading.Event) -> Callable[[], None]:
    """SIGTERM/SIGINT set ``stop``: the wake in flight finishes, then the sweeper exits 0."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def handler(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGTERM, signal.SIGINT)}

    def restore() -> None:
        for sig, old in previous.items():
            signal.signal(sig, old)

    return restore
