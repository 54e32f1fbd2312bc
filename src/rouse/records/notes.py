"""Writing notes: ``remember`` (a note written or rewritten), ``forget`` and ``review``.

``remember`` gives a rewritten note the new body whole and the given fields; its
old provenance stamps no longer describe its text, so they go, and ``updated:``
is set to now unless the caller gave one.

``forget`` replaces a note's or context file's text with a tombstone, on purpose.
The file stays, so whoever reads the tree later sees that something was removed
and why; its header keeps only a ``forgotten:`` stamp and its body only the
reason, word for word — not one word of the old text, its keywords or its log.
Not owned: dropping the old text from the recall index (the verb calls
:func:`rouse.pack.index.forget` right after), nor the tree's git history
(docs/recall.md says how to purge it there).

``review`` (the agent says a note is still true) stamps ``reviewed:`` (a machine
field), puts its note in the note's log, and takes the readings of the probes the
note names, as they are now, as the note's new baseline
(:mod:`rouse.probes.baselines`): a drift it showed is answered. Probes run under
the usual rules (only from a trusted ``probes.md``; a reading younger than its
ttl is reused); a probe that reads ``<unknown>`` keeps no baseline.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path, PurePosixPath

from rouse.cache import snapshot
from rouse.core import header, layout, statedir
from rouse.core.errors import UsageError
from rouse.core.store import Store
from rouse.core.timefmt import format_stamp
from rouse.core.tree import File, Note, walk
from rouse.probes import baselines, demand, readings
from rouse.probes import definitions as probes
from rouse.records import scaffold
from rouse.records.inputs import check_body, validate_fields
from rouse.state import acts
from rouse.trust import origins
from rouse.trust.stamp import SigningStore

#: A rewritten note's old stamps no longer describe its text: they go.
STAMP_FIELDS = ("origin", "origin-turn", "origin-sig")


@dataclass
class Remembered:
    rel: str
    created: bool  # a new note (else an existing one rewritten)
    todo: list[str] = field(default_factory=list)


def remember(
    root: Path,
    slug: str,
    body: str,
    now: datetime,
    fields: Mapping[str, str],
    origin: str | None = None,
) -> Remembered:
    """Write ``inventory/notes/<slug>.md``, or rewrite the note with that slug.

    Fields are validated as ``new --set`` validates them (machine fields
    refused). Two notes with the slug are ambiguous: refused, nothing written.
    With a stamp key, what it writes is signed with ``origin`` (who is speaking).
    """
    layout.validate_slug(slug)
    clean = validate_fields(fields, now)
    matches = [n for n in walk(root).notes if n.slug == slug]
    if len(matches) > 1:
        paths = ", ".join(sorted(n.rel for n in matches))
        raise UsageError(f"ambiguous note {slug!r}: {paths}; rename one")
    if not matches:
        created = scaffold.new(root, "note", slug, now, fields=clean, body=body, origin=origin)
        return Remembered(created.rel, True, created.todo)
    _rewrite(root, matches[0], clean, body, now, origin)
    return Remembered(matches[0].rel, False)


def _rewrite(
    root: Path, note: Note, clean: dict[str, str], body: str, now: datetime, origin: str | None
) -> None:
    updates: dict[str, str | None] = {key: None for key in STAMP_FIELDS}
    updates.update(clean)
    updates.setdefault("updated", format_stamp(now))
    text = body if body.endswith("\n") or not body else body + "\n"

    def change(data: bytes) -> bytes:
        data = header.set_fields(data, updates, note.rel)
        _, old_body = header.split(data, note.rel)
        return data[: len(data) - len(old_body)] + text.encode("utf-8")

    store = SigningStore(root)
    with store.lock():
        store.update(note.rel, change)
        if origin is not None:
            store.sign(note.rel, origin)


# -- forget -------------------------------------------------------------------


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
    # the read verbs' snapshot may quote the old keywords: it goes (the next read walks)
    rel = snapshot.path_of(root).relative_to(root / layout.STATE_DIR).as_posix()
    if statedir.path_problem(root, rel) is None:
        with contextlib.suppress(OSError):
            snapshot.path_of(root).unlink()
    return Forgotten(file.rel, kind, at)


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


# -- review -------------------------------------------------------------------


@dataclass
class Reviewed:
    rel: str
    reviewed: str  # the reviewed: stamp
    readings: dict[str, str] = field(default_factory=dict)  # the new baseline (and unknowns)

    @property
    def summary(self) -> str:
        shown = ", ".join(f"{k}={v}" for k, v in self.readings.items())
        taken = f"; baseline now {shown}" if shown else ""
        return f"reviewed {self.rel} at {self.reviewed}{taken}"


def review(
    root: Path,
    ref: str,
    now: datetime,
    note: str | None = None,
    *,
    key_path: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> Reviewed:
    """Stamp the note ``ref`` reviewed now and take its probes' readings as its baseline."""
    file, kind = find(root, ref)
    if kind != "note":
        raise UsageError(f"{file.rel} is {kind}, not a note: only notes are reviewed")
    if note is not None:
        check_body(note, "the note")
    stamp = format_stamp(now)
    line = f"- {stamp}: reviewed" + (f": {' '.join(note.split())}" if note and note.strip() else "")
    reader = origins.origin_reader(root, key_path)
    store = Store(root)
    with store.lock():
        store.append_log(file.rel, {"reviewed": stamp}, line)
        acts.note(root, file.rel, now, reader.cache_secret)  # answers a drift wake
    head = header.read_header(root / file.rel)
    measured = _readings(root, head.get("probes") or "", reader, env or {})
    updated = (head.get("updated") or "").strip()
    baselines.take(root, reader.cache_secret, file.rel, updated, measured)
    return Reviewed(file.rel, stamp, measured)


def _readings(
    root: Path, named: str, reader: origins.OriginReader, env: Mapping[str, str]
) -> dict[str, str]:
    names = [n.strip() for n in named.split(",") if n.strip()]
    if not names:
        return {}
    tree = walk(root)
    allowed = readings.probes_allowed(tree, reader, env)[0]
    known = {p.name: p for p in probes.load_probes(tree)[0]} if allowed else {}
    return {
        name: demand.run_demand(root, known[name], reader.key_path)
        if name in known
        else readings.UNKNOWN
        for name in names
    }
