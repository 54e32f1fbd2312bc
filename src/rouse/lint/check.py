"""The linter (SPEC §9): a list of findings about a tree; nothing printed here.

Errors are things rouse cannot read or that would make the clock guess;
warnings are shapes and fields that do nothing, or that do something the
writer probably did not mean. Every finding names the file (and line) and
says what to do.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Literal

from rouse.core import clock
from rouse.core.errors import HeaderError
from rouse.core.header import split
from rouse.core.timefmt import FLOOR, parse_interval, parse_stamp
from rouse.core.tree import Context, File, Note, Problem, Record, Tree
from rouse.probes import readings
from rouse.probes.definitions import load_probes
from rouse.trust.origins import OriginReader, stamp_findings

Level = Literal["error", "warn"]

CONTEXT_BUDGET = 8_000  # characters, per file and for the layers together
MAX_CHECK_BYTES = 8 * 1024 * 1024
LONGEST_INTENTION_STALE = timedelta(days=7)

STAMP_FIELDS = frozenset(
    {
        *("opened", "last-moved", "swept", "reviewed", "due"),
        *("expires", "fired", "set", "updated", "promoted"),
    }
)
INTERVAL_FIELDS = frozenset({"stale-after", "review-every", "nag"})
COUNT_FIELDS = frozenset({"fires", "nudges", "max-fires"})
FLOORED_FIELDS = ("stale-after", "review-every", "nag")

#: Clock and status fields: nothing reads them on a context file or a note.
CLOCK_FIELDS = frozenset(
    {
        *("status", "opened", "last-moved", "stale-after", "swept", "nudges", "reviewed"),
        *("review-every", "due", "nag", "backoff", "max-fires", "expires", "fires", "set"),
        *("fired", "ended", "cancel"),
    }
)
#: Clock fields a backlog item must not carry (``opened`` is fine: it dates the idea).
BACKLOG_CLOCK_FIELDS = (
    "last-moved",
    "stale-after",
    "due",
    "nag",
    "review-every",
    "swept",
    "nudges",
)

#: Fields read only for some record types: field → (types, what to say).
ONLY_ON: dict[str, tuple[frozenset[str], str]] = {
    "closes-when": (frozenset({"intention"}), "only an intention's closes-when is read"),
    "success-when": (frozenset({"goal"}), "only a goal's success-when is read"),
    "outcome": (frozenset({"action"}), "only an action is judged by its outcome"),
    "cancel": (frozenset({"task"}), "only a task's worker reads cancel"),
    **{
        key: (frozenset({"reminder"}), f"only a reminder's {key} is read")
        for key in ("due", "nag", "backoff", "max-fires", "expires")
    },
    **{
        key: (
            frozenset(clock.STALE_LEVELS),
            f"{key} is read on intentions, goals, actions and tasks",
        )
        for key in ("stale-after", "review-every")
    },
}

_PROBE_SPLIT_RE = re.compile(r"[,\s]+")


@dataclass
class Finding:
    """One lint finding. ``message`` says what is wrong and what to do."""

    level: Level
    path: str
    message: str
    line: int | None = None

    def render(self) -> str:
        where = self.path if self.line is None else f"{self.path}:{self.line}"
        return f"{self.level}: {where}: {self.message}"

    def sort_key(self) -> tuple[int, str, int, str]:
        return (0 if self.level == "error" else 1, self.path, self.line or 0, self.message)


def check(
    tree: Tree,
    now: datetime,
    origins: OriginReader | None = None,
    probe_budget_ms: int | None = None,
) -> list[Finding]:
    """Lint ``tree``: every finding, errors first, then by path and line.

    With ``origins`` (a :func:`rouse.trust.origins.origin_reader`), stamps are checked too;
    with ``probe_budget_ms`` (only when probes may run), the pack-tier probes
    are run once under that budget and judged."""
    findings = list(_all_findings(tree, now))
    if probe_budget_ms is not None:
        findings += _probe_readings(tree, probe_budget_ms)
    stamps = stamp_findings(tree, origins) if origins is not None else []
    findings += [Finding(f.level, f.path, f.message, f.line) for f in stamps]
    unique = {(f.level, f.path, f.line, f.message): f for f in findings}
    return sorted(unique.values(), key=Finding.sort_key)


def _all_findings(tree: Tree, now: datetime) -> Iterator[Finding]:
    yield from _shape(tree)
    files = _files(tree)
    for file in files:
        yield from _header(file)
        yield from _encoding(tree, file)
    yield from _records(tree, now)
    yield from _context(tree)
    probes, problems = load_probes(tree)
    for problem in problems:
        yield _error(problem)
    yield from _notes(tree, {probe.name for probe in probes})
    yield from _plugins(tree)
    yield from _duplicate_slugs(tree)


def _files(tree: Tree) -> list[File]:
    files: list[File] = [*tree.records.values(), *tree.context, *tree.notes, *tree.plugins]
    if tree.probes is not None:
        files.append(tree.probes)
    return files


def _a(noun: str) -> str:
    return f"an {noun}" if noun[:1] in "aeiou" else f"a {noun}"


def _error(problem: Problem, fix: str = "") -> Finding:
    message = f"{problem.message} — {fix}" if fix else problem.message
    return Finding("error", problem.path, message, problem.line)


# -- the tree's shape ---------------------------------------------------------


def _untrackable_fix(message: str) -> str:
    if "UTF-8" in message or "binary" in message:
        return "rouse skips it until it is a UTF-8 text file"
    if "unterminated" in message:
        return "close the header with a line '---' (rouse skips the file until then)"
    if "regular file" in message:
        return "replace it with a plain file or move it out of the tree"
    return "fix it or move it out of the tree; rouse skips it until then"


def _shape(tree: Tree) -> Iterator[Finding]:
    for problem in tree.untrackable:
        yield _error(problem, _untrackable_fix(problem.message))
    for problem in tree.conflicts:
        yield _error(problem)
    for problem in tree.strays:
        yield Finding("warn", problem.path, problem.message, problem.line)
    for link in tree.symlinks:
        yield Finding(
            "warn",
            link,
            "symlink in the tree: rouse never follows it — replace it with the file or "
            "directory itself, or move it out",
        )


# -- every file's header and bytes --------------------------------------------


def _header(file: File) -> Iterator[Finding]:
    header = file.header
    for line, text in header.bad_lines:
        yield Finding(
            "error",
            file.rel,
            f"unparseable header line {text.strip()!r} — write it as 'key: value' "
            "(keys: a letter, then letters, digits or '-') or start it with '#'",
            line,
        )
    for entry in header.duplicates:
        first = header.line_of(entry.key)
        yield Finding(
            "error",
            file.rel,
            f"duplicate key {entry.key!r} (first on line {first}, which is the one read) "
            "— keep one",
            entry.line,
        )
    for line in header.continued:
        yield Finding(
            "warn",
            file.rel,
            "indented line continues the previous value — join it onto that line",
            line,
        )


def _encoding(tree: Tree, file: File) -> Iterator[Finding]:
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
    data = _read(tree, file)
    if isinstance(data, Finding):
        yield data
        return
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        yield Finding("error", file.rel, "not valid UTF-8 — re-save the file as UTF-8", line)


def _read(tree: Tree, file: File) -> bytes | Finding:
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(Path(tree.root) / file.rel, flags)
        with os.fdopen(fd, "rb") as handle:
            return handle.read(MAX_CHECK_BYTES + 1)
    except OSError as exc:
        return Finding(
            "error", file.rel, f"cannot read: {exc.strerror} — check the file's permissions"
        )


# -- field values -------------------------------------------------------------


def _value_problem(key: str, value: str) -> str | None:
    """Why ``value`` cannot be read for ``key``, or None when it reads."""
    if not value:
        return None
    if key in STAMP_FIELDS:
        try:
            parse_stamp(value)
        except ValueError:
            return f"'{key}' must look like 2026-03-14 15:40, got {value!r}"
    elif key in INTERVAL_FIELDS:
        try:
            parse_interval(value)
        except ValueError:
            return f"'{key}' must look like 45m, 2h or 1d, got {value!r}"
    elif key in COUNT_FIELDS:
        if not (value.isascii() and value.isdigit()):
            return f"'{key}' must be a whole number, got {value!r}"
    elif key == "backoff" and value.lower() != "fixed":
        try:
            number = float(value)
        except ValueError:
            number = -1.0
        if not 1.0 <= number < 1000:
            return f"'backoff' must be a number >= 1 or 'fixed', got {value!r}"
    return None


def _values(file: File, skip: set[str], reported: set[str]) -> Iterator[Finding]:
    """Unparseable stamps, intervals and numbers not already reported."""
    for key, value in file.header.fields.items():
        if key in skip or key in reported:
            continue
        why = _value_problem(key, value.strip())
        if why is not None:
            yield Finding(
                "error",
                file.rel,
                f"{why} — fix the value (until then it is read as absent)",
                file.header.line_of(key),
            )


def _floors(record: Record, skip: set[str]) -> Iterator[Finding]:
    for key in FLOORED_FIELDS:
        value = (record.get(key) or "").strip()
        if key in skip or not value:
            continue
        try:
            interval = parse_interval(value)
        except ValueError:
            continue
        line = record.header.line_of(key)
        if interval < FLOOR:
            yield Finding(
                "warn",
                record.rel,
                f"'{key}: {value}' is floored to 15m — write 15m or more",
                line,
            )
        elif (
            key == "stale-after"
            and record.type == "intention"
            and interval > LONGEST_INTENTION_STALE
        ):
            yield Finding(
                "warn",
                record.rel,
                f"'stale-after: {value}' is over 7d: it wanted to be a backlog item — "
                "move it to inventory/backlog/ or shorten it",
                line,
            )


# -- records ------------------------------------------------------------------


def _misplaced(file: File, kind: str, fields: Iterable[str]) -> Iterator[tuple[str, Finding]]:
    for key in fields:
        if key not in ONLY_ON:
            continue
        types, why = ONLY_ON[key]
        if kind in types:
            continue
        yield (
            key,
            Finding(
                "warn",
                file.rel,
                f"'{key}' on {_a(kind)}: nothing reads it ({why}) — remove it",
                file.header.line_of(key),
            ),
        )


def _records(tree: Tree, now: datetime) -> Iterator[Finding]:
    for record in tree.records.values():
        yield from _record(tree, record, now)


def _record(tree: Tree, record: Record, now: datetime) -> Iterator[Finding]:
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
    for key, finding in _misplaced(record, record.type, header.fields):
        if key not in skip:
            skip.add(key)
            yield finding

    decision = clock.evaluate(tree, record, now)
    reported: set[str] = set()
    for problem in decision.problems:
        reported.add(problem.key)
        if problem.key not in skip:
            yield Finding(
                "error",
                record.rel,
                f"{problem.message} — fix the value (until then the clock falls back)",
                problem.line,
            )
    yield from _values(record, skip, reported)
    yield from _floors(record, skip)
    yield from _states(record)


def _states(record: Record) -> Iterator[Finding]:
    header = record.header
    level = clock.LEVELS[record.type]
    status = clock.status_of(record)
    if not clock.known_status(record):
        yield Finding(
            "error",
            record.rel,
            f"unknown status {status!r} for {_a(record.type)} — use one of "
            f"{', '.join(level.states)} (until then it counts as open)",
            header.line_of("status"),
        )
    if record.type == "intention" and not (record.get("closes-when") or "").strip():
        yield Finding(
            "warn",
            record.rel,
            "intention with no closes-when — add 'closes-when:' saying what would close it",
            header.line_of("closes-when"),
        )
    if record.type == "goal" and not (record.get("success-when") or "").strip():
        yield Finding(
            "warn",
            record.rel,
            "goal with no success-when — add 'success-when:' saying what success looks like",
            header.line_of("success-when"),
        )
    if record.type == "action":
        outcome = (record.get("outcome") or "").strip().lower()
        if outcome and outcome not in clock.OUTCOMES:
            yield Finding(
                "error",
                record.rel,
                f"unknown outcome {outcome!r} — use one of {', '.join(clock.OUTCOMES)}",
                header.line_of("outcome"),
            )
        if outcome == "as-expected" and status == "open":
            yield Finding(
                "warn",
                record.rel,
                "outcome as-expected but status still open — set 'status: done'",
                header.line_of("status") or header.line_of("outcome"),
            )
    if record.type == "reminder" and not (record.get("due") or "").strip():
        yield Finding(
            "error",
            record.rel,
            "reminder with no due — add 'due: YYYY-MM-DD HH:MM' (until then it counts as "
            "due since it last moved)",
            header.line_of("due"),
        )


def _duplicate_slugs(tree: Tree) -> Iterator[Finding]:
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


# -- context, notes, plugins --------------------------------------------------


def _context(tree: Tree) -> Iterator[Finding]:
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


def _context_file(ctx: Context) -> Iterator[Finding]:
    header = ctx.header
    skip: set[str] = set()
    for key in header.fields:
        if key in CLOCK_FIELDS:
            skip.add(key)
            yield Finding(
                "warn",
                ctx.rel,
                f"'{key}' on {_a(ctx.kind)}: context has no clock and no status — remove it",
                header.line_of(key),
            )
    if "keywords" in header.fields and ctx.kind in ("belief", "persona"):
        yield Finding(
            "warn",
            ctx.rel,
            f"'keywords' on {_a(ctx.kind)}: nothing reads it ({ctx.kind}s are always injected "
            "whole) — remove it",
            header.line_of("keywords"),
        )
    for key, finding in _misplaced(ctx, ctx.kind, header.fields):
        if key not in skip:
            skip.add(key)
            yield finding
    yield from _values(ctx, skip, set())
    if ctx.size > CONTEXT_BUDGET:
        yield Finding(
            "warn",
            ctx.rel,
            f"{ctx.size:,} bytes, over the {CONTEXT_BUDGET:,}-character budget for context — "
            "keep one ground truth per file: split it or cut it down",
        )


def _notes(tree: Tree, probe_names: set[str]) -> Iterator[Finding]:
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
    skip: set[str] = set()
    for key in header.fields:
        if key in CLOCK_FIELDS and key != "opened":
            skip.add(key)
            yield Finding(
                "warn",
                note.rel,
                f"'{key}' on a note: notes have no clock — remove it (keep 'updated:' for "
                "when its content last changed)",
                header.line_of(key),
            )
    for key, finding in _misplaced(note, "note", header.fields):
        if key not in skip:
            skip.add(key)
            yield finding
    yield from _values(note, skip, set())


def _plugins(tree: Tree) -> Iterator[Finding]:
    for plugin in tree.plugins:
        if plugin.header.fields or plugin.size > MAX_CHECK_BYTES:
            continue
        data = _read(tree, plugin)
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


def _probe_readings(tree: Tree, budget_ms: int) -> Iterator[Finding]:
    """A pack-tier probe that reads <unknown> (unless unknown-ok) or takes most of the budget."""
    probes, _ = load_probes(tree)
    pack_tier = [p for p in probes if p.tier == "pack"]
    if tree.probes is None or not pack_tier:
        return
    budget = budget_ms / 1000
    measured = readings.measure(tree.root, pack_tier, budget)
    for probe in pack_tier:
        reading, took = measured[probe.name]
        if reading == readings.UNKNOWN and not probe.unknown_ok:
            yield Finding(
                "warn",
                tree.probes.rel,
                f"pack probe {probe.name!r} reads <unknown> (failed or slower than "
                f"{budget_ms} ms) — fix its cmd, move it to tier: demand, or mark unknown-ok: yes",
                probe.line,
            )
        elif took > budget / 2:
            yield Finding(
                "warn",
                tree.probes.rel,
                f"pack probe {probe.name!r} took {took * 1000:.0f} ms of the {budget_ms} ms "
                "budget — make it cheaper or move it to tier: demand",
                probe.line,
            )
