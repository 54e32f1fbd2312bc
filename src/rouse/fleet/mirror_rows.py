"""A file as its row of ``mirror_files``: the columns, reading the file, the clock's plan.

:func:`read_row` reads what comes from the file itself (its header, its body
cut at :data:`BODY_CAP`, its origin as this machine's reader judges it, the
tsvector's parts); :func:`derived_values` what the walk and the clock decide.
:class:`~rouse.fleet.mirror.Mirror` writes them.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from rouse.core import header, layout
from rouse.core.body import split_log
from rouse.core.clock import clock_plan
from rouse.core.dueplan import aware as _aware
from rouse.core.dueplan import no_plan
from rouse.core.errors import HeaderError
from rouse.core.tree import Context, File, Note, Record, Tree
from rouse.pack.indexdoc import DESCRIBED_BY, indexed_files
from rouse.pack.search import WORD_RE, bigrams
from rouse.state.files import RACY_NS
from rouse.trust.origins import OriginReader

#: Body bytes a row keeps; a longer body is cut there, and ``body_note`` says so.
BODY_CAP = 1024 * 1024
#: Characters of body text the tsvector is made from (PostgreSQL caps a tsvector at 1 MB).
SEARCH_CHARS = 128 * 1024
#: Bytes read of a changed file: its header and the body a row keeps.
READ_CAP = BODY_CAP + header.MAX_HEADER_BYTES + 8
#: Rows per INSERT, and roughly the most JSON text one statement carries.
BATCH_ROWS = 1000
BATCH_CHARS = 8 * 1024 * 1024

#: Columns the walk and the clock decide (recomputed every sync, written when they change).
DERIVED_COLUMNS: tuple[tuple[str, str], ...] = (
    ("kind", "text"),
    ("record", "text"),
    ("record_id", "text"),
    ("slug", "text"),
    ("status", "text"),
    ("open", "boolean"),
    ("wake_at", "timestamptz"),
    ("wake_why", "text"),
    ("review_at", "timestamptz"),
    ("stale_at", "timestamptz"),
    ("silenced", "boolean"),
    ("expires_at", "timestamptz"),
    ("nagging", "boolean"),
    ("fires_out", "boolean"),
    ("nudge", "integer"),
    ("moved_at", "timestamptz"),
    ("clock_at", "timestamptz"),
    ("derived", "text"),
)
#: Columns read from the file itself (written only when it changed).
CONTENT_COLUMNS: tuple[tuple[str, str], ...] = (
    ("header", "jsonb"),
    ("body", "text"),
    ("log", "text"),
    ("body_bytes", "bigint"),
    ("body_note", "text"),
    ("size", "bigint"),
    ("mtime_ns", "bigint"),
    ("settled", "boolean"),
    ("origin", "text"),
    ("origin_written", "text"),
    ("verified", "text"),
    ("keywords", "text"),
)
#: The tsvector's three parts, weighted as local recall ranks them: keywords > path > body.
SEARCH_PARTS: tuple[tuple[str, str], ...] = (("s_keywords", "A"), ("s_path", "B"), ("s_body", "C"))


def mirrored_files(tree: Tree) -> dict[str, tuple[File, str]]:
    """Every file the mirror keeps: tree-relative path → (file, kind).

    What local recall searches (records by type, context by kind, notes),
    plus plugins and the probes file.
    """
    files = indexed_files(tree)
    for plugin in tree.plugins:
        files[plugin.rel] = (plugin, "plugin")
    if tree.probes is not None:
        files[tree.probes.rel] = (tree.probes, "probes")
    return files


def slug(file: File) -> str | None:
    if isinstance(file, Record | Context | Note):
        return file.slug
    if file.rel == layout.PROBES:
        return None
    return file.rel.rpartition("/")[2].removesuffix(".md")


def local_zone() -> str:
    """The local time zone's rules, as far as they turn the plan's naive times into instants."""
    return f"{time.timezone}/{time.altzone}/{'/'.join(time.tzname)}"


def fingerprint(values: dict[str, Any], zone: str) -> str:
    """A short digest of the derived columns (in their fixed order) to tell a change by;
    with the zone, as the rows hold the plan's instants with this machine's offsets."""
    text = "\x1f".join([zone, *(str(values[name]) for name in _FINGERPRINTED)])
    return hashlib.blake2b(text.encode("utf-8", "surrogateescape"), digest_size=10).hexdigest()


#: The derived columns a change of the plan is told by.
_FINGERPRINTED = tuple(name for name, _ in DERIVED_COLUMNS if name not in ("clock_at", "derived"))


def json_value(value: Any) -> Any:
    if isinstance(value, datetime):
        aware = _aware(value)
        return None if aware is None else aware.isoformat()
    return value


def valid_utf8(text: str) -> bool:
    """Whether ``text`` can go to PostgreSQL (a name read from disk may hold stray bytes)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def derived_values(tree: Tree, file: File, kind: str, ids: Any, now: datetime) -> dict[str, Any]:
    """The columns the walk and the clock decide for ``file``."""
    values: dict[str, Any] = {
        "kind": kind,
        "record": None,
        "record_id": None,
        "slug": slug(file),
        **no_plan(),
    }
    if isinstance(file, Record):
        values.update(clock_plan(tree, file, now), record=file.dir, record_id=ids[file.dir])
    return values


def read_row(root: Path, file: File, origins: OriginReader) -> dict[str, Any] | None:
    """The row's content from the file itself, or None when it cannot be read now."""
    try:
        fd = os.open(os.path.join(root, file.rel), header.READ_FLAGS)
        with os.fdopen(fd, "rb") as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode):
                return None
            data = handle.read(READ_CAP)
        head, raw = header.split(data, file.rel)
    except (OSError, HeaderError):
        return None
    whole = len(data) >= info.st_size
    body_bytes = len(raw) + (0 if whole else info.st_size - len(data))
    note = None
    if b"\x00" in raw:
        raw, note = b"", "binary body (it holds NUL bytes): not mirrored"
    elif len(raw) > BODY_CAP or not whole:
        raw = raw[:BODY_CAP]
        note = f"body cut to its first {BODY_CAP // 1024} KiB of {body_bytes:,} bytes"
    authored, log = split_log(raw)
    text = raw.decode("utf-8", "replace")
    described = [f"{key}: {head.get(key)}" for key in DESCRIBED_BY if head.get(key)]
    search_body = "\n\n".join([text.strip(), *described])[:SEARCH_CHARS]
    # text written without spaces (Chinese, Japanese) is searched as pairs of characters,
    # as the local index's ``cjk`` column holds it: the parser takes a whole run as one word
    pairs = " ".join(bigrams(f"{head.get('keywords') or ''}\n{search_body}"))[:SEARCH_CHARS]
    verdict = origins.verdict(file)
    mtime_ns = info.st_mtime_ns
    settled = time.time_ns() - mtime_ns >= RACY_NS and (info.st_size, mtime_ns) == (
        file.size,
        file.mtime_ns,
    )
    keywords = (head.get("keywords") or "").strip()
    return {
        "header": dict(head.fields),
        "body": authored.decode("utf-8", "replace"),
        "log": log.decode("utf-8", "replace"),
        "body_bytes": body_bytes,
        "body_note": note,
        "size": info.st_size,
        "mtime_ns": mtime_ns,
        "settled": settled,
        "origin": verdict.origin,
        "origin_written": verdict.written,
        "verified": verdict.state,
        "keywords": keywords,
        "s_keywords": keywords.replace(",", " "),
        "s_path": " ".join(WORD_RE.findall(file.rel.removesuffix(".md"))),
        "s_body": f"{search_body}\n\n{pairs}" if pairs else search_body,
    }


def dumps(rows: list[dict[str, Any]]) -> str:
    return json.dumps(
        [{key: json_value(value) for key, value in row.items()} for row in rows],
        ensure_ascii=False,
    )


def batches(rows: list[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    """Rows in groups small enough for one statement each."""
    batch: list[dict[str, Any]] = []
    size = 0
    for row in rows:
        weight = len(row.get("body", "")) + len(row.get("log", "")) + len(row.get("s_body", ""))
        if batch and (len(batch) >= BATCH_ROWS or size + weight > BATCH_CHARS):
            yield batch
            batch, size = [], 0
        batch.append(row)
        size += weight + 1000
    if batch:
        yield batch
