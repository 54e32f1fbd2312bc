"""What ``rouse status`` counts in a tree: records per level (open and in all), what is
due, the other files, and the tasks running or pending. All of it is the tree's to say,
so it is kept in the snapshot (:mod:`rouse.cache.snapshot`) beside ``rouse due``'s rows;
what the sweeper, the ledger and the worker say is read at every ``rouse status``
(:mod:`rouse.sweep.status`)."""

from __future__ import annotations

from rouse.core import layout
from rouse.core.levels import is_open, status_of
from rouse.core.tree import Tree
from rouse.state.files import Damaged, conform

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


_TEXT = (str, type(None))
#: what :func:`tree_counts` gives, for :func:`kept_counts` to check
SHAPE = {
    "levels": {str: {"open": int, "total": int}},
    "due": int,
    "context": int,
    "notes": int,
    "untrackable": int,
    "symlinks": int,
    "running": [{"record": str, "path": str, "started": _TEXT, "attempts": _TEXT, "worker": _TEXT}],
    "pending": int,
}


def kept_counts(value: Any) -> dict[str, Any] | None:
    """``value`` if it is what :func:`tree_counts` gives (as a snapshot keeps it), else None."""
    try:
        conform(value, SHAPE)
    except Damaged:
        return None
    return value if set(value["levels"]) == set(layout.RECORD_TYPES) else None


def tree_counts(tree: Tree, due: int) -> dict[str, Any]:
    """The counts, with ``due`` (how many records the clock has due)."""
    levels: dict[str, dict[str, int]] = {
        kind: {"open": 0, "total": 0} for kind in layout.RECORD_TYPES
    }
    for record in tree.records.values():
        level = levels[record.type]
        level["total"] += 1
        level["open"] += int(is_open(record))
    running, pending = tasks_of(tree)
    return {
        "levels": levels,
        "due": due,
        "context": len(tree.context),
        "notes": len(tree.notes),
        "untrackable": len(tree.untrackable),
        "symlinks": len(tree.symlinks),
        "running": running,
        "pending": pending,
    }


def tasks_of(tree: Tree) -> tuple[list[dict[str, Any]], int]:
    """Each running task as the tree says it (whether a live run holds it is not the
    tree's to say), by path, and how many tasks are pending (init's examples are never
    run: ``layout.is_example``)."""
    running: list[dict[str, Any]] = []
    pending = 0
    for record in tree.records.values():
        if record.type != "task":
            continue
        state = status_of(record)
        pending += state == "pending" and not layout.is_example(record.dir)
        if state == "running":
            item: dict[str, Any] = {"record": record.id, "path": record.dir}
            for key in ("started", "attempts", "worker"):
                item[key] = (record.get(key) or "").strip() or None
            running.append(item)
    running.sort(key=lambda item: str(item["path"]))
    return running, pending
