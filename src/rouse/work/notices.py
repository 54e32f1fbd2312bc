"""What a task says on its way: ``rouse checkpoint``, and the wakes that carry it.

A checkpoint is a dated line in the task's log and a wake (reason ``checkpoint``;
``lost`` for a task that lost its third attempt) queued held in the tree's own SQLite
ledger, which is the notices' outbox always: ``rouse checkpoint`` (run by an agent
inside its run) and the worker need no DSN and no database driver, and the run's
environment never holds the fleet's password. The sweeper's next tick delivers it
through its sink like any wake it owes, or the worker at once through its own
``--sink`` (:func:`deliver`); whoever sends it takes it first (one taker only). A
notice is never withdrawn because its record is not due, and delivering it stamps
nothing. A fleet's sweepers carry it into the fleet's ledger first (:func:`carry`).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from rouse.core.errors import RouseError
from rouse.core.statedir import state_path
from rouse.core.timefmt import format_stamp
from rouse.core.tree import Record, display_ids, walk
from rouse.records.tasks import checkpoint_line
from rouse.sweep.ledger import NOTICE_SINK, Ledger
from rouse.sweep.sinks import Sink, SinkError
from rouse.sweep.wake import NOTICES, Wake

#: A notice's sink once a sweeper has taken it to carry into the fleet's ledger.
FLEET = "fleet"


@dataclass
class Checkpointed:
    record: str
    path: str
    text: str
    wake: str  # the queued wake's id

    @property
    def summary(self) -> str:
        return f"{self.record}: checkpoint noted (wake {self.wake}, delivered at the next tick)"


def queue(root: Path, record: Record, shown: str, reason: str, text: str, now: datetime) -> str:
    """Queue a notice about ``record`` in the tree's ledger; its wake id."""
    wake_id = f"k{now:%Y%m%dT%H%M%S}-{secrets.token_hex(4)}"
    at = now.strftime("%Y-%m-%d %H:%M:%S")
    made = Wake(
        id=wake_id,
        record=shown,
        type=record.type,
        slug=record.slug,
        path=record.dir,
        file=record.rel,
        reason=reason,
        nudge=0,
        last_moved=at,
        at=at,
        text=text,
    )
    with Ledger(root) as book:
        book.add(made, NOTICE_SINK, now, held=True)
    return wake_id


def deliver(book: Ledger, sink: Sink, now: datetime) -> None:
    """Send the notices queued in ``book`` through ``sink`` at once (``rouse work --sink``)."""
    for entry in book.open_entries():
        held = entry.wake.reason in NOTICES and entry.state == "held"
        if held and book.take_to_send(entry.id, NOTICE_SINK, sink.kind, now):  # one taker only
            try:
                book.delivered(entry.id, now, sink.send(entry.wake, now))
            except SinkError as exc:
                book.failed(entry.id, now, str(exc))


def carry(root: Path, into: Ledger, now: datetime) -> list[str]:
    """Carry the notices queued in ``root``'s SQLite ledger into ``into`` (a fleet's, at
    the start of each tick of its sweepers, leader or standby); the ids carried. Each is
    taken first (its sink becomes :data:`FLEET`), then added to the fleet's ledger under
    its own id (a second add is a no-op) and withdrawn here: a carrier killed between
    the two leaves it held with sink ``fleet``, and the next tick carries it again, once.
    A tree without a SQLite ledger, or with one that cannot be read, has none (it is not
    made here); the fleet's ledger's errors are raised."""
    try:
        if not state_path(root, "ledger.sqlite3", create=False).is_file():
            return []
        outbox = Ledger(root)
    except RouseError:
        return []  # (status and the pack say what is wrong with it)
    carried: list[str] = []
    with outbox:
        for entry in outbox.open_entries():
            if entry.wake.reason not in NOTICES or entry.state != "held":
                continue
            if entry.sink != FLEET and not outbox.take(entry.id, NOTICE_SINK, FLEET):
                continue
            into.add(entry.wake, NOTICE_SINK, now, held=True)
            outbox.withdraw(entry.id, now, f"carried to the fleet's ledger ({into.where})")
            carried.append(entry.id)
    return carried


def checkpoint(root: Path, ref: str, text: str, now: datetime) -> Checkpointed:
    """``rouse checkpoint REF TEXT``: the dated line in the task's log, then its wake."""
    record, line = checkpoint_line(root, ref, text, now)
    shown = display_ids(walk(root)).get(record.dir, record.id)
    said = (
        f"{shown} — checkpoint, {format_stamp(now)}\n"
        f"at: {record.dir}\n"
        "The task's run reports progress (it is still running):\n\n"
        f"{line}\n"
    )
    wake_id = queue(root, record, shown, "checkpoint", said, now)
    return Checkpointed(shown, record.dir, line, wake_id)
