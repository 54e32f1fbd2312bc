"""May the tree's probes run? Probes are shell commands, so they run only from a trusted file."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from rouse.core import layout
from rouse.core.tree import Tree
from rouse.trust.origins import OriginReader

#: Origins whose probes.md may run under a key (SPEC §6).
PROBE_ORIGINS = frozenset({"owner", "system", "agent"})


def probes_allowed(tree: Tree, reader: OriginReader, env: Mapping[str, str]) -> tuple[bool, str]:
    """May the tree's probes run? ``(allowed, reason)`` — the reason is shown when they may not.

    ``ROUSE_PROBES=off`` disables probes. With a stamp key, ``probes.md`` runs
    only when its verified origin is owner, system or agent.
    """
    return _probes_allowed(tree.root, tree.probes is not None, reader, env)


def probes_allowed_at(root: Path, reader: OriginReader, env: Mapping[str, str]) -> tuple[bool, str]:
    """:func:`probes_allowed` for a caller that has not walked the tree (no walk needed)."""
    return _probes_allowed(root, os.path.lexists(root / layout.PROBES), reader, env)


def _probes_allowed(
    root: Path, present: bool, reader: OriginReader, env: Mapping[str, str]
) -> tuple[bool, str]:
    if env.get("ROUSE_PROBES", "").strip().lower() == "off":
        return False, "probes are off (ROUSE_PROBES=off): every probe reads <unknown>"
    rel = layout.PROBES
    if not present:
        return True, "no probes file"
    if not reader.keyed:
        return True, f"{rel} runs unprotected: no stamp key (`rouse stamp --init-key` makes one)"
    verdict = reader.verdict_at(rel)
    reader.flush()
    if verdict.origin in PROBE_ORIGINS:
        return True, f"{rel} verified as {verdict.origin}"
    return False, (
        f"probes did not run: {rel} reads as {verdict.origin} ({verdict.why}), so every "
        "probe reads <unknown>. The owner reviews the file and re-stamps it from outside "
        f"the agent: rouse --memory {root} stamp --origin owner {root / rel}"
    )
