"""The fleet database's schema: numbered migrations, applied once, in order.

The number reached is kept in ``rouse_schema``; a database whose schema is
newer than this rouse knows is refused with a clear error, never touched.
Migrations run under a transaction-scoped advisory lock, so two machines
starting at once apply each step once.

The ledger's tables are made from the SQLite ledger's column spec
(:mod:`rouse.state.ledgerschema`; each row names its tree, so many trees share
one database), with what a fleet adds: a worker's claim on a wake, the leader
lease, the trees seen, the mirror of each tree's files and the workers' presence.

:class:`PgLedger` is :class:`rouse.sweep.ledger.sqlite.Ledger` on these tables: the
same states, retry schedule and give-up, the same SQL, scoped to one tree (its
``.rouse-tree`` id). While a delivery worker's claim on a queued wake is live
(:data:`FREE`, on the database's clock), the sweeper does not withdraw, hold, give up,
take back, queue or record a failed attempt on it: it leaves it to the worker and looks
again next tick. How it meets the schema (``schema``): ``"now"`` migrates as it opens;
``"lazy"`` (a sweeper's) at its first statement, so a sweeper started while the
database is down opens all the same and its first tick meets the outage; ``"read"``
(``status``, ``log``) never migrates — a database with no ledger yet (or one an older
rouse made, not migrated yet) reads as one with no wakes, and a newer schema is refused.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from rouse.core.errors import TooNew
from rouse.fleet.pg import PgDatabase
from rouse.state.ledgerschema import FORMER, TABLES, carry_over, column_name, create, indexes
from rouse.sweep.ledger import Ledger
from rouse.sweep.ledger.outbox import Cursor

#: The advisory lock migrations take (an arbitrary constant: "rouse" in ASCII).
MIGRATION_LOCK = 0x726F757365

#: the columns a fleet adds to the ledger's: a delivery worker's claim on a wake
FLEET_COLUMNS = {"outbox": ("claimed_by TEXT", "claim_until TIMESTAMPTZ")}
#: the ledger's tables (a fleet's outbox holds no tells: they stay in each tree's own file)
SHARED = tuple(TABLES)
#: the wakes a worker may claim, found fast
OWED_INDEX = (
    "CREATE INDEX IF NOT EXISTS outbox_owed ON outbox (state, claim_until) WHERE state = 'pending'"
)

LEDGER = ";\n".join(
    (
        """CREATE TABLE trees (
    tree TEXT PRIMARY KEY,
    root TEXT NOT NULL DEFAULT '',
    host TEXT NOT NULL DEFAULT '',
    first_seen TIMESTAMPTZ NOT NULL DEFAULT now(),
    last_tick TIMESTAMPTZ,
    last_tick_by TEXT
)""",
        *(create(table, FLEET_COLUMNS.get(table, ())) for table in SHARED),
        *indexes(SHARED),
        OWED_INDEX,
        """CREATE TABLE leaders (
    tree TEXT PRIMARY KEY,
    holder TEXT NOT NULL,
    host TEXT NOT NULL,
    pid INTEGER NOT NULL,
    token BIGINT NOT NULL,
    since TIMESTAMPTZ NOT NULL,
    expires TIMESTAMPTZ NOT NULL
)""",
    )
)

MIRROR = """
CREATE TABLE IF NOT EXISTS mirror_files (
    tree TEXT NOT NULL,
    path TEXT NOT NULL,
    kind TEXT NOT NULL,
    record TEXT,
    record_id TEXT,
    slug TEXT,
    header JSONB NOT NULL,
    body TEXT NOT NULL,
    log TEXT NOT NULL DEFAULT '',
    body_bytes BIGINT NOT NULL DEFAULT 0,
    body_note TEXT,
    size BIGINT NOT NULL,
    mtime_ns BIGINT NOT NULL,
    settled BOOLEAN NOT NULL DEFAULT TRUE,
    origin TEXT NOT NULL DEFAULT 'unknown',
    origin_written TEXT NOT NULL DEFAULT '',
    verified TEXT NOT NULL DEFAULT '',
    keywords TEXT NOT NULL DEFAULT '',
    search TSVECTOR,
    status TEXT,
    open BOOLEAN,
    wake_at TIMESTAMPTZ,
    wake_why TEXT,
    review_at TIMESTAMPTZ,
    stale_at TIMESTAMPTZ,
    silenced BOOLEAN NOT NULL DEFAULT FALSE,
    expires_at TIMESTAMPTZ,
    nagging BOOLEAN NOT NULL DEFAULT FALSE,
    fires_out BOOLEAN NOT NULL DEFAULT FALSE,
    nudge INTEGER,
    moved_at TIMESTAMPTZ,
    clock_at TIMESTAMPTZ,
    derived TEXT NOT NULL DEFAULT '',
    mirrored_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (tree, path)
);
CREATE INDEX IF NOT EXISTS mirror_wake ON mirror_files (wake_at) WHERE wake_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS mirror_search ON mirror_files USING GIN (search);
CREATE TABLE IF NOT EXISTS mirror_state (
    tree TEXT PRIMARY KEY,
    root TEXT NOT NULL DEFAULT '',
    host TEXT NOT NULL DEFAULT '',
    epoch TEXT NOT NULL,
    format INTEGER NOT NULL DEFAULT 0,
    keyed TEXT NOT NULL DEFAULT '',
    synced_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    files INTEGER NOT NULL DEFAULT 0,
    skipped INTEGER NOT NULL DEFAULT 0
);
"""

WORKERS = """
CREATE TABLE IF NOT EXISTS workers (
    holder TEXT PRIMARY KEY,
    host TEXT NOT NULL,
    pid INTEGER NOT NULL,
    trees TEXT[],
    sink TEXT NOT NULL,
    every DOUBLE PRECISION NOT NULL,
    live_for DOUBLE PRECISION NOT NULL,
    started TIMESTAMPTZ NOT NULL DEFAULT now(),
    last_seen TIMESTAMPTZ NOT NULL DEFAULT now(),
    last_claim TIMESTAMPTZ,
    claimed BIGINT NOT NULL DEFAULT 0,
    stopped TIMESTAMPTZ
)
"""

#: what the column spec has and a ledger made by an older step lacks, made from the spec
#: as the SQLite ledger makes it (``ADD COLUMN IF NOT EXISTS``: a no-op where it is there)
COLUMNS = ";\n".join(
    f"ALTER TABLE IF EXISTS {table} ADD COLUMN IF NOT EXISTS {column}"
    for table in SHARED
    for column in (*TABLES[table], *FLEET_COLUMNS.get(table, ()))
    if column_name(column)
)


def outbox(db: Any) -> None:
    """One outbox for every message: made from the spec, the rows of the tables a ledger
    made before it kept (a table per kind, some lacking later columns) moved there, ids
    kept, and those tables dropped."""
    db.execute(create("outbox", FLEET_COLUMNS["outbox"]))
    into = [
        name for name in map(column_name, (*TABLES["outbox"], *FLEET_COLUMNS["outbox"])) if name
    ]
    for table in FORMER:
        have = {
            row["column_name"]
            for row in db.execute(
                "SELECT column_name FROM information_schema.columns "
                "WHERE table_schema = current_schema() AND table_name = ?",
                (table,),
            )
        }
        if have:
            db.execute(carry_over(table, have, into, {}))
            db.execute(f"DROP TABLE {table}")
    for statement in (*indexes(SHARED), OWED_INDEX):
        db.execute(statement)


#: A column new in the spec (:mod:`rouse.state.ledgerschema`) takes one more ``COLUMNS``
#: step here, as it bumps the SQLite ledger's ``SCHEMA_VERSION``: nothing written by hand.
MIGRATIONS: tuple[str | Callable[[Any], None], ...] = (
    LEDGER,  # 1: the shared ledger, the leader lease and the trees
    MIRROR,  # 2: the one-way mirror of each tree's files (fleet due/status/recall)
    WORKERS,  # 3: delivery workers' presence (fleet status, status --check, the pack)
    COLUMNS,  # 4: the spec's columns, made where they lack
    COLUMNS,  # 5: an escalation's first failure and next try
    outbox,  # 6: one outbox for every message (wakes, digests, escalations moved there)
)
SCHEMA_VERSION = len(MIGRATIONS)
#: the step that made the one outbox (what a reader of the ledger needs)
OUTBOX_SCHEMA = MIGRATIONS.index(outbox) + 1


def version(db: Any) -> int:
    """The schema number the database has reached (0: none yet)."""
    row = db.execute("SELECT to_regclass('rouse_schema') AS t").fetchone()
    if row["t"] is None:
        return 0
    found = db.execute("SELECT version FROM rouse_schema").fetchone()
    return int(found["version"]) if found else 0


def migrate(db: Any, where: str) -> None:
    """Bring the schema up to ``SCHEMA_VERSION``; refuse a newer one (exit 2)."""
    if refuse_newer(db, where) == SCHEMA_VERSION:
        return
    with db.transaction():
        db.execute("SELECT pg_advisory_xact_lock(?)", (MIGRATION_LOCK,))
        db.execute("CREATE TABLE IF NOT EXISTS rouse_schema (version INTEGER NOT NULL)")
        reached = refuse_newer(db, where)
        if reached == 0 and db.execute("SELECT 1 FROM rouse_schema").fetchone() is None:
            db.execute("INSERT INTO rouse_schema (version) VALUES (0)")
        for number in range(reached, SCHEMA_VERSION):
            step = MIGRATIONS[number]
            if callable(step):
                step(db)
            else:
                for statement in step.split(";"):
                    if statement.strip():
                        db.execute(statement)
            db.execute("UPDATE rouse_schema SET version = ?", (number + 1,))


def refuse_newer(db: Any, where: str) -> int:
    """The schema number reached; a newer one than this rouse knows is refused (exit 2)."""
    reached = version(db)
    if reached > SCHEMA_VERSION:
        raise TooNew(
            f"the ledger at {where} has schema {reached}, newer than this rouse knows "
            f"({SCHEMA_VERSION}): upgrade rouse on this machine"
        )
    return reached


# -- the ledger on these tables ---------------------------------------------------

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

    db: PgDatabase
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
