"""The delivery ledger: ``.rouse/ledger.sqlite3`` (stdlib sqlite3), the connection.

Only the sweeper writes the ledger (it holds the sweeper lock); readers
(``status``, ``log``, the pack) open it without ever creating it.

:class:`Ledger` owns the connection; its rows are parts in their own modules,
one per kind of message in the one outbox (:mod:`~rouse.sweep.ledger.wakes`,
``digests``, ``escalations``, ``tells``) and the agent ``runs``; the schema is
:mod:`~rouse.sweep.ledger.schema`.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from rouse.core.statedir import StateError, state_path
from rouse.sweep.ledger.digests import DigestRows
from rouse.sweep.ledger.escalations import EscalationRows
from rouse.sweep.ledger.runs import RunRows
from rouse.sweep.ledger.schema import migrate
from rouse.sweep.ledger.tells import TellRows
from rouse.sweep.ledger.wakes import WakeRows


class Ledger(WakeRows, DigestRows, EscalationRows, RunRows, TellRows):
    """The sweeper's read-write handle on its ledger.

    ``Ledger(root)`` opens (creating and migrating) the tree's SQLite ledger;
    a fleet's PostgreSQL ledger (``rouse.fleet.pg``) is a subclass that opens
    its own database and keeps one tree's rows among many (``tree``).
    """

    #: what this ledger is, for messages (its file, or the database without password)
    where: str
    #: shared by many machines (a fleet's): the pack, which reads only the tree's own
    #: SQLite file, learns of this sweeper's nudge files from a copy of their rows there
    shared: bool = False

    def __init__(self, root: Path):
        self.path = state_path(root, "ledger.sqlite3")
        self.where = str(self.path)
        try:
            # (one user at a time, but not always the thread that opened it: a sweeper
            # made in one thread may tick in another, as its loop does under a test)
            db = sqlite3.connect(
                self.path, isolation_level=None, timeout=30, check_same_thread=False
            )
        except sqlite3.Error as exc:
            raise StateError(_unusable(self.path, exc)) from None
        try:
            db.row_factory = sqlite3.Row
            # WAL + NORMAL: every commit survives a killed process; a power cut can
            # lose the last commits, which at worst resends a wake (same id).
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            migrate(db)
        except sqlite3.Error as exc:
            db.close()
            raise StateError(_unusable(self.path, exc)) from None
        self.db = db

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _unusable(path: Path, exc: sqlite3.Error) -> str:
    """Why the ledger cannot be opened, and what to do (the wakes it held are history)."""
    return (
        f"the ledger {path} cannot be used ({exc}): if it is damaged, move it aside "
        f"(mv {path} {path}.damaged) and sweep again — wakes still owed are found "
        "again by the clock; check that .rouse/ is writable"
    )
