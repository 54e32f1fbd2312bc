"""The ledger on PostgreSQL: the SQLite ledger's rows and rules, shared by a fleet.

:class:`PgLedger` is :class:`rouse.sweep.ledger.Ledger` over a
:class:`~rouse.fleet.pg.PgDatabase`: the same states, retry schedule and
give-up, the same SQL, scoped to one tree (its ``.rouse-tree`` id) among the
many the database keeps.

A delivery worker (``rouse deliver``) claims a queued wake for a while
(``claimed_by``, ``claim_until``, on the database's clock); while that claim
is live the sweeper does not withdraw, hold or give the wake up: it leaves it
to the worker and looks again next tick.
"""

from __future__ import annotations

from rouse.fleet.pg import PgDatabase
from rouse.fleet.pg_schema import migrate
from rouse.sweep.ledger import Ledger


class PgLedger(Ledger):
    """One tree's ledger in the fleet's database."""

    unclaimed = " AND (claim_until IS NULL OR claim_until < now())"

    def __init__(self, dsn: str, tree: str, *, db: PgDatabase | None = None):
        self.database = db if db is not None else PgDatabase(dsn)
        self.db = self.database
        self.where = self.database.where
        self.tree = tree
        try:
            migrate(self.database, self.where)
        except BaseException:
            self.database.close()
            raise
