"""What a task says on its way: ``rouse checkpoint``, and the wakes that carry it.

A checkpoint is a dated line in the task's log and a wake with reason
``checkpoint`` queued in the tree's ledger (state ``held``, sink ``notice``),
which the sweeper's next tick delivers through its sink like any wake it owes
(its nudge file is shown by the pack), or the worker at once through its own
``--sink`` (:func:`deliver`; one taker only, ``Ledger.take_notice``). A task that lost
its third attempt says so the same way (reason ``lost``). In a fleet, its
sweepers carry the tree's notices into the fleet's ledger
(:mod:`rouse.work.outbox`). A notice is not a record coming due: it is never
withdrawn because its record is not due, and delivering it stamps nothing.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from rouse.core.timefmt import format_stamp
from rouse.core.tree import Record, display_ids, walk
from rouse.records.tasks import checkpoint_line
from rouse.sweep.ledger import NOTICE_SINK, Ledger
from rouse.sweep.sinks import Sink, SinkError
from rouse.sweep.wake import NOTICES, Wake

#: The ledger's sink for a notice nobody has sent yet (whoever sends it records its own).
__all__ = ["NOTICES", "NOTICE_SINK", "Checkpointed", "checkpoint", "deliver", "queue"]


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
    owed = [
        e
        for e in book.open_entries()
        if e.wake.reason in NOTICES and e.sink == NOTICE_SINK and e.state == "held"
    ]
    for entry in owed:
        if not book.take_notice(entry.id, sink.kind):  # one taker only
            continue
        book.start_attempt(entry.id, sink.kind, now)
        try:
            receipt = sink.send(entry.wake, now)
        except SinkError as exc:
            book.failed(entry.id, now, str(exc))
            continue
        book.delivered(entry.id, now, receipt, stamped=True)


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
