"""``rouse work``: the task worker — pending tasks claimed once, run, ended.

Each round it walks the tree's headers and, oldest first, for each pending
task: ends a cancelled one ``cancelled`` without running it; holds one that
trust does not allow (:mod:`rouse.work.prompt`); else claims it. A claim is
the task's lock (``.rouse/tasks/<key>.lock``), taken by the run's supervising
process (:mod:`rouse.runs.supervisor`) before the task is stamped ``running``
(:func:`rouse.records.tasks.start_task`), and held until the worker has
recorded how the run ended — so a task has one live run across any number
of workers, and a claim dies with the process that holds it. A task found
``running`` with its lock free lost its worker: it goes back to pending, and
its third lost attempt ends it ``failed`` (with a ``lost`` notice).

SIGTERM/SIGINT: no new claims; the runs in flight finish and are recorded. A
second one stops them (their process groups) and hands them back to pending.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import socket
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from rouse.core import clock, header, sweepstate
from rouse.core.errors import RouseError, UsageError
from rouse.core.statedir import state_path
from rouse.core.statefile import save_json
from rouse.core.timefmt import format_interval, format_stamp
from rouse.core.tree import Record, Tree, display_ids, walk
from rouse.records import lifecycle, tasks
from rouse.runs import presets
from rouse.runs.handle import Ended, Supervised, SupervisorError, claim, resolve
from rouse.sweep.ledger import Ledger
from rouse.sweep.quiet import QuietHours
from rouse.sweep.runner import Budget
from rouse.sweep.sink_base import SinkError, child_environment
from rouse.sweep.sinks import Sink
from rouse.trust.origins import OriginReader
from rouse.work import notices, prompt

DEFAULT_TIMEOUT = timedelta(hours=1)
#: The attempt whose run is lost ends the task failed: no fourth run.
MAX_LOST = 3
#: Seconds between a run's SIGTERM and SIGKILL (cancel, deadline, hand back).
GRACE = 5.0
#: Seconds between rounds when there is nothing to reap.
IDLE = 2.0


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


@dataclass
class Slot:
    """One task's run in flight."""

    record: Record
    held: Supervised
    run_id: str
    last_message: Path | None
    started: float = field(default_factory=time.monotonic)


@dataclass
class Report:
    started: list[str] = field(default_factory=list)
    ended: dict[str, str] = field(default_factory=dict)  # task dir → its ending
    held: list[str] = field(default_factory=list)  # why each held task waits
    recovered: list[str] = field(default_factory=list)


def lock_rel(record: Record) -> str:
    """The task's claim under .rouse/: one lock file per task directory."""
    return sweepstate.task_lock(record.dir)


class Worker:
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
        self.slots: dict[str, Slot] = {}
        self.report = Report()
        self.stopping = 0  # signals received
        self.waiting_reason = ""
        self._tree: Tree | None = None

    # -- the loop -------------------------------------------------------------

    def run(self) -> Report:
        previous = {
            sig: signal.signal(sig, self._on_signal) for sig in (signal.SIGTERM, signal.SIGINT)
        }
        try:
            self._loop()
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        return self.report

    def _on_signal(self, signum: int, frame: object) -> None:
        self.stopping += 1
        if self.stopping > 1:
            for slot in self.slots.values():
                slot.held.stop()

    def _loop(self) -> None:
        queue: deque[Record] = deque()
        scanned = False
        last_scan = 0.0
        told = 0
        while True:
            free = self.options.jobs - len(self.slots)
            if not self.stopping and free > 0:
                rescan = not scanned or (
                    not self.options.once and time.monotonic() - last_scan >= IDLE
                )
                if not queue and rescan:
                    queue = deque(self.scan(self.now()))
                    scanned, last_scan = True, time.monotonic()
                while queue and len(self.slots) < self.options.jobs and not self.stopping:
                    if not self._may_start(self.now()):
                        if self.options.once:
                            queue.clear()
                        break
                    self.start(queue.popleft())
            self.reap(0.1 if self.slots else 0.0)
            self.deliver_notices()
            if self.stopping != told:  # say that it heard: status and the tests read it
                told = self.stopping
                self.write_state()
            if not self.slots and (self.stopping or (self.options.once and not queue)):
                break
            if not self.slots and not queue:
                self.write_state()
                self._idle()
        self.write_state()

    def _idle(self) -> None:
        end = time.monotonic() + IDLE
        while not self.stopping and time.monotonic() < end:
            time.sleep(0.05)

    def _may_start(self, now: datetime) -> bool:
        quiet = self.options.quiet
        if quiet is not None and quiet.holds(now):
            self._wait(f"quiet hours ({quiet}): no task starts until they end")
            return False
        budget = self.options.budget
        if budget is not None:
            with Ledger(self.root) as book:
                started = book.runs_since(now - budget.period, tasks=True)
            if len(started) >= budget.count:
                until = started[-budget.count] + budget.period
                self._wait(
                    f"the run budget ({budget.text}) is spent: tasks wait until "
                    f"{until:%Y-%m-%d %H:%M}"
                )
                return False
        self.waiting_reason = ""
        return True

    def _wait(self, why: str) -> None:
        if why != self.waiting_reason:
            self.say(why)
        self.waiting_reason = why

    # -- a round --------------------------------------------------------------

    def scan(self, now: datetime) -> list[Record]:
        """Recover lost runs, end cancelled pending tasks; the pending ones, oldest first."""
        tree = walk(self.root)
        pending: list[Record] = []
        held: list[str] = []
        for record in tree.records.values():
            if record.type != "task" or record.dir in self.slots:
                continue
            status = clock.status_of(record)
            if status == "running":
                if not self.recover(record, now):
                    continue
                status = "pending"  # handed back: it runs again in this round
            if status == "pending":
                if (record.get("cancel") or "").strip():
                    self._end(record, now, "cancelled", "cancelled before it ran")
                    continue
                why = prompt.held_for_trust(record, self.reader, self.options.allow_untrusted)
                if why is not None:
                    held.append(why)
                    continue
                pending.append(record)
        if held != self.report.held:
            for why in held:
                self.say(why)
        self.report.held = held
        self._tree = tree
        return sorted(pending, key=lambda r: (_opened(r), r.dir))

    def recover(self, record: Record, now: datetime) -> bool:
        """A running task whose lock is free lost its worker: back to pending (True), or
        failed at its third lost attempt."""
        path = state_path(self.root, lock_rel(record))
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return False  # its run is live
            try:
                head = header.read_header(self.root / record.rel, record.rel)
            except (OSError, RouseError):
                return False
            if (head.fields.get("status") or "").strip().lower() != "running":
                return False
            attempts = _int(head.fields.get("attempts"))
            who = (head.fields.get("worker") or "?").strip()
            if attempts >= MAX_LOST:
                why = (
                    f"its run was lost {attempts} times (its worker died each time): not run again"
                )
                self._end(record, now, "failed", why)
                shown = display_ids(walk(self.root)).get(record.dir, record.id)
                text = (
                    f"{shown} — failed: {attempts} attempts lost\n"
                    f"at: {record.dir}\n"
                    f"The task's worker died during each of its {attempts} runs, so rouse ended it "
                    "failed rather than run it a fourth time. Look at its run.log, then run it "
                    "again (a new task) or close what it was for.\n"
                )
                notices.queue(self.root, record, shown, "lost", text, now)
                return False
            line = f"attempt {attempts} lost: its worker ({who}) is gone; back to pending"
            if tasks.requeue(self.root, record, now, line):
                self.say(f"{record.id}: {line}")
                self.report.recovered.append(record.dir)
                return True
            return False
        finally:
            os.close(fd)

    def start(self, record: Record) -> None:
        """Claim ``record`` (its lock, then the guarded stamp) and start its run."""
        now = self.now()
        try:
            head = header.read_header(self.root / record.rel, record.rel)
        except (OSError, RouseError):
            return
        attempt = _int(head.fields.get("attempts")) + 1
        fields = prompt.fields_of(record)
        run_id = f"w{now:%Y%m%dT%H%M%S}-{os.urandom(4).hex()}"
        last = (
            state_path(self.root, f"runs/{run_id}.last") if self.options.kind == "codex" else None
        )
        argv, unflagged = presets.task_command(
            self.options.kind, self.options.extra, fields, str(last) if last else None
        )
        verdict = self.reader.verdict(record)
        origin = verdict.origin
        tree = self._tree or walk(self.root)
        text = prompt.build(
            self.root,
            tree,
            record,
            origin,
            prompt.is_quoted(self.reader, origin),
            unflagged,
            attempt,
        )
        env = {
            **self.env,
            "ROUSE_MEMORY": str(self.root),
            "ROUSE_TASK": record.dir,
            "ROUSE_TASK_ATTEMPT": str(attempt),
            "ROUSE_RUN_ID": run_id,
            "ROUSE_REPO": fields["repo"],
            "ROUSE_CATEGORY": fields["category"],
        }
        directory = self.root / record.dir
        spec = {
            "argv": resolve(argv, env),
            "cwd": str(directory),
            "env": env,
            "prompt": text,
            "timeout": self.options.timeout.total_seconds(),
            "grace": self.options.grace,
            "locks": [str(state_path(self.root, lock_rel(record)))],
            "watch": str(self.root / record.rel),
            "log": str(directory / "run.log"),
            "log_head": (
                f"run: {run_id}\ntask: {record.dir}\nattempt: {attempt}\n"
                f"started: {now:%Y-%m-%d %H:%M:%S}\ncommand: {' '.join(argv)}\n"
                f"directory: {directory}\nworker: {self.worker}\n"
            ),
        }
        try:
            held = claim(spec)
        except (SupervisorError, OSError) as exc:
            self.say(f"{record.id}: could not start its supervisor: {exc}")
            return
        if isinstance(held, str):
            return  # another worker holds it
        try:
            tasks.start_task(self.root, record.dir, now, self.worker)
        except RouseError:
            held.release()  # no longer pending, or cancelled meanwhile: not ours
            return
        with Ledger(self.root) as book:
            book.start_run(run_id, f"task:{record.dir}", [], " ".join(argv), now)
        held.go()
        self.slots[record.dir] = Slot(record, held, run_id, last)
        self.report.started.append(record.dir)
        self.say(f"{format_stamp(now)} started {record.id} (attempt {attempt}, run {run_id})")

    def reap(self, timeout: float) -> None:
        """Record every run that has ended (waiting at most ``timeout`` for the first)."""
        for key, slot in list(self.slots.items()):
            try:
                ended = slot.held.poll(timeout)
            except SupervisorError as exc:
                self.say(f"{slot.record.id}: {exc}; it goes back to pending")
                del self.slots[key]
                self.recover(slot.record, self.now())
                continue
            timeout = 0.0
            if ended is not None:
                try:
                    self.finish(slot, ended)
                finally:
                    slot.held.release()
                    del self.slots[key]

    def finish(self, slot: Slot, ended: Ended) -> None:
        """Write how the run ended in the task: its result and its ending."""
        record, now = slot.record, self.now()
        with Ledger(self.root) as book:
            book.end_run(slot.run_id, "ran" if ended.ok else "failed", ended.code, ended.seconds)
        log = self.root / record.dir / "run.log"
        try:
            output = log.read_bytes().split(b"\n---\n", 1)[-1]
        except OSError:
            output = b""
        last = None
        if slot.last_message is not None:
            with contextlib.suppress(OSError):
                last = slot.last_message.read_bytes()
                slot.last_message.unlink()
        result = presets.result_of(self.options.kind, output, last)
        took = f"after {ended.seconds:.1f}s (output in {record.dir}/run.log)"
        if ended.stopped == "stop":
            line = f"handed back by its worker (stopped {took}); back to pending"
            tasks.requeue(self.root, record, now, line)
            self.report.ended[record.dir] = "pending"
            self.say(f"{record.id}: {line}")
            return
        if ended.stopped == "cancel":
            try:
                data = (self.root / record.rel).read_bytes()
            except OSError:
                data = b""
            said = tasks.checkpoints(data, record.rel)
            listed = "; ".join(said) if said else "none"
            self._end(
                record,
                now,
                "cancelled",
                f"cancelled while it ran ({took}); its checkpoints: {listed}",
            )
            return
        if result:
            with contextlib.suppress(RouseError, OSError):
                tasks.add_result(self.root, record, now, result)
        if ended.ok:
            self._end(record, now, "done", f"exit 0 {took}")
        elif ended.stopped == "deadline":
            seconds = self.options.timeout.total_seconds()
            limit = f"{seconds:g}s" if seconds < 60 else format_interval(self.options.timeout)
            self._end(
                record, now, "failed", f"killed at its deadline (--task-timeout {limit}) {took}"
            )
        else:
            self._end(record, now, "failed", f"exit {ended.code} {took}")

    def _end(self, record: Record, now: datetime, ending: str, why: str) -> None:
        try:
            lifecycle.close(self.root, record.dir, now, ending, why)
        except UsageError as exc:  # ended by hand meanwhile, or moved into the future
            self.say(f"{record.id}: not ended {ending}: {exc}")
            return
        self.report.ended[record.dir] = ending
        self.say(f"{format_stamp(now)} {record.id} is {ending}: {why}")

    # -- news -----------------------------------------------------------------

    def deliver_notices(self) -> None:
        """With ``--sink``: send the tasks' queued notices at once (else the sweeper does)."""
        sink = self.options.sink
        if sink is None:
            return
        now = self.now()
        with Ledger(self.root) as book:
            owed = [
                e
                for e in book.open_entries()
                if e.wake.reason in notices.NOTICES and e.sink == notices.NOTICE_SINK
            ]
            for entry in owed:
                book.start_attempt(entry.id, sink.kind, now)
                try:
                    receipt = sink.send(entry.wake, now)
                except SinkError as exc:
                    book.failed(entry.id, now, str(exc))
                    continue
                book.delivered(entry.id, now, receipt, stamped=True)

    def write_state(self) -> None:
        save_json(
            state_path(self.root, sweepstate.WORK_STATE),
            {
                "last_round": format_stamp(self.now()),
                "wall": datetime.now().strftime("%Y-%m-%d %H:%M:%S"),
                "pid": os.getpid(),
                "jobs": self.options.jobs,
                "running": sorted(self.slots),
                "held": self.report.held,
                "waiting": self.waiting_reason,
                "stopping": self.stopping,
            },
        )


def _int(value: str | None) -> int:
    try:
        return max(0, int((value or "0").strip()))
    except ValueError:
        return 0


def _opened(record: Record) -> str:
    """Oldest first: by ``opened``, else the file's mtime (as a sortable text)."""
    opened = (record.get("opened") or "").strip()
    if opened:
        return opened
    return datetime.fromtimestamp(record.mtime_ns / 1e9).strftime("%Y-%m-%d %H:%M")


__all__ = ["DEFAULT_TIMEOUT", "Options", "Report", "Worker", "lock_rel"]
