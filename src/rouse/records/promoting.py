"""``promote``: a backlog item moved into the intentions as an open intention.

All or nothing: the directory is renamed (``git mv`` when tracked), its
``backlog.md`` becomes ``intention.md`` with its new fields, and any step that
fails undoes the ones before it.
"""

from __future__ import annotations

import subprocess
from datetime import datetime
from pathlib import Path

from rouse.core import layout, levels
from rouse.core.errors import UsageError
from rouse.core.timefmt import format_stamp
from rouse.core.tree import walk
from rouse.records.inputs import check_value
from rouse.records.lifecycle import Changed, minute
from rouse.records.repository import tracked
from rouse.records.scaffold import check_parent
from rouse.state import acts
from rouse.trust.speaker import lower
from rouse.trust.stamp import SigningStore


def promote(
    root: Path,
    slug: str,
    closes_when: str,
    now: datetime,
    under: str | None = None,
    origin: str | None = None,
) -> Changed:
    """Move a backlog item into the intentions as an open intention (all or nothing).

    With a stamp key, the intention it makes is signed with the less trusted of who
    is speaking (``origin``, who wrote its ``closes-when``) and the origin the backlog
    item verified with; an item whose origin did not verify stays unsigned.
    """
    layout.validate_slug(slug)
    closes_when = check_value("closes-when", closes_when)
    if not closes_when:
        raise UsageError("--closes-when needs one line saying how you will know it is done")
    tree = walk(root)
    source = f"{layout.BACKLOG}/{slug}"
    record = tree.records.get(source)
    if record is None or record.type != "backlog":
        raise UsageError(f"no backlog item at {source} (see `rouse tree`)")
    if levels.status_of(record) != "open":
        raise UsageError(f"{record.id} is {levels.status_of(record)}: only open backlog promotes")
    home = layout.INTENTIONS
    if under is not None:
        home = check_parent("intention", tree.resolve(under))
    target = f"{home}/{slug}"
    store = SigningStore(root)
    was = store.verified_origin(record.rel)
    signed_as = lower(origin, was) if origin is not None and was is not None else None
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
            if signed_as is not None:
                store.sign(f"{target}/intention.md", signed_as)
        except BaseException:
            mover.undo()
            raise
        acts.note(root, target, now, store.secret)
    return Changed(
        f"{target}/intention.md",
        f"promoted {source} to {target}",
        record=f"intention/{slug}",
        path=target,
        facts={"was": source, "promoted_at": minute(now), "closes_when": closes_when},
    )


class _Mover:
    """Renames inside the tree (``git mv`` when tracked) that can be undone."""

    def __init__(self, root: Path, store: SigningStore):
        self.root = root
        self.store = store
        self.done: list[tuple[str, str]] = []

    def move(self, src: str, dst: str) -> None:
        self.store.path(dst)  # refuses escapes and symlinks
        if tracked(self.root, src):
            self.store.path(dst).parent.mkdir(parents=True, exist_ok=True)
            subprocess.run(
                ["git", "mv", "--", src, dst], cwd=self.root, capture_output=True, check=True
            )
        else:
            self.store.rename(src, dst)
        self.done.append((src, dst))

    def undo(self) -> None:
        for src, dst in reversed(self.done):
            if tracked(self.root, dst):
                subprocess.run(["git", "mv", "--", dst, src], cwd=self.root, check=False)
            else:
                self.store.rename(dst, src)
        self.done.clear()
