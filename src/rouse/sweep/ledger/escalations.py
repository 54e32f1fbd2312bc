"""The ledger's ``escalations`` rows (``sweep --escalate``): a part of :class:`Ledger`.

One row per record, streak and level, so the owner is told once per level;
the streak itself is read from the ``wakes`` rows. One that fails is tried
again by the ledger's one rule (:mod:`rouse.sweep.ledger.retry`), and given up
24h after its first failure. States: ``pending``, ``delivered``, ``withdrawn``
(its record moved first), ``given_up``.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import NamedTuple

from rouse.sweep.ledger.db import Rows
from rouse.sweep.ledger.entry import DamagedRow, as_text, as_time, read_wake
from rouse.sweep.ledger.retry import next_try
from rouse.sweep.wake import Wake


class Tries(NamedTuple):
    """A pending escalation's failures so far: the first (None: none), and when it may be
    tried again (None: at once)."""

    first_failure: datetime | None
    next_attempt: datetime | None


class EscalationRows(Rows):
    """Reading and writing escalations (mixed into :class:`~rouse.sweep.ledger.sqlite.Ledger`)."""

    def streak(self, path: str, last_moved: str) -> tuple[datetime | None, int]:
        """Since the record at ``path`` last moved (``last_moved``): when it was first
        woken, and how many of its wakes landed (delivered or given up)."""
        row = self.run(
            "SELECT MIN(made_at), SUM(CASE WHEN state IN ('delivered', 'given_up') THEN 1 "
            "ELSE 0 END) FROM wakes WHERE tree = ? AND path = ? AND last_moved = ?",
            self.tree,
            path,
            last_moved,
        ).fetchone()
        return (as_time(row[0]) if row and row[0] else None), int(row[1] or 0) if row else 0

    def last_landed(self, path: str, last_moved: str) -> Wake | None:
        """The latest wake of the streak (see :meth:`streak`) that landed, or None."""
        row = self.run(
            "SELECT wake FROM wakes WHERE tree = ? AND path = ? AND last_moved = ? "
            "AND state IN ('delivered', 'given_up') ORDER BY made_at DESC, id DESC LIMIT 1",
            self.tree,
            path,
            last_moved,
        ).fetchone()
        if row is None:
            return None
        try:
            return read_wake(row[0])
        except DamagedRow as exc:  # skipped and said once, as a damaged wake row is
            self.damaged.append(f"of {ascii(path)[:80]} ({exc})")
            return None

    def escalated(self, path: str, last_moved: str, level: int) -> bool:
        row = self.run(
            "SELECT 1 FROM escalations WHERE tree = ? AND path = ? AND last_moved = ? "
            "AND level = ?",
            self.tree,
            path,
            last_moved,
            level,
        ).fetchone()
        return row is not None

    def add_escalation(
        self, message: Wake, wake_id: str, level: int, sink: str, now: datetime
    ) -> None:
        self.run(
            "INSERT INTO escalations (tree, id, record, path, last_moved, level, wake_id, "
            "made_at, message, sink, state) VALUES (?,?,?,?,?,?,?,?,?,?,'pending')",
            self.tree,
            message.id,
            message.record,
            message.path,
            message.last_moved,
            level,
            wake_id,
            as_text(now),
            json.dumps(message.as_dict(), ensure_ascii=False),
            sink,
        )

    def escalation_attempt(
        self, escalation_id: str, now: datetime, *, receipt: str | None, error: str | None
    ) -> None:
        """One attempt at sending an escalation: landed (``receipt``) or not (``error``;
        tried again by the retry rule)."""
        if error is None:
            self.run(
                "UPDATE escalations SET attempts = attempts + 1, last_attempt = ?, "
                "state = 'delivered', finished = ?, next_attempt = NULL, receipt = ?, "
                "error = NULL WHERE tree = ? AND id = ?",
                as_text(now),
                as_text(now),
                receipt,
                self.tree,
                escalation_id,
            )
            return
        row = self.run(
            "SELECT attempts FROM escalations WHERE tree = ? AND id = ?", self.tree, escalation_id
        ).fetchone()
        attempts = int(row["attempts"]) + 1 if row else 1
        self.run(
            "UPDATE escalations SET attempts = ?, last_attempt = ?, first_failure = "
            "COALESCE(first_failure, ?), next_attempt = ?, error = ? WHERE tree = ? AND id = ?",
            attempts,
            as_text(now),
            as_text(now),
            as_text(next_try(now, attempts)),
            error,
            self.tree,
            escalation_id,
        )

    def end_escalation(self, escalation_id: str, now: datetime, state: str, why: str) -> None:
        """It ends unsent: ``withdrawn`` (its record moved) or ``given_up``, for ``why``."""
        self.run(
            "UPDATE escalations SET state = ?, finished = ?, next_attempt = NULL, receipt = ? "
            "WHERE tree = ? AND id = ?",
            state,
            as_text(now),
            why,
            self.tree,
            escalation_id,
        )

    def pending_escalations(self) -> list[tuple[Wake, Tries]]:
        """Escalations not delivered yet, oldest first: the message and its tries."""
        rows = self.run(
            "SELECT message, first_failure, next_attempt FROM escalations WHERE tree = ? "
            "AND state = 'pending' ORDER BY made_at, id",
            self.tree,
        )
        found = []
        for row in rows:
            try:
                tries = Tries(as_time(row[1]), as_time(row[2]))
                found.append((read_wake(row[0]), tries))
            except (DamagedRow, TypeError, ValueError) as exc:  # one bad row stops nothing
                self.damaged.append(f"(an escalation: {exc})")
        return found

    def escalations(self) -> list[dict[str, object]]:
        """Every escalation, oldest first, as plain rows (for ``rouse log`` and tests)."""
        rows = self.run(
            "SELECT id, record, path, last_moved, level, wake_id, made_at, sink, state, "
            "attempts, finished, receipt, error FROM escalations WHERE tree = ? "
            "ORDER BY made_at, id",
            self.tree,
        )
        return [dict(row) for row in rows]
