"""The exec sink for one tree's wakes, as a delivery worker runs it.

A worker has no tree of its own: :class:`TreeExec` runs the worker's command
where the tree's sweeper said the tree lives (``trees.root``), with
``ROUSE_TREE`` the tree's id.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from rouse.sweep.sinks import ExecSink
from rouse.sweep.wake import Wake


class TreeExec(ExecSink):
    """The exec sink for one tree's wakes: ``ROUSE_MEMORY`` is the tree's recorded root.

    A worker has no tree of its own: the root is where the tree's sweeper said
    it lives (``trees.root``), unset when no sweeper recorded one.
    ``ROUSE_TREE`` carries the tree's id.
    """

    def __init__(self, base: ExecSink, tree: str, root: str | None):
        super().__init__(base.argv, base.timeout, Path(root or "."), base.base_env)
        self.tree = tree
        self.known_root = root

    def environment(self, wake: Wake) -> dict[str, str]:
        env = super().environment(wake)
        if self.known_root is None:
            env.pop("ROUSE_MEMORY", None)
        env["ROUSE_TREE"] = self.tree
        return env


def tree_sinks(base: ExecSink, trees: set[str], roots: Mapping[str, str]) -> dict[str, ExecSink]:
    """``base`` for each of ``trees``, at its root in ``roots`` where one is recorded."""
    return {tree: TreeExec(base, tree, roots.get(tree)) for tree in trees}
