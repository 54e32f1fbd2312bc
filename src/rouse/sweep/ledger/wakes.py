"""The outbox's wakes: every wake, and what happened to it (a part of :class:`Ledger`).

Every wake is written before it is sent and marked when it lands, so an
undelivered wake is never silently lost: it is resent (same id) with backoff,
and given up after 24h as a nudge file (:mod:`~rouse.sweep.ledger.outbox`'s
one state machine). What only a wake has: its record's stamp (``stamped``),
its revival when the clock makes a withdrawn one again, the copy a fleet's
sweeper keeps in the tree's own file (:meth:`WakeRows.vouch`), and the
delivery workers' queue it may wait in, and the digest that last carried it (a
retry of the same wakes keeps the digest's id). A task's notice is a wake too,
held in the ``notice`` queue for whoever takes it first.
"""

from __future__ import annotations

import json
from datetime import datetime

from rouse.state.ledgerschema import WAKE_STATES
from rouse.sweep.ledger.entry import COLUMNS, Entry, as_text, entries, escalated, stored_wake
from rouse.sweep.ledger.outbox import SET_ASIDE, WORKERS, OutboxRows
from rouse.sweep.wake import Wake, safe_id

#: a wake's rows of the outbox
WAKES = "FROM outbox WHERE kind = 'wake' AND tree = ?"


class WakeRows(OutboxRows):
    """Reading and writing wakes (mixed into :class:`~rouse.sweep.ledger.sqlite.Ledger`)."""

    # -- reading ------------------------------------------------------------

    def open_entries(self) -> list[Entry]:
        """Wakes still owed something: pending, held, or delivered or given up but not stamped.

        A wake a delivery worker gave up on (``sink = 'workers'``) is owed its
        nudge file and its stamp, which only a sweeper (it has the tree) can write.
        A damaged row is skipped, named in :attr:`damaged` and set aside
        (:data:`SET_ASIDE`): its record's wake is made again by the clock.
        """
        rows = self.run(
            f"SELECT {COLUMNS} {WAKES} AND (state IN ('pending', 'held') "
            "OR (state IN ('delivered', 'given_up') AND stamped = 0)) ORDER BY made_at, id",
            self.tree,
        ).fetchall()
        aside: list[object] = []
        found = entries(rows, self.damaged, aside)
        for row_id in aside:
            self.run(SET_ASIDE + self.unclaimed, self.tree, row_id)
        return found

    def get(self, wake_id: str) -> Entry | None:
        row = self.run(f"SELECT {COLUMNS} {WAKES} AND id = ?", self.tree, wake_id)
        first = row.fetchone()
        found = entries([first] if first is not None else [], self.damaged)
        return found[0] if found else None

    def recent(self, limit: int = 20) -> list[Entry]:
        """The most recent wakes, newest first, with their escalations (``rouse log``)."""
        rows = self.run(
            f"SELECT {COLUMNS} {WAKES} ORDER BY made_at DESC, id DESC LIMIT ?",
            self.tree,
            limit,
        ).fetchall()
        listed = entries(rows, self.damaged)
        found = escalated(self.messages("escalation"))
        for entry in listed:
            entry.escalations = found.get(entry.id, ())
        return listed

    def counts(self) -> dict[str, int]:
        """How many of this tree's wakes are in each state."""
        found = dict.fromkeys(WAKE_STATES, 0)
        for row in self.run(f"SELECT state, COUNT(*) AS n {WAKES} GROUP BY state", self.tree):
            found[row["state"]] = int(row["n"])
        return found

    # -- writing ------------------------------------------------------------

    def add(
        self, wake: Wake, sink: str, now: datetime, *, held: bool = False, queued: bool = False
    ) -> Entry | None:
        """Write a new wake: held, or pending with its first attempt starting now.

        ``queued``: pending for a fleet's delivery workers (``sink`` is
        :data:`WORKERS`), no attempt made: they claim it, this sweeper sends nothing.

        A wake with this id already in the ledger (another sweeper over a clone
        of this tree wrote it, or this one did and the record is due at the same
        instant again) is not written twice: its entry is returned instead, None
        when the wake is new. A withdrawn one is owed again, so it is revived.
        """
        attempt = not (held or queued)
        added = self.run(
            "INSERT INTO outbox (kind, tree, id, record, path, file, reason, nudge, made_at, "
            "last_moved, wake, sink, state, attempts, in_flight, last_attempt) "
            "VALUES ('wake',?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT (id) DO NOTHING",
            self.tree,
            *_identity(wake),
            sink,
            "held" if held else "pending",
            int(attempt),
            int(attempt),
            as_text(now) if attempt else None,
        )
        if added.rowcount == 1 or self._revive(wake, sink, now, held, attempt):
            return None
        known = self.get(wake.id)
        if known is None and self.run(SET_ASIDE, self.tree, wake.id).rowcount == 1:
            # a damaged row (not one rouse wrote): written again, as the clock made it
            self._revive(wake, sink, now, held, attempt)
        return known

    def _revive(self, wake: Wake, sink: str, now: datetime, held: bool, attempt: bool) -> bool:
        """A withdrawn wake owed again: revived as it is now (its text, its time)."""
        revived = self.run(
            "UPDATE outbox SET record = ?, file = ?, nudge = ?, made_at = ?, wake = ?, "
            "sink = ?, state = ?, attempts = ?, in_flight = ?, last_attempt = ?, "
            "first_failure = NULL, next_attempt = NULL, finished = NULL, stamped = 0, "
            "receipt = NULL, error = NULL, digest = NULL "
            "WHERE tree = ? AND id = ? AND kind = 'wake' AND state = 'withdrawn'",
            wake.record,
            wake.file,
            wake.nudge,
            wake.at,
            stored_wake(wake),
            sink,
            "held" if held else "pending",
            int(attempt),
            int(attempt),
            as_text(now) if attempt else None,
            self.tree,
            wake.id,
        )
        return bool(revived.rowcount == 1)

    def vouch(self, wake: Wake, sink: str, state: str, when: datetime, receipt: str) -> None:
        """Keep a copy of a wake a fleet's sweeper wrote as a nudge file in this tree.

        ``state``: delivered (the file sink) or given_up; ``receipt``: the nudge
        file. The pack shows only nudge files the tree's own SQLite ledger vouches
        for (it never loads a database driver), so this is written there too.
        """
        self.run(
            "INSERT INTO outbox (kind, tree, id, record, path, file, reason, nudge, made_at, "
            "last_moved, wake, sink, state, finished, stamped, receipt) "
            "VALUES ('wake',?,?,?,?,?,?,?,?,?,?,?,?,?,1,?) ON CONFLICT (id) DO UPDATE SET "
            "state = excluded.state, finished = excluded.finished, stamped = 1, "
            "receipt = excluded.receipt, in_flight = 0, next_attempt = NULL",
            self.tree,
            *_identity(wake),
            sink,
            state,
            as_text(when),
            receipt,
        )

    def nudged(self, wake_id: str, finished: datetime, receipt: str) -> None:
        """A given-up wake's nudge file is written (``receipt``) and its record stamped."""
        self._set(
            "finished = ?, receipt = ?, stamped = 1 WHERE state = 'given_up'",
            wake_id,
            as_text(finished),
            receipt,
        )

    def queue(self, wake_id: str) -> bool:
        """Leave the wake to the delivery workers: pending, ``sink = 'workers'``, not in flight.

        Releases a held wake when quiet hours end, and hands a wake a sweeper
        used to send itself to the workers (``sweep --plan-only``); its attempts
        and backoff carry on. False, nothing written: not owed any more, or a
        worker's live claim on it.
        """
        return self._set(
            f"state = 'pending', sink = ?, in_flight = 0 WHERE state IN ('pending', 'held')"
            f"{self.unclaimed}",
            wake_id,
            WORKERS,
        )

    def given_up_since(self, since: datetime) -> int:
        """How many of this tree's wakes were given up at or after ``since``."""
        row = self.run(
            f"SELECT COUNT(*) AS n {WAKES} AND state = 'given_up' AND finished >= ?",
            self.tree,
            as_text(since),
        ).fetchone()
        return int(row["n"]) if row is not None else 0

    def mark_stamped(self, wake_id: str) -> None:
        self._set("stamped = 1", wake_id)

    def defer(self, wake_id: str, why: str) -> None:
        """The wake waits (held) without it counting as a failed attempt: no run now."""
        self._set(
            "state = 'held', in_flight = 0, "
            "attempts = CASE WHEN attempts > 0 THEN attempts - 1 ELSE 0 END, error = ?",
            wake_id,
            why,
        )

    # -- digests (``sweep --digest``: one message carrying several wakes) ---------

    def digest_of(self, wake_ids: list[str]) -> str | None:
        """The digest these wakes were all last sent in, if one carried them all."""
        if not wake_ids:
            return None
        marks = ",".join("?" * len(wake_ids))
        found = {
            row[0]
            for row in self.run(
                f"SELECT digest {WAKES} AND id IN ({marks})",
                self.tree,
                *wake_ids,
            )
        }
        if len(found) != 1:
            return None
        digest_id = found.pop()
        return digest_id if safe_id(digest_id) else None  # a forged id names no run log

    def start_digest(self, digest_id: str, wake_ids: list[str], sink: str, now: datetime) -> None:
        """Record an attempt at sending ``digest_id`` carrying ``wake_ids`` (new or a retry)."""
        self.run(
            "INSERT INTO outbox (kind, tree, id, made_at, wakes, sink, state) "
            "VALUES ('digest',?,?,?,?,?,'pending') ON CONFLICT (id) DO UPDATE SET "
            "wakes = excluded.wakes, sink = excluded.sink",
            self.tree,
            digest_id,
            as_text(now),
            json.dumps(wake_ids),
            sink,
        )
        self.start_attempt(digest_id, sink, now)
        marks = ",".join("?" * len(wake_ids))
        self.run(
            f"UPDATE outbox SET digest = ? WHERE kind = 'wake' AND tree = ? AND id IN ({marks})",
            digest_id,
            self.tree,
            *wake_ids,
        )


def _identity(wake: Wake) -> tuple[object, ...]:
    """A new row's columns from ``id`` to ``wake`` (the wake as JSON), in the schema's order."""
    fields = ("id", "record", "path", "file", "reason", "nudge", "at", "last_moved")
    return (*(getattr(wake, key) for key in fields), stored_wake(wake))
