"""A wake's row of the ledger's outbox as an :class:`Entry`, and its time format.

Shared by the read-write :class:`~rouse.sweep.ledger.sqlite.Ledger` and the read-only
views (:mod:`rouse.sweep.ledger.views`).
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from rouse.core.timefmt import iso_stamp
from rouse.state.sweeper import TIME_FORMAT
from rouse.sweep.wake import Wake, safe_id


def as_text(value: datetime | None) -> str | None:
    return value.strftime(TIME_FORMAT) if value is not None else None


def said(state: str) -> str:
    """A message's state as ``rouse log`` says it (``given_up``: given up)."""
    return state.replace("_", " ")


def escalated(rows: Iterable[Any]) -> dict[str, tuple[str, ...]]:
    """What each wake's escalations say in ``rouse log`` (``level 1 via exec: given up``), by
    the wake's id, from the outbox's escalation rows, oldest first."""
    found: dict[str, tuple[str, ...]] = {}
    for row in rows:
        line = f"level {row['level']} via {row['sink']}: {said(row['state'])}"
        found[row["wake_id"]] = (*found.get(row["wake_id"], ()), line)
    return found


def as_time(value: str | None) -> datetime | None:
    return datetime.strptime(value, TIME_FORMAT) if value else None


@dataclass
class Entry:
    """One ledger row: a wake and what happened to it."""

    wake: Wake
    sink: str
    state: str
    attempts: int = 0
    in_flight: bool = False
    first_failure: datetime | None = None
    last_attempt: datetime | None = None
    next_attempt: datetime | None = None
    finished: datetime | None = None
    stamped: bool = False
    receipt: str | None = None
    error: str | None = None
    digest: str | None = None  # the digest that carried it (sweep --digest)
    #: escalations this wake set off (sweep --escalate): "level N via SINK: STATE"
    escalations: tuple[str, ...] = ()
    #: the agent run that carried it (sweep --run) and how it ended, where the ledger says
    run: str | None = None

    @property
    def id(self) -> str:
        return self.wake.id

    @property
    def answered(self) -> bool | None:
        """For a wake an agent run carried (sink ``run``) and that landed: did the run
        answer it? (An answered one's receipt is the run's; an unanswered one's is the
        nudge file left for the next session.) None for any other wake."""
        if self.sink != "run" or self.state != "delivered":
            return None
        return (self.receipt or "").startswith("run ")

    def as_json(self) -> dict[str, object]:
        """The entry as ``rouse log --json`` prints it: what ``rouse log`` shows, for programs.

        Keys are snake_case; times are ISO 8601 with the local offset; ``state``
        is spelled as the text shows it (``given up``).
        """
        return {
            **{key: getattr(self.wake, key) for key in ("id", "record", "path", "reason", "nudge")},
            "sink": self.sink,
            "state": said(self.state),
            "attempts": self.attempts,
            "made_at": iso_stamp(self.wake.made_at),
            "first_failure": iso_stamp(self.first_failure),
            "last_attempt": iso_stamp(self.last_attempt),
            "next_attempt": iso_stamp(self.next_attempt) if self.state == "pending" else None,
            "finished": iso_stamp(self.finished),
            "receipt": self.receipt,
            "error": self.error,
            "digest": self.digest,
            "escalations": list(self.escalations),
            "answered": self.answered,
            "run": self.run,
        }


COLUMNS = (
    "id, wake, sink, state, attempts, in_flight, first_failure, last_attempt, "
    "next_attempt, finished, stamped, receipt, error, digest"
)


class DamagedRow(ValueError):
    """A wake's row rouse cannot have written (its wake unreadable, an id unsafe).

    ``row_id``: the row's ``id`` column as stored (None when unknown), to set it aside by.
    """

    row_id: object = None


#: the errors reading a forged or damaged row can raise (JSON nested deeper than the
#: interpreter's stack raises RecursionError): each one makes the row damaged, never a crash
UNREADABLE = (ValueError, KeyError, TypeError, IndexError, RecursionError)


def stored_wake(wake: Wake) -> str:
    """A wake as a ledger keeps it: its JSON, which :func:`read_wake` reads back."""
    return json.dumps(wake.as_dict(), ensure_ascii=False)


def read_wake(text: object) -> Wake:
    """A wake as a ledger keeps it (its JSON); DamagedRow when rouse cannot have written it.

    The one reader of a stored wake, for every table and backend: a row nested
    1,000 deep, a field of the wrong type or an id rouse never makes is damaged.
    """
    try:
        if not isinstance(text, str):
            raise TypeError("not text")
        made = Wake.from_dict(json.loads(text))
    except UNREADABLE as exc:
        raise DamagedRow(f"unreadable: {type(exc).__name__}") from None
    if not safe_id(made.id):
        raise DamagedRow("an id rouse never makes")
    return made


def entries(
    rows: Iterable[sqlite3.Row],
    damaged: list[str] | None = None,
    aside: list[object] | None = None,
) -> list[Entry]:
    """The rows as entries; a damaged one is skipped (its id, escaped, noted in
    ``damaged``; its stored id in ``aside``): one bad row never stops a tick, a
    worker's round or ``rouse log``."""
    found = []
    for row in rows:
        try:
            found.append(_entry(row))
        except DamagedRow as exc:
            if damaged is not None:
                damaged.append(str(exc))
            if aside is not None and exc.row_id is not None:
                aside.append(exc.row_id)
    return found


def _entry(row: sqlite3.Row) -> Entry:
    """One row as an entry; DamagedRow when it cannot be one rouse wrote."""
    try:
        entry = _read(row)
        if entry.digest is not None and not safe_id(entry.digest):
            raise DamagedRow("an id rouse never makes")
        return entry
    except UNREADABLE as exc:  # (a DamagedRow is a ValueError: it says why itself)
        why = str(exc) if isinstance(exc, DamagedRow) else f"unreadable: {type(exc).__name__}"
        found = DamagedRow(f"{_row_id(row)} ({why})")
    with contextlib.suppress(IndexError, KeyError):
        found.row_id = row["id"]
    raise found


def _row_id(row: sqlite3.Row) -> str:
    try:
        return ascii(row["id"])[:80]
    except (IndexError, KeyError):
        return "(a row without an id)"


#: an entry's fields kept as they are stored, its times and its flags (the rest of COLUMNS)
AS_STORED = ("sink", "state", "attempts", "receipt", "error", "digest")
TIMES = ("first_failure", "last_attempt", "next_attempt", "finished")
FLAGS = ("in_flight", "stamped")


def _read(row: sqlite3.Row) -> Entry:
    wake = read_wake(row["wake"])
    values: dict[str, Any] = {key: row[key] for key in AS_STORED}
    values |= {key: as_time(row[key]) for key in TIMES}
    values |= {key: bool(row[key]) for key in FLAGS}
    return Entry(wake=wake, **values)
