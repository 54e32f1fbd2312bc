"""What a full walk found for the read verbs, as the snapshot (:mod:`rouse.cache.snapshot`)
keeps it: decisions, never text — the pack's findings (``pack``, or ``pack QUERY``: see
:mod:`rouse.pack.build`), ``rouse due``'s rows (``due``: :func:`rouse.pack.views.due_rows`)
and ``rouse status``'s counts (``status``) — so that whichever verb walks first, the
others find theirs while nothing changes, and render them as they would from a walk."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from rouse.cache import snapshot
from rouse.cache.counts import kept_counts, tree_counts
from rouse.cache.plans import survey
from rouse.cache.walk import HeaderCache
from rouse.core.tree import Tree
from rouse.pack.views import due_rows

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from rouse.cache.plans import Survey
    from rouse.pack.views import Row


def found(
    root: Path, secret: bytes | None, now: datetime, part: str
) -> tuple[Any, Tree | None, Survey | None]:
    """``part`` (``due`` or ``status``) at ``now``: as the snapshot kept it while it holds,
    else from a walk (kept for the next verb), with the tree and survey it walked."""
    kept = snapshot.load(root, secret, secret is not None, now, part)
    value = (kept_rows if part == "due" else kept_counts)(kept)
    if value is not None:
        return value, None, None
    walked = HeaderCache(root, secret)
    tree = walked.walk(now)
    surveyed = survey(tree, now)
    parts = {"due": due_rows(tree, surveyed), "status": tree_counts(tree, surveyed.count)}
    keep(walked, tree, surveyed, secret is not None, parts)
    return parts[part], tree, surveyed


#: the types of a due row's values, exactly: four texts, then three numbers
ROW_TYPES = (str, str, str, str, int, int, int)


def kept_rows(value: Any) -> list[Row] | None:
    """``value`` if it is due rows as :func:`rouse.pack.views.due_rows` makes them, else None."""
    try:  # (runs over every due row at each `rouse due`: the types compared at C speed)
        if type(value) is list and all(tuple(map(type, row)) == ROW_TYPES for row in value):
            return value
    except TypeError:  # (a row that is not a list)
        pass
    return None


def keep(
    walked: HeaderCache, tree: Tree, surveyed: Survey, keyed: bool, parts: dict[str, Any]
) -> None:
    """Save ``parts`` in the snapshot of this walk (of ``tree``) and survey (of it), with
    the due rows and the status counts beside (unless ``parts`` has them), when the walk
    can vouch for it."""
    fits = snapshot.keepable(walked, tree, surveyed)
    if fits is None:
        return
    every = dict(parts)
    if "due" not in every:
        every["due"] = due_rows(tree, surveyed)
    if "status" not in every:
        every["status"] = tree_counts(tree, surveyed.count)
    snapshot.save(walked, keyed, surveyed.now, fits, every)
