"""Nudge files the agent has acted on move to ``.rouse/nudges/done/``."""

from __future__ import annotations

import errno
import os
from datetime import datetime
from pathlib import Path

from rouse.core.tree import Tree
from rouse.state import acts, nudges
from rouse.state.files import through_link


class NudgeArchive:
    """The sweeper's view of ``.rouse/nudges/``, re-read only when a file appears or goes."""

    def __init__(self, root: Path, secret: bytes | None = None):
        self.root = root
        self.secret = secret  # the stamp key's: acts.json is MACed with it
        self._nudge_names: frozenset[str] = frozenset()
        self._nudges: list[nudges.Nudge] = []

    def archive(self, tree: Tree, now: datetime | None = None) -> list[str]:
        """Move nudge files whose record the agent acted on to ``.rouse/nudges/done/``.

        Acted on = ``nudges.acted_since`` (the pack's own test: the wake is
        answered). A record that is gone counts as acted on; one whose file
        cannot be read right now does not.
        """
        directory = nudges.nudge_dir(self.root)
        archived: list[str] = []
        try:
            names = frozenset(e.name for e in os.scandir(directory) if e.name.endswith(".md"))
        except FileNotFoundError:
            return archived
        if names != self._nudge_names:  # nudge files never change: re-read only new ones
            found = nudges.read_nudges(self.root)
            # the ledger knows each wake's reason (a given-up tell is not a reminder's wake)
            known = {n.name: n.reason for n in nudges.vouched(self.root, found)[0]}
            for nudge in found:
                nudge.reason = known.get(nudge.name, "")
            self._nudges = found
            self._nudge_names = names
        untrackable = {p.path for p in tree.untrackable}
        done = acts.load(self.root, self.secret, now) if self._nudges else {}
        kept: list[nudges.Nudge] = []
        moved: set[str] = set()
        for nudge in self._nudges:
            record = tree.records.get(nudge.record_dir)
            if nudge.reason == nudges.DRIFTED:  # a note's: it has no record
                acted = nudges.note_answered(tree, nudge.record_dir, nudge.at, done)
            elif record is None:
                acted = not any(p.startswith(nudge.record_dir + "/") for p in untrackable)
            else:
                acted = nudges.acted_since(record, nudge.at, done, nudge.reason)
            if acted and nudge.path is not None and nudge.path.exists():
                archive_nudge(nudge.path)
                moved.add(nudge.path.name)
                archived.append(nudge.path.name)
            else:
                kept.append(nudge)
        self._nudges = kept
        self._nudge_names = names - moved
        return archived


def archive_nudge(path: Path) -> Path:
    """Move a nudge file into ``done/`` beside it, never overwriting (``-2``, ``-3``…)."""
    done = path.parent / "done"
    if through_link(done / path.name):  # never move a nudge through a link out of the tree
        raise OSError(errno.ELOOP, f"{done} is (or sits under) a symlink: not archiving there")
    done.mkdir(exist_ok=True)
    number = 1
    while True:
        target = done / (path.name if number == 1 else f"{path.stem}-{number}.md")
        try:
            os.link(path, target)  # atomic, and fails if the name is taken
        except FileExistsError:
            number += 1
            continue
        os.unlink(path)
        return target
