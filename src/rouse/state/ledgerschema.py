"""The delivery ledger's tables: one column spec for SQLite and PostgreSQL.

The tree's ``.rouse/ledger.sqlite3`` (:mod:`rouse.sweep.ledger.sqlite`) and a
fleet's PostgreSQL database (:mod:`rouse.fleet.pg_schema`) make their tables
from these, and the read-only counts of :mod:`rouse.state.sweeper` name
their states from here. Two tables: ``outbox`` (every message the ledger
sends: wakes, digests, escalations, tells) and ``runs`` (agent runs). Every
table carries a ``tree`` column ('' in a tree's own SQLite file), so one
database can keep the ledgers of many trees. The column types are spelled so
both databases read them alike.
"""

from __future__ import annotations

#: Every message the ledger sends, of every kind, is one row of ``outbox``: its kind, what
#: it is about, its route (``sink``: the sink that sends it, or the queue it waits in,
#: ``workers`` or ``notice``; a tell's ``channel``), its state and its tries (the one
#: retry rule is :mod:`rouse.sweep.ledger.outbox`'s). The columns a kind does not use are
#: NULL (the kinds are :data:`KINDS`).
TABLES: dict[str, tuple[str, ...]] = {
    "outbox": (
        "tree TEXT NOT NULL DEFAULT ''",
        "id TEXT PRIMARY KEY",
        "kind TEXT NOT NULL",
        # what it is about (a digest: none of these; a tell: no file, reason or nudge)
        "record TEXT",
        "path TEXT",
        "file TEXT",
        "reason TEXT",
        "nudge INTEGER",
        "made_at TEXT NOT NULL",
        "last_moved TEXT",
        # the message as sent, as JSON (a wake's, an escalation's)
        "wake TEXT",
        # its route, its state and its tries
        "sink TEXT",
        "state TEXT NOT NULL",
        "attempts INTEGER NOT NULL DEFAULT 0",
        "in_flight INTEGER NOT NULL DEFAULT 0",
        "first_failure TEXT",
        "last_attempt TEXT",
        "next_attempt TEXT",
        "finished TEXT",
        "receipt TEXT",
        "error TEXT",
        # a wake's: its record's stamp is written; the digest that last carried it
        "stamped INTEGER NOT NULL DEFAULT 0",
        "digest TEXT",
        # a digest's: the wakes it carried (a JSON list of ids)
        "wakes TEXT",
        # an escalation's: its level, and the wake that set it off
        "level INTEGER",
        "wake_id TEXT",
        # a tell's: the record's type and slug, its channel, who wrote it, its words
        "type TEXT",
        "slug TEXT",
        "channel TEXT",
        "source TEXT",
        "text TEXT",
        # the owner is told once per record, streak and level (NULL levels never meet)
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
}

#: index name → its table and columns
INDEXES: dict[str, str] = {
    "outbox_state": "outbox (tree, kind, state, stamped)",
    "outbox_made": "outbox (tree, made_at)",
    "outbox_receipt": "outbox (receipt)",
    "outbox_streak": "outbox (tree, path, last_moved)",
    "runs_started": "runs (tree, started)",
}

#: the kinds of message (a task's notice is a wake routed to the ``notice`` queue)
KINDS = ("wake", "digest", "escalation", "tell")

#: each kind's states: those still owed something, then those it ends in
WAKE_STATES = ("pending", "held", "delivered", "given_up", "withdrawn")
ESCALATION_STATES = (("pending",), ("delivered", "given_up"))
TELL_STATES = (("pending", "waiting"), ("delivered", "given_up"))

#: The tables of the ledgers made before the one outbox (schema 8 and older; a fleet's
#: 5 and older), each with its kind and its columns named otherwise in ``outbox``:
#: their rows move there at first use (:func:`carry_over`), and the table goes.
FORMER: dict[str, tuple[str, dict[str, str]]] = {
    "wakes": ("wake", {}),
    "digests": ("digest", {}),
    "escalations": ("escalation", {"wake": "message"}),
    "tells": ("tell", {}),
}


def carry_over(table: str, have: set[str], into: list[str], fallback: dict[str, str]) -> str:
    """The ``INSERT … SELECT`` that copies a former table's rows into ``outbox``.

    ``have``: the columns the table has (an older ledger lacks some: they are
    left NULL, or made from ``fallback``'s expression); ``into``: the outbox's.
    """
    kind, renamed = FORMER[table]
    pairs = [("kind", f"'{kind}'")]
    for name in into:
        source = renamed.get(name, name)
        if source in have:
            pairs.append((name, source))
        elif name in fallback:
            pairs.append((name, fallback[name]))
    names = ", ".join(name for name, _ in pairs)
    return f"INSERT INTO outbox ({names}) SELECT {', '.join(s for _, s in pairs)} FROM {table}"


def create(table: str, extra: tuple[str, ...] = ()) -> str:
    """The ``CREATE TABLE`` of ``table``, with ``extra`` columns (a fleet's own) after its own."""
    own = [column for column in TABLES[table] if column_name(column)]
    constraints = [column for column in TABLES[table] if not column_name(column)]
    columns = ",\n    ".join((*own, *extra, *constraints))
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
