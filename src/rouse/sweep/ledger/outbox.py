"""The ledger's ``outbox``: every message it sends, of every kind, and one state machine.

A message (a wake, a digest, an escalation, a tell: its ``kind``) is written
before it is sent and marked when it lands, so none is silently lost. Every
kind goes through the same states and the same methods: an attempt
(:meth:`~OutboxRows.start_attempt`) ends :meth:`~OutboxRows.delivered` or
:meth:`~OutboxRows.failed` (tried again by the one retry rule, below), until
it is :meth:`~OutboxRows.given_up` after 24h of failures or
:meth:`~OutboxRows.withdraw`-n (its record moved first). A message waiting in
a queue (its ``sink`` names the queue: :data:`WORKERS`, :data:`NOTICE_SINK`)
has at most one taker (:meth:`~OutboxRows.take`).

States: ``pending`` (not delivered yet: new, failing, or in flight), ``held``
(waiting out quiet hours, or in a queue for whoever takes it), ``waiting`` (a
tell with no channel to go through yet), ``delivered``, ``given_up``,
``withdrawn``. The kinds differ only in what they carry and a few rules of
their own: a wake is stamped into its record (``stamped``,
:mod:`~rouse.sweep.ledger.wakes`), an escalation is written once per record,
streak and level (:mod:`~rouse.sweep.ledger.escalations`), a tell has a
channel and may wait for one (:mod:`~rouse.sweep.ledger.tells`).

Also the seam between the ledger and its databases (:class:`Database`): the
stdlib ``sqlite3`` connection of ``.rouse/ledger.sqlite3``, or the fleet's
PostgreSQL adapter (``rouse.fleet.pg``), which turns the ``?`` placeholders into
psycopg's. Rows are read by column name or position; every table carries a
``tree`` column, so one database can keep the ledgers of many trees (the SQLite
ledger, one tree to a file, leaves it empty).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime, timedelta
from typing import Any, Protocol

from rouse.sweep.ledger.entry import as_text, as_time


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

    :class:`~rouse.sweep.ledger.sqlite.Ledger` is made of parts, one per kind
    of message and the ``runs``; each part runs its SQL through :meth:`run` and
    scopes it with ``tree``.
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


# -- the one retry rule --------------------------------------------------------
# Pure: every kind of message the ledger owes (a wake, a tell, a task's notice; a
# delivery worker's claim on a wake) is retried by these, from its row's attempts,
# first failure and next attempt. After 24h of failures the message is given up
# (written as a nudge file by whoever gives it up).

GIVE_UP_AFTER = timedelta(hours=24)
FIRST_RETRY = timedelta(minutes=1)
MAX_RETRY = timedelta(hours=1)


def backoff(attempts: int) -> timedelta:
    """``min(1m × 2^(attempts-1), 1h)``: the wait after the ``attempts``-th try."""
    if attempts >= 8:
        return MAX_RETRY
    wait: timedelta = FIRST_RETRY * 2 ** max(attempts - 1, 0)
    return min(wait, MAX_RETRY)


def next_try(last_attempt: datetime, attempts: int) -> datetime:
    """When a message whose ``attempts``-th try (made at ``last_attempt``) failed is tried again."""
    return last_attempt + backoff(attempts)


def gives_up(first_failure: datetime | None, now: datetime) -> bool:
    """24h or more of failures at ``now``: give the message up instead of sending it."""
    return first_failure is not None and now - first_failure >= GIVE_UP_AFTER


def ready(next_attempt: datetime | None, now: datetime) -> bool:
    """Its backoff has run out at ``now`` (or it never failed)."""
    return next_attempt is None or now >= next_attempt


# -- the outbox ----------------------------------------------------------------

#: The ``sink`` of a wake queued for a fleet's delivery workers (``sweep --plan-only``).
WORKERS = "workers"
#: The ``sink`` of a task's notice queued for whoever sends it first (:mod:`rouse.work.notices`).
NOTICE_SINK = "notice"
#: the states of a message still owed (its sending not ended)
OWED = "state IN ('pending', 'held', 'waiting')"

#: A damaged row (one rouse cannot have written: its wake unreadable, an id it never
#: makes) leaves the queue as withdrawn, never to be sent or stop anything again: the
#: clock makes its record's wake again (same id), which revives the row as rouse writes it.
#: Parameters: tree, id (as stored).
SET_ASIDE = (
    "UPDATE outbox SET state = 'withdrawn', in_flight = 0, next_attempt = NULL, stamped = 1, "
    "receipt = 'set aside: a damaged row rouse cannot read' WHERE tree = ? AND id = ?"
)


class OutboxRows(Rows):
    """The one state machine of every message (mixed into
    :class:`~rouse.sweep.ledger.sqlite.Ledger`)."""

    #: added to the updates a sweeper must not make under a delivery worker's live claim
    #: (withdraw, hold, give up, take); the SQLite ledger has no workers, so nothing
    unclaimed: str = ""
    #: added to a take: a lapsed claim is cleared
    unclaim: str = ""
    #: added to a result (failed, delivered, given up): the writer's own claim is cleared
    #: (a delivery worker's; a sweeper holds none)
    release: str = ""
    #: added to a failed attempt: the rows whose results this handle writes (a delivery
    #: worker's: those it still holds the claim on; a sweeper's: those no worker holds)
    results: str = ""
    #: added to a delivery: the rows it lands on (a worker's: still queued, whoever holds
    #: the claim now, for the wake did land; a sweeper's: any)
    landing: str = ""

    def _set(self, sql: str, message_id: str, *parameters: object) -> bool:
        """``UPDATE outbox SET`` ``sql`` (then ``WHERE …``, or all of it) of one message."""
        where = "" if " WHERE " in sql else " WHERE TRUE"
        done = self.run(
            f"UPDATE outbox SET {sql}{where} AND tree = ? AND id = ?",
            *parameters,
            self.tree,
            message_id,
        )
        return bool(done.rowcount == 1)

    def messages(self, kind: str) -> list[dict[str, object]]:
        """Every message of ``kind`` (``wake``, ``escalation``, ``tell``…), oldest first,
        as plain rows (``rouse log``'s and the tests' one reader)."""
        rows = self.run(
            "SELECT * FROM outbox WHERE kind = ? AND tree = ? ORDER BY made_at, id", kind, self.tree
        )
        return [dict(row) for row in rows]

    def take(self, message_id: str, queue: str, taker: str) -> bool:
        """Take a message waiting in ``queue`` (its ``sink``) for ``taker`` (the sink that
        sends it now): one taker only. False, nothing written: another took it first,
        a delivery worker holds a live claim on it, or it is not owed any more."""
        return self._set(
            f"sink = ?{self.unclaim} WHERE sink = ? AND state IN ('pending', 'held')"
            f"{self.unclaimed}",
            message_id,
            taker,
            queue,
        )

    def take_to_send(self, message_id: str, queue: str, sink: str, now: datetime) -> bool:
        """Take a message waiting in ``queue`` to send it through ``sink`` now, starting an
        attempt.

        A sweeper that sends itself does this with the wakes a ``--plan-only``
        one queued (``queue`` :data:`WORKERS`), so none waits for workers that may
        never come; a sweeper or a worker's ``--sink`` with a task's notice
        (:data:`NOTICE_SINK`). False (nothing written): another took it first, a
        worker holds a live claim on it, or it is not owed any more. A lapsed claim
        that was in flight counts as a failed attempt, as a worker counts it.
        """
        if not self.take(message_id, queue, sink):
            return False
        self.start_attempt(message_id, sink, now)
        return True

    def start_attempt(self, message_id: str, sink: str | None, now: datetime) -> None:
        """An attempt starts now through ``sink`` (None: the one it has). One the last
        attempt left in flight (a crash, a claim that lapsed mid-send) counts as failed."""
        self._set(
            "state = 'pending', sink = COALESCE(?, sink), attempts = attempts + 1, "
            "in_flight = 1, last_attempt = ?, first_failure = CASE WHEN in_flight = 1 "
            "THEN COALESCE(first_failure, last_attempt, ?) ELSE first_failure END",
            message_id,
            sink,
            as_text(now),
            as_text(now),
        )

    def failed(
        self, message_id: str, now: datetime, error: str, *, when: datetime | None = None
    ) -> bool:
        """Record a failed attempt (made at ``when``, default now) and the next try's time."""
        row = self.run(
            "SELECT attempts, last_attempt FROM outbox WHERE tree = ? AND id = ?",
            self.tree,
            message_id,
        ).fetchone()
        if row is None:
            return False  # (its row is gone)
        failed_at = when or now
        last = as_time(row["last_attempt"]) or failed_at
        return self._set(
            "in_flight = 0, first_failure = COALESCE(first_failure, ?), next_attempt = ?, "
            f"error = ?{self.release} WHERE TRUE{self.results}",
            message_id,
            as_text(failed_at),
            as_text(next_try(last, row["attempts"])),
            error,
        )

    def delivered(
        self, message_id: str, now: datetime, receipt: str | None, *, stamped: bool = True
    ) -> bool:
        """It landed; ``stamped`` (a wake's) says whether its record's stamp is written yet."""
        return self._set(
            "state = 'delivered', in_flight = 0, finished = ?, receipt = ?, "
            f"next_attempt = NULL, error = NULL, stamped = ?{self.release} WHERE TRUE"
            f"{self.landing}",
            message_id,
            as_text(now),
            receipt,
            int(stamped),
        )

    def finish(
        self, message_id: str, now: datetime, *, receipt: str | None, error: str | None
    ) -> None:
        """The attempt started ended: landed (``receipt``) or not (``error``)."""
        if error is None:
            self.delivered(message_id, now, receipt)
        else:
            self.failed(message_id, now, error)

    def tried(
        self,
        message_id: str,
        now: datetime,
        *,
        receipt: str | None,
        error: str | None,
        sink: str | None = None,
    ) -> None:
        """One attempt made now, through ``sink`` (None: the one it has), and how it ended."""
        self.start_attempt(message_id, sink, now)
        self.finish(message_id, now, receipt=receipt, error=error)

    def given_up(
        self, message_id: str, now: datetime, receipt: str, *, stamped: bool = True
    ) -> bool:
        """Give it up (``receipt``: the nudge file written instead, or why). False, nothing
        written: it is not owed any more (a worker delivered it meanwhile) or a worker
        holds a live claim on it."""
        return self._set(
            "state = 'given_up', in_flight = 0, finished = ?, receipt = ?, "
            f"next_attempt = NULL, stamped = ?{self.release} WHERE {OWED}{self.unclaimed}",
            message_id,
            as_text(now),
            receipt,
            int(stamped),
        )

    def withdraw(self, message_id: str, now: datetime, why: str) -> bool:
        """Its record moved or ended first. False, nothing written: not owed any more (a
        worker delivered it meanwhile), or a worker's live claim on it."""
        return self._set(
            "state = 'withdrawn', in_flight = 0, finished = ?, next_attempt = NULL, "
            f"stamped = 1, receipt = ? WHERE {OWED}{self.unclaimed}",
            message_id,
            as_text(now),
            why,
        )

    def hold(self, message_id: str, why: str | None = None) -> bool:
        """Hold it (quiet hours; ``why``: a tell with no channel yet, which waits). False,
        nothing written: not owed any more, or a worker's live claim on it."""
        state = "held" if why is None else "waiting"
        return self._set(
            f"state = ?, error = COALESCE(?, error) WHERE {OWED}{self.unclaimed}",
            message_id,
            state,
            why,
        )
