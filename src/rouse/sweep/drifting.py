"""Notes that drifted: the sweeper's wake when a probe a note cites reads something new.

Each tick looks at the notes that name ``probes:`` (none: nothing more is read
or run). It reads their probes through the demand cache, so a probe runs at
most once per its ``ttl`` and a probe with no ``ttl`` is never run by the
sweeper; probes run only when the tree's ``probes.md`` may run at all
(:mod:`rouse.probes.readings`). The readings go through the note's baseline
(:mod:`rouse.probes.baselines`: the first readings become it), and a note whose
reading differs now gets one wake, reason ``drifted``.

"Once per change": the wake's id is derived from the tree, the note and each
drifted probe's readings then and now, so the ledger keeps it once and a
later tick finding the same drift makes no second wake. No stamp is written
in the note: the ledger's id is the memory of having woken for this change.

Owns: finding the drifted notes and building their wakes. Not owned: the
baselines, running probes, sending (:mod:`rouse.sweep.carrying`).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from pathlib import Path

from rouse.core.timefmt import format_stamp
from rouse.core.tree import Tree
from rouse.core.treefiles import Note
from rouse.probes import baselines, demand
from rouse.probes.definitions import load_probes
from rouse.probes.readings import UNKNOWN, probes_allowed
from rouse.state.nudges import DRIFTED
from rouse.sweep.wake import NOTES, Wake, read_body
from rouse.trust import fence
from rouse.trust.origins import OriginReader

#: ``(probe, reading then, reading now)`` of one drifted probe.
Drift = list[tuple[str, str, str]]


def cited(tree: Tree) -> list[Note]:
    """The notes that name probes (the walk has their headers: nothing is read)."""
    return [note for note in tree.notes if (note.get("probes") or "").strip()]


def drifted(tree: Tree, reader: OriginReader, env: Mapping[str, str]) -> list[tuple[Note, Drift]]:
    """The notes whose probes read differently now than when they were written."""
    notes = cited(tree)
    if not notes or not probes_allowed(tree, reader, env)[0]:
        return []
    known = {p.name: p for p in load_probes(tree)[0] if p.ttl is not None}
    measured: dict[str, str] = {}
    seen = []
    for note in notes:
        readings = {}
        for name in _names(note):
            if name not in measured:
                probe = known.get(name)
                measured[name] = (
                    demand.run_demand(tree.root, probe, reader.key_path) if probe else UNKNOWN
                )
            readings[name] = measured[name]
        seen.append((note.rel, (note.get("updated") or "").strip(), readings))
    found = baselines.observe(tree.root, reader.cache_secret, seen)
    return [(note, found[note.rel]) for note in notes if note.rel in found]


def _names(note: Note) -> list[str]:
    return [n.strip() for n in (note.get("probes") or "").split(",") if n.strip()]


def wake_id(tree_id: str, rel: str, found: Drift) -> str:
    """The drift wake's id: the tree, the note and each drifted probe's readings."""
    import hashlib

    what = "\0".join((tree_id, rel, *(f"{p}\0{then}\0{now}" for p, then, now in sorted(found))))
    return f"drift-{hashlib.sha256(what.encode()).hexdigest()[:24]}"


def build(root: Path, tree_id: str, note: Note, found: Drift, origin: str, now: datetime) -> Wake:
    """The wake for ``note`` drifted as ``found``: what changed, then the note's text,
    quoted by its origin (:mod:`rouse.trust.fence`)."""
    lines = [
        f"note/{note.slug} — drifted: {baselines.said(found)}",
        f"at: {note.rel}",
        "The world this note was written against has changed: is it still true? If it "
        f"is, `rouse review {note.slug}`; if not, rewrite it.",
        f"origin: {origin}",
    ]
    body = read_body(root, note.rel).strip("\n").rstrip()
    if body and fence.quoted(origin):
        lines += ["", NOTES["unknown" if origin == "unknown" else "untrusted"]]
        lines += fence.fenced(body)
    elif body:
        lines += ["", body]
    at = now.strftime("%Y-%m-%d %H:%M:%S")
    return Wake(
        id=wake_id(tree_id, note.rel, found),
        record=f"note/{note.slug}",
        type="note",
        slug=note.slug,
        path=note.rel,
        file=note.rel,
        reason=DRIFTED,
        nudge=1,
        last_moved=format_stamp(note.mtime),
        at=at,
        text="\n".join(lines) + "\n",
    )
