"""Plain renderings of the tree and the clock for the read verbs: ``rouse due``'s rows
and ``rouse tree``.

Pure functions of a Tree, decisions and ``now``: the CLI prints them, the
MCP server returns them. (The pack and ``explain`` have their own modules.) Text is for people:
relative ages and local clock times. The ``*_item``/``*_json`` forms are for
scripts: ISO 8601 times with the local offset, durations in seconds.
"""

from __future__ import annotations

import re
from datetime import datetime
from itertools import groupby
from operator import itemgetter
from pathlib import Path

from rouse.cache.plans import Survey, instant, micros
from rouse.core import clock, layout, levels
from rouse.core.clock import Decision
from rouse.core.timefmt import format_stamp, human_age, iso_stamp
from rouse.core.tree import Context, File, Note, Record, Tree, display_ids

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    #: A due row: what ``rouse due`` shows of one due decision, ``[id, path, type,
    #: reason, due_at, moved_at, nudge]``, its instants in microseconds (:func:`micros`):
    #: as a walk makes it (:func:`due_row`) and as the snapshot keeps it. (A tracked
    #: name is printable ASCII: it holds no tab and no newline.)
    Row = list[Any]

_DIGITS = re.compile(r"(\d+)")
#: every digit to NUL (which no path holds): paths with one mask have their digits at
#: the same places, and then their natural order is their plain order
_DIGIT_MASK = str.maketrans("0123456789", "\0" * 10)


def natural_key(text: str) -> tuple[list[Any], str]:
    """Sort key that reads runs of digits as numbers: ``big-2`` before ``big-10``."""
    parts: list[Any] = _DIGITS.split(text)  # text, digits, text, …: a number at odd places
    parts[1::2] = map(int, parts[1::2])
    return parts, text


def clock_time(value: datetime, now: datetime) -> str:
    """``07:26`` on the day of ``now``, else ``2026-03-14 07:26``."""
    return value.strftime("%H:%M") if value.date() == now.date() else format_stamp(value)


# -- due ----------------------------------------------------------------------


def due_order(found: list[Decision]) -> list[Decision]:
    """Earliest due first; records due at the same instant in natural order of path."""
    return _in_due_order(found, lambda d: d.due_at or d.now, lambda d: d.record.dir)


def _in_due_order(
    items: list[Any], instant_of: Callable[[Any], Any], path_of: Callable[[Any], str]
) -> list[Any]:
    """:func:`due_order` of any items: by ``instant_of``, ties in natural order of path."""
    # (only items tied at an instant need the natural key: the same order, less work)
    shown: list[Any] = []
    for _, group in groupby(sorted(items, key=instant_of), instant_of):
        tied = list(group)
        if len(tied) > 1:
            # digits at the same places in every path: natural order is plain order
            if len({path_of(item).translate(_DIGIT_MASK) for item in tied}) == 1:
                tied.sort(key=path_of)
            else:
                tied.sort(key=lambda item: natural_key(path_of(item)))
        shown += tied
    return shown


def due_row(decision: Decision, record_id: str) -> Row:
    """The row of one due decision."""
    record = decision.record
    return [
        record_id,
        record.dir,
        record.type,
        decision.reason,
        micros(decision.due_at),
        micros(decision.moved_at),
        decision.nudge,
    ]


def due_rows(tree: Tree, surveyed: Survey) -> list[Row]:
    """``rouse due``'s rows at the survey's instant, in due order (earliest first, ties in
    natural order of path): a planned verdict straight to its row, the clock's own
    decisions through :func:`due_row`."""
    ids = display_ids(tree)
    # (a verdict: still, dir, record, reason, due_at, moved_at, moved_from, nudge)
    rows = [
        [ids[where], where, record.type, reason, due_at, moved, nudge]
        for _, where, record, reason, due_at, moved, _, nudge in surveyed.planned
    ]
    rows += [due_row(d, ids[d.record.dir]) for d in surveyed.fresh]
    at = micros(surveyed.now)
    return _in_due_order(rows, lambda row: at if row[4] is None else row[4], itemgetter(1))


def due_item(decision: Decision, record_id: str) -> dict[str, Any]:
    """One item of ``rouse due --json`` (and of the MCP ``due`` tool)."""
    return row_items([due_row(decision, record_id)])[0]


def row_items(rows: list[Row]) -> list[dict[str, Any]]:
    """``rouse due --json``'s items of rows."""
    stamp = stamper()
    return [
        {
            "record": shown,
            "type": kind,
            "slug": where.rpartition("/")[2],
            "path": where,
            "reason": reason,
            "due_at": stamp(due_at),
            "moved_at": stamp(moved),
            "nudge": nudge,
        }
        for shown, where, kind, reason, due_at, moved, nudge in rows
    ]


def stamper() -> Callable[[int | None], str | None]:
    """:func:`iso_stamp` of an instant in microseconds, each said once (rows and items
    share their instants)."""
    said: dict[int | None, str | None] = {}

    def stamp(value: int | None) -> str | None:
        if value not in said:
            said[value] = iso_stamp(instant(value))
        return said[value]

    return stamp


def when_due(decision: Decision, now: datetime) -> str:
    """When a due item is (or was) due, in its reason's words, measured from the real ``now``.

    ``due in 59m (07:26)`` for what is not due yet (a forecast), and for what
    is: ``went stale 2h ago (05:00)``, ``review due 1h ago (06:00)``, ``due
    yesterday (2026-03-13 09:00)``, ``nag #3 due 40m ago (06:20)``, ``last
    wake #10 due 5m ago (06:55)``.
    """
    return _when(decision.reason, decision.due_at or decision.now, decision.nudge, now)


def _when(reason: str | None, due_at: datetime, nudge: int, now: datetime) -> str:
    if reason == "nag":
        label = f"nag #{nudge} due"
    elif reason == "expire":
        label = f"last wake #{nudge} due"
    elif reason == "review":
        label = "review due"
    elif reason == "stale" and due_at <= now:
        label = "went stale"
    else:
        label = "due"
    return f"{label} {human_age(due_at, now)} ({clock_time(due_at, now)})"


def due_lines(tree: Tree, found: list[Decision], now: datetime) -> list[str]:
    """``rouse due``'s lines of decisions (:func:`row_lines`)."""
    ids = display_ids(tree)
    return row_lines([due_row(d, ids[d.record.dir]) for d in found], now)


def row_lines(rows: list[Row], now: datetime) -> list[str]:
    """``rouse due``'s lines, tab-separated: id, reason, when (from the real ``now``), path."""
    said: dict[tuple[Any, ...], str] = {}  # (rows due alike read alike: say each once)
    lines = []
    for shown, where, _, reason, due_at, _, nudge in rows:
        when = said.get((reason, due_at, nudge))
        if when is None:
            at = instant(due_at) or now
            when = said[reason, due_at, nudge] = _when(reason, at, nudge, now)
        lines.append(f"{shown}\t{reason or ''}\t{when}\t{where}")
    return lines


def due_header(count: int, now: datetime, until: datetime | None) -> str | None:
    """The line above the rows, when it tells something they do not: a forecast, or nothing."""
    if until is None:
        return f"nothing is due at {format_stamp(now)}" if count == 0 else None
    what = "nothing comes due" if count == 0 else f"{count} record(s) due"
    return f"{what} by {format_stamp(until)} if nothing moves (now {format_stamp(now)})"


# -- tree ---------------------------------------------------------------------

_CONTEXT_ORDER = {"persona": 0, "belief": 1, "motivation": 2}


def _ladder(
    tree: Tree,
) -> tuple[list[Context], list[Record], list[Record], list[Note], list[File]]:
    """What ``rouse tree`` shows, each part in its order: the context layers, the root
    records outside the inventory and inside it, the notes and the plugins."""
    context = sorted(tree.context, key=lambda c: (_CONTEXT_ORDER[c.kind], natural_key(c.slug)))
    roots = sorted(tree.roots(), key=lambda r: natural_key(r.dir))
    work = [r for r in roots if not layout.is_inside(r.dir, layout.INVENTORY)]
    stock = [r for r in roots if layout.is_inside(r.dir, layout.INVENTORY)]
    notes = sorted(tree.notes, key=lambda n: natural_key(n.rel))
    return context, work, stock, notes, sorted(tree.plugins, key=lambda p: natural_key(p.rel))


def _children(tree: Tree, record: Record) -> list[Record]:
    return sorted((tree.records[c] for c in record.children), key=lambda r: natural_key(r.dir))


def snoozed_at(tree: Tree, record: Record, now: datetime) -> datetime | None:
    """The record's ``snoozed-until`` while it holds at ``now``, as the clock reads it."""
    if not (record.get("snoozed-until") or "").strip():
        return None  # (the clock only for the few that carry one)
    return clock.evaluate(tree, record, now).snoozed_until


def tree_lines(tree: Tree, now: datetime) -> list[str]:
    """The ladder: context layers, then records by nesting, then inventory (natural order)."""
    lines: list[str] = []
    context, work, stock, notes, plugins = _ladder(tree)
    if context:
        lines.append("context:")
        lines += [f"  {c.kind} {c.slug}" for c in context]

    def nest(record: Record, depth: int, out: list[str]) -> None:
        until = snoozed_at(tree, record, now)
        snoozed = f" ({snoozed_text(until)})" if until is not None else ""
        status = levels.status_of(record)
        out.append(f"{'  ' * depth}{record.type} {record.slug} [{status}]{snoozed}")
        for child in _children(tree, record):
            nest(child, depth + 1, out)

    if work:
        lines.append("records:")
        for record in work:
            nest(record, 1, lines)
    inventory: list[str] = []
    for record in stock:
        nest(record, 1, inventory)
    inventory += [f"  note {n.slug}" for n in notes]
    if tree.probes is not None:
        inventory.append(f"  probes {tree.probes.rel}")
    inventory += [f"  plugin {Path(p.rel).stem}" for p in plugins]
    if inventory:
        lines.append("inventory:")
        lines += inventory
    skipped = [f"  {p.render()}" for p in tree.untrackable]
    skipped += [f"  {link}: symlink (never followed)" for link in tree.symlinks]
    if skipped:
        lines.append("skipped:")
        lines += skipped
    return lines


def tree_json(tree: Tree, now: datetime) -> dict[str, Any]:
    """``rouse tree --json``: what :func:`tree_lines` shows, as data, in the same order."""
    ids = display_ids(tree)

    def node(record: Record) -> dict[str, Any]:
        return {
            "record": ids[record.dir],
            "type": record.type,
            "slug": record.slug,
            "path": record.dir,
            "status": levels.status_of(record),
            "open": levels.is_open(record),
            "snoozed_until": iso_stamp(snoozed_at(tree, record, now)),
            "children": [node(child) for child in _children(tree, record)],
        }

    context, work, stock, notes, plugins = _ladder(tree)
    return {
        "context": [{"kind": c.kind, "slug": c.slug, "path": c.rel} for c in context],
        "records": [node(r) for r in work],
        "inventory": {
            "records": [node(r) for r in stock],
            "notes": [{"slug": n.slug, "path": n.rel} for n in notes],
            "probes": tree.probes.rel if tree.probes is not None else None,
            "plugins": [{"name": Path(p.rel).stem, "path": p.rel} for p in plugins],
        },
        "skipped": [
            {"path": p.path, "line": p.line, "message": p.message} for p in tree.untrackable
        ],
        "symlinks": list(tree.symlinks),
    }


def snoozed_text(until: datetime) -> str:
    """``snoozed until Mon 2026-12-07 09:00``: how text output says it."""
    return f"snoozed until {until:%a %Y-%m-%d %H:%M}"
