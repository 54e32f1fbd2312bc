"""A sweeper in a fleet: the glue that builds one from a DSN.

``rouse sweep --ledger DSN`` runs the same :class:`~rouse.sweep.tick.Sweeper`
as ever, on :func:`fleet_parts`: the tree's ledger on PostgreSQL, scoped to the
tree's ``.rouse-tree`` id (made here if the tree has none), and a :class:`Member`,
the :class:`~rouse.sweep.leading.Fleet` the sweeper asks whether it leads
(:mod:`rouse.fleet.lease`) and tells when it ticked. A sweeper joins without
reaching the database: if it is down, the first tick meets the outage (said once,
retried with backoff) instead of the start failing. ``rouse status``/``rouse log
--ledger DSN`` read the same ledger (:func:`open_ledger`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from rouse.core.errors import UsageError
from rouse.core.home import stamp_key_path
from rouse.core.identity import IDENTITY_FILE, ensure_tree_id, tree_id
from rouse.core.tree import Tree
from rouse.fleet import lease as leases
from rouse.fleet.lease import DEFAULT_LEASE, Lease, check_lease
from rouse.fleet.mirror import Mirror
from rouse.fleet.pg import LedgerUnreachable, PgDatabase, redact
from rouse.fleet.pg_schema import PgLedger
from rouse.fleet.workers import queue_state
from rouse.state.sweeper import write_fleet_queue
from rouse.sweep import build
from rouse.sweep.build import Parts
from rouse.sweep.options import SweepOptions
from rouse.trust.origins import OriginReader, origin_reader
from rouse.work.notices import carry

#: The leader's tick: the tree is at its root, on its host.
_UPSERT_TREE = """
INSERT INTO trees (tree, root, host, last_tick, last_tick_by) VALUES (?, ?, ?, now(), ?)
ON CONFLICT (tree) DO UPDATE SET root = EXCLUDED.root, host = EXCLUDED.host,
    last_tick = EXCLUDED.last_tick, last_tick_by = EXCLUDED.last_tick_by
"""
#: A standby's tick: when, and by whom; the root stays the leader's clone.
_TICKED = """
INSERT INTO trees (tree, last_tick, last_tick_by) VALUES (?, now(), ?)
ON CONFLICT (tree) DO UPDATE SET
    last_tick = EXCLUDED.last_tick, last_tick_by = EXCLUDED.last_tick_by
"""


@dataclass
class Joined:
    """What a sweeper needs to sweep in a fleet."""

    ledger: PgLedger
    member: Member
    #: the tree's id was made just now (``.rouse-tree`` written: to be committed)
    made: bool


def fleet_parts(options: SweepOptions) -> tuple[Parts, bool]:
    """The sweeper's parts for ``options`` in the fleet its ``ledger`` DSN names: the
    tree's ledger there and its lease (:func:`join`); True when the tree's id was made
    just now (``.rouse-tree`` written: to be committed)."""
    assert options.ledger is not None
    origins = origin_reader(options.root, stamp_key_path())
    parts = build.parts(options, origins=origins)
    lease = check_lease(options.lease) if options.lease is not None else DEFAULT_LEASE
    joined = join(options.ledger, options.root, lease=lease, origins=origins)
    return replace(parts, ledger=joined.ledger, fleet=joined.member), joined.made


def join(
    dsn: str, root: Path, *, lease: float, origins: OriginReader, application: str = "rouse sweep"
) -> Joined:
    """Open the tree's ledger in the fleet's database and its lease (nothing is taken yet).

    The schema is migrated now if the database answers (a newer one is refused:
    exit 2); if it does not, at the first tick that reaches it.
    """
    try:
        tree, made = ensure_tree_id(root)
    except OSError as exc:
        raise UsageError(
            f"cannot write {root / IDENTITY_FILE} ({exc.strerror or exc}): a fleet tells trees "
            "apart by it; make the tree writable, or write it with `rouse init` where it is"
        ) from None
    db = PgDatabase(dsn, application=application)
    ledger = PgLedger(dsn, tree, db=db, schema="lazy")
    try:
        ledger.prepare()
    except LedgerUnreachable:
        pass  # down now: the first tick says so, and the loop tries again with backoff
    except BaseException:
        db.close()
        raise
    return Joined(ledger, Member(root, ledger, lease, origins), made)


def open_ledger(dsn: str, root: Path, *, application: str = "rouse") -> PgLedger:
    """The tree's ledger in the fleet, to read (``status``, ``log``): never making a tree
    id and never migrating (a database with no ledger yet has no wakes); a tree without an
    id has no rows there, and is told how to get one."""
    tree = tree_id(root)
    if tree is None:
        raise UsageError(
            f"{root} has no {IDENTITY_FILE} yet, so the ledger at {redact(dsn)} has no wakes "
            "of it: `rouse sweep --ledger DSN` makes one (commit it, so clones share it)"
        )
    return PgLedger(dsn, tree, db=PgDatabase(dsn, application=application), schema="read")


def leader(ledger: PgLedger) -> dict[str, Any] | None:
    """The tree's lease row (who leads, or last led), for ``rouse status``."""
    if not ledger.prepare():
        return None  # no ledger in the database yet: no sweeper has led
    return leases.leader(ledger.db, ledger.tree)


class Member:
    """One sweeper's place in the fleet (a :class:`rouse.sweep.leading.Fleet`)."""

    def __init__(self, root: Path, ledger: PgLedger, lease: float, origins: OriginReader) -> None:
        self.root = root
        self.ledger = ledger
        self.db = ledger.db
        self.tree = ledger.tree
        self.held = Lease(self.db, self.tree, lease)
        self.mirror = Mirror(root, self.db, self.tree, origins)
        self.lease = lease

    @property
    def leading(self) -> bool:
        return self.held.leading

    @property
    def reached(self) -> bool:
        return self.db.reached

    def lead(self) -> bool:
        """Every sweeper first carries the task notices its clone's SQLite ledger holds
        into the fleet's ledger (:func:`rouse.work.notices.carry`), for the leader to
        deliver this tick; then it asks for the lease."""
        self.ledger.prepare()  # the first statement of a sweeper started with the database down
        carry(self.root, self.ledger, datetime.now().replace(microsecond=0))
        return self.held.lead()

    def renew(self, cover: float) -> bool:
        return self.held.renew(cover)

    def keep(self) -> bool:
        return self.held.keep()

    def leader(self) -> str:
        if self.held.leading:
            return f"this sweeper (token {self.held.token})"
        found = leases.leader(self.db, self.tree)
        if found is None:
            return "no sweeper yet"
        who = f"{found['host']} pid {found['pid']}"
        return who if found["live"] else f"nobody (the lease of {who} lapsed)"

    def describe(self) -> str:
        token = f", token {self.held.token}" if self.held.token is not None else ""
        return f"ledger {self.db.where}, tree {self.tree}, lease {self.lease:g}s{token}"

    def ticked(self, tree: Tree, now: datetime, *, leading: bool) -> None:
        """The tree's row: the last tick and by whom; the leader's root and host (a
        standby's clone is not where the workers' exec sinks should find the tree); the
        queue for workers, noted in the clone's ``.rouse/fleet.json`` for the pack and
        ``status --check`` (:func:`rouse.fleet.workers.queue_state`); the leader mirrors
        its files too (:class:`~rouse.fleet.mirror.Mirror`)."""
        if leading and self.held.leading:  # (not if the lease was lost mid-tick)
            self.db.execute(
                _UPSERT_TREE, (self.tree, str(self.root), self.held.host, self.held.holder)
            )
        else:
            self.db.execute(_TICKED, (self.tree, self.held.holder))
        write_fleet_queue(self.root, now, **queue_state(self.db, self.tree))
        if leading:
            self.mirror.sync(tree, now)

    def release(self) -> None:
        self.held.release()

    def unreachable(self, exc: BaseException) -> bool:
        return isinstance(exc, LedgerUnreachable)

    def close(self) -> None:
        self.db.close()
