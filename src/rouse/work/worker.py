"""``rouse work``: the task worker — pending tasks claimed once, run, ended.

Each round takes the tree's pending tasks (:mod:`rouse.work.queue`) and keeps
``--jobs`` runs going. A claim is the task's lock, taken by the run's supervising
process (:mod:`rouse.runs.supervisor`) and held until the recorder
(:mod:`rouse.work.recorder`) has written how the run ended; docs/tasks.md says what
that guarantees, and what SIGTERM and SIGINT do. The loop never waits on one run: it
reads its supervisors' answers, endings and exits as they come, so a slot is claimed
again while others are being recorded.
"""

from __future__ import annotations

import os
import signal
import socket
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from rouse.core.errors import RouseError
from rouse.core.statedir import state_path
from rouse.core.store import prepare_leases
from rouse.core.timefmt import format_stamp
from rouse.core.tree import Record
from rouse.records import tasks
from rouse.runs.handle import ANSWER_WITHIN, Supervised, SupervisorError, ready, start
from rouse.state import sweeper as sweepstate
from rouse.state.files import save_json
from rouse.sweep.ledger import Ledger
from rouse.sweep.quiet import QuietHours
from rouse.sweep.runner import Budget
from rouse.sweep.sinks import Sink, child_environment
from rouse.trust.origins import OriginReader
from rouse.work import notices
from rouse.work.launch import RunSetup, launch
from rouse.work.queue import Pacing, Report, TaskQueue, as_count
from rouse.work.recorder import Recorder, Slot

DEFAULT_TIMEOUT = timedelta(hours=1)
#: Seconds between a run's SIGTERM and SIGKILL (cancel, deadline, hand back).
GRACE = 5.0
#: Seconds between rounds when there is nothing to reap.
IDLE = 2.0
#: The longest the loop waits for news from its supervisors before looking around.
LOOK = 0.2


@dataclass
class Options:
    kind: str = "exec"  # claude, codex, exec
    extra: list[str] = field(default_factory=list)
    jobs: int = 1
    timeout: timedelta = DEFAULT_TIMEOUT
    budget: Budget | None = None
    sink: Sink | None = None
    quiet: QuietHours | None = None
    allow_untrusted: bool = False
    once: bool = False
    grace: float = GRACE


class TaskWorker:
    """Runs the tree's pending tasks, ``jobs`` at a time."""

    def __init__(
        self,
        root: Path,
        options: Options,
        reader: OriginReader,
        *,
        now: Callable[[], datetime],
        say: Callable[[str], None],
        env: Mapping[str, str],
    ) -> None:
        self.root = root
        self.options = options
        self.reader = reader
        self.now = now
        self.say = say
        self.env = child_environment(env)
        self.worker = f"{socket.gethostname()} pid {os.getpid()}"
        self.setup = RunSetup(  # what each of its runs starts with
            root=root,
            kind=options.kind,
            extra=options.extra,
            timeout=options.timeout,
            grace=options.grace,
            reader=reader,
            env=self.env,
            worker=self.worker,
        )
        self.slots: dict[str, Slot] = {}  # task dir → its claim
        self.releasing: list[Supervised] = []  # released, not yet exited
        self.report = Report()
        self.tasks = TaskQueue(
            root, reader, self.report, allow_untrusted=options.allow_untrusted, say=say
        )
        self.stopping = 0  # signals received
        self.pacing = Pacing(options.quiet, options.budget, say)
        self.book: Ledger | None = None
        self.delivered_at = 0.0  # when the notices were last looked at (--sink)
        self.recorder = Recorder(self.setup, self.tasks, now, say)

    # -- the loop -------------------------------------------------------------

    def run(self) -> Report:
        previous = {
            sig: signal.signal(sig, self._on_signal) for sig in (signal.SIGTERM, signal.SIGINT)
        }
        self.book = Ledger(self.root)
        prepare_leases()  # (the recorder's thread writes the tasks' files too)
        self.recorder.thread.start()
        self.write_state()  # there from the start: status knows it during its first round
        try:
            self._loop()
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            self.releasing += self.recorder.stop()
            for held in self.releasing:
                held.release()
            self.releasing.clear()
            self.book.close()
        return self.report

    def _on_signal(self, signum: int, frame: object) -> None:
        self.stopping += 1
        if self.stopping > 1:
            for slot in self.slots.values():
                if slot.live:
                    slot.held.stop()

    def _loop(self) -> None:
        queue: deque[Record] = deque()
        scanned = False
        last_scan = 0.0
        told = 0
        while True:
            blocked, gated = True, False
            if not self.stopping and self._room() > 0:
                rescan = not scanned or (
                    not self.options.once and time.monotonic() - last_scan >= IDLE
                )
                if not queue and rescan:
                    queue = deque(self.tasks.scan(self.now(), self.slots))
                    scanned, last_scan = True, time.monotonic()
                while queue and self._room() > 0 and not self.stopping:
                    if not self._may_start():
                        if self.options.once:
                            queue.clear()
                        gated = True  # quiet hours, or the budget: wait, do not spin
                        break
                    self.claim(queue.popleft())
                blocked = gated or not (queue and self._room() > 0)
            self.promote()
            self.hear(LOOK if self.slots and blocked else 0.0)
            waiting = not self.slots and self.recorder.busy  # (only the recorder is at work)
            self.releasing += self.recorder.collect(LOOK if waiting else 0.0)
            self.releasing = [held for held in self.releasing if not held.gone()]
            self.deliver_notices()
            if self.stopping != told:  # say that it heard: status and the tests read it
                told = self.stopping
                self.write_state()
            if self.slots or self.recorder.busy:
                continue
            if self.stopping or (self.options.once and not queue):
                break
            if not queue or gated:
                self.write_state()
                self._idle()
        self.delivered_at = 0.0
        self.deliver_notices()  # what the last runs said, before the worker goes
        self.write_state()

    def _room(self) -> int:
        """How many more tasks may be claimed now: ``jobs`` runs, and as many claims
        ahead of them (supervisors started and holding their task, so a job that
        ends is taken up again at once)."""
        return 2 * self.options.jobs - len(self.slots)

    def _may_start(self) -> bool:
        assert self.book is not None
        ahead = sum(slot.state in ("asked", "ready") for slot in self.slots.values())
        return self.pacing.may_start(self.now(), self.book, ahead)

    def _idle(self) -> None:
        end = time.monotonic() + IDLE
        while not self.stopping and time.monotonic() < end:
            time.sleep(0.05)
            self.releasing = [held for held in self.releasing if not held.gone()]

    # -- a claim --------------------------------------------------------------

    def claim(self, record: Record) -> None:
        """Start ``record``'s supervisor (it takes the task's lock); the claim goes on
        when it answers (:meth:`promote`)."""
        now = self.now()
        fields = self.tasks.fields_now(record)
        if fields is None:
            return
        tree = self.tasks.tree
        assert tree is not None
        made = launch(self.setup, tree, record, as_count(fields.get("attempts")) + 1, now)
        try:
            held = start(made.spec)
        except SupervisorError as exc:
            self.say(f"{record.id}: could not start its supervisor: {exc}")
            return
        self.slots[record.dir] = Slot(record, held, made)

    def promote(self) -> None:
        """Start runs for the claims that hold their task's lock, while a job is free:
        each task stamped ``running``, then its run started. Stopping, or in quiet
        hours: the claims waiting are let go instead (no task is held for hours).

        In the order they were claimed (oldest task first): a claim whose supervisor
        has not answered yet holds back the ones after it."""
        ready = [slot for slot in self.slots.values() if slot.state == "ready"]
        if not ready:
            return
        now = self.now()
        if self.stopping or self.pacing.quiet_now(now):
            for slot in ready:
                self._let_go(slot)
            return
        free = self.options.jobs - sum(slot.live for slot in self.slots.values())
        for slot in list(self.slots.values()):
            if free <= 0 or slot.state == "asked":
                return
            if slot.state == "ready" and self.begin(slot, now):
                free -= 1

    def begin(self, slot: Slot, now: datetime) -> bool:
        """Stamp the task ``running`` and start its run (True) — unless another worker
        took the task first, or it was cancelled meanwhile."""
        record, made = slot.record, slot.launch
        try:
            tasks.start_task(self.root, record.dir, now, self.worker)
        except (RouseError, OSError):
            self._let_go(slot)  # no longer pending, or cancelled meanwhile: not ours
            self.tasks.end_if_cancelled(record, now)  # (it waited for a job meanwhile)
            return False
        assert self.book is not None
        self.book.start_run(made.run_id, f"task:{record.dir}", [], " ".join(made.argv), now)
        slot.held.go()
        slot.state = "live"
        self.report.started.append(record.dir)
        self.say(
            f"{format_stamp(now)} started {record.id} (attempt {made.attempt}, run {made.run_id})"
        )
        return True

    def _let_go(self, slot: Slot) -> None:
        self.slots.pop(slot.record.dir, None)
        slot.held.release(wait=False)
        self.releasing.append(slot.held)

    # -- news from the supervisors --------------------------------------------

    def hear(self, timeout: float) -> None:
        """Act on what the supervisors said (waiting at most ``timeout`` for the first):
        claims answered, runs ended, supervisors that died."""
        slots = {slot.held: slot for slot in self.slots.values()}
        for held in ready(slots, timeout):
            self._news(slots[held])
        for slot in list(self.slots.values()):  # one that never answers is given up
            if slot.state == "asked" and time.monotonic() - slot.held.started > ANSWER_WITHIN:
                self._news(slot)

    def _news(self, slot: Slot) -> None:
        record = slot.record
        try:
            if slot.state == "asked":
                refused = slot.held.answer(0)
                if refused == "":
                    slot.state = "ready"
                    self.promote()
                elif refused is not None:  # another worker's run holds it
                    self._let_go(slot)
                return
            ended = slot.held.poll(0)  # (a ready one says nothing until it goes: only its end)
        except SupervisorError as exc:
            del self.slots[record.dir]
            slot.held.kill()
            if not slot.live:
                self.say(f"{record.id}: could not start its supervisor: {exc}")
                return
            self.say(f"{record.id}: {exc}; it goes back to pending")
            self.report.lost.append(record.dir)
            self.tasks.recover(record, self.now())
            return
        if ended is None:
            return
        del self.slots[record.dir]
        self.promote()  # its job is free: the next claim's run starts before this is recorded
        self.recorder.put(slot, ended)  # (which lets its lock go once it is written)

    # -- news -----------------------------------------------------------------

    def deliver_notices(self) -> None:
        """With ``--sink``: send the tasks' queued notices at once (else the sweeper does)."""
        if self.options.sink is None or self.book is None:
            return
        if time.monotonic() - self.delivered_at >= LOOK:  # (not at every event)
            self.delivered_at = time.monotonic()
            notices.deliver(self.book, self.options.sink, self.now())

    def write_state(self) -> None:
        save_json(
            state_path(self.root, sweepstate.WORK_STATE),
            {
                "last_round": format_stamp(self.now()),
                "wall": datetime.now().strftime("%Y-%m-%d %H:%M:%S"),
                "pid": os.getpid(),
                "jobs": self.options.jobs,
                "running": sorted(d for d, slot in self.slots.items() if slot.live),
                "held": self.report.held,
                "waiting": self.pacing.waiting,
                "stopping": self.stopping,
            },
        )
