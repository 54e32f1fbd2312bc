"""What a full walk keeps for the read verbs in the snapshot (:mod:`rouse.cache.snapshot`):
the pack's findings (``pack``, or ``pack QUERY``), ``rouse due``'s rows (``due``) and
``rouse status``'s counts (``status``), so that whichever verb walks first, the others
find theirs while nothing changes."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from rouse.cache import snapshot
from rouse.cache.counts import tree_counts
from rouse.cache.plans import Survey, survey
from rouse.cache.walk import HeaderCache
from rouse.core.tree import Tree
from rouse.pack.views import due_rows

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def walk_and_keep(root: Path, secret: bytes | None, now: datetime) -> tuple[Tree, Survey]:
    """``rouse due``'s and ``rouse status``'s walk when the snapshot did not hold: through
    the walk cache (plans made for ``now``), surveyed at ``now``, kept for the next one."""
    walked = HeaderCache(root, secret)
    tree = walked.walk(now)
    surveyed = survey(tree, now)
    keep(root, walked, tree, surveyed, now, secret, secret is not None)
    return tree, surveyed


def keep(
    root: Path,
    walked: Any,
    tree: Tree,
    surveyed: Survey,
    now: datetime,
    secret: bytes | None,
    keyed: bool,
    parts: dict[str, Any] | None = None,
) -> None:
    """Save the snapshot of this walk and survey (with ``parts`` beside the due rows and
    the status counts), when the walk can vouch for it."""
    fits = snapshot.keepable(walked, tree, surveyed, now)
    if fits is None:
        return
    shape, until = fits
    every = {
        **(parts or {}),
        "due": due_rows(tree, surveyed),
        "status": tree_counts(tree, surveyed.count),
    }
    snapshot.save(root, secret, keyed, shape, now, until, snapshot.token_of(walked), every)
