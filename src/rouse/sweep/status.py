"""``rouse status``: the tree's counts per level, the sweeper, and the ledger."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from rouse.core import clock, layout
from rouse.core.timefmt import format_stamp
from rouse.core.tree import Tree

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def _stamp(value: datetime | None) -> str | None:
    return format_stamp(value) if value is not None else None


def status(tree: Tree, now: datetime) -> dict[str, Any]:
    """Counts per level, what is due, and what was skipped."""
    levels: dict[str, dict[str, int]] = {
        kind: {"open": 0, "total": 0} for kind in layout.RECORD_TYPES
    }
    for record in tree.records.values():
        levels[record.type]["total"] += 1
        levels[record.type]["open"] += int(clock.is_open(record))
    return {
        "tree": str(tree.root),
        "now": format_stamp(now),
        "levels": levels,
        "due": len(clock.due(tree, now)),
        "context": len(tree.context),
        "notes": len(tree.notes),
        "untrackable": len(tree.untrackable),
        "symlinks": len(tree.symlinks),
        **sweeper_status(tree.root),
    }


def sweeper_status(root: Path) -> dict[str, Any]:
    """The last tick, the sweeper lock's holder, and the ledger's counts."""
    from rouse.core import sweepstate
    from rouse.sweep import ledger

    tick, interval = sweepstate.last_tick(root)
    holder = sweepstate.holder(root)
    if holder is not None:
        holder["interval"] = interval
    counts = ledger.counts(root)
    return {
        "last_tick": _stamp(tick),
        "sweeper": holder,
        "ledger": {
            "pending": counts["pending"],
            "held": counts["held"],
            "delivered": counts["delivered"],
            "given_up": counts["given_up"],
        },
    }


def status_lines(data: dict[str, Any]) -> list[str]:
    lines = [f"tree: {data['tree']}", f"now: {data['now']}"]
    for kind, counts in data["levels"].items():
        lines.append(f"{kind}: {counts['open']} open of {counts['total']}")
    lines.append(f"due now: {data['due']}")
    lines.append(f"context files: {data['context']}, notes: {data['notes']}")
    if data["untrackable"] or data["symlinks"]:
        lines.append(f"skipped: {data['untrackable']} untrackable, {data['symlinks']} symlinks")
    lines.append(f"last tick: {data['last_tick'] or 'never (no sweeper has run)'}")
    sweeper = data["sweeper"]
    if sweeper is not None:
        every = f", every {sweeper['interval']:g}s" if sweeper.get("interval") else ""
        state = "running" if sweeper["running"] else "not running (last"
        close = "" if sweeper["running"] else ")"
        lines.append(
            f"sweeper: {state} pid {sweeper['pid']} since {sweeper['since']}{close}{every}"
        )
    ledger = data["ledger"]
    lines.append(
        f"ledger: {ledger['pending']} pending, {ledger.get('held', 0)} held, "
        f"{ledger['delivered']} delivered, {ledger['given_up']} given up"
    )
    return lines
