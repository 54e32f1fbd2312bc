"""The recall session of a long-lived process (the MCP server): :class:`Session`."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from rouse.cache import snapshot
from rouse.cache.walk import HeaderCache
from rouse.core.tree import Tree
from rouse.pack import semantic
from rouse.pack.index import Index


class Session:
    """What a long-lived process (the MCP server) keeps between recalls of one tree: the
    last walk, taken again only while :func:`rouse.cache.snapshot.still` says the tree
    is as that walk found it, and the open index, brought up to date again when the
    tree was walked again, its file was replaced or written by another process, or the
    model changed (docs/recall.md, "Kept warm in the MCP server"). One recall at a time
    uses it (the MCP server runs each tool call in a worker thread of its own)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        #: the last walk: where, under which key, and the cache that made it
        self.walked: tuple[Path, bytes | None, HeaderCache, Tree] | None = None
        self.shape: snapshot.Shape | None = None  # that walk's, once asked for
        self.index: Index | None = None
        self.opened: tuple[int, int] | None = None  # the index file's (device, inode)
        self.version: tuple[int, int] | None = None  # the index's, after our last recall

    def open(
        self, root: Path, secret: bytes | None, model: semantic.Model | None
    ) -> tuple[Tree, Index]:
        """The tree and the index, both up to date."""
        tree = self._kept_tree(root, secret)
        fresh = tree is None
        if tree is None:
            walked = HeaderCache(root, secret)
            tree = walked.walk()
            self.walked, self.shape = (root, secret, walked, tree), None
        index = self.index
        if index is not None and (index.model is not model or _identity(index.path) != self.opened):
            self.close()
            index = None
        if index is None:
            index = self.index = Index(root, model=model)
            self.opened = None if index.stats.in_memory else _identity(index.path)
            fresh = True
        if fresh or index.version() != self.version:
            index.refresh(tree)
        return tree, index

    def _kept_tree(self, root: Path, secret: bytes | None) -> Tree | None:
        """The last walk's tree, if the tree is still as that walk found it."""
        if self.walked is None:
            return None
        at, key, walked, tree = self.walked
        if (at, key) != (root, secret) or walked.unsettled or tree.untrackable:
            return None
        if self.shape is None:
            self.shape = snapshot.shape_of(walked.dirs, walked.racy_listings)
        token = snapshot.token_of(walked)
        if self.shape is None or not snapshot.still(root, self.shape, token, secret):
            return None
        return tree

    def searched(self) -> None:
        """Note the index's version after this recall's own writes: another process's
        next write is then seen."""
        assert self.index is not None
        self.version = self.index.version()

    def close(self) -> None:
        if self.index is not None:
            self.index.close()
        self.index = self.version = None


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_dev, info.st_ino
