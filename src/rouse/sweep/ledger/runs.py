"""The ledger's ``runs`` rows (``sweep --run``): a part of :class:`Ledger`.

One row per agent run (one per digest): when it started, how it ended, and
how many of the records it was woken about it answered.
"""

from __future__ import annotations

import json
from datetime import datetime

from rouse.state.sweeper import TIME_FORMAT
from rouse.sweep.ledger.entry import as_text
from rouse.sweep.ledger.outbox import Rows


class RunRows(Rows):
    """Reading and writing agent runs (mixed into :class:`~rouse.sweep.ledger.sqlite.Ledger`)."""

    def start_run(
        self, run_id: str, digest_id: str, wake_ids: list[str], command: str, now: datetime
    ) -> None:
        self.run(
            "INSERT INTO runs (tree, id, digest, wakes, command, started, state, woken) "
            "VALUES (?,?,?,?,?,?,'running',?) ON CONFLICT (id) DO UPDATE SET started = "
            "excluded.started, state = 'running', wakes = excluded.wakes",
            self.tree,
            run_id,
            digest_id,
            json.dumps(wake_ids),
            command,
            as_text(now),
            len(wake_ids),
        )

    def end_run(self, run_id: str, state: str, code: int | None, seconds: float) -> None:
        """``state``: ran (exit 0; answered or not is decided after), failed."""
        self.run(
            "UPDATE runs SET state = ?, exit = ?, seconds = ? WHERE tree = ? AND id = ?",
            state,
            code,
            round(seconds, 3),
            self.tree,
            run_id,
        )

    def run_answered(self, run_id: str, answered: int) -> None:
        """After a run exited 0: how many of its woken records it moved or ended."""
        self.run(
            "UPDATE runs SET answered = ?, state = ? WHERE tree = ? AND id = ?",
            answered,
            "answered" if answered else "not answered",
            self.tree,
            run_id,
        )

    def runs_since(self, since: datetime, *, tasks: bool = False) -> list[datetime]:
        """When each run started after ``since``, oldest first (the budget's window):
        the sweeper's runs, or (``tasks``) the task worker's (digest ``task:<path>``)."""
        rows = self.run(
            "SELECT started FROM runs WHERE tree = ? AND started > ? AND "
            f"{'' if tasks else 'NOT '}(COALESCE(digest, '') LIKE 'task:%') ORDER BY started",
            self.tree,
            as_text(since),
        )
        return [datetime.strptime(row[0], TIME_FORMAT) for row in rows]

    def runs(self) -> list[dict[str, object]]:
        rows = self.run(
            "SELECT id, digest, wakes, command, started, state, exit, seconds, answered, woken "
            "FROM runs WHERE tree = ? ORDER BY started, id",
            self.tree,
        )
        return [dict(row) for row in rows]
