"""What the ledger needs of a database: the seam between it and its backends.

:class:`~rouse.sweep.ledger.sqlite.Ledger` speaks portable SQL with ``?`` placeholders
to anything shaped like :class:`Database`: the stdlib ``sqlite3`` connection of
``.rouse/ledger.sqlite3`` (the default), or the PostgreSQL adapter of the fleet
(``rouse.fleet.pg``), which turns the placeholders into psycopg's. Rows are read
by column name (``row["state"]``) or position (``row[0]``).

Every table carries a ``tree`` column, so one database can keep the ledgers of
many trees: the SQLite ledger (one tree, one file) leaves it empty.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Protocol


class Cursor(Protocol):
    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...


class Database(Protocol):
    def execute(self, sql: str, parameters: Sequence[Any] = ..., /) -> Cursor: ...

    def close(self) -> None: ...


class Rows:
    """What every part of the ledger stands on: its database and its tree's rows.

    :class:`~rouse.sweep.ledger.sqlite.Ledger` is made of parts, one per table
    (``wakes``, ``digests``, ``escalations``, ``runs``, ``tells``); each part
    runs its SQL through :meth:`run` and scopes it with ``tree``.
    """

    #: the ``tree`` column of this ledger's rows ('' in a tree's own SQLite file)
    tree: str = ""
    db: Database

    @property
    def damaged(self) -> list[str]:
        """The wake rows this ledger skipped as damaged since it was opened (their ids,
        escaped): one bad row never stops a tick, and the sweeper says so once."""
        found: list[str] | None = self.__dict__.get("_damaged")
        if found is None:
            found = self.__dict__["_damaged"] = []
        return found

    def run(self, sql: str, *parameters: object) -> Cursor:
        """Run ``sql`` (``?`` placeholders) with ``parameters``."""
        return self.db.execute(sql, parameters)
