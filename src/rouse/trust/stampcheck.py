"""What ``rouse check`` asks of provenance: the stamp findings and the quarantine.

Without a key, one warning that nothing is signed; with one, each written origin
that does not verify, each file once stamped untrusted, and each context file the
pack holds back (:func:`quarantined`, also what a new key would hold back). The
verdicts themselves come from :mod:`rouse.trust.origins`; this module only judges
them and says what to do.
"""

from __future__ import annotations

from rouse.core import layout
from rouse.core.tree import File, Tree
from rouse.state import acts
from rouse.trust.fence import held_back
from rouse.trust.origins import EffectiveOrigin, Finding, OriginReader

#: EffectiveOrigin states ``check`` names as not signed, and ``stamp --changed`` vouches for.
UNVOUCHED = ("mismatch", "unsigned", "unstamped", "unreadable")


def stamped_files(tree: Tree) -> list[File]:
    """Every file of the tree that can carry a stamp, by path."""
    files: list[File] = [*tree.context, *tree.records.values(), *tree.notes, *tree.plugins]
    if tree.probes is not None:
        files.append(tree.probes)
    return sorted(files, key=lambda f: f.rel)


def stamp_findings(tree: Tree, reader: OriginReader) -> list[Finding]:
    """Without a key: one warning that stamps are unsigned and probes unprotected.
    With a key: each written origin that does not verify, by file."""
    probes_rel = tree.probes.rel if tree.probes is not None else "."
    if reader.key is None:
        return [
            Finding(
                "warn",
                probes_rel,
                f"stamps are unsigned (no stamp key at {reader.key_path}): an origin reads as "
                "written, so a typed 'origin: owner' counts, and probes run unprotected — "
                "make a key with `rouse stamp --init-key`, then re-stamp what you trust",
            )
        ]
    key = reader.key
    if key.secret is None:
        return [
            Finding(
                "warn",
                probes_rel,
                f"the stamp key {key.path} {key.problem}: every origin reads as unknown and "
                "no probe runs — fix the key file (or remove it to go unsigned)",
            )
        ]
    findings: list[Finding] = []
    unsigned = 0
    if key.mode is not None and key.mode & 0o077:
        findings.append(
            Finding(
                "warn",
                probes_rel,
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
            Finding(
                "warn",
                probes_rel,
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
        for context in sorted(tree.context, key=lambda c: c.rel)
        if context.rel not in flagged and held_back(reader.verdict(context).origin, reader.keyed)
    ]


def quarantined(tree: Tree, reader: OriginReader) -> list[File]:
    """The context files the pack holds back under this reader (their origin is one to
    quote, never to inject): what a new stamp key would quarantine."""
    return [c for c in tree.context if held_back(reader.verdict(c).origin, reader.keyed)]
