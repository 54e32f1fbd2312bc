"""The outbox's digests (``sweep --digest``): a part of :class:`Ledger`.

A digest is one message carrying several wakes (its ``wakes``); each wake's
row names the digest that last carried it, so a retry of the same wakes keeps
the digest's id. Its wakes are retried, each by its own row.
"""

from __future__ import annotations

import json
from datetime import datetime

from rouse.sweep.ledger.entry import as_text
from rouse.sweep.ledger.outbox import OutboxRows
from rouse.sweep.wake import safe_id


class DigestRows(OutboxRows):
    """Reading and writing digests (mixed into :class:`~rouse.sweep.ledger.sqlite.Ledger`)."""

    def digest_of(self, wake_ids: list[str]) -> str | None:
        """The digest these wakes were all last sent in, if one carried them all."""
        if not wake_ids:
            return None
        marks = ",".join("?" * len(wake_ids))
        found = {
            row[0]
            for row in self.run(
                f"SELECT digest FROM outbox WHERE kind = 'wake' AND tree = ? AND id IN ({marks})",
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
