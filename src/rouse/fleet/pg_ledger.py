"""The ledger on PostgreSQL: the SQLite ledger's rows and rules, shared by a fleet.

:class:`PgLedger` is :class:`rouse.sweep.ledger.sqlite.Ledger` over a
:class:`~rouse.fleet.pg.PgDatabase`: the same states, retry schedule and
give-up, the same SQL, scoped to one tree (its ``.rouse-tree`` id) among the
many the database keeps.

While a delivery worker's claim on a queued wake is live (:data:`FREE`, on the
database's clock), the sweeper does not withdraw, hold, give up, take back, queue
or record a failed attempt on it: it leaves it to the worker and looks again
next tick.

How it meets the schema (``schema``): ``"now"`` migrates as it opens;
``"lazy"`` (a sweeper's) at its first statement, so a sweeper started while the
database is down opens all the same and its first tick meets the outage;
``"read"`` (``status``, ``log``) never migrates — a database with no ledger
yet (or one an older rouse made, not migrated yet) reads as one with no wakes,
and a newer schema is refused.
"""

from __future__ import annotations

from typing import Any, Literal

from rouse.fleet.pg import PgDatabase
from rouse.fleet.pg_schema import OUTBOX_SCHEMA, migrate, refuse_newer
from rouse.sweep.ledger import Ledger
from rouse.sweep.ledger.outbox import Cursor

#: Who may take a message (the one rule of every take: a sweeper's, a worker's claim):
#: no delivery worker holds a live claim on it.
FREE = "(claim_until IS NULL OR claim_until < now())"


class _Nothing:
    """The rows of a ledger that has no tables yet: none (a count of zero)."""

    rowcount = 0

    def fetchone(self) -> Any:
        return None

    def fetchall(self) -> list[Any]:
        return []

    def __iter__(self) -> Any:
        return iter(())


class PgLedger(Ledger):
    """One tree's ledger in the fleet's database."""

    unclaimed = results = f" AND {FREE}"
    unclaim = ", claimed_by = NULL, claim_until = NULL"
    shared = True

    def __init__(
        self,
        dsn: str,
        tree: str,
        *,
        db: PgDatabase | None = None,
        schema: Literal["now", "lazy", "read"] = "now",
    ):
        self.db = db if db is not None else PgDatabase(dsn)
        self.where = self.db.where
        self.tree = tree
        self.schema = schema
        #: the schema is known to be there (None: not looked at yet; False: no ledger yet)
        self.ready: bool | None = None
        if schema == "now":
            try:
                self.prepare()
            except BaseException:
                self.db.close()
                raise

    def prepare(self) -> bool:
        """Meet the schema once: migrate it (a reader only looks). Whether it has a ledger."""
        if self.ready:
            return True
        if self.schema == "read":
            # a database an older rouse made and no sweeper migrated yet: no wakes
            self.ready = refuse_newer(self.db, self.where) >= OUTBOX_SCHEMA
        else:
            migrate(self.db, self.where)
            self.ready = True
        return self.ready

    def run(self, sql: str, *parameters: object) -> Cursor:
        if not self.ready and not self.prepare():
            return _Nothing()  # a reader of a database with no ledger yet
        return super().run(sql, *parameters)
