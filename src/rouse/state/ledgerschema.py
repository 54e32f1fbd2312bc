"""The delivery ledger's tables: one column spec for SQLite and PostgreSQL.

The tree's ``.rouse/ledger.sqlite3`` (:mod:`rouse.sweep.ledger.schema`) and a
fleet's PostgreSQL database (:mod:`rouse.fleet.pg_schema`) make their tables
from these, and the read-only counts of :mod:`rouse.state.sweeper` name
their states from here. Every table carries a ``tree`` column ('' in a
tree's own SQLite file), so one database can keep the ledgers of many trees.
The column types are spelled so both databases read them alike.
"""

from __future__ import annotations

#: what every message the ledger sends carries: its state and its tries (the retry
#: rule of those that retry, wakes, tells and escalations, is
#: :mod:`rouse.sweep.ledger.retry`'s)
SENDING = (
    "state TEXT NOT NULL",
    "attempts INTEGER NOT NULL DEFAULT 0",
    "last_attempt TEXT",
    "finished TEXT",
    "receipt TEXT",
    "error TEXT",
)

#: table → its columns and constraints, in order
TABLES: dict[str, tuple[str, ...]] = {
    "wakes": (
        "tree TEXT NOT NULL DEFAULT ''",
        "id TEXT PRIMARY KEY",
        "record TEXT NOT NULL",
        "path TEXT NOT NULL",
        "file TEXT NOT NULL",
        "reason TEXT NOT NULL",
        "nudge INTEGER NOT NULL",
        "made_at TEXT NOT NULL",
        "last_moved TEXT",
        "wake TEXT NOT NULL",
        "sink TEXT NOT NULL",
        *SENDING,
        "in_flight INTEGER NOT NULL DEFAULT 0",
        "first_failure TEXT",
        "next_attempt TEXT",
        "stamped INTEGER NOT NULL DEFAULT 0",
        "digest TEXT",
    ),
    "digests": (
        "tree TEXT NOT NULL DEFAULT ''",
        "id TEXT PRIMARY KEY",
        "made_at TEXT NOT NULL",
        "wakes TEXT NOT NULL",
        "sink TEXT NOT NULL",
        *SENDING,
    ),
    "escalations": (
        "tree TEXT NOT NULL DEFAULT ''",
        "id TEXT PRIMARY KEY",
        "record TEXT NOT NULL",
        "path TEXT NOT NULL",
        "last_moved TEXT NOT NULL",
        "level INTEGER NOT NULL",
        "wake_id TEXT NOT NULL",
        "made_at TEXT NOT NULL",
        "message TEXT NOT NULL",
        "sink TEXT NOT NULL",
        *SENDING,
        "first_failure TEXT",
        "next_attempt TEXT",
        "UNIQUE (tree, path, last_moved, level)",
    ),
    "runs": (
        "tree TEXT NOT NULL DEFAULT ''",
        "id TEXT PRIMARY KEY",
        "digest TEXT NOT NULL",
        "wakes TEXT NOT NULL",
        "command TEXT NOT NULL",
        "started TEXT NOT NULL",
        "state TEXT NOT NULL",
        "exit INTEGER",
        "seconds DOUBLE PRECISION",
        "answered INTEGER",
        "woken INTEGER",
    ),
    # messages to the owner: always in the tree's own SQLite file (never a fleet's)
    "tells": (
        "tree TEXT NOT NULL DEFAULT ''",
        "id TEXT PRIMARY KEY",
        "record TEXT NOT NULL",
        "path TEXT NOT NULL",
        "type TEXT NOT NULL",
        "slug TEXT NOT NULL",
        "channel TEXT NOT NULL DEFAULT ''",
        "source TEXT NOT NULL",
        "text TEXT NOT NULL",
        "made_at TEXT NOT NULL",
        *SENDING,
        "sink TEXT",
        "first_failure TEXT",
        "next_attempt TEXT",
    ),
}

#: index name → its table and columns
INDEXES: dict[str, str] = {
    "wakes_state": "wakes (tree, state, stamped)",
    "wakes_made": "wakes (tree, made_at)",
    "wakes_receipt": "wakes (receipt)",
    "wakes_streak": "wakes (tree, path, last_moved)",
    "runs_started": "runs (tree, started)",
    "tells_state": "tells (state, made_at)",
    "tells_receipt": "tells (receipt)",
}

#: the tables only a tree's own SQLite ledger keeps
LOCAL_ONLY = ("tells",)

#: each table's states: those still owed something, then those it ends in
WAKE_STATES = ("pending", "held", "delivered", "given_up", "withdrawn")
ESCALATION_STATES = (("pending",), ("delivered", "given_up"))
TELL_STATES = (("pending", "waiting"), ("delivered", "given_up"))


def create(table: str, extra: tuple[str, ...] = ()) -> str:
    """The ``CREATE TABLE`` of ``table``, with ``extra`` columns (a fleet's own) at its end."""
    columns = ",\n    ".join((*TABLES[table], *extra))
    return f"CREATE TABLE IF NOT EXISTS {table} (\n    {columns}\n)"


def indexes(tables: tuple[str, ...]) -> list[str]:
    """The ``CREATE INDEX`` statements of ``tables``."""
    return [
        f"CREATE INDEX IF NOT EXISTS {name} ON {on}"
        for name, on in INDEXES.items()
        if on.split(" ", 1)[0] in tables
    ]


def column_name(column: str) -> str:
    """A column's name (``UNIQUE (…)`` and other constraints are no column: '')."""
    first = column.split(" ", 1)[0]
    return "" if first.isupper() else first
