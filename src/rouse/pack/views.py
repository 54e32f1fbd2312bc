"""Plain renderings of the tree and the clock for the read verbs.

Pure functions of a Tree, decisions and ``now``: the CLI prints them, the
MCP server returns them. (The pack has its own module.)
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from rouse.core import clock, layout
from rouse.core.clock import Decision, still_since
from rouse.core.timefmt import format_interval, format_stamp, human_age
from rouse.core.tree import Record, Tree, display_ids

# typing costs ~5 ms to import on the pack's start-up path; annotations are
# strings here (__future__), so it is only imported for the type checker
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def _stamp(value: datetime | None) -> str | None:
    return format_stamp(value) if value is not None else None


# -- due ----------------------------------------------------------------------


def due_item(decision: Decision, record_id: str) -> dict[str, Any]:
    record = decision.record
    return {
        "record": record_id,
        "type": record.type,
        "slug": record.slug,
        "path": record.dir,
        "reason": decision.reason,
        "due_at": _stamp(decision.due_at),
        "moved_at": _stamp(decision.moved_at),
        "nudge": decision.nudge,
    }


def due_lines(tree: Tree, found: list[Decision], now: datetime) -> list[str]:
    ids = display_ids(tree)
    return [
        "\t".join((ids[d.record.dir], d.reason or "", human_age(still_since(d), now), d.record.dir))
        for d in found
    ]


# -- tree ---------------------------------------------------------------------


def _status(record: Record) -> str:
    return f"[{clock.status_of(record)}]"


def tree_lines(tree: Tree) -> list[str]:
    """The ladder: context layers, then records by nesting, then inventory."""
    lines: list[str] = []
    order = {"persona": 0, "belief": 1, "motivation": 2}
    context = sorted(tree.context, key=lambda c: (order[c.kind], c.slug))
    if context:
        lines.append("context:")
        lines += [f"  {c.kind} {c.slug}" for c in context]

    def nest(record: Record, depth: int, out: list[str]) -> None:
        out.append(f"{'  ' * depth}{record.type} {record.slug} {_status(record)}")
        for child in record.children:
            nest(tree.records[child], depth + 1, out)

    roots = tree.roots()
    work = [r for r in roots if not layout.is_inside(r.dir, layout.INVENTORY)]
    stock = [r for r in roots if layout.is_inside(r.dir, layout.INVENTORY)]
    if work:
        lines.append("records:")
        for record in work:
            nest(record, 1, lines)
    inventory: list[str] = []
    for record in stock:
        nest(record, 1, inventory)
    inventory += [f"  note {n.slug}" for n in sorted(tree.notes, key=lambda n: n.rel)]
    if tree.probes is not None:
        inventory.append(f"  probes {tree.probes.rel}")
    inventory += [f"  plugin {Path(p.rel).stem}" for p in tree.plugins]
    if inventory:
        lines.append("inventory:")
        lines += inventory
    skipped = [f"  {p.render()}" for p in tree.untrackable]
    skipped += [f"  {link}: symlink (never followed)" for link in tree.symlinks]
    if skipped:
        lines.append("skipped:")
        lines += skipped
    return lines


# -- explain ------------------------------------------------------------------


def explain(tree: Tree, record: Record, now: datetime) -> dict[str, Any]:
    """Why a record is or is not due, as data."""
    decision = clock.evaluate(tree, record, now)
    fields = record.header.fields
    data: dict[str, Any] = {
        "record": display_ids(tree)[record.dir],
        "path": record.dir,
        "type": record.type,
        "status": clock.status_of(record),
        "open": clock.is_open(record),
        "now": format_stamp(now),
        "moved_at": _stamp(decision.moved_at),
        "moved_from": decision.moved_from,
        "swept": _stamp(decision.swept),
        "own_clock": _stamp(decision.own_clock),
        "stale_after": format_interval(decision.stale_after) if decision.stale_after else None,
        "stale_at": _stamp(decision.stale_at),
        "silenced_by": decision.silenced_by,
        "review_every": fields.get("review-every"),
        "review_at": _stamp(decision.review_at),
        "reason": decision.reason,
        "due": decision.is_due,
        "due_at": _stamp(decision.due_at),
        "nudge": decision.nudge,
        "problems": [p.render() for p in decision.problems],
        "notes": decision.notes,
    }
    if record.type == "reminder":
        data["reminder"] = {
            key: fields.get(key)
            for key in ("due", "nag", "backoff", "fires", "max-fires", "expires", "set", "fired")
        }
    return data


def explain_lines(data: dict[str, Any], now: datetime) -> list[str]:
    """The text form of ``explain``: one fact per line, the verdict first."""
    lines = [f"{data['record']} [{data['status']}] at {data['path']}"]
    if data["due"]:
        lines.append(f"due now: {data['reason']} (since {data['due_at']}), nudge {data['nudge']}")
    elif data["due_at"]:
        lines.append(f"not due: next comes due {data['due_at']}")
    elif not data["open"]:
        lines.append("not due: closed records are never swept")
    elif data["type"] == "backlog":
        lines.append("not due: backlog is never swept")
    else:
        lines.append("not due: nothing will wake it while open records sit under it")
    lines.append(f"moved_at: {data['moved_at']} (from {data['moved_from']})")
    for key in ("swept", "own_clock", "stale_at", "review_every", "review_at"):
        if data.get(key):
            lines.append(f"{key}: {data[key]}")
    if data["stale_after"]:
        lines.append(f"stale_after: {data['stale_after']} (never below the 15m floor)")
    if data["silenced_by"]:
        lines.append("kept quiet by open records under it:")
        lines += [f"  {path}" for path in data["silenced_by"]]
    for key, value in data.get("reminder", {}).items():
        if value:
            lines.append(f"{key}: {value}")
    lines += [f"note: {note}" for note in data["notes"]]
    lines += [f"problem: {problem}" for problem in data["problems"]]
    return lines


# -- status -------------------------------------------------------------------
