"""Running probes: who may (only from a trusted file: probes are shell commands), the pack
tier under one shared budget, and what a reading is.

A reading is stdout, trimmed, lines joined, capped at 200 characters; empty
output reads ``<empty>``; a non-zero exit, a timeout or any error reads
exactly ``<unknown>`` — never a remembered value.

Each probe runs in its own session and process group, killed whole at the
deadline; what a probe leaves behind is swept by :mod:`rouse.probes.reaper`.
Demand probes and their ttl cache are :mod:`rouse.probes.demand`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from rouse.core import layout
from rouse.probes.definitions import Probe
from rouse.probes.reaper import Batch, kill_group

TYPE_CHECKING = False
if TYPE_CHECKING:
    import subprocess

    from rouse.core.tree import Tree
    from rouse.trust.origins import OriginReader

DEFAULT_BUDGET_MS = 150
UNKNOWN = "<unknown>"
EMPTY = "<empty>"
MAX_READING = 200
MAX_OUTPUT = 64 * 1024


def reading_of(returncode: int | None, output: bytes) -> str:
    if returncode != 0:
        return UNKNOWN
    lines = [line.strip() for line in output.decode("utf-8", "replace").splitlines()]
    text = " ".join(line for line in lines if line)
    return text[:MAX_READING] if text else EMPTY


def run_all(root: Path, probes: Sequence[Probe], budget: float) -> dict[str, str]:
    """Run probes concurrently under one deadline ``budget`` seconds away."""
    return {name: reading for name, (reading, _) in measure(root, probes, budget).items()}


def measure(root: Path, probes: Sequence[Probe], budget: float) -> dict[str, tuple[str, float]]:
    """Like :func:`run_all`, with how long each probe took (the budget when it was killed)."""
    if not probes:
        return {}
    batch = Batch()
    try:
        return _measure(root, probes, budget, batch)
    finally:
        batch.finish()


def _measure(
    root: Path, probes: Sequence[Probe], budget: float, batch: Batch
) -> dict[str, tuple[str, float]]:
    import selectors
    import subprocess

    started = time.monotonic()
    deadline = started + budget
    readings = {p.name: (UNKNOWN, budget) for p in probes}
    running: dict[int, tuple[Probe, subprocess.Popen[bytes], bytearray]] = {}
    selector = selectors.DefaultSelector()
    for probe in probes:
        process = batch.start(root, probe)
        if process is None or process.stdout is None:
            continue
        fd = process.stdout.fileno()
        os.set_blocking(fd, False)
        running[fd] = (probe, process, bytearray())
        selector.register(fd, selectors.EVENT_READ)
    open_fds = set(running)
    while open_fds:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        for key, _ in selector.select(left):
            fd = int(key.fd)
            chunk = os.read(fd, 65536)
            buffer = running[fd][2]
            if chunk and len(buffer) < MAX_OUTPUT:
                buffer.extend(chunk[: MAX_OUTPUT - len(buffer)])
            elif not chunk:
                selector.unregister(fd)
                open_fds.discard(fd)
    selector.close()
    for fd, (probe, process, buffer) in running.items():
        returncode = None
        if fd not in open_fds:
            left = max(deadline - time.monotonic(), 0)
            try:
                returncode = process.wait(timeout=left)
            except subprocess.TimeoutExpired:
                returncode = None
        if returncode is None:
            kill_group(process)
        took = time.monotonic() - started if returncode is not None else budget
        readings[probe.name] = (reading_of(returncode, bytes(buffer)), took)
        if process.stdout is not None:
            process.stdout.close()
    return readings


def run_pack_tier(root: Path, probes: Sequence[Probe], budget_ms: int) -> list[tuple[str, str]]:
    """The pack's readings, in file order."""
    pack_tier = [p for p in probes if p.tier == "pack"]
    if not pack_tier:
        return []
    readings = run_all(root, pack_tier, budget_ms / 1000)
    return [(p.name, readings[p.name]) for p in pack_tier]


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
