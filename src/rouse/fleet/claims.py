"""A delivery worker's SQL: claiming owed wakes, keeping the claims, and writing results.

A worker takes only rows a ``--plan-only`` sweeper left for workers (``sink =
'workers'``, ``state = 'pending'``) that are ready (no retry time, or one that
has come) or that have failed for 24 h (to give them up), and whose claim is
free (none, or expired). ``FOR UPDATE SKIP LOCKED`` lets many workers claim at
once without waiting on each other or taking the same row. A claim lasts until
``claim_until`` on the database's clock.

A claim is not yet an attempt: right before each send the worker *starts* the
wake (:meth:`Claims.start`), which marks that one row in flight, counts the
attempt, and renews its claim — on the database, and only while the claim is
still this worker's, so a claim that ran out while the worker was away (a
laptop suspended, a paused process) and went to another worker is never sent
again. A worker that dies leaves its claims to expire; the next claim of the
row it was sending (``in_flight = 1``) counts that silent attempt as a
failure (its first failure is the attempt's time), as the sweeper counts a
wake it stopped sending mid-way. The rest of its batch was never tried and is
charged nothing.

Results are written as the SQLite ledger writes them (same columns, same
backoff): a delivery whatever became of the claim (the wake did land), a
failure or a give-up only while the claim is still this worker's.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from rouse.core.errors import UsageError
from rouse.fleet.lease import clock
from rouse.fleet.pg import PgDatabase, only_trees
from rouse.fleet.pg_schema import FREE
from rouse.sweep.ledger import GIVE_UP_AFTER, SET_ASIDE, gives_up, next_try
from rouse.sweep.ledger.entry import UNREADABLE, DamagedRow, as_text, as_time, read_wake
from rouse.sweep.ledger.outbox import OutboxRows
from rouse.sweep.wake import Wake

_CLAIM = """
WITH owed AS (
    SELECT id, in_flight, last_attempt, claimed_by FROM outbox
    WHERE sink = 'workers' AND state = 'pending'
      AND {free}
      AND (next_attempt IS NULL OR next_attempt <= ? OR first_failure <= ?){trees}
    ORDER BY made_at, id
    LIMIT ?
    FOR UPDATE SKIP LOCKED
)
UPDATE outbox AS w SET
    claimed_by = ?,
    claim_until = now() + make_interval(secs => ?),
    in_flight = 0,
    first_failure = CASE WHEN owed.in_flight = 1
        THEN COALESCE(w.first_failure, owed.last_attempt, ?) ELSE w.first_failure END,
    error = CASE WHEN owed.in_flight = 1
        THEN 'no result recorded: the claim of ' || COALESCE(owed.claimed_by, 'a worker')
             || ' ran out before it wrote one'
        ELSE w.error END
FROM owed
WHERE w.id = owed.id
RETURNING w.tree, w.id, w.wake, w.attempts, w.first_failure, w.error, w.last_attempt
"""

#: Right before a send: this wake in flight, its attempt counted, its claim renewed (and the
#: claims of the rest of the batch with it, when they need it); only rows still this worker's.
_START = """
UPDATE outbox SET
    claim_until = now() + make_interval(secs => ?),
    in_flight = CASE WHEN id = ? THEN 1 ELSE in_flight END,
    attempts = CASE WHEN id = ? THEN attempts + 1 ELSE attempts END,
    last_attempt = CASE WHEN id = ? THEN ? ELSE last_attempt END
WHERE id = ANY(?) AND claimed_by = ? AND state = 'pending'
RETURNING id, attempts
"""


@dataclass
class Claim:
    """One wake this worker has claimed, and what it needs to send it and say how it went."""

    tree: str
    wake: Wake
    attempts: int  # counting this one, once started
    first_failure: datetime | None
    error: str | None  # the last failure's
    previous_attempt: str | None  # last_attempt before this attempt (put back on release)
    attempt_at: datetime  # the worker's now when it started the send (this attempt's time)
    #: :func:`clock` time until which the claim is surely still ours
    deadline: float

    @property
    def id(self) -> str:
        return self.wake.id

    def gives_up(self, now: datetime) -> bool:
        """24 h or more of failures: give it up instead of sending it."""
        return gives_up(self.first_failure, now)


class Claims:
    """The claim SQL of one worker (``holder``) on the fleet's database."""

    def __init__(self, db: PgDatabase, holder: str, trees: list[str] | None = None):
        self.db = db
        self.holder = holder
        self.trees = list(trees) if trees else None
        #: the damaged rows the last claim set aside (their trees and ids, escaped)
        self.damaged: list[str] = []

    def claim(self, now: datetime, limit: int, lease: float, deadline: float) -> list[Claim]:
        """Claim up to ``limit`` owed wakes for ``lease`` seconds (oldest first).

        Nothing is counted yet: :meth:`start` counts each attempt, right before its send.
        ``deadline`` is :func:`clock` before the claim plus ``lease``, a safe bound.
        """
        trees, chosen = only_trees(self.trees, "tree")
        parameters = (as_text(now), as_text(now - GIVE_UP_AFTER), *chosen, limit, self.holder)
        sql = _CLAIM.format(trees=trees, free=FREE)
        rows = self.db.execute(sql, (*parameters, lease, as_text(now))).fetchall()
        claims = []
        self.damaged = []
        for row in rows:  # a damaged row is set aside: it never stops a round for any tree
            try:
                wake = read_wake(row["wake"])
                claim = Claim(
                    tree=row["tree"],
                    wake=wake,
                    attempts=int(row["attempts"]),
                    first_failure=as_time(row["first_failure"]),
                    error=row["error"],
                    previous_attempt=row["last_attempt"],
                    attempt_at=now,
                    deadline=deadline,
                )
            except UNREADABLE as exc:  # (DamagedRow is a ValueError)
                self.db.execute(SET_ASIDE, (row["tree"], row["id"]))
                what = exc if isinstance(exc, DamagedRow) else type(exc).__name__
                self.damaged.append(f"{ascii(row['id'])[:80]} of tree {row['tree']} ({what})")
                continue
            claims.append(claim)
        claims.sort(key=lambda claim: (claim.wake.at, claim.id))
        return claims

    def start(
        self, claim: Claim, now: datetime, lease: float, renew: list[Claim]
    ) -> tuple[bool, list[Claim]]:
        """Mark ``claim``'s wake in flight, right before its send, and renew its claim.

        Written only while the row is still pending and this worker's: a claim
        that ran out and went to another worker (or a row withdrawn meanwhile)
        is not sent. ``renew``: other claims of the batch to renew with it.
        Returns (started, the ``renew`` claims still this worker's).
        """
        began = clock()
        ids = [claim.id, *(other.id for other in renew)]
        rows = self.db.execute(
            _START,
            (lease, claim.id, claim.id, claim.id, as_text(now), ids, self.holder),
        ).fetchall()
        attempts = {row["id"]: int(row["attempts"]) for row in rows}
        kept = [other for other in renew if other.id in attempts]
        for other in kept:
            other.deadline = began + lease
        if claim.id not in attempts:
            return False, kept
        claim.attempts = attempts[claim.id]
        claim.attempt_at = now
        claim.deadline = began + lease
        return True, kept

    def release(self, claims: list[Claim]) -> int:
        """Give back claims never sent, as they were (a started one's attempt not counted)."""
        if not claims:
            return 0
        cursor = self.db.execute(
            "UPDATE outbox AS w SET claimed_by = NULL, claim_until = NULL, in_flight = 0, "
            "attempts = GREATEST(w.attempts - w.in_flight, 0), "
            "last_attempt = CASE WHEN w.in_flight = 1 THEN r.previous ELSE w.last_attempt END "
            "FROM unnest(?::text[], ?::text[]) AS r(id, previous) "
            "WHERE w.id = r.id AND w.claimed_by = ? AND w.state = 'pending'",
            (
                [claim.id for claim in claims],
                [claim.previous_attempt for claim in claims],
                self.holder,
            ),
        )
        return int(cursor.rowcount)

    # -- results --------------------------------------------------------------

    def delivered(self, claim: Claim, now: datetime, receipt: str) -> str | None:
        """It landed: delivered, for the sweeper to stamp (a row withdrawn meanwhile is left
        as it is). None, or why the row was not changed."""
        held = Held(self, claim.tree)
        landed = held.delivered(claim.id, now, f"{receipt} (worker {self.holder})", stamped=False)
        return None if landed else self.why_untouched(claim)

    def failed(self, claim: Claim, now: datetime, error: str) -> tuple[datetime, str | None]:
        """A failed attempt: the ledger's backoff from this attempt. (next try, why untouched)."""
        again = next_try(claim.attempt_at, claim.attempts)
        written = Held(self, claim.tree).failed(claim.id, now, error)
        return again, None if written else self.why_untouched(claim)

    def given_up(self, claim: Claim, now: datetime) -> str | None:
        """24 h of failures: given up, not sent (``stamped = 0``: its sweeper writes the nudge)."""
        receipt = (
            f"given up by worker {self.holder} after 24h of failures "
            f"(last: {claim.error or 'no answer'}); its sweeper writes it as a nudge file"
        )
        written = Held(self, claim.tree).given_up(claim.id, now, receipt, stamped=False)
        return None if written else self.why_untouched(claim)

    def why_untouched(self, claim: Claim) -> str:
        row = self.db.execute(
            "SELECT state, claimed_by FROM outbox WHERE id = ?", (claim.id,)
        ).fetchone()
        if row is None:
            return "its row is gone"
        if row["state"] != "pending":
            return f"its row is {row['state'].replace('_', ' ')} already"
        return f"its claim ran out and {row['claimed_by'] or 'nobody'} holds it now"

    # -- the trees ------------------------------------------------------------

    def roots(self, trees: set[str]) -> dict[str, str]:
        """Each tree's root as its sweeper recorded it (``trees`` table), where known."""
        if not trees:
            return {}
        rows = self.db.execute(
            "SELECT tree, root FROM trees WHERE tree = ANY(?) AND root <> ''", (sorted(trees),)
        ).fetchall()
        return {row["tree"]: row["root"] for row in rows}

    def owed_elsewhere(self) -> int:
        """Owed wakes another worker holds a live claim on now (what ``--once`` leaves them)."""
        trees, chosen = only_trees(self.trees, "tree")
        row = self.db.execute(
            "SELECT COUNT(*) AS n FROM outbox WHERE sink = 'workers' AND state = 'pending' "
            "AND claim_until >= now() AND claimed_by <> ?" + trees,
            (self.holder, *chosen),
        ).fetchone()
        return int(row["n"])


class Held(OutboxRows):
    """The rows of one tree a delivery worker holds claims on: the outbox's one state
    machine, each result written only while the claim is still this worker's (a
    delivery whoever holds it: the wake did land), and the claim let go with it."""

    release = ", claimed_by = NULL, claim_until = NULL"
    landing = " AND sink = 'workers' AND state = 'pending'"

    def __init__(self, claims: Claims, tree: str):
        self.db = claims.db
        self.tree = tree
        holder = "'" + claims.holder.replace("'", "''") + "'"  # (a literal: no placeholder)
        self.results = self.unclaimed = f" AND state = 'pending' AND claimed_by = {holder}"


# -- how long a claim lasts ---------------------------------------------------------

#: The lease's slack beyond the sink's timeout (see :func:`default_lease`).
LEASE_SLACK = 30.0
#: A lease at least this much longer than the sink's timeout: the send's claim must also
#: cover the round trips that start it and write its result.
LEASE_MARGIN = 5.0


def default_lease(timeout: float) -> float:
    """The claim lease when ``--lease`` is not given: ``2 × timeout + 30`` seconds.

    A claim must outlive the send it covers (at most the sink's timeout) and
    the write of its result (a round trip to the database, slow under load or
    across a brief network stall): if it runs out first, another worker sends
    the same wake while this one is still at it. Twice the timeout covers a
    command that overruns its deadline while its process group is killed and
    reaped, and the 30 s a paused process or a slow database. A longer lease
    costs only time after a crash (its wakes wait one lease before another
    worker takes them): 50 s for a webhook, 150 s for a command — less than a
    sweeper's tick and a first retry, and a duplicate agent run costs more.
    """
    return 2 * timeout + LEASE_SLACK


def check_lease(lease: float, timeout: float) -> None:
    """Refuse (exit 2) a lease shorter than the sink's timeout + :data:`LEASE_MARGIN`."""
    if not lease >= timeout + LEASE_MARGIN:
        raise UsageError(
            f"--lease {lease:g} must be at least {LEASE_MARGIN:g}s longer than the sink's "
            f"timeout ({timeout:g}s): a claim must outlive the send it covers and the writing "
            "of its result, or another worker sends the same wake meanwhile; give --lease "
            f"{timeout + LEASE_MARGIN:g} or more"
        )
