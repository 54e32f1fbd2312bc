"""A task's own writes besides its ending (:mod:`rouse.records.lifecycle`'s ``close``):
a worker's claim, ``cancel``, checkpoints, a requeue and the run's result, each
through the store under its lock. Queueing a checkpoint's wake is the worker's
(:mod:`rouse.work.notices`).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from rouse.core import body, header, layout
from rouse.core.errors import HeaderError, UsageError
from rouse.core.store import with_log
from rouse.core.timefmt import format_stamp
from rouse.core.tree import Record
from rouse.records.lifecycle import Changed, acted, close, dated, minute, one_line
from rouse.records.locate import find
from rouse.records.scaffold import article
from rouse.trust.stamp import SigningStore

#: The longest checkpoint text, in characters (one line in the log).
MAX_CHECKPOINT = 500


def _task(root: Path, ref: str) -> Record:
    record = find(root, ref)
    if record.type != "task":
        raise UsageError(f"{record.id} is {article(record.type)}: only a task has this")
    return record


def _status(data: bytes, rel: str) -> tuple[str, header.Header]:
    head, _ = header.split(data, rel)
    return (head.fields.get("status") or "pending").strip().lower(), head


def start_task(root: Path, ref: str, now: datetime, worker: str) -> Changed:
    """The task worker's claim (``rouse work``): ``status: running`` with the machine
    fields ``started``, ``worker`` (host and pid) and ``attempts`` (n + 1), and
    ``last-moved`` (a running task is moving).

    Decided on the file as it is under the writers' lock, so of two workers only
    one starts a task: refused (UsageError, nothing written) unless the task is
    pending and carries no ``cancel:`` stamp.
    """
    record = _task(root, ref)
    attempts = 0

    def claim(data: bytes) -> bytes:
        nonlocal attempts
        status, head = _status(data, record.rel)
        if status != "pending":
            raise UsageError(f"{record.id} is {status}: only a pending task is started")
        if (head.fields.get("cancel") or "").strip():
            raise UsageError(f"{record.id} carries a cancel: stamp: it is not started")
        try:
            attempts = max(0, int((head.fields.get("attempts") or "0").strip())) + 1
        except ValueError:
            attempts = 1
        updates = {
            "status": "running",
            "started": format_stamp(now),
            "worker": one_line(worker),
            "attempts": str(attempts),
            "last-moved": format_stamp(now),
        }
        return header.set_fields(data, updates, record.rel)

    acted(root, record, now, claim)
    return Changed.of(
        record,
        f"{record.id} is running (attempt {attempts}, worker {worker})",
        {"status": "running", "started": minute(now), "attempts": attempts},
    )


def cancel(root: Path, ref: str, now: datetime) -> Changed:
    """Stamp ``cancel:`` on a task: a running one is stopped by its supervisor, a pending
    one is ended ``cancelled`` here and never runs. Refused for a task that has ended."""
    record = _task(root, ref)
    was = ""

    def stamp(data: bytes) -> bytes:
        nonlocal was
        was, head = _status(data, record.rel)
        if was not in ("pending", "running"):
            raise UsageError(f"{record.id} is {was}: only a pending or running task is cancelled")
        if (head.fields.get("cancel") or "").strip():
            return data
        return header.set_fields(data, {"cancel": format_stamp(now)}, record.rel)

    acted(root, record, now, stamp)
    if was == "pending":
        try:
            return close(root, record.dir, now, "cancelled", "cancelled before it ran")
        except UsageError:  # a worker claimed it meanwhile: its supervisor stops it
            pass
    return Changed.of(
        record,
        f"{record.id} is cancelled: its run is being stopped",
        {"status": "running", "cancel": now},
    )


def checkpoint_line(root: Path, ref: str, text: str, now: datetime) -> tuple[Record, str]:
    """Append ``- <now>: checkpoint: TEXT`` to a pending or running task's log."""
    record = _task(root, ref)
    line = layout.shown(" ".join(text.split()))
    if not line:
        raise UsageError("the checkpoint is empty: say what happened")
    if len(line) > MAX_CHECKPOINT:
        raise UsageError(
            f"the checkpoint is {len(line)} characters, over {MAX_CHECKPOINT}: shorten it"
        )

    def add(data: bytes) -> bytes:
        status, _ = _status(data, record.rel)
        if status not in ("pending", "running"):
            raise UsageError(f"{record.id} is {status}: a checkpoint is for a task in flight")
        return with_log(data, record.rel, dated(now, body.CHECKPOINT + line))

    acted(root, record, now, add)
    return record, line


def requeue(root: Path, record: Record, now: datetime, why: str) -> bool:
    """A running task back to ``pending`` with a log line; False if it is not running."""
    store = SigningStore(root)
    moved = False

    def back(data: bytes) -> bytes:
        nonlocal moved
        status, _ = _status(data, record.rel)
        if status != "running":
            return data
        moved = True
        data = header.set_fields(data, {"status": "pending"}, record.rel)
        return with_log(data, record.rel, dated(now, why))

    with store.lock():
        store.update(record.rel, back)
    return moved


def result_line(result: str) -> str:
    """The run's final message as one log line's text: ``result: …``."""
    said = layout.shown(" ".join(result.split()))  # (a NUL or an ESC never into the file)
    return "result: " + (said or "(the run gave no final message)")


def add_result(root: Path, record: Record, now: datetime, result: str) -> None:
    """The run's final message as one log line (``result: …``), before the task ends
    (its worker writes it with the ending: ``close(…, before=result_line(…))``)."""
    store = SigningStore(root)
    with store.lock():
        store.append_log(record.rel, {}, dated(now, result_line(result)))


def checkpoints(data: bytes, rel: str) -> list[str]:
    """The checkpoints a task's file reports, oldest first (``<date>: TEXT``)."""
    try:
        _, rest = header.split(data, rel)
    except HeaderError:
        return []
    return body.checkpoints(rest)
