"""``rouse forget``: a note's or context file's text replaced by a tombstone, on purpose.

The file stays, so whoever reads the tree later sees that something was
removed and why; its header keeps only a ``forgotten:`` stamp and its body
only the reason, word for word — not one word of the old text, its keywords
or its log. Owns: finding the file a reference names (notes and context
files only) and writing the tombstone through the store.

Not owned: dropping the old text from the recall index (the verb calls
:func:`rouse.pack.index.forget` right after), nor the tree's git history
(docs/recall.md says how to purge it there).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path, PurePosixPath

from rouse.cache import snapshot
from rouse.core import header, layout, statedir
from rouse.core.errors import UsageError
from rouse.core.store import Store
from rouse.core.timefmt import format_stamp
from rouse.core.tree import File, walk
from rouse.records.inputs import check_body

FIELD = "forgotten"
#: The tombstone's first words: what pack and recall show instead of the old text.
SAID = "Forgotten on purpose"


@dataclass
class Forgotten:
    rel: str
    kind: str  # note, persona, belief or motivation
    at: str  # the forgotten: stamp

    @property
    def summary(self) -> str:
        """What ``forget`` says it did (the CLI and the MCP tool)."""
        return (
            f"forgot {self.rel}: its text is gone from the file and the recall index, the "
            "reason stays; the tree's git history may still hold it (see docs/recall.md)"
        )


def forget(root: Path, ref: str, why: str, now: datetime) -> Forgotten:
    """Replace the note or context file ``ref`` names with a tombstone saying ``why``.

    ``ref``: a slug, or the tree-relative path (with or without ``.md``). Refused,
    nothing written: a blank reason, a reference naming no note or context file
    (a record is closed, not forgotten) or more than one.
    """
    if not why.strip():
        raise UsageError("say why with --why TEXT: the reason is what stays in the file")
    check_body(why, "the reason")
    file, kind = find(root, ref)
    at = format_stamp(now)
    text = header.format_header({FIELD: at}) + f"{SAID} on {at}: {why.strip()}\n"
    store = Store(root)
    with store.lock():
        store.update(file.rel, lambda _old: text.encode("utf-8"))
    _drop_snapshot(root)
    return Forgotten(file.rel, kind, at)


def _drop_snapshot(root: Path) -> None:
    """The read verbs' snapshot may quote the old keywords: it goes (the next read walks)."""
    rel = snapshot.path_of(root).relative_to(root / layout.STATE_DIR).as_posix()
    if statedir.path_problem(root, rel) is None:
        with contextlib.suppress(OSError):
            snapshot.path_of(root).unlink()


def find(root: Path, ref: str) -> tuple[File, str]:
    """The note or context file ``ref`` names (a slug, or a path with or without
    ``.md``), and its kind; a UsageError for none or several."""
    tree = walk(root)
    files: list[tuple[File, str]] = [(note, "note") for note in tree.notes]
    files += [(ctx, ctx.kind) for ctx in tree.context]
    wanted = ref.strip().rstrip("/")
    if "/" in wanted or wanted.endswith(".md"):
        rel = PurePosixPath(wanted).as_posix()
        found = [(f, k) for f, k in files if f.rel in (rel, f"{rel}.md")]
    else:
        found = [(f, k) for f, k in files if getattr(f, "slug", None) == wanted]
    if not found:
        raise UsageError(
            f"no note or context file {ref!r}: give a note's slug or a tree-relative path "
            "(a record is ended with `rouse close`, not forgotten)"
        )
    if len(found) > 1:
        paths = ", ".join(sorted(f.rel for f, _ in found))
        raise UsageError(f"ambiguous {ref!r}: {paths}; give the path")
    return found[0]
