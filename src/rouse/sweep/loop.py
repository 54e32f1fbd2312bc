"""``rouse sweep``: take the one-sweeper lock, then tick once or until stopped.

SIGTERM/SIGINT finish the wake in flight and exit 0; a tick that fails is
logged and the loop ticks again later. Between ticks the loop sleeps until
the next tick or the next instant something known comes due.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from types import FrameType

from rouse.core.errors import UsageError
from rouse.core.sweepstate import sweeper_lock
from rouse.sweep.ledger import QuietHours
from rouse.sweep.sinks import Sink
from rouse.sweep.tick import Log, Origins, Sweeper, _t

DEFAULT_EVERY = 60.0
#: The longest ``--every`` and ``--timeout``, in seconds: one day.
LONGEST_WAIT = 86400.0


def check_wait(option: str, seconds: float | None) -> None:
    """Refuse (exit 2) a wait that is not a number of seconds above 0 and at most a day."""
    if seconds is not None and not 0 < seconds <= LONGEST_WAIT:  # (nan and inf are not)
        raise UsageError(
            f"{option} must be a number of seconds above 0 and at most {LONGEST_WAIT:g} "
            f"(one day), got {seconds:g}"
        )


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
    check_wait("--every", every)
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
            return run(sw, tick_now, once=once, every=period)
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


def run(sweeper: Sweeper, now: Callable[[], datetime], *, once: bool, every: float) -> int:
    """Tick (once, or until stopped); the exit code for ``rouse sweep``."""
    while True:
        at = now()
        try:
            report = sweeper.tick(at)
        except Exception as exc:  # never fatal: log it, and tick again later
            sweeper.log(f"{_t(at)} tick failed: {type(exc).__name__}: {exc}")
            if once:
                return 1
            if sweeper.stop.wait(every):
                return 0
            continue
        summary = (
            f"{_t(at)} tick: {len(report.delivered)} delivered, {len(report.failed)} failed, "
            f"{len(report.held)} held, {len(report.given_up)} given up, "
            f"{report.undelivered} owed"
        )
        if once:
            sweeper.log(summary)
            return 1 if report.undelivered and not report.interrupted else 0
        if sweeper.stop.is_set():
            return 0
        delay = every
        if report.next_at is not None and report.next_at > at:
            delay = min(delay, (report.next_at - at).total_seconds() + 0.05)
        if sweeper.stop.wait(max(delay, 0.05)):
            return 0
