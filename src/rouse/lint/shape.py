"""Shape rules: what sits where in the tree, and what each kind of file must carry.

Untrackable files and symlinks, records and their fields, context layers and
their budget, notes and the probes they name, plugins, duplicate slugs.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

from rouse.core import clock, layout, statedir
from rouse.core.errors import HeaderError
from rouse.core.header import read_capped, split
from rouse.core.tree import Context, File, Note, Record, Tree
from rouse.lint.fields import (
    BACKLOG_CLOCK_FIELDS,
    CLOCK_FIELDS,
    article,
    error_finding,
    floor_findings,
    misplaced,
    stamp_findings,
    state_findings,
    unknown_key_findings,
    value_findings,
)
from rouse.state import nudges, shapes
from rouse.trust.origins import Finding

CONTEXT_BUDGET = 8_000  # characters, per file and for the layers together
MAX_CHECK_BYTES = 8 * 1024 * 1024


_PROBE_SPLIT_RE = re.compile(r"[,\s]+")


def _untrackable_fix(message: str) -> str:
    if message.startswith("its name "):
        return "rename it (rouse skips it, and everything under it, until then)"
    if "UTF-8" in message or "binary" in message:
        return "rouse skips it until it is a UTF-8 text file"
    if "unterminated" in message:
        return "close the header with a line '---' (rouse skips the file until then)"
    if "regular file" in message:
        return "replace it with a plain file or move it out of the tree"
    return "fix it or move it out of the tree; rouse skips it until then"


def shape_findings(tree: Tree) -> Iterator[Finding]:
    for problem in tree.untrackable:
        yield error_finding(problem, _untrackable_fix(problem.message))
    for problem in tree.conflicts:
        yield error_finding(problem)
    for problem in tree.strays:
        yield Finding("warn", problem.path, problem.message, problem.line)
    for link in tree.symlinks:
        yield Finding(
            "warn",
            link,
            "symlink in the tree: rouse never follows it — replace it with the file or "
            "directory itself, or move it out",
        )


def machine_state_findings(tree: Tree) -> Iterator[Finding]:
    """``.rouse/`` itself: a link at it or in it makes the sweeper refuse to run."""
    for problem in statedir.problems(tree.root):
        where, _, what = problem.partition(" ")
        yield Finding("error", where, what)
    for where, why in shapes.problems(tree.root):
        yield Finding(
            "warn",
            layout.shown(where),
            f"damaged state ({why}): rouse does not trust it (a cache is rebuilt, other "
            "state reads as missing) — delete it if this persists",
        )


def nudge_findings(tree: Tree) -> Iterator[Finding]:
    """Nudge files the ledger does not vouch for: the pack ignores them."""
    for nudge in nudges.vouched(tree.root, nudges.read_nudges(tree.root))[1]:
        yield Finding(
            "warn",
            layout.shown(nudges.rel_of(nudge)),
            "not in the ledger: rouse did not write this nudge file (or its ledger was "
            "lost), so the pack does not show it — delete it",
        )


def read_bytes(tree: Tree, file: File) -> bytes | Finding:
    try:
        return read_capped(Path(tree.root) / file.rel, MAX_CHECK_BYTES + 1)
    except OSError as exc:
        return Finding(
            "error", file.rel, f"cannot read: {exc.strerror} — check the file's permissions"
        )


def encoding_findings(tree: Tree, file: File) -> Iterator[Finding]:
    """The header was read as UTF-8; the body must be too."""
    if file is tree.probes:
        return  # load_probes reads and reports it whole
    if file.size > MAX_CHECK_BYTES:
        yield Finding(
            "warn",
            file.rel,
            f"too large to check ({file.size:,} bytes, over 8 MiB) — split it or move "
            "attachments beside it",
        )
        return
    data = read_bytes(tree, file)
    if isinstance(data, Finding):
        yield data
        return
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        yield Finding("error", file.rel, "not valid UTF-8 — re-save the file as UTF-8", line)


def record_findings(tree: Tree, record: Record, now: datetime) -> Iterator[Finding]:
    header = record.header
    if not header.fenced:
        yield Finding(
            "warn",
            record.rel,
            "no header: the file does not start with a '---' line, so every field is "
            "missing — add a header fenced by '---' lines",
            1,
        )
    skip: set[str] = set()
    if record.type == "backlog":
        for key in BACKLOG_CLOCK_FIELDS:
            if key in header.fields:
                skip.add(key)
                yield Finding(
                    "warn",
                    record.rel,
                    f"backlog item with clock field '{key}': backlog is never swept — remove "
                    "it, or promote the item (rouse promote) to give it a clock",
                    header.line_of(key),
                )
        if record.children:
            nested = ", ".join(record.children)
            yield Finding(
                "warn",
                record.rel,
                f"records nested under a backlog item ({nested}) — move them out, or promote "
                "the item (rouse promote) first",
            )
    yield from _placed(record, record.type, skip)

    decision = clock.evaluate(tree, record, now)
    reported: set[str] = set()
    for problem in decision.problems:
        reported.add(problem.key)
        if problem.key not in skip:
            yield Finding(
                "warn" if problem.level == "warn" else "error",
                record.rel,
                f"{problem.message} — fix the value (until then the clock falls back)",
                problem.line,
            )
    yield from value_findings(record, skip, reported)
    yield from floor_findings(record, skip)
    yield from state_findings(record)
    yield from stamp_findings(record)


def _placed(file: File, kind: str, skip: set[str]) -> Iterator[Finding]:
    """Fields nothing reads on a file of this kind (a key in ``skip`` is reported already;
    each one reported here joins it), then keys nothing reads on any file."""
    for key, finding in misplaced(file, kind, file.header.fields):
        if key not in skip:
            skip.add(key)
            yield finding
    yield from unknown_key_findings(file)


def duplicate_slug_findings(tree: Tree) -> Iterator[Finding]:
    by_slug: dict[str, list[Record]] = {}
    for record in tree.records.values():
        by_slug.setdefault(record.slug, []).append(record)
    for slug, records in by_slug.items():
        if len(records) < 2:
            continue
        paths = sorted(r.dir for r in records)
        for record in records:
            others = ", ".join(p for p in paths if p != record.dir)
            yield Finding(
                "warn",
                record.rel,
                f"duplicate slug {slug!r}, also at {others} — rename one directory "
                "(commands given this slug will say it is ambiguous)",
            )


def context_findings(tree: Tree) -> Iterator[Finding]:
    total = 0
    for ctx in tree.context:
        yield from _context_file(ctx)
        total += ctx.size
    if total > CONTEXT_BUDGET and len(tree.context) > 1:
        yield Finding(
            "warn",
            "entrypoint/beliefs",
            f"context layers total {total:,} bytes, over the {CONTEXT_BUDGET:,}-character budget "
            "(the pack never trims them) — shorten or merge beliefs and motivations",
        )


def _unclocked(file: File, kind: str, why: str, kept: tuple[str, ...] = ()) -> Iterator[Finding]:
    """Clock fields on a file with no clock (but those ``kept``), then the fields nothing
    reads on it and values that do not read."""
    skip: set[str] = set()
    for key in file.header.fields:
        if key in CLOCK_FIELDS and key not in kept:
            skip.add(key)
            message = f"'{key}' on {article(kind)}: {why}"
            yield Finding("warn", file.rel, message, file.header.line_of(key))
    yield from _placed(file, kind, skip)
    yield from value_findings(file, skip, set())


def _context_file(ctx: Context) -> Iterator[Finding]:
    header = ctx.header
    yield from _unclocked(ctx, ctx.kind, "context has no clock and no status — remove it")
    if "keywords" in header.fields and ctx.kind in ("belief", "persona"):
        yield Finding(
            "warn",
            ctx.rel,
            f"'keywords' on {article(ctx.kind)}: nothing reads it ({ctx.kind}s are always injected "
            "whole) — remove it",
            header.line_of("keywords"),
        )
    if ctx.size > CONTEXT_BUDGET:
        yield Finding(
            "warn",
            ctx.rel,
            f"{ctx.size:,} bytes, over the {CONTEXT_BUDGET:,}-character budget for context — "
            "keep one ground truth per file: split it or cut it down",
        )


def note_findings(tree: Tree, probe_names: set[str]) -> Iterator[Finding]:
    for note in tree.notes:
        yield from _note(note)
        for name in _PROBE_SPLIT_RE.split(note.get("probes") or ""):
            if name and name not in probe_names:
                yield Finding(
                    "warn",
                    note.rel,
                    f"names probe {name!r}, which is not in inventory/probes.md — add the "
                    "probe or fix the name",
                    note.header.line_of("probes"),
                )


def _note(note: Note) -> Iterator[Finding]:
    header = note.header
    if not header.fenced:
        yield Finding(
            "warn",
            note.rel,
            "note with no header — start it with a '---' fenced header holding 'keywords:'",
            1,
        )
    elif not (note.get("keywords") or "").strip():
        yield Finding(
            "warn",
            note.rel,
            "note with no keywords — add 'keywords:' so the index and recall can find it",
            header.line_of("keywords") or 1,
        )
    why = "notes have no clock — remove it (keep 'updated:' for when its content last changed)"
    yield from _unclocked(note, "note", why, ("opened", "reviewed"))  # (rouse review)


def plugin_findings(tree: Tree) -> Iterator[Finding]:
    for plugin in tree.plugins:
        if plugin.header.fields or plugin.size > MAX_CHECK_BYTES:
            continue
        data = read_bytes(tree, plugin)
        if isinstance(data, Finding):
            continue  # _encoding reported it
        try:
            body = split(data, plugin.rel)[1]
        except HeaderError:
            continue
        if not body.strip():
            yield Finding(
                "warn",
                plugin.rel,
                "plugin file with empty settings — write its settings into it, or delete it "
                "to turn the plugin off",
            )
