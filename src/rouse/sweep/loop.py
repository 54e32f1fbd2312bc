"""``rouse sweep``: take the one-sweeper lock, then tick once or until stopped.

SIGTERM/SIGINT finish the wake in flight and exit 0 (their handlers go in
before the lock is taken, so one that lands while the sweeper starts is a
clean stop too); a tick that fails is
logged and the loop ticks again later. Between ticks the loop sleeps until
the next tick or the next instant something known comes due.

What it says (to stderr) depends on ``verbosity`` (:class:`rouse.sweep.report.Voice`):
the loop says once at start what it is doing; each wake delivered, held,
withdrawn or failed gets a line; an idle tick says nothing. ``--once`` ends
with a one-line summary when its tick had something to say, and always when
it exits 1. ``-v`` adds a summary of every tick; ``-q`` keeps only errors.

In a fleet (``--ledger DSN``) the loop also wakes every third of the lease
between ticks: a leader renews its lease, a standby looks whether the lease
lapsed and, if it took it, ticks at once. A tick that loses the database
ends; the loop says so once, tries again after 1s, 2s, 4s… up to 30s, and
says when the database is back. A sweeper started while the database is down
starts all the same: its first tick meets the outage, and is told the same way.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from types import FrameType

from rouse.core.errors import TooNew
from rouse.state.locks import sweeper_lock
from rouse.sweep.build import Parts
from rouse.sweep.heartbeat import Heartbeat
from rouse.sweep.options import SweepOptions
from rouse.sweep.quiet import QuietHours
from rouse.sweep.report import ERRORS, EVENTS, EVERY_TICK, Log, TickReport, moment
from rouse.sweep.sinks import Sink
from rouse.sweep.sinks import check_wait as check_wait  # (the CLI checks its waits here)
from rouse.sweep.tick import Sweeper
from rouse.sweep.watch import kept_hot

DEFAULT_EVERY = 60.0
#: After a tick that lost the fleet's database: wait this long, doubling up to ``LONGEST_RETRY``.
FIRST_RETRY = 1.0
LONGEST_RETRY = 30.0


def sweep(options: SweepOptions, parts: Parts, *, log: Log | None = None) -> int:
    """``rouse sweep``: take the lock, tick once or loop, exit 0/1 (2 if refused).

    ``parts`` are what :func:`rouse.sweep.build.parts` (or a fleet's
    :func:`rouse.fleet.sweeping.fleet_parts`) built from ``options``.

    With ``options.now`` the clock starts at that instant and runs on with the
    wall clock, so a loop under ``--now`` behaves like one started then.
    """
    root, once, every, now = options.root, options.once, options.every, options.now
    check_wait("--every", every)
    after_tick = Heartbeat(options.heartbeat) if options.heartbeat else None
    period = every if every is not None else DEFAULT_EVERY
    interval = period if not once or every is not None else None
    started = time.monotonic()

    def tick_now() -> datetime:
        if now is None:
            return datetime.now().replace(microsecond=0)
        if once:
            return now
        return (now + timedelta(seconds=time.monotonic() - started)).replace(microsecond=0)

    stop = threading.Event()
    restore = on_signals(stop)  # first: from the lock on, a SIGTERM is a clean stop
    try:
        with (
            sweeper_lock(root),
            Sweeper(
                root, parts, log=log, interval=interval, verbosity=options.verbosity, stop=stop
            ) as sw,
            kept_hot(root, sw.headers, on=not once),  # the pack asks it what changed (Linux)
        ):
            # the loop says once what it is doing; --once only when asked (-v)
            line = starting(root, sw.sink, period, parts.quiet, now, once=once)
            said = f"sink {sw.sink.describe()}"
            added = (parts.fleet, parts.channels, parts.escalation)
            grown = "; ".join([said, *(p.describe() for p in added if p is not None)])
            line = line.replace(said, grown + (" (digests)" if parts.digest else ""), 1)
            sw.say(line, EVERY_TICK if once else EVENTS)
            return run(sw, tick_now, once=once, every=period, after_tick=after_tick)
    finally:
        restore()


def starting(
    root: Path,
    sink: Sink,
    every: float,
    quiet: QuietHours | None,
    now: datetime | None,
    *,
    once: bool,
) -> str:
    """The line a sweeper says when it starts: the tree, the sink, the interval, quiet hours."""
    if once:
        parts = [f"one tick of {root}"]
    else:
        parts = [f"sweeping {root} every {every:g}s (sooner when something comes due)"]
    parts.append(f"sink {sink.describe()}")
    if quiet is None:
        parts.append("no quiet hours")
    elif sink.holdable:
        parts.append(f"quiet hours {quiet} (wakes then wait in the ledger)")
    else:
        parts.append(f"quiet hours {quiet} (not for this sink: a nudge file disturbs nobody)")
    if now is not None:
        parts.append(f"clock from {moment(now)}")
    stop = "" if once else ", stops after the wake in flight on Ctrl-C or SIGTERM"
    parts.append(f"pid {os.getpid()}{stop}")
    return "; ".join(parts)


def summary(at: datetime, report: TickReport) -> str:
    """One tick in one line: what it delivered, failed, held or gave up, and what is owed."""
    if report.leading is False:
        return (
            f"{moment(at)} tick (standing by): {report.stamped} stamped from the ledger, "
            f"{report.undelivered} owed"
        )
    queued = f"{len(report.queued)} queued, " if report.queued else ""
    return (
        f"{moment(at)} tick: {len(report.delivered)} delivered, {queued}"
        f"{len(report.failed)} failed, {len(report.held)} held, {len(report.given_up)} given up, "
        f"{report.undelivered} owed"
    )


def on_signals(stop: threading.Event) -> Callable[[], None]:
    """SIGTERM/SIGINT set ``stop``: the wake in flight finishes, then the sweeper (or a
    delivery worker) exits 0."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def handler(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGTERM, signal.SIGINT)}

    def restore() -> None:
        for sig, old in previous.items():
            signal.signal(sig, old)

    return restore


#: Called after every tick with its ``now`` and report (None: the tick failed), e.g.
#: ``--heartbeat`` (:class:`rouse.sweep.heartbeat.Heartbeat`); it must not raise.
AfterTick = Callable[[datetime, TickReport | None], None]


def run(
    sweeper: Sweeper,
    now: Callable[[], datetime],
    *,
    once: bool,
    every: float,
    after_tick: AfterTick | None = None,
) -> int:
    """Tick (once, or until stopped); the exit code for ``rouse sweep``."""
    outage = _Outage(sweeper)
    if sweeper.stop.is_set():
        return 0  # stopped while it started: nothing was in flight
    while True:
        at = now()
        report: TickReport | None = None
        try:
            report = sweeper.tick(at)
        except Exception as exc:  # never fatal: log it, and tick again later
            if sweeper.fleet is not None and sweeper.fleet.unreachable(exc):
                outage.failed(at, exc)
            elif isinstance(exc, TooNew):
                raise  # a ledger from a newer rouse (met after a lazy start): exit 2, as at start
            else:
                sweeper.say(f"{moment(at)} tick failed: {type(exc).__name__}: {exc}", ERRORS)
        if report is not None:
            outage.over(at)
        if after_tick is not None:
            after_tick(at, report)
        if report is None:
            if once:
                return 1
            if sweeper.stop.wait(outage.wait() if outage.down else every):
                return 0
            continue
        if once:
            # owed wakes are the workers' (--plan-only) or the leader's (a standby) to send
            sends = not sweeper.plan_only and report.leading is not False
            code = 1 if sends and report.undelivered and not report.interrupted else 0
            # exit 1 always comes with its reason; an idle tick says nothing (cron mails output)
            level = ERRORS if code else EVENTS if report.eventful else EVERY_TICK
            sweeper.say(summary(at, report), level)
            return code
        sweeper.say(summary(at, report), EVERY_TICK)
        if sweeper.stop.is_set():
            return 0
        delay = every
        if report.next_at is not None and report.next_at > at:
            delay = min(delay, (report.next_at - at).total_seconds() + 0.05)
        if _pause(sweeper, max(delay, 0.05)):
            return 0


def _pause(sweeper: Sweeper, delay: float) -> bool:
    """Wait ``delay`` seconds before the next tick; True if stopped meanwhile.

    In a fleet, wake every third of the lease: the leader renews it; a standby
    takes it if it lapsed (its leader died, or let it go) and then ticks at once.
    """
    fleet = sweeper.fleet
    if fleet is None:
        return sweeper.stop.wait(delay)
    end = time.monotonic() + delay
    while True:
        left = end - time.monotonic()
        if left <= 0:
            return False
        if sweeper.stop.wait(min(left, fleet.lease / 3)):
            return True
        if time.monotonic() >= end:
            return False
        was = fleet.leading
        try:
            leading = fleet.lead()
        except Exception:  # the database lost, say: the tick meets it, says so, backs off
            return False
        if leading != was:
            return False  # took the lead (or lost it): tick now, and say so


class _Outage:
    """The fleet's database is gone: what the loop said about it, and how long to wait."""

    def __init__(self, sweeper: Sweeper) -> None:
        self.sweeper = sweeper
        self.down = False
        self.tries = 0
        self.since: datetime | None = None
        self.told: set[str] = set()
        #: the database was down from the start (it never answered this sweeper)
        self.never = False

    def failed(self, at: datetime, exc: BaseException) -> None:
        """A tick met the outage: say so the first time (and each new reason once)."""
        self.tries += 1
        if not self.down:
            self.down, self.since = True, at
            retry = f"trying again in {FIRST_RETRY:g}s, doubling up to {LONGEST_RETRY:g}s"
            fleet = self.sweeper.fleet
            self.never = fleet is not None and not fleet.reached
            if not self.never:
                said = f"lost the ledger: {exc}; the tick ended and its wakes stay owed; {retry}"
            else:
                said = (
                    f"no ledger yet: {exc}; nothing is planned or sent until it answers "
                    f"(what comes due meanwhile is found then); {retry}"
                )
            self.sweeper.say(f"{moment(at)} {said}", ERRORS)
            self.told.add(str(exc))
        elif str(exc) not in self.told:
            self.told.add(str(exc))
            self.sweeper.say(f"{moment(at)} still no ledger: {exc}", ERRORS)

    def wait(self) -> float:
        return min(FIRST_RETRY * 2.0 ** max(self.tries - 1, 0), LONGEST_RETRY)

    def over(self, at: datetime) -> None:
        """A tick went through: if the database had been lost, say it is back."""
        if not self.down:
            return
        lost = "unreachable since" if self.never else "lost at"
        since = f" ({lost} {moment(self.since)})" if self.since is not None else ""
        self.sweeper.say(
            f"{moment(at)} {'connected' if self.never else 'reconnected'} to the ledger after "
            f"{self.tries} failed tick{'s' if self.tries != 1 else ''}{since}",
            ERRORS,
        )
        self.down, self.tries, self.since, self.told = False, 0, None, set()
