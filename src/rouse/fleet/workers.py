"""Delivery workers' presence: each ``rouse deliver`` keeps a row saying it is alive.

A worker upserts its row in ``workers`` (its holder name, host, pid, the trees
it serves, its sink, when it started, when it was last seen, when it last
claimed wakes and how many in all) as it polls and right before its sends, at
most every :data:`BEAT_EVERY` seconds (or ``--every``, if shorter; a claim's
time and count go with the next beat), and marks the row stopped when it exits
cleanly.

**Live** means: not stopped, and seen within the row's ``live_for`` seconds,
``max(3 × --every, 60 s, --lease + 30 s)`` (:func:`live_for`) — longer than
the longest a working worker goes without a beat (an idle poll is ``--every``
apart; a send lasts at most its sink's timeout, which the claim's lease
outlasts). A worker killed with SIGKILL reads live until that much time has
passed, then gone.

The rows are read by ``rouse fleet status`` (:func:`listed`), and by ``rouse
status --check --ledger DSN`` and each fleet sweeper's tick (:func:`queue_state`),
so that they, and the pack, can tell when no live worker is left to deliver a
tree's queue. Rows not seen for :data:`FORGET_AFTER` are deleted when a worker starts.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any

from rouse.fleet.lease import clock
from rouse.fleet.pg import PgDatabase, as_json, local_time
from rouse.sweep.ledger.entry import as_time

#: A worker is live for at least this long after its last beat (seconds).
LEAST_LIVE_FOR = 60.0
#: ... and for at least this many of its polling intervals.
LIVE_POLLS = 3
#: ... and for this much longer than its claim lease (a send is shorter than the lease).
LEASE_ALLOWANCE = 30.0
#: The most seconds between two beats of a worker that is polling or sending.
BEAT_EVERY = 10.0
#: Rows of workers not seen for this long are forgotten (deleted when a worker starts).
FORGET_AFTER = "7 days"

#: A beat: the row made or renewed; ``last_claim`` moves only when wakes were claimed.
_BEAT = """
INSERT INTO workers (holder, host, pid, trees, sink, every, live_for, started, last_seen,
    last_claim, claimed, stopped)
VALUES (?, ?, ?, ?, ?, ?, ?, now(), now(), ?, ?, CASE WHEN ? THEN now() END)
ON CONFLICT (holder) DO UPDATE SET last_seen = now(), stopped = EXCLUDED.stopped,
    last_claim = COALESCE(EXCLUDED.last_claim, workers.last_claim),
    claimed = workers.claimed + EXCLUDED.claimed
"""

#: Whether a row is live now, on the database's clock.
_LIVE = "(w.stopped IS NULL AND w.last_seen + make_interval(secs => w.live_for) > now())"
#: Whether worker ``w`` serves the tree given as the next parameter.
_SERVES = "(w.trees IS NULL OR ? = ANY(w.trees))"


def live_for(every: float, lease: float) -> float:
    """How long (seconds) after its last beat a worker still counts as live."""
    return max(LIVE_POLLS * every, LEAST_LIVE_FOR, lease + LEASE_ALLOWANCE)


@dataclass
class Presence:
    """One worker's row: beats while it works, stopped when it exits."""

    db: PgDatabase
    holder: str
    trees: list[str] | None
    sink: str
    every: float
    lease: float
    host: str = field(default_factory=socket.gethostname)
    pid: int = field(default_factory=os.getpid)
    #: :func:`clock` at the last beat written (None: none yet)
    _beaten: float | None = None
    #: wakes claimed since the last beat written, and when the latest claim was
    _claimed: int = 0
    _claimed_at: datetime | None = None

    def beat(self, claimed: int = 0) -> None:
        """Say this worker is alive, and that it claimed ``claimed`` more wakes (counted
        here, written with the next beat): at most every ``min(every, BEAT_EVERY)``
        seconds, so a busy worker pays one statement per interval, not per claim."""
        self._claimed += claimed
        if claimed:
            self._claimed_at = datetime.now().astimezone()
        now = clock()
        if self._beaten is not None and now - self._beaten < min(self.every, BEAT_EVERY):
            return
        self._write()
        self._beaten = now

    def _write(self, *, stopped: bool = False) -> None:
        if self._beaten is None:
            self.db.execute(
                f"DELETE FROM workers WHERE last_seen < now() - interval '{FORGET_AFTER}'"
            )
        self.db.execute(
            _BEAT,
            (
                self.holder,
                self.host,
                self.pid,
                self.trees,
                self.sink,
                self.every,
                live_for(self.every, self.lease),
                self._claimed_at,
                self._claimed,
                stopped,
            ),
        )
        self._claimed, self._claimed_at = 0, None

    def stopped(self) -> None:
        """A clean exit: the claims not written yet, and the row stopped (not live) at once."""
        if self._beaten is None:
            return
        self._write(stopped=True)


@dataclass
class WorkerRow:
    """One worker as ``rouse fleet status`` shows it."""

    holder: str
    host: str
    pid: int
    trees: list[str] | None  # None: every tree
    sink: str
    started: datetime
    last_seen: datetime
    last_claim: datetime | None
    claimed: int
    stopped: datetime | None
    live: bool
    live_for: float

    def serves(self, tree: str) -> bool:
        return self.trees is None or tree in self.trees

    def to_json(self) -> dict[str, Any]:
        return as_json(self)


def _has_table(db: PgDatabase, table: str = "workers") -> bool:
    """Whether the database has ``table`` (a reader never migrates)."""
    return db.execute("SELECT to_regclass(?) AS t", (table,)).fetchone()["t"] is not None


def listed(db: PgDatabase) -> list[WorkerRow]:
    """Every worker remembered: the live ones first, then the most recently seen."""
    if not _has_table(db):
        return []
    rows = db.execute(
        f"SELECT w.*, {_LIVE} AS live FROM workers w ORDER BY live DESC, w.last_seen DESC, w.holder"
    ).fetchall()
    return [WorkerRow(**{f.name: row[f.name] for f in fields(WorkerRow)}) for row in rows]


def queue_state(db: PgDatabase, tree: str) -> dict[str, Any]:
    """For one tree: the wakes queued for workers (``queued``, the ``oldest`` made — a
    local time), the ``live`` workers serving it and when one was last ``seen``; shaped
    as :func:`rouse.state.sweeper.fleet_queue` reads it back from ``.rouse/fleet.json``.
    A database without a ledger yet has no queue; one without the workers' table has
    no workers."""
    found: dict[str, Any] = {"queued": 0, "oldest": None, "live": 0, "seen": None}
    if not _has_table(db, "outbox"):
        return found
    row = db.execute(
        "SELECT count(*) AS n, min(made_at) AS oldest FROM outbox "
        "WHERE tree = ? AND sink = 'workers' AND state = 'pending'",
        (tree,),
    ).fetchone()
    found["queued"] = int(row["n"])
    if row["oldest"]:
        found["oldest"] = as_time(row["oldest"])
    if not _has_table(db):
        return found
    row = db.execute(
        f"SELECT count(*) FILTER (WHERE {_LIVE}) AS live, max(w.last_seen) AS seen "
        f"FROM workers w WHERE {_SERVES}",
        (tree,),
    ).fetchone()
    found["live"] = int(row["live"])
    found["seen"] = local_time(row["seen"])
    return found
