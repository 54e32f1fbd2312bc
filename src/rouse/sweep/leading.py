"""The Sweeper in a fleet: leading a tree's clones, or standing by.

In a fleet (a PostgreSQL ledger shared by the clones of a tree, built by
:mod:`rouse.fleet.sweeping`) one sweeper per tree leads, holding a lease: it
plans, sends (renewing the lease before each send, and stopping mid-tick if
it lost it) and mirrors. The others stand by: each walks its own clone and
stamps the records whose wakes the ledger says were delivered or given up.
:class:`Fleet` is what the sweeper asks of its place in the fleet;
:class:`Leading` is the part of :class:`~rouse.sweep.tick.Sweeper` that asks.
"""

from __future__ import annotations

import threading
from datetime import datetime
from typing import Protocol

from rouse.core import clock
from rouse.core.tree import Tree
from rouse.sweep import wake
from rouse.sweep.carrying import Carrier
from rouse.sweep.ledger import Ledger
from rouse.sweep.plan import Step
from rouse.sweep.report import ERRORS, TickReport, Voice, moment


class Fleet(Protocol):
    """A sweeper's place in a fleet: its lease on the tree, the trees row, the mirror.

    :class:`rouse.fleet.sweeping.Member` is one; the sweeper never imports it
    (the fleet's modules load psycopg).
    """

    #: the lease's length in seconds: the loop wakes every third of it to renew or take over
    lease: float

    @property
    def leading(self) -> bool:
        """Whether this sweeper held the lease at its last renewal."""
        ...

    @property
    def reached(self) -> bool:
        """Whether the database has answered this sweeper yet (it may start while it is down)."""
        ...

    def lead(self) -> bool:
        """Renew our lease, or take the tree's if it expired: whether we lead now."""
        ...

    def renew(self, cover: float) -> bool:
        """Before a send: hold the lease for ``cover`` more seconds than usual; False if lost."""
        ...

    def keep(self) -> bool:
        """Renew the lease if a third of it has passed since the last renewal; False if lost."""
        ...

    def leader(self) -> str:
        """Who leads the tree now, for a standby's line."""
        ...

    def describe(self) -> str:
        """The ledger, the tree and the lease, for the loop's first line."""
        ...

    def ticked(self, tree: Tree, now: datetime, *, leading: bool) -> None:
        """After a tick: the tree's row in the fleet (and, when leading, its mirror)."""
        ...

    def release(self) -> None:
        """Give the lease up (a clean exit), so a standby takes over at once."""
        ...

    def unreachable(self, exc: BaseException) -> bool:
        """Whether ``exc`` is the fleet's database gone (the loop reconnects with backoff)."""
        ...


class Leading(Voice):
    """The Sweeper's fleet side: the lease before a tick and a send, and a standby's tick."""

    fleet: Fleet | None
    #: what the last tick's lease said (None: not asked yet), to say each change once
    _led: bool | None
    plan_only: bool
    digest: bool
    #: how long one send may take: the lease is renewed to outlive it
    send_cover: float
    stop: threading.Event
    ledger: Ledger
    carrier: Carrier

    def _lead(self, now: datetime) -> bool:
        """Renew or take the lease; say once when this sweeper starts or stops leading."""
        assert self.fleet is not None
        leading = self.fleet.lead()
        if leading != self._led:
            if leading:
                self.say(f"{moment(now)} leads this tree now: {self.fleet.describe()}")
            else:
                self.say(
                    f"{moment(now)} stands by: {self.fleet.leader()} leads this tree; "
                    "stamping this clone from the ledger's delivered wakes"
                )
            self._led = leading
        return leading

    def _fence(self, cover: float) -> bool:
        """Before a send: still the leader, for long enough to finish it? (no fleet: yes)"""
        if self.fleet is None:
            return True
        if self.fleet.renew(cover):
            return True
        self._lost()
        return False

    def _may_carry(self, step: Step, now: datetime) -> bool:
        """Still the leader before ``step``: renewed before a send, else when a third is gone."""
        if self.fleet is None:
            return True
        sends = not self.plan_only and not self.digest and step.action in ("new", "send")
        if self.fleet.renew(self.send_cover) if sends else self.fleet.keep():
            return True
        self._lost()
        return False

    def _lost(self) -> None:
        """Say once that the lease was lost mid-tick (the tick stops sending)."""
        assert self.fleet is not None
        if not self._led:
            return
        self._led = False
        self.say(
            f"lost the lease mid-tick: {self.fleet.leader()} leads now; stopping here "
            "(the wakes left are in the ledger, for the new leader)",
            ERRORS,
        )

    def _outage(self, exc: BaseException) -> bool:
        return self.fleet is not None and self.fleet.unreachable(exc)

    def _skip(
        self, exc: Exception, now: datetime, report: TickReport, where: str, *, skipped: bool = True
    ) -> None:
        """One bad record (or note) never stops the tick: its error is counted and said. A
        lost database does: re-raised, the tick ends there and its wakes stay owed."""
        if self._outage(exc):
            raise exc
        report.errors += 1
        said = f"{moment(now)} error on {where}: {type(exc).__name__}: {exc}"
        self.say(said + (" (skipped)" if skipped else ""), ERRORS)

    def _stand_by(self, tree: Tree, now: datetime, report: TickReport) -> None:
        """A standby's tick: no plan, no send; stamp this clone from the ledger's rows.

        For each record the clock says is due here, the wake it would make has
        a known id (:func:`wake.key`): if the ledger has it delivered or given
        up (the leader's clone, or a worker, saw to it), stamp the record.
        """
        upcoming: list[datetime] = []
        for decision in clock.decisions(tree, now):
            if self.stop.is_set():
                report.interrupted = True
                break
            if not decision.is_due:
                if decision.due_at is not None and decision.due_at > now:
                    upcoming.append(decision.due_at)
                continue
            known = self.ledger.get(wake.key(self.ledger.tree, decision))
            if known is None:
                continue
            try:
                self.carrier.already_known(known, decision, now, report)
            except Exception as exc:
                self._skip(exc, now, report, decision.record.rel)
        report.next_at = min(upcoming) if upcoming else None
