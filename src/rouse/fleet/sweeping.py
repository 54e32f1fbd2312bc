"""A sweeper in a fleet: the glue that builds one from a DSN.

``rouse sweep --ledger DSN`` runs the same :class:`~rouse.sweep.tick.Sweeper`
as ever, on :func:`join`'s parts: the tree's ledger on PostgreSQL
(:class:`~rouse.fleet.pg_ledger.PgLedger`, scoped to the tree's ``.rouse-tree``
id, which is made here if the tree has none) and a :class:`Member` — the
:class:`~rouse.sweep.tick.Fleet` the sweeper asks whether it leads
(:mod:`rouse.fleet.lease`), and tells when it ticked: the tree's row in
``trees`` (every sweeper, leading or not) and, from the leader only, the
one-way mirror of its files (:class:`~rouse.fleet.mirror.Mirror`).

``rouse status``/``rouse log --ledger DSN`` read the same ledger
(:func:`open_ledger`), never making a tree id.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from rouse.core.errors import UsageError
from rouse.core.identity import IDENTITY_FILE, ensure_tree_id, tree_id
from rouse.core.tree import Tree
from rouse.fleet import lease as leases
from rouse.fleet.lease import Lease
from rouse.fleet.mirror import Mirror
from rouse.fleet.pg import LedgerUnreachable, PgDatabase
from rouse.fleet.pg_ledger import PgLedger
from rouse.trust.origins import OriginReader

_UPSERT_TREE = """
INSERT INTO trees (tree, root, host, last_tick, last_tick_by) VALUES (?, ?, ?, now(), ?)
ON CONFLICT (tree) DO UPDATE SET root = EXCLUDED.root, host = EXCLUDED.host,
    last_tick = EXCLUDED.last_tick, last_tick_by = EXCLUDED.last_tick_by
"""


@dataclass
class Joined:
    """What a sweeper needs to sweep in a fleet."""

    ledger: PgLedger
    member: Member
    #: the tree's id was made just now (``.rouse-tree`` written: to be committed)
    made: bool


def join(
    dsn: str, root: Path, *, lease: float, origins: OriginReader, application: str = "rouse sweep"
) -> Joined:
    """Open the tree's ledger in the fleet's database and its lease (nothing is taken yet)."""
    tree, made = _ensure_id(root)
    db = PgDatabase(dsn, application=application)
    ledger = PgLedger(dsn, tree, db=db)  # migrates (or refuses a newer schema)
    member = Member(root, db, tree, Lease(db, tree, lease), Mirror(root, db, tree, origins))
    return Joined(ledger, member, made)


def _ensure_id(root: Path) -> tuple[str, bool]:
    try:
        return ensure_tree_id(root)
    except OSError as exc:
        raise UsageError(
            f"cannot write {root / IDENTITY_FILE} ({exc.strerror or exc}): a fleet tells trees "
            "apart by it; make the tree writable, or write it with `rouse init` where it is"
        ) from None


def open_ledger(dsn: str, root: Path, *, application: str = "rouse") -> PgLedger:
    """The tree's ledger in the fleet, to read (``status``, ``log``); a tree without an id
    has no rows there, and is told how to get one."""
    tree = tree_id(root)
    if tree is None:
        raise UsageError(
            f"{root} has no {IDENTITY_FILE} yet, so the ledger at {_where(dsn)} has no wakes "
            "of it: `rouse sweep --ledger DSN` makes one (commit it, so clones share it)"
        )
    return PgLedger(dsn, tree, db=PgDatabase(dsn, application=application))


def _where(dsn: str) -> str:
    from rouse.fleet.pg import redact

    return redact(dsn)


def leader(ledger: PgLedger) -> dict[str, Any] | None:
    """The tree's lease row (who leads, or last led), for ``rouse status``."""
    return leases.leader(ledger.db, ledger.tree)


class Member:
    """One sweeper's place in the fleet (a :class:`rouse.sweep.tick.Fleet`)."""

    def __init__(
        self, root: Path, db: PgDatabase, tree: str, held: Lease, mirror: Mirror | None
    ) -> None:
        self.root = root
        self.db = db
        self.tree = tree
        self.held = held
        self.mirror = mirror
        self.lease = held.seconds
        self.host = socket.gethostname()

    @property
    def leading(self) -> bool:
        return self.held.leading

    def lead(self) -> bool:
        return self.held.lead()

    def renew(self, cover: float) -> bool:
        return self.held.renew(cover)

    def keep(self) -> bool:
        return self.held.keep()

    def leader(self) -> str:
        if self.held.leading:
            return f"this sweeper (token {self.held.token})"
        return leases.describe(leases.leader(self.db, self.tree))

    def describe(self) -> str:
        token = f", token {self.held.token}" if self.held.token is not None else ""
        return f"ledger {self.db.where}, tree {self.tree}, lease {self.lease:g}s{token}"

    def ticked(self, tree: Tree, now: datetime, *, leading: bool) -> None:
        """The tree's row (root, host, last tick and by whom); the leader mirrors too."""
        self.db.execute(_UPSERT_TREE, (self.tree, str(self.root), self.host, self.held.holder))
        if leading and self.mirror is not None:
            self.mirror.sync(tree, now)

    def release(self) -> None:
        self.held.release()

    def unreachable(self, exc: BaseException) -> bool:
        return isinstance(exc, LedgerUnreachable)

    def close(self) -> None:
        self.db.close()
