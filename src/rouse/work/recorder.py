"""The worker's recorder: how each run ended, written in a thread of its own.

Recording a run — its ledger row, its result and its ending in the task's file
(a durable write under the writers' lock) — takes as long as a claim. The
loop hands each ended run here and goes on starting the next ones; the
recorder writes them one at a time, in the order they ended, with its own
connection to the ledger, and only then tells the run's supervisor to let the
task's lock go. So a task's lock is still held while its ending is written:
no other claim can start it again in between.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Generic, Protocol, TypeVar

from rouse.core.tree import Record
from rouse.runs.handle import Ended, Supervised
from rouse.sweep.ledger import Ledger


class HeldRun(Protocol):
    """What the recorder reads of a run the loop hands it: the task, and its supervisor."""

    record: Record
    held: Supervised


#: the loop's own record of a run (the worker's ``Slot``), handed back to ``record``
Slot = TypeVar("Slot", bound=HeldRun)


class Recorder(Generic[Slot]):
    """One thread that records ended runs, then releases their supervisors."""

    def __init__(
        self,
        root: Path,
        record: Callable[[Slot, Ended, Ledger], None],
        say: Callable[[str], None],
    ) -> None:
        self.root = root
        self.record = record
        self.say = say
        self.todo: queue.Queue[tuple[Slot, Ended] | None] = queue.Queue()
        self.released: queue.Queue[Supervised] = queue.Queue()
        #: runs handed over and not yet collected back (the loop's count: its thread only)
        self.owed = 0
        self.thread = threading.Thread(target=self._work, name="rouse-work-recorder", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def put(self, slot: Slot, ended: Ended) -> None:
        self.owed += 1
        self.todo.put((slot, ended))

    @property
    def busy(self) -> bool:
        return self.owed > 0

    def collect(self, wait: float = 0.0) -> list[Supervised]:
        """The supervisors released since the last call (waiting at most ``wait`` seconds
        for the first); they exit on their own."""
        found: list[Supervised] = []
        try:
            first = self.released.get(timeout=wait) if wait > 0 else self.released.get_nowait()
            found.append(first)
            while True:
                found.append(self.released.get_nowait())
        except queue.Empty:
            pass
        self.owed -= len(found)
        return found

    def stop(self) -> list[Supervised]:
        """Record what is left, end the thread; the supervisors it released."""
        self.todo.put(None)
        self.thread.join()
        return self.collect()

    def _work(self) -> None:
        book = Ledger(self.root)
        try:
            while True:
                item = self.todo.get()
                if item is None:
                    return
                slot, ended = item
                try:
                    self.record(slot, ended, book)
                except Exception as exc:  # the task stays running: the next round recovers it
                    self.say(f"{slot.record.id}: its ending was not recorded: {exc}")
                finally:
                    slot.held.release(wait=False)
                    self.released.put(slot.held)
        finally:
            book.close()
