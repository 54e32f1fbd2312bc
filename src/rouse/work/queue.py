"""Which tasks a worker's round takes, when one may start, and how a task is ended.

:meth:`TaskQueue.scan` walks the tree's headers once for the pending tasks, oldest
first, ending cancelled ones, holding those trust does not allow and handing lost runs
back (:meth:`TaskQueue.recover`). Every ending goes through
:func:`rouse.records.lifecycle.close`, as ``rouse close`` does. :class:`Pacing`: a
task starts outside quiet hours, within the run budget.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Callable, Container
from dataclasses import KW_ONLY, dataclass, field
from datetime import datetime
from pathlib import Path

from rouse.core import header, layout, levels
from rouse.core.errors import RouseError, UsageError
from rouse.core.statedir import state_path
from rouse.core.timefmt import format_stamp
from rouse.core.tree import Record, Tree, display_ids, walk
from rouse.records import lifecycle, tasks
from rouse.state import locks
from rouse.sweep.ledger import Ledger
from rouse.sweep.quiet import QuietHours
from rouse.sweep.runner import Budget
from rouse.trust.origins import OriginReader
from rouse.work import notices
from rouse.work.launch import held_for_trust

#: The attempt whose run is lost ends the task failed: no fourth run.
MAX_LOST = 3


@dataclass
class Report:
    started: list[str] = field(default_factory=list)
    ended: dict[str, str] = field(default_factory=dict)  # task dir → its ending
    held: list[str] = field(default_factory=list)  # why each held task waits
    recovered: list[str] = field(default_factory=list)
    #: tasks whose run this worker lost (its supervisor died): back to pending, unfinished
    lost: list[str] = field(default_factory=list)

    @property
    def failures(self) -> list[str]:
        """The tasks that failed in this worker's hands (ended failed, a third lost attempt
        included) or whose run it lost: ``rouse work --once`` exits 1 if there are any."""
        return sorted({d for d, e in self.ended.items() if e == "failed"} | set(self.lost))


@dataclass
class TaskEnding:
    """How a task's run ended, in the task's terms
    (:meth:`rouse.work.recorder.Recorder.verdict`)."""

    ending: str  # done, failed, cancelled, or pending (handed back)
    why: str
    result: str  # the run's final message ('' when there is none)


@dataclass
class TaskQueue:
    """The tree's tasks as one worker sees them."""

    root: Path
    reader: OriginReader
    report: Report
    _: KW_ONLY
    allow_untrusted: bool
    say: Callable[[str], None]
    #: the tree as the last scan walked it (a task's prompt reads its chain there)
    tree: Tree | None = None

    def scan(self, now: datetime, busy: Container[str]) -> list[Record]:
        """Recover lost runs, end cancelled pending tasks; the pending ones, oldest first
        (``busy``: the task dirs this worker is running or claiming, left alone)."""
        tree = walk(self.root)
        pending: list[Record] = []
        held: list[str] = []
        for record in tree.records.values():
            if record.type != "task" or record.dir in busy or layout.is_example(record.dir):
                continue  # init's examples show what a task is; they are never work
            status = levels.status_of(record)
            if status == "running":
                if not self.recover(record, now):
                    continue
                status = "pending"  # handed back: it runs again in this round
            if status == "pending":
                if (record.get("cancel") or "").strip():
                    self.end(record, now, "cancelled", "cancelled before it ran")
                    continue
                why = held_for_trust(record, self.reader, self.allow_untrusted)
                if why is not None:
                    held.append(why)
                    continue
                pending.append(record)
        if held != self.report.held:
            for why in held:
                self.say(why)
        self.report.held = held
        self.tree = tree
        return sorted(pending, key=lambda r: (_opened(r), r.dir))

    def fields_now(self, record: Record) -> dict[str, str] | None:
        """The task's header fields as its file says now (None: unreadable)."""
        try:
            return header.read_header(self.root / record.rel, record.rel).fields
        except (OSError, RouseError):
            return None

    def recover(self, record: Record, now: datetime) -> bool:
        """A running task whose lock is free lost its worker: back to pending (True), or
        failed at its third lost attempt."""
        path = state_path(self.root, locks.task_lock(record.dir))
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return False  # its run is live
            fields = self.fields_now(record)
            if fields is None or (fields.get("status") or "").strip().lower() != "running":
                return False
            attempts = as_count(fields.get("attempts"))
            who = (fields.get("worker") or "?").strip()
            if attempts >= MAX_LOST:
                self._give_up(record, now, attempts)
                return False
            line = f"attempt {attempts} lost: its worker ({who}) is gone; back to pending"
            if tasks.requeue(self.root, record, now, line):
                self.say(f"{record.id}: {line}")
                self.report.recovered.append(record.dir)
                return True
            return False
        finally:
            os.close(fd)

    def _give_up(self, record: Record, now: datetime, attempts: int) -> None:
        why = f"its run was lost {attempts} times (its worker died each time): not run again"
        if not self.end(record, now, "failed", why):
            return
        shown = display_ids(walk(self.root)).get(record.dir, record.id)
        text = (
            f"{shown} — failed: {attempts} attempts lost\n"
            f"at: {record.dir}\n"
            f"The task's worker died during each of its {attempts} runs, so rouse ended it "
            "failed rather than run it a fourth time. Look at its run.log, then run it "
            "again (a new task) or close what it was for.\n"
        )
        notices.queue(self.root, record, shown, "lost", text, now)

    def settle(self, record: Record, now: datetime, found: TaskEnding) -> None:
        """Write a run's verdict in its task: handed back to pending, or ended."""
        if found.ending != "pending":
            self.end(record, now, found.ending, found.why, result=found.result)
        elif tasks.requeue(self.root, record, now, found.why):
            self.report.ended[record.dir] = "pending"
            self.say(f"{record.id}: {found.why}")

    def end_if_cancelled(self, record: Record, now: datetime) -> None:
        """End a pending task ``cancelled`` if it carries a ``cancel:`` stamp."""
        fields = self.fields_now(record)
        if fields is None:
            return
        status = (fields.get("status") or "pending").strip().lower()
        if status == "pending" and (fields.get("cancel") or "").strip():
            self.end(record, now, "cancelled", "cancelled before it ran")

    def end(
        self, record: Record, now: datetime, ending: str, why: str, *, result: str = ""
    ) -> bool:
        """End the task as ``rouse close`` does, its run's ``result`` (if any) logged in
        the same write; False if it had ended otherwise meanwhile (the result is logged
        all the same)."""
        before = tasks.result_line(result) if result else None
        try:
            lifecycle.close(self.root, record.dir, now, ending, why, before=before, by_worker=True)
        except UsageError as exc:  # ended by hand meanwhile, or moved into the future
            self.say(f"{record.id}: not ended {ending}: {exc}")
            if result:  # (if it cannot be written either, run.log has the output)
                with contextlib.suppress(RouseError, OSError):
                    tasks.add_result(self.root, record, now, result)
            return False
        self.report.ended[record.dir] = ending
        self.say(f"{format_stamp(now)} {record.id} is {ending}: {why}")
        return True


def as_count(value: str | None) -> int:
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


@dataclass
class Pacing:
    """Whether one more task may start now; why not is said once, and kept for status."""

    quiet: QuietHours | None
    budget: Budget | None
    say: Callable[[str], None]
    waiting: str = ""  # why tasks wait now ("" while they may start)

    def quiet_now(self, now: datetime) -> bool:
        if self.quiet is not None and self.quiet.holds(now):
            self._wait(f"quiet hours ({self.quiet}): no task starts until they end")
            return True
        return False

    def may_start(self, now: datetime, book: Ledger, ahead: int) -> bool:
        """Whether one more task may be claimed: not in quiet hours, within the budget
        (the runs started, and the ``ahead`` claims that will start)."""
        if self.quiet_now(now):
            return False
        budget = self.budget
        if budget is not None:
            started = book.runs_since(now - budget.period, tasks=True)
            if len(started) + ahead >= budget.count:
                if len(started) >= budget.count:
                    until = started[-budget.count] + budget.period
                    self._wait(
                        f"the run budget ({budget.text}) is spent: tasks wait until "
                        f"{until:%Y-%m-%d %H:%M}"
                    )
                return False
        self.waiting = ""
        return True

    def _wait(self, why: str) -> None:
        if why != self.waiting:
            self.say(why)
        self.waiting = why
