"""The worker's recorder: how each run ended, in the task's terms, written in a thread of its own.

Recording a run (its ledger row, its result and its ending in the task's file, a
durable write under the writers' lock) takes as long as a claim, so the loop hands
each ended run here and goes on; the recorder writes them in the order they ended,
with its own connection to the ledger, and only then lets the task's lock go: no
other claim can start the task again while its ending is written.
"""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from rouse.core.timefmt import format_interval
from rouse.core.tree import Record
from rouse.records import tasks
from rouse.runs import presets
from rouse.runs.handle import Ended, Supervised
from rouse.runs.supervisor import LOG_HEAD_END
from rouse.sweep.ledger import Ledger
from rouse.work.launch import Launch, RunSetup
from rouse.work.queue import TaskEnding, TaskQueue


@dataclass
class Slot:
    """One task's claim: its supervisor asked (``asked``), holding the task's lock and
    waiting for a free job (``ready``), its run in flight (``live``); once the run ends it
    leaves the worker's slots for the recorder."""

    record: Record
    held: Supervised
    launch: Launch
    state: str = "asked"

    @property
    def live(self) -> bool:
        return self.state == "live"


class Recorder:
    """One thread that records ended runs in their tasks, then releases their supervisors."""

    def __init__(
        self,
        setup: RunSetup,
        tasks: TaskQueue,
        now: Callable[[], datetime],
        say: Callable[[str], None],
    ) -> None:
        self.setup = setup
        self.tasks = tasks
        self.now = now
        self.say = say
        self.todo: queue.Queue[tuple[Slot, Ended] | None] = queue.Queue()
        self.released: queue.Queue[Supervised] = queue.Queue()
        #: runs handed over and not yet collected back (the loop's count: its thread only)
        self.owed = 0
        self.thread = threading.Thread(target=self._work, name="rouse-work-recorder", daemon=True)

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

    def record(self, slot: Slot, ended: Ended, book: Ledger) -> None:
        """Write how the run ended: its ledger row, then its result and its ending in the task."""
        book.end_run(slot.launch.run_id, "ran" if ended.ok else "failed", ended.code, ended.seconds)
        self.tasks.settle(slot.record, self.now(), self.verdict(slot, ended))

    def verdict(self, slot: Slot, ended: Ended) -> TaskEnding:
        """What ``ended`` means for the slot's task: exit 0 is ``done``; a non-zero exit or
        the deadline is ``failed``; a ``cancel:`` stamp is ``cancelled``, listing the
        checkpoints the run reported (the outward actions the owner must know about); a
        run its worker stopped goes back to ``pending``. The result is read as each CLI
        documents it (:func:`rouse.runs.presets.result_of`)."""
        root, record = self.setup.root, slot.record
        took = f"after {ended.seconds:.1f}s (output in {record.dir}/run.log)"
        result = self.result_of(root / record.dir / "run.log", slot.launch.last_message)
        if ended.stopped == "stop":
            why = f"handed back by its worker (stopped {took}); back to pending"
            return TaskEnding("pending", why, "")
        if ended.stopped == "cancel":
            task_file = root / record.rel
            try:
                data = task_file.read_bytes()
            except OSError:
                data = b""
            said = tasks.checkpoints(data, task_file.name)
            listed = "; ".join(said) if said else "none"
            return TaskEnding(
                "cancelled", f"cancelled while it ran ({took}); its checkpoints: {listed}", ""
            )
        if ended.ok:
            return TaskEnding("done", f"exit 0 {took}", result)
        if ended.stopped == "deadline":
            seconds = self.setup.timeout.total_seconds()
            limit = f"{seconds:g}s" if seconds < 60 else format_interval(self.setup.timeout)
            return TaskEnding(
                "failed", f"killed at its deadline (--task-timeout {limit}) {took}", result
            )
        return TaskEnding("failed", f"exit {ended.code} {took}", result)

    def result_of(self, log: Path, last_message: Path | None) -> str:
        """The run's final message: from its output in ``log`` (after the head), or Codex's
        last-message file (read, then removed, whatever the run's ending)."""
        try:
            output = log.read_bytes().split(LOG_HEAD_END.encode(), 1)[-1]
        except OSError:
            output = b""
        last = None
        if last_message is not None:
            with contextlib.suppress(OSError):
                last = last_message.read_bytes()
                last_message.unlink()
        return presets.result_of(self.setup.kind, output, last)

    def _work(self) -> None:
        book = Ledger(self.setup.root)
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
