"""``rouse deliver``: a delivery worker, taking owed wakes from the fleet's ledger.

A sweeper run ``--plan-only`` writes its tree's wakes to the shared ledger for
workers (``sink = 'workers'``) and never sends them; any number of workers, on
any machines, claim them (:mod:`rouse.fleet.claims`), send each through their
sink (exec, webhook or stdout, the sweeper's own), and write what happened:
delivered (the sweeper then stamps the record), failed (retried with the
ledger's backoff), or given up after 24 h of failures (the sweeper then writes
it as a nudge file).

Each wake is claimed for ``lease`` seconds (at least the sink's timeout and
:data:`~rouse.fleet.claims.LEASE_MARGIN`) and started on the database right
before its send (see :mod:`rouse.fleet.claims`); the rest of a batch is renewed
with that start whenever what is left of its claims could not cover the send.
Delivery is at least once: a worker killed after its sink answered but before
the ledger heard of it has that wake sent again, under the same id.

An exec sink runs in the tree's root as its sweeper recorded it (``trees.root``;
unset when none did), with ``ROUSE_TREE`` the tree's id: a worker has no tree.

Quiet hours (``--quiet HH:MM-HH:MM``): inside the window the worker claims
nothing, and gives back what it holds before sending it; rows stay as they are
(the sweeper's held ones too) until the window ends.

The worker keeps a row saying it is alive (:mod:`rouse.fleet.workers`).

SIGTERM/SIGINT: the wake in flight is finished and written, unsent claims are
given back, and the worker exits 0. A lost database — or one not there when
the worker starts — is said once; the worker waits (1 s, doubling to 30 s),
reconnects, says it is back, and first writes the results it could not write,
then gives back claims it did not use.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from pathlib import Path

from rouse.core.errors import UsageError
from rouse.core.layout import shown
from rouse.fleet.claims import LEASE_SLACK, Claim, Claims, check_lease
from rouse.fleet.lease import clock, holder_name
from rouse.fleet.outcomes import Outcomes, Result
from rouse.fleet.pg import LedgerUnreachable, PgDatabase
from rouse.fleet.pg_schema import migrate
from rouse.fleet.workers import Presence
from rouse.sweep.loop import on_signals
from rouse.sweep.quiet import QuietHours, QuietSpell
from rouse.sweep.report import ERRORS, EVENTS, EVERY_TICK, Voice, moment, named
from rouse.sweep.sinks import ExecSink, Sink, SinkError
from rouse.sweep.wake import Wake

#: Seconds between looks for owed wakes when there were none (``--every``).
DEFAULT_EVERY = 5.0
#: How many wakes one claim takes at most (``--batch``).
DEFAULT_BATCH = 10
MOST_BATCH = 1000
#: Waits between attempts to reach a lost database: 1 s, doubling, at most 30 s.
FIRST_RECONNECT = 1.0
MOST_RECONNECT = 30.0


class DeliveryWorker:
    """One ``rouse deliver`` process: claim, send, write; until stopped (or once)."""

    def __init__(
        self,
        dsn: str,
        sink: Sink,
        *,
        timeout: float,
        lease: float,
        batch: int = DEFAULT_BATCH,
        every: float = DEFAULT_EVERY,
        trees: list[str] | None = None,
        verbosity: int = EVENTS,
        json_lines: bool = False,
        now: datetime | None = None,
        once: bool = False,
        log: Callable[[str], None] | None = None,
        holder: str | None = None,
        quiet: QuietHours | None = None,
    ):
        check_lease(lease, timeout)
        self.sink = sink
        self.timeout = timeout
        self.lease = lease
        self.batch = batch
        self.every = every
        self.once = once
        self.holder = holder or holder_name(3)
        self.voice = Voice(log or _stderr, verbosity)
        self.quiet = quiet
        self.stop = threading.Event()
        #: how long a claim must still last for its send to start: the send and some slack
        self._need = timeout + min(LEASE_SLACK, max(lease - timeout, 0.0) / 2)
        self._given_now = now
        self._started = clock()
        self._trees = trees
        #: claims taken and not sent when the database went away: given back when it returns
        self._unreleased: list[Claim] = []
        #: since when (:func:`clock`) the ledger has been out of reach, if it is
        self._lost_since: float | None = None
        self._quiet = QuietSpell(quiet, self._quiet_told)
        # connected (and the schema brought up) on the first round, so a worker started
        # while the database is away waits for it as for one lost later
        self.db = PgDatabase(dsn, application="rouse deliver")
        self.where = self.db.where
        self.outcomes = Outcomes(
            lambda: self.claims, self.voice, sink.kind, self.holder, self.where, lease, json_lines
        )
        self._claims: Claims | None = None
        self._presence: Presence | None = None

    @property
    def claims(self) -> Claims:
        """The claim SQL on the ledger, once reached (LedgerUnreachable until then)."""
        if self._claims is None:
            migrate(self.db, self.where)
            self._presence = Presence(
                self.db, self.holder, self._trees, self.sink.describe(), self.every, self.lease
            )
            self._claims = Claims(self.db, self.holder, self._trees)
        return self._claims

    def _beat(self, claimed: int = 0) -> None:
        """Say this worker is alive, and what it claimed (written every few seconds)."""
        _ = self.claims  # (reached first: the row needs the schema)
        assert self._presence is not None
        self._presence.beat(claimed)

    # -- the clock ------------------------------------------------------------

    def now(self) -> datetime:
        """The worker's clock for the ledger's times (``--now`` starts it elsewhere)."""
        if self._given_now is None:
            return datetime.now().replace(microsecond=0)
        if self.once:
            return self._given_now
        elapsed = timedelta(seconds=clock() - self._started)
        return (self._given_now + elapsed).replace(microsecond=0)

    # -- the loop -------------------------------------------------------------

    def describe(self) -> str:
        trees = ", ".join(self._trees) if self._trees else "every tree"
        how = "what is owed now" if self.once else f"polling every {self.every:g}s"
        stop = "" if self.once else ", stops after the wake in flight on Ctrl-C or SIGTERM"
        quiet = f", quiet hours {self.quiet}" if self.quiet is not None else ""
        return (
            f"worker {self.holder}: wakes of {trees} from {self.where} via "
            f"{self.sink.describe()}; {how}, lease {self.lease:g}s, batch {self.batch}{quiet}; "
            f"pid {os.getpid()}{stop}"
        )

    def run(self) -> int:
        """Deliver until stopped (or, ``once``, until nothing is owed now); the exit code."""
        self.voice.say(self.describe(), EVERY_TICK if self.once else EVENTS)
        restore = on_signals(self.stop)
        try:
            return self._loop()
        finally:
            restore()
            self._stopped()
            self.db.close()

    def _stopped(self) -> None:
        """Mark this worker's row stopped (best-effort: a row left behind goes stale)."""
        if self._presence is None or self._lost_since is not None:
            return
        with contextlib.suppress(LedgerUnreachable):
            self._presence.stopped()

    def _loop(self) -> int:
        wait = FIRST_RECONNECT
        last_try = False  # stopping while the database is away: one more try, then exit
        while True:
            try:
                if self._lost_since is not None:
                    self.claims.db.execute("SELECT 1")  # reached again?
                    self._back(self._lost_since)
                    self._lost_since, wait = None, FIRST_RECONNECT
                self._catch_up()
                if self.stop.is_set():
                    return self._finish()
                worked = self._round()
            except LedgerUnreachable as exc:
                if self._lost_since is None:
                    self._lost_since = clock()
                    self._lost(exc)
                if self.stop.is_set():
                    if last_try:
                        return self._finish()
                    last_try = True
                    time.sleep(FIRST_RECONNECT)
                    continue
                if self.once and clock() - self._lost_since >= self.lease:
                    return self._finish(gave_up_waiting=True)
                self.stop.wait(wait)
                wait = min(wait * 2, MOST_RECONNECT)
                continue
            except UsageError:  # (a schema newer than this rouse): nothing to wait for
                raise
            except Exception as exc:  # a worker that keeps running says so and goes on
                if self.once:
                    raise
                self.voice.say(
                    f"{moment(self.now())} round failed: {type(exc).__name__}: {exc}", ERRORS
                )
                if self.stop.wait(self.every):
                    return self._finish()
                continue
            if self.stop.is_set():
                return self._finish()
            if not worked:
                if self.once:
                    return self._finish()
                if self.stop.wait(self._quiet.idle(self.now(), self.every)):
                    return self._finish()

    def _quiet_told(self, now: datetime, ends: datetime) -> None:
        self.voice.say(
            f"{moment(now)} quiet hours {self.quiet}: claiming nothing until {ends:%Y-%m-%d %H:%M}"
        )

    def _round(self) -> bool:
        """Claim a batch and carry it out; False when nothing was owed (or could be sent)."""
        now = self.now()
        claims = self.claims  # (reached before the quiet check: a lost ledger is said at once)
        self._beat()
        if self._quiet.holds(now):
            return False
        deadline = clock() + self.lease  # taken before the claim: a safe bound
        claimed = claims.claim(now, self.batch, self.lease, deadline)
        for row in claims.damaged:  # set aside: its tree's sweeper makes the wake again
            self.voice.say(f"{moment(now)} skipped the damaged ledger row {row}", ERRORS)
        if not claimed:
            return bool(claims.damaged)  # (more may be owed behind it)
        self._beat(len(claimed))
        self.voice.say(f"{moment(now)} claimed {len(claimed)}", EVERY_TICK)
        return self._carry(claimed)

    def _carry(self, claimed: list[Claim]) -> bool:
        """Send each claimed wake and write its result; give back what is left unsent.

        False when it stopped early because the ledger answered too slowly to send safely.
        """
        pending = list(claimed)
        try:
            sinks = self._sinks({claim.tree for claim in pending})
            while pending:
                now = self.now()
                if self.stop.is_set() or self._quiet.holds(now):
                    self._release(pending)
                    return True
                claim = pending[0]
                if claim.gives_up(now):
                    pending.pop(0)
                    self.outcomes.write(Result(claim, now, "given_up", ""))
                    continue
                self._beat()
                rest = pending[1:]
                renew = (
                    rest if rest and min(c.deadline for c in rest) < clock() + self._need else []
                )
                started, kept = self.claims.start(claim, now, self.lease, renew)
                if renew:
                    if len(kept) < len(renew):
                        lost = len(renew) - len(kept)
                        self.voice.say(f"{moment(now)} {lost} claims ran out before they were sent")
                    rest = kept
                pending = [claim, *rest]
                if not started:
                    pending.pop(0)
                    why = self.claims.why_untouched(claim)
                    if "ran out" not in why:
                        why += " (its claim ran out before it was sent)"
                    self.voice.say(f"{moment(now)} not sending {named(claim.wake)}: {why}")
                    continue
                if clock() + self._need > claim.deadline:  # the start took most of the lease
                    self.voice.say(
                        f"{moment(now)} the ledger at {self.where} answers too slowly to send "
                        f"within a claim of {self.lease:g}s: giving back {len(pending)} wakes",
                        ERRORS,
                    )
                    self._release(pending)
                    return False
                pending.pop(0)
                sink = sinks.get(claim.tree, self.sink)
                try:
                    receipt = sink.send(claim.wake, now)
                except SinkError as exc:
                    self.outcomes.write(Result(claim, self.now(), "failed", str(exc)))
                else:
                    self.outcomes.write(Result(claim, self.now(), "delivered", receipt))
        except Exception:  # (the database went away, mostly): given back when it can be
            self._unreleased += pending
            raise
        return True

    def _sinks(self, trees: set[str]) -> Mapping[str, Sink]:
        if not isinstance(self.sink, ExecSink):
            return {}
        roots = self.claims.roots(trees)
        return {tree: TreeExec(self.sink, tree, roots.get(tree)) for tree in trees}

    # -- what is left ---------------------------------------------------------

    def _catch_up(self) -> None:
        """Write the results held while the database was away, then give back unused claims."""
        self.outcomes.catch_up()
        if self._unreleased:
            self._release(self._unreleased)
            self._unreleased = []

    def _release(self, claims: list[Claim]) -> None:
        released = self.claims.release(claims)
        self.outcomes.tally.released += released
        if released:
            self.voice.say(f"gave back {released} claimed wakes not sent", EVERY_TICK)

    # -- the database going away -----------------------------------------------

    def _lost(self, exc: LedgerUnreachable) -> None:
        held = len(self.outcomes.tally.unwritten)
        results = "result" if held == 1 else "results"
        holding = f"; holding {held} {results} to write when it is back" if held else ""
        self.voice.say(
            f"{moment(self.now())} {exc}{holding}; trying again in {FIRST_RECONNECT:g}s, "
            f"then doubling to {MOST_RECONNECT:g}s",
            ERRORS,
        )

    def _back(self, since: float) -> None:
        self.voice.say(
            f"{moment(self.now())} the ledger at {self.where} is back after {clock() - since:.0f}s",
            ERRORS,
        )

    def _finish(self, *, gave_up_waiting: bool = False) -> int:
        """The exit code, and (``once``) the summary line (:meth:`Outcomes.finish`)."""
        elsewhere = 0 if gave_up_waiting or not self.once else self._elsewhere()
        return self.outcomes.finish(
            self.now(), once=self.once, elsewhere=elsewhere, gave_up_waiting=gave_up_waiting
        )

    def _elsewhere(self) -> int:
        if self._claims is None or self._lost_since is not None:
            return 0  # (the ledger is out of reach: not tried again to say this)
        try:
            return self._claims.owed_elsewhere()
        except LedgerUnreachable:
            return 0


def _stderr(line: str) -> None:
    print(f"rouse deliver: {shown(line, lines=True)}", file=sys.stderr, flush=True)


class TreeExec(ExecSink):
    """The exec sink for one tree's wakes: ``ROUSE_MEMORY`` the tree's recorded root
    (unset when none is), ``ROUSE_TREE`` its id."""

    def __init__(self, base: ExecSink, tree: str, root: str | None):
        super().__init__(base.argv, base.timeout, Path(root or "."), base.base_env)
        self.tree = tree
        self.known_root = root

    def environment(self, wake: Wake) -> dict[str, str]:
        env = super().environment(wake)
        if self.known_root is None:
            env.pop("ROUSE_MEMORY", None)
        env["ROUSE_TREE"] = self.tree
        return env
