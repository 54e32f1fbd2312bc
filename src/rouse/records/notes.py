"""``remember``: write a note, or rewrite the one with that slug.

A rewritten note gets the new body whole and the given fields; its old
provenance stamps no longer describe its text, so they go, and ``updated:``
is set to now unless the caller gave one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from rouse.core import header, layout
from rouse.core.errors import UsageError
from rouse.core.timefmt import format_stamp
from rouse.core.tree import Note, walk
from rouse.records import scaffold
from rouse.records.inputs import validate_fields
from rouse.trust.sealing import SigningStore

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
