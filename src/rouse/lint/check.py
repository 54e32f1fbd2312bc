"""The linter (SPEC §9): a list of findings about a tree; nothing printed here.

Errors are things rouse cannot read or that would make the clock guess;
warnings are shapes and fields that do nothing, or that do something the
writer probably did not mean. Every finding names the file (and line) and
says what to do.

The rules live in :mod:`rouse.lint.shape` (what sits where, what each kind of
file must carry) and :mod:`rouse.lint.fields` (header lines and values); what check
asks of provenance is here: without a key, one warning that nothing is signed; with
one, each written origin that does not verify, each file once stamped untrusted, and
each context file the pack holds back (:func:`quarantined`, also what a new key would
hold back). The verdicts come from :mod:`rouse.trust.origins`.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

from rouse.core import layout, supersession
from rouse.core.tree import Context, File, Tree
from rouse.lint.fields import error_finding, header_findings
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
from rouse.state import acts
from rouse.trust import fence
from rouse.trust.origins import EffectiveOrigin, Finding, OriginReader
from rouse.trust.stamp import stamped_files


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
    findings += demand.cache_findings(tree.root, origins.key_path if origins else None)
    if origins is not None:
        findings += stamp_findings(tree, origins)
        if not origins.keyed:
            findings += _unvouched_tasks(tree)
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
    for record in tree.records.values():
        yield from record_findings(tree, record, now)
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


# -- provenance -----------------------------------------------------------------


#: EffectiveOrigin states ``check`` names as not signed, and ``stamp --changed`` vouches for.
UNVOUCHED = ("mismatch", "unsigned", "unstamped", "unreadable")


def stamp_findings(tree: Tree, reader: OriginReader) -> list[Finding]:
    """Without a key: one warning that stamps are unsigned and probes unprotected.
    With a key: each written origin that does not verify, by file."""
    probes_rel = tree.probes.rel if tree.probes is not None else "."

    def of_tree(message: str) -> Finding:  # (a finding about the whole tree: on probes.md)
        return Finding("warn", probes_rel, message)

    if reader.key is None:
        return [
            of_tree(
                f"stamps are unsigned (no stamp key at {reader.key_path}): an origin reads as "
                "written, so a typed 'origin: owner' counts, and probes run unprotected — "
                "make a key with `rouse stamp --init-key`, then re-stamp what you trust",
            )
        ]
    key = reader.key
    if key.secret is None:
        return [
            of_tree(
                f"the stamp key {key.path} {key.problem}: every origin reads as unknown and "
                "no probe runs — fix the key file (or remove it to go unsigned)",
            )
        ]
    findings: list[Finding] = []
    unsigned = 0
    if key.mode is not None and key.mode & 0o077:
        findings.append(
            of_tree(
                f"the stamp key {key.path} is readable by others (mode {key.mode:o}): "
                f"chmod 600 {key.path}",
            )
        )
    contexts = {context.rel for context in tree.context}
    for file in stamped_files(tree):
        verdict = reader.verdict(file)
        unsigned += verdict.state in UNVOUCHED
        finding = _origin_finding(file, verdict, file.rel in contexts)
        if finding is not None:
            findings.append(finding)
    findings += _quarantine_findings(tree, reader, {finding.path for finding in findings})
    acted = acts.problem(tree.root, key.secret)
    if acted is not None:
        findings.append(Finding("warn", f"{layout.STATE_DIR}/{acts.FILE}", acted))
    if unsigned:
        findings.append(
            of_tree(
                f"{unsigned} file(s) named in this check are not signed: review them, then "
                "vouch for them all at once from a terminal of your own (outside the "
                "agent): rouse stamp --changed",
            )
        )
    reader.flush()
    return findings


def _origin_finding(file: File, verdict: EffectiveOrigin, context: bool) -> Finding | None:
    """What check says of one file's origin: signed with v1, once untrusted, or not
    signed (a context file without an origin is named as quarantined instead)."""
    if verdict.state == "verified-v1":
        return Finding(
            "warn",
            file.rel,
            f"origin {verdict.written!r} is signed with v1, which covers the body but "
            "not the header's fields (a forged closes-when or probes line would keep "
            "it) — re-sign it from outside the agent: rouse stamp --upgrade",
            file.header.line_of("origin-sig"),
        )
    if verdict.state == "once-untrusted":
        return Finding(
            "warn",
            file.rel,
            f"{verdict.why} — review it; if you vouch for it: rouse stamp --origin "
            f"owner {file.rel}",
            file.header.line_of("origin"),
        )
    if verdict.state not in UNVOUCHED or (context and not verdict.written):
        return None  # (a context file without one: named below as quarantined, says more)
    shown = f"origin {verdict.written!r} does not verify" if verdict.written else "no origin"
    vouch = ""
    if context:  # held back by the pack: its own vouching command
        vouch = (
            " — the pack leaves it out; review it, and if it is yours, vouch for it "
            f"from outside the agent: rouse stamp --origin owner {file.rel}"
        )
    return Finding(
        "warn",
        file.rel,
        f"{shown}: {verdict.why}; it reads as unknown (not signed){vouch}",
        file.header.line_of("origin"),
    )


def _quarantine_findings(tree: Tree, reader: OriginReader, flagged: set[str]) -> list[Finding]:
    """Each context file the pack holds back that no finding in ``flagged`` names yet."""
    return [
        Finding(
            "warn",
            context.rel,
            f"quarantined: the pack leaves this {context.kind} out (nothing you trust "
            "vouches for it under the stamp key) — review it; if it is yours, vouch for it "
            f"from outside the agent: rouse stamp --origin owner {context.rel}",
            context.header.line_of("origin"),
        )
        for context in sorted(quarantined(tree, reader), key=lambda c: c.rel)
        if context.rel not in flagged
    ]


def quarantined(tree: Tree, reader: OriginReader) -> list[Context]:
    """The context files the pack holds back under this reader (their origin is one to
    quote, never to inject): what a new stamp key would quarantine."""
    return [c for c in tree.context if fence.held_back(reader.verdict(c).origin, reader.keyed)]
