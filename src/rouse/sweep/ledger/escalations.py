"""The outbox's escalations (``sweep --escalate``): a part of :class:`Ledger`.

One row per record, streak and level (the outbox's one ``UNIQUE``), so the
owner is told once per level; the streak itself is read from the wakes. One
that fails is tried again by the outbox's one state machine, and given up 24h
after its first failure. States: ``pending``, ``delivered``, ``withdrawn``
(its record moved first), ``given_up``.
"""

from __future__ import annotations

from datetime import datetime
from typing import NamedTuple

from rouse.sweep.ledger.entry import DamagedRow, as_text, as_time, read_wake, stored_wake
from rouse.sweep.ledger.outbox import OutboxRows
from rouse.sweep.wake import Wake

#: an escalation's rows of the outbox
ESCALATIONS = "FROM outbox WHERE kind = 'escalation' AND tree = ?"
#: the wakes of a record's streak: parameters tree, path, last_moved
STREAK = "FROM outbox WHERE kind = 'wake' AND tree = ? AND path = ? AND last_moved = ?"


class Tries(NamedTuple):
    """A pending escalation's failures so far: the first (None: none), and when it may be
    tried again (None: at once)."""

    first_failure: datetime | None
    next_attempt: datetime | None


class EscalationRows(OutboxRows):
    """Reading and writing escalations (mixed into :class:`~rouse.sweep.ledger.sqlite.Ledger`)."""

    def streak(self, path: str, last_moved: str) -> tuple[datetime | None, int]:
        """Since the record at ``path`` last moved (``last_moved``): when it was first
        woken, and how many of its wakes landed (delivered or given up)."""
        row = self.run(
            "SELECT MIN(made_at), SUM(CASE WHEN state IN ('delivered', 'given_up') THEN 1 "
            f"ELSE 0 END) {STREAK}",
            self.tree,
            path,
            last_moved,
        ).fetchone()
        return (as_time(row[0]) if row and row[0] else None), int(row[1] or 0) if row else 0

    def last_landed(self, path: str, last_moved: str) -> Wake | None:
        """The latest wake of the streak (see :meth:`streak`) that landed, or None."""
        row = self.run(
            f"SELECT wake {STREAK} AND state IN ('delivered', 'given_up') "
            "ORDER BY made_at DESC, id DESC LIMIT 1",
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
            f"SELECT 1 {ESCALATIONS} AND path = ? AND last_moved = ? AND level = ?",
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
            "INSERT INTO outbox (kind, tree, id, record, path, last_moved, level, wake_id, "
            "made_at, wake, sink, state) VALUES ('escalation',?,?,?,?,?,?,?,?,?,?,'pending')",
            self.tree,
            message.id,
            message.record,
            message.path,
            message.last_moved,
            level,
            wake_id,
            as_text(now),
            stored_wake(message),
            sink,
        )

    def pending_escalations(self) -> list[tuple[Wake, Tries]]:
        """Escalations not delivered yet, oldest first: the message and its tries."""
        rows = self.run(
            f"SELECT wake, first_failure, next_attempt {ESCALATIONS} AND state = 'pending' "
            "ORDER BY made_at, id",
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
