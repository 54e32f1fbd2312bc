"""Which notes and context files another one replaces: the ``supersedes:`` field.

A note names the notes it replaces, a context file (persona, belief,
motivation) the context files it replaces, by slug (``supersedes: old-address``,
several separated by commas). Owns: reading that field over a walked tree,
the map of what is superseded and by what (:func:`superseded`), and the
problems ``check`` reports (:func:`problems`: a name that names nothing, a
cycle, two files replacing the same one).

Not owned: who may supersede — a reader passes ``counts(file)``, so a file the
pack holds back for its origin replaces nothing — nor how a superseded file
is shown (the pack leaves it out, recall ranks it after its successor).
Headers only: no body is read here.
"""

from __future__ import annotations

from rouse.core.timefmt import parse_stamp
from rouse.core.treefiles import File, Problem
from rouse.core.value import Value

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from datetime import datetime

    from rouse.core.tree import Tree

FIELD = "supersedes"


class Successor(Value):
    """The file that replaces a superseded one, and since when (its ``updated:``,
    else its mtime)."""

    __slots__ = _fields = ("rel", "slug", "on")

    def __init__(self, rel: str, slug: str, on: datetime):
        self.rel = rel
        self.slug = slug
        self.on = on


def names(file: File) -> list[str]:
    """The slugs a file's ``supersedes:`` names (none for a file without one)."""
    value = file.get(FIELD) or ""
    return [name.strip() for name in value.split(",") if name.strip()]


def written(updated: str | None, mtime: datetime) -> datetime:
    """An ``updated:`` value as a time when it reads as one, else ``mtime``."""
    text = (updated or "").strip()
    if text:
        try:
            return parse_stamp(text)
        except ValueError:
            pass
    return mtime


def keyword_set(value: str | None) -> frozenset[str]:
    """A ``keywords:`` line as a set of lowercased keywords."""
    return frozenset(k.strip().lower() for k in (value or "").split(",") if k.strip())


#: Two notes are on the same keywords when they share at least this share of all
#: the keywords the two name (and at least one).
OVERLAP = 0.5


def overlap(a: frozenset[str], b: frozenset[str]) -> bool:
    """Whether two keyword sets overlap strongly (see :data:`OVERLAP`)."""
    shared = len(a & b)
    return shared > 0 and shared >= OVERLAP * len(a | b)


def _groups(tree: Tree) -> list[dict[str, list[File]]]:
    """Notes by slug, and context files by slug: a name is looked up in its own group."""
    notes: dict[str, list[File]] = {}
    for note in tree.notes:
        notes.setdefault(note.slug, []).append(note)
    context: dict[str, list[File]] = {}
    for ctx in tree.context:
        context.setdefault(ctx.slug, []).append(ctx)
    return [notes, context]


def _edges(tree: Tree) -> list[tuple[File, File]]:
    """Every (successor, replaced) pair the tree's headers name."""
    edges: list[tuple[File, File]] = []
    for group in _groups(tree):
        for files in group.values():
            for file in files:
                for name in names(file):
                    edges += [(file, old) for old in group.get(name, []) if old is not file]
    return edges


def _in_cycles(edges: list[tuple[File, File]]) -> set[str]:
    """The paths of files on a cycle of ``supersedes`` (each replaces, at length, itself)."""
    after: dict[str, list[str]] = {}
    for new, old in edges:
        after.setdefault(new.rel, []).append(old.rel)
    cyclic: set[str] = set()
    for start in after:
        seen: set[str] = set()
        todo = list(after[start])
        while todo:
            rel = todo.pop()
            if rel == start:
                cyclic.add(start)
                break
            if rel not in seen:
                seen.add(rel)
                todo += after.get(rel, [])
    return cyclic


def superseded(tree: Tree, counts: Callable[[File], bool] | None = None) -> dict[str, Successor]:
    """Superseded file's path → the file that replaces it.

    Only a successor ``counts`` accepts replaces anything; files on a cycle
    replace nothing (``check`` reports the cycle); of two successors of one
    file, the more recently written one is named.
    """
    edges = _edges(tree)
    if not edges:
        return {}
    cyclic = _in_cycles(edges)
    found: dict[str, Successor] = {}
    for new, old in edges:
        if new.rel in cyclic or (counts is not None and not counts(new)):
            continue
        on = written(new.get("updated"), new.mtime)  # (when its content last changed)
        held = found.get(old.rel)
        if held is None or (on, new.rel) > (held.on, held.rel):
            found[old.rel] = Successor(new.rel, _slug(new), on)
    return found


def _slug(file: File) -> str:
    return str(getattr(file, "slug", "") or file.rel)


def problems(tree: Tree) -> list[Problem]:
    """What ``check`` says of ``supersedes:`` lines: a name that names nothing of the
    file's own group, a cycle, and two files that replace the same one."""
    found: list[Problem] = []
    for group, what in zip(_groups(tree), ("note", "context file"), strict=True):
        for files in group.values():
            for file in files:
                for name in names(file):
                    if not [old for old in group.get(name, []) if old is not file]:
                        said = f"supersedes {name!r}, but no {what} has that slug"
                        found.append(_problem(file, f"{said} — fix the name or remove it"))
    edges = _edges(tree)
    for rel in sorted(_in_cycles(edges)):
        file = next(new for new, _ in edges if new.rel == rel)
        said = "supersedes a file that in turn supersedes it: a cycle replaces nothing"
        found.append(_problem(file, f"{said} — remove one of the supersedes lines"))
    successors: dict[str, list[File]] = {}
    for new, old in edges:
        successors.setdefault(old.rel, []).append(new)
    for old_rel, news in sorted(successors.items()):
        if len(news) > 1:
            rels = sorted(new.rel for new in news)
            said = f"{old_rel} is superseded by {len(news)} files ({', '.join(rels)})"
            first = next(new for new in news if new.rel == rels[0])
            found.append(_problem(first, f"{said} — let the newer supersede the older instead"))
    return found


def _problem(file: File, message: str) -> Problem:
    return Problem(file.rel, message, file.header.line_of(FIELD))


def overlapping(tree: Tree) -> list[tuple[File, File]]:
    """Pairs of notes whose keywords overlap strongly and neither of which supersedes
    the other: a review hint (one may replace the other)."""
    related = {(new.rel, old.rel) for new, old in _edges(tree)}
    keywords = {note.rel: keyword_set(note.get("keywords")) for note in tree.notes}
    by_keyword: dict[str, list[File]] = {}
    for note in sorted(tree.notes, key=lambda n: n.rel):
        for word in keywords[note.rel]:
            by_keyword.setdefault(word, []).append(note)
    pairs: dict[tuple[str, str], tuple[File, File]] = {}
    for notes in by_keyword.values():
        for i, first in enumerate(notes):
            for second in notes[i + 1 :]:
                key = (first.rel, second.rel)
                if key in pairs or key in related or key[::-1] in related:
                    continue
                if overlap(keywords[first.rel], keywords[second.rel]):
                    pairs[key] = (first, second)
    return [pairs[key] for key in sorted(pairs)]
