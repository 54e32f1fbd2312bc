"""Changing records: ``move``, ``snooze``, ``close`` and ``promote``.

Each verb writes through the store (atomic, under the writers' lock) and
returns what it did, for the CLI or the MCP server to print.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from rouse.core import clock, layout
from rouse.core.errors import UsageError
from rouse.core.store import Store
from rouse.core.timefmt import format_stamp, parse_interval, parse_when
from rouse.core.tree import Record, Tree, walk
from rouse.records.scaffold import check_body, check_value

ENDINGS = ("done", "dropped", "abandoned")
#: Reminder states a snooze re-arms (a fresh due and status pending).
REARMABLE = frozenset({"pending", "fired", "expired"})


@dataclass
class Changed:
    rel: str  # the record file written
    summary: str  # one line for the user
    next_due: datetime | None = None


def _record(root: Path, ref: str) -> tuple[Tree, Record]:
    tree = walk(root)
    return tree, tree.resolve(ref)


def _dated(now: datetime, text: str) -> str:
    return f"- {format_stamp(now)}: {text}"


def move(root: Path, ref: str, now: datetime, note: str | None = None) -> Changed:
    """Stamp ``last-moved: now``, appending the note (if any) to the body."""
    _, record = _record(root, ref)
    store = Store(root)
    updates: dict[str, str | None] = {"last-moved": format_stamp(now)}
    with store.lock():
        if note:
            store.append_body(record.rel, updates, _dated(now, _one_line(note)))
        else:
            store.set_fields(record.rel, updates)
    return Changed(record.rel, f"moved {record.id} at {format_stamp(now)}")


def snooze(
    root: Path,
    ref: str,
    now: datetime,
    *,
    until: str | None = None,
    duration: str | None = None,
    note: str | None = None,
) -> Changed:
    """Push a record so it next comes due at WHEN (a reminder: set its ``due``)."""
    if (until is None) == (duration is None):
        raise UsageError("snooze needs exactly one of --until WHEN or --for INTERVAL")
    try:
        when = parse_when(until, now) if until else now + parse_interval(duration or "")
    except ValueError as exc:
        raise UsageError(f"bad snooze time: {exc}") from None
    tree, record = _record(root, ref)
    if record.type == "backlog":
        raise UsageError(f"{record.id} is a backlog item: it is never swept, so never snoozed")
    rearmable = record.type == "reminder" and clock.status_of(record) in REARMABLE
    if not clock.is_open(record) and not rearmable:
        raise UsageError(f"{record.id} is {clock.status_of(record)}: only open records snooze")
    updates: dict[str, str | None]
    if record.type == "reminder":
        # a fresh due re-arms it: rouse clears its own firing history too
        updates = {"due": format_stamp(when), "status": "pending"}
        updates.update(dict.fromkeys(("fires", "set", "fired", "ended")))
    else:
        stale_after = clock.evaluate(tree, record, now).stale_after
        assert stale_after is not None
        updates = {"last-moved": format_stamp(when - stale_after)}
    line = f"snoozed until {format_stamp(when)}" + (f": {_one_line(note)}" if note else "")
    store = Store(root)
    with store.lock():
        store.append_body(record.rel, updates, _dated(now, line))
    fresh = walk(root)
    next_due = clock.evaluate(fresh, fresh.records[record.dir], now).due_at
    return Changed(record.rel, f"snoozed {record.id} until {format_stamp(when)}", next_due)


def close(
    root: Path,
    ref: str,
    now: datetime,
    ending: str,
    why: str | None = None,
    outcome: str | None = None,
) -> Changed:
    """End a record out loud: status, last-moved, and the reason in the body."""
    _, record = _record(root, ref)
    states = clock.LEVELS[record.type].states
    if ending not in ENDINGS:
        raise UsageError(f"unknown ending {ending!r}: use --done, --dropped WHY or --abandoned WHY")
    if ending not in states or ending == states[0]:
        endings = [s for s in states[1:] if s in ENDINGS]
        raise UsageError(
            f"a {record.type} cannot end '{ending}': its states are {', '.join(states)}"
            + (f" (use --{' or --'.join(endings)})" if endings else "")
        )
    if ending != "done" and not (why or "").strip():
        raise UsageError(f"--{ending} needs a reason, said out loud: --{ending} 'why'")
    updates: dict[str, str | None] = {"status": ending, "last-moved": format_stamp(now)}
    if outcome is not None:
        if record.type != "action":
            raise UsageError(f"only an action carries an outcome, not a {record.type}")
        if outcome not in clock.OUTCOMES:
            raise UsageError(f"unknown outcome {outcome!r}: use {', '.join(clock.OUTCOMES)}")
        updates["outcome"] = outcome
    line = ending + (f": {_one_line(why or '')}" if why else "")
    store = Store(root)
    with store.lock():
        store.append_body(record.rel, updates, _dated(now, line))
    return Changed(record.rel, f"{record.id} is {ending}")


def promote(
    root: Path, slug: str, closes_when: str, now: datetime, under: str | None = None
) -> Changed:
    """Move a backlog item into the intentions as an open intention (all or nothing)."""
    layout.validate_slug(slug)
    closes_when = check_value("closes-when", closes_when)
    if not closes_when:
        raise UsageError("--closes-when needs one line saying how you will know it is done")
    tree = walk(root)
    source = f"{layout.BACKLOG}/{slug}"
    record = tree.records.get(source)
    if record is None or record.type != "backlog":
        raise UsageError(f"no backlog item at {source} (see `rouse tree`)")
    if clock.status_of(record) != "open":
        raise UsageError(f"{record.id} is {clock.status_of(record)}: only open backlog promotes")
    home = layout.INTENTIONS
    if under is not None:
        parent = tree.resolve(under)
        if parent.type == "backlog":
            raise UsageError(f"{parent.dir} is a backlog item: nothing nests under backlog")
        home = parent.dir
    target = f"{home}/{slug}"
    store = Store(root)
    stamp = format_stamp(now)
    updates: dict[str, str | None] = {
        "status": "open",
        "last-moved": stamp,
        "closes-when": closes_when,
        "promoted": stamp,
        "was": source,
    }
    with store.lock():
        if store.path(target).exists():
            raise UsageError(f"{target} already exists: refusing to promote over it")
        mover = _Mover(root, store)
        try:
            mover.move(source, target)
            mover.move(f"{target}/backlog.md", f"{target}/intention.md")
            store.set_fields(f"{target}/intention.md", updates)
        except BaseException:
            mover.undo()
            raise
    return Changed(f"{target}/intention.md", f"promoted {source} to {target}")


class _Mover:
    """Renames inside the tree (``git mv`` when tracked) that can be undone."""

    def __init__(self, root: Path, store: Store):
        self.root = root
        self.store = store
        self.done: list[tuple[str, str]] = []

    def _tracked(self, rel: str) -> bool:
        git = shutil.which("git")
        if git is None:
            return False
        found = subprocess.run(
            [git, "ls-files", "--error-unmatch", "--", rel],
            cwd=self.root,
            capture_output=True,
            check=False,
        )
        return found.returncode == 0

    def move(self, src: str, dst: str) -> None:
        self.store.path(dst)  # refuses escapes and symlinks
        if self._tracked(src):
            self.store.path(dst).parent.mkdir(parents=True, exist_ok=True)
            subprocess.run(
                ["git", "mv", "--", src, dst], cwd=self.root, capture_output=True, check=True
            )
        else:
            self.store.rename(src, dst)
        self.done.append((src, dst))

    def undo(self) -> None:
        for src, dst in reversed(self.done):
            if self._tracked(dst):
                subprocess.run(["git", "mv", "--", dst, src], cwd=self.root, check=False)
            else:
                self.store.rename(dst, src)
        self.done.clear()


def _one_line(text: str) -> str:
    """A note or reason as one body line: whitespace collapsed, and text (no NUL)."""
    return " ".join(check_body(text, "the note").split())
