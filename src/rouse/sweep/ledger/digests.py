"""The ledger's ``digests`` rows (``sweep --digest``): a part of :class:`Ledger`.

A digest is one message carrying several wakes; each wake row names the digest
that last carried it, so a retry of the same wakes keeps the digest's id.
"""

from __future__ import annotations

import json
from datetime import datetime

from rouse.sweep.ledger.db import Rows
from rouse.sweep.ledger.entry import as_text
from rouse.sweep.wake import safe_id


class DigestRows(Rows):
    """Reading and writing digests (mixed into :class:`~rouse.sweep.ledger.sqlite.Ledger`)."""

    def digest_of(self, wake_ids: list[str]) -> str | None:
        """The digest these wakes were all last sent in, if one carried them all."""
        if not wake_ids:
            return None
        marks = ",".join("?" * len(wake_ids))
        found = {
            row[0]
            for row in self.run(
                f"SELECT digest FROM wakes WHERE tree = ? AND id IN ({marks})", self.tree, *wake_ids
            )
        }
        if len(found) != 1:
            return None
        digest_id = found.pop()
        return digest_id if safe_id(digest_id) else None  # a forged id names no run log

    def start_digest(self, digest_id: str, wake_ids: list[str], sink: str, now: datetime) -> None:
        """Record an attempt at sending ``digest_id`` carrying ``wake_ids`` (new or a retry)."""
        listed = json.dumps(wake_ids)
        self.run(
            "INSERT INTO digests (tree, id, made_at, wakes, sink, state, attempts, last_attempt) "
            "VALUES (?,?,?,?,?,'pending',1,?) ON CONFLICT (id) DO UPDATE SET "
            "wakes = excluded.wakes, sink = excluded.sink, state = 'pending', "
            "attempts = digests.attempts + 1, last_attempt = excluded.last_attempt",
            self.tree,
            digest_id,
            as_text(now),
            listed,
            sink,
            as_text(now),
        )
        marks = ",".join("?" * len(wake_ids))
        self.run(
            f"UPDATE wakes SET digest = ? WHERE tree = ? AND id IN ({marks})",
            digest_id,
            self.tree,
            *wake_ids,
        )

    def digest_done(
        self, digest_id: str, now: datetime, *, receipt: str | None, error: str | None
    ) -> None:
        """The digest landed (``receipt``) or failed (``error``)."""
        self.run(
            "UPDATE digests SET state = ?, finished = ?, receipt = ?, error = ? "
            "WHERE tree = ? AND id = ?",
            "failed" if error else "delivered",
            as_text(now),
            receipt,
            error,
            self.tree,
            digest_id,
        )
