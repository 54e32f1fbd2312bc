"""The ledger read, never written: ``rouse log``'s recent wakes and its lines.

The cheap counts (``status``, the pack) live in ``rouse.state.sweeper`` (no
dataclasses, no sqlite3 until a ledger exists) so the pack can ask without
paying for this module.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from pathlib import Path

from rouse.core.statedir import StateError, path_problem
from rouse.state.sweeper import LEDGER, ledger_problem, ledger_reader
from rouse.sweep.ledger.entry import COLUMNS, Entry, as_text, escalated, said
from rouse.sweep.ledger.entry import entries as read_entries
from rouse.sweep.ledger.sqlite import SCHEMA_VERSION as VERSION
from rouse.sweep.ledger.sqlite import Ledger


def recent(root: Path, limit: int = 20, damaged: list[str] | None = None) -> list[Entry]:
    """The most recent wakes, newest first (``rouse log``); none when there is no ledger.

    A damaged row is skipped and named in ``damaged``: ``rouse log`` still answers.
    StateError when the ledger is there but cannot be read (a directory, a file
    that is not SQLite, one with no wakes): ``rouse log`` says so, never "nothing".
    """
    migrated(root)
    with ledger_reader(root) as db:
        if db is None:
            problem = ledger_problem(root) or path_problem(root, "ledger.sqlite3")
            if problem is None and os.path.lexists(root / LEDGER):
                problem = f"{LEDGER} cannot be opened as an SQLite database"
            if problem is not None:
                raise StateError(problem)
            return []
        try:
            rows = db.execute(
                f"SELECT {COLUMNS} FROM outbox WHERE kind = 'wake' "
                "ORDER BY made_at DESC, rowid DESC LIMIT ?",
                (limit,),
            ).fetchall()
        except sqlite3.Error as exc:
            raise StateError(
                f"{LEDGER} cannot be read as rouse's ledger ({exc}): move it aside (the clock "
                "finds what is owed again)"
            ) from None
        entries = read_entries(rows, damaged)
        found = escalated(
            db.execute("SELECT * FROM outbox WHERE kind = 'escalation' ORDER BY made_at, id")
        )
        runs = _runs_by_wake(db)
        for entry in entries:
            entry.escalations = found.get(entry.id, ())
            entry.run = runs.get(entry.id)
        return entries


def migrated(root: Path) -> None:
    """A ledger an older rouse made is migrated before it is read (by whoever uses it
    first after an upgrade: ``rouse log`` may come before the sweeper)."""
    with ledger_reader(root) as db:
        try:
            made = db.execute("PRAGMA user_version").fetchone()[0] if db is not None else 0
        except sqlite3.Error:
            return  # (said by the read that follows)
    if 0 < made < VERSION:  # (0: not a ledger rouse made, said by the read that follows)
        with contextlib.suppress(StateError):  # (said by the read that follows)
            Ledger(root).close()


def _runs_by_wake(db: sqlite3.Connection) -> dict[str, str]:
    """Each run's verdict (``run ID: answered 1 of 2``) by the wakes it carried."""
    import json

    found: dict[str, str] = {}
    for row in db.execute("SELECT id, wakes, state, answered, woken FROM runs"):
        try:
            wakes = json.loads(row["wakes"] or "[]")
        except ValueError:
            continue
        verdict = f"run {row['id']}: {row['state']}"
        if row["answered"] is not None:
            verdict += f", answered {row['answered']} of {row['woken']}"
        for wake_id in wakes if isinstance(wakes, list) else []:
            found[str(wake_id)] = verdict
    return found


def log_lines(entries: list[Entry]) -> list[str]:
    """``rouse log``: one line per wake, then what went wrong if anything did."""
    lines: list[str] = []
    for entry in entries:
        wake = entry.wake
        when = as_text(entry.finished or entry.last_attempt) or wake.at
        state = "unanswered" if entry.answered is False else said(entry.state)
        lines.append(
            f"{wake.at}  {state:<9}  {wake.record}  {wake.reason} "
            f"nudge {wake.nudge}  via {entry.sink}  attempts {entry.attempts}  "
            f"last {when}  id {wake.id}"
        )
        if entry.state == "pending" and entry.next_attempt is not None:
            lines.append(f"    next attempt at or after {as_text(entry.next_attempt)}")
        if entry.answered:
            lines.append(f"    {entry.receipt}")
        elif entry.answered is False:
            by = entry.run or "the agent run"
            lines.append(f"    not answered by {by}; left for the next session as {entry.receipt}")
        if entry.error and entry.state != "delivered":
            lines.append(f"    error: {entry.error}")
        if entry.digest:
            lines.append(f"    in digest {entry.digest}")
        lines += [f"    escalated to the owner, {line}" for line in entry.escalations]
        if entry.receipt and entry.state in ("given_up", "withdrawn"):
            lines.append(f"    {entry.receipt}")
    return lines


def messages(root: Path, kind: str, limit: int = 20) -> list[sqlite3.Row]:
    """The most recent messages of ``kind`` (``rouse log``'s tells), newest first.

    Always the tree's own SQLite ledger's, whatever ledger keeps the wakes."""
    migrated(root)
    with ledger_reader(root) as db:
        if db is None:
            return []
        try:
            return db.execute(
                "SELECT * FROM outbox WHERE kind = ? ORDER BY made_at DESC, rowid DESC LIMIT ?",
                (kind, limit),
            ).fetchall()
        except sqlite3.Error:  # a ledger not migrated yet (its sweeper will)
            return []


def tell_lines(rows: list[sqlite3.Row]) -> list[str]:
    """``rouse log``'s lines for tells: one each, then what went wrong if anything did."""
    if not rows:
        return []
    lines = ["messages to the owner (rouse tell, reminders' channels):"]
    for row in rows:
        state = said(str(row["state"]))
        channel = f"channel {row['channel']}" if row["channel"] else "no channel"
        via = f"  via {row['sink']}" if row["sink"] else ""
        lines.append(
            f"{row['made_at']}  {state:<9}  {row['record']}  tell ({row['source']}, "
            f"{channel}){via}  attempts {row['attempts']}  id {row['id']}"
        )
        if row["state"] == "pending" and row["next_attempt"]:
            lines.append(f"    next attempt at or after {row['next_attempt']}")
        if row["error"] and row["state"] != "delivered":
            lines.append(f"    error: {row['error']}")
        if row["receipt"] and row["state"] == "given_up":
            lines.append(f"    {row['receipt']}")
    return lines
