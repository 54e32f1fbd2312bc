"""The linter (SPEC §9): a list of findings about a tree; nothing printed here.

Errors are things rouse cannot read or that would make the clock guess;
warnings are shapes and fields that do nothing, or that do something the
writer probably did not mean. Every finding names the file (and line) and
says what to do.

The rules live in :mod:`rouse.lint.shape` (what sits where, what each kind of
file must carry) and :mod:`rouse.lint.fields` (header lines and values).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

from rouse.core import supersession
from rouse.core.tree import File, Tree
from rouse.lint.fields import header_findings
from rouse.lint.finding import error_finding
from rouse.lint.shape import (
    context_findings,
    duplicate_slug_findings,
    encoding_findings,
    machine_state_findings,
    note_findings,
    nudge_findings,
    plugin_findings,
    record_findings,
    shape_findings,
)
from rouse.probes import demand, readings
from rouse.probes.definitions import load_probes
from rouse.trust import fence
from rouse.trust.origins import Finding, OriginReader
from rouse.trust.stampcheck import stamp_findings, stamped_files


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
    key_path = origins.key_path if origins is not None else None
    stamps += demand.cache_findings(tree.root, key_path)
    findings += stamps
    if origins is not None and not origins.keyed:
        findings += _unvouched_tasks(tree)
    if origins is not None:
        findings = _quoted_values(tree, findings, origins)
    unique = {(f.level, f.path, f.line, f.message): f for f in findings}
    return sorted(unique.values(), key=Finding.sort_key)


#: What ``check`` says in place of a value of a quarantined context file.
HELD_VALUE = "(a value held back: the file is quarantined)"


def _quoted_values(tree: Tree, findings: list[Finding], origins: OriginReader) -> list[Finding]:
    """Findings that quote a header value of a file whose words are quoted data: the value
    quoted by the fence rule (:mod:`rouse.trust.fence`), as every surface quotes it."""
    files: dict[str, File] = {
        f.rel: f for f in (*tree.records.values(), *tree.notes, *tree.context)
    }
    contexts = {c.rel for c in tree.context}
    shown = []
    for finding in findings:
        file = files.get(finding.path)
        origin = origins(file) if file is not None else ""
        message = finding.message
        if file is not None and fence.quoted(origin):
            # a quarantined context file's words are shown nowhere, quoted or not
            held = file.rel in contexts and fence.held_back(origin, origins.keyed)
            for value in sorted(file.header.fields.values(), key=len, reverse=True):
                quoted = HELD_VALUE if held else fence.inline(value, origin)
                message = fence.quote_in(message, value, quoted) or message
        shown.append(Finding(finding.level, finding.path, message, finding.line))
    return shown


def _unvouched_tasks(tree: Tree) -> list[Finding]:
    """Without a stamp key, a task worker (``rouse work``, which leaves ``.rouse/work.json``)
    runs every pending task: nothing vouches for the text it runs. One warning per tree."""
    from rouse.core import layout
    from rouse.state import sweeper

    if not (tree.root / layout.STATE_DIR / sweeper.WORK_STATE).exists():
        return []
    pending = [
        record
        for record in tree.records.values()
        if record.type == "task" and (record.get("status") or "pending").strip() == "pending"
    ]
    if not pending:
        return []
    return [
        Finding(
            "warn",
            pending[0].rel,
            f"{len(pending)} pending task(s) and no stamp key: `rouse work` runs them though "
            "nothing vouches for their text (`rouse stamp --init-key`, then stamp what you trust)",
        )
    ]


def _all_findings(tree: Tree, now: datetime) -> Iterator[Finding]:
    yield from shape_findings(tree)
    yield from machine_state_findings(tree)
    yield from nudge_findings(tree)
    for file in stamped_files(tree):
        yield from header_findings(file)
        yield from encoding_findings(tree, file)
    yield from record_findings(tree, now)
    yield from context_findings(tree)
    probes, problems = load_probes(tree)
    for problem in problems:
        yield error_finding(problem)
    yield from note_findings(tree, {probe.name for probe in probes})
    yield from plugin_findings(tree)
    yield from duplicate_slug_findings(tree)
    for problem in supersession.problems(tree):
        yield Finding("warn", problem.path, problem.message, problem.line)
    yield from _leftover_findings(tree)
    for first, second in supersession.overlapping(tree):
        yield Finding(
            "warn",
            first.rel,
            f"keywords overlap with {second.rel}'s: if one replaces the other, say so with "
            "'supersedes:' in the newer one; else give them keywords that tell them apart",
            first.header.line_of("keywords"),
        )


def _leftover_findings(tree: Tree) -> Iterator[Finding]:
    """A writer's copy left beside a file (a writer killed mid-write): not memory, and
    full-size; the next write in its directory removes it once no live write needs it."""
    import os

    from rouse.core.store import leftovers

    root = Path(tree.root)
    for here, dirs, _ in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))  # .rouse, .git
        for path in leftovers(Path(here)):
            yield Finding(
                "warn",
                path.relative_to(root).as_posix(),
                "a copy a writer left behind (killed mid-write?): not part of the memory — "
                "delete it (the next write in this directory removes it once it is stale)",
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
