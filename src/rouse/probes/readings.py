"""Running probes: the pack tier under one shared budget, demand probes with a ttl cache.

A reading is stdout, trimmed, lines joined, capped at 200 characters; empty
output reads ``<empty>``; a non-zero exit, a timeout or any error reads
exactly ``<unknown>`` — never a remembered value. Cache ages are wall-clock
(``--now`` never affects probes).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Sequence
from pathlib import Path

from rouse.core import layout
from rouse.core.statefile import load_json, save_json
from rouse.probes.definitions import Probe

# typing costs ~5 ms to import on the pack's start-up path; annotations are
# strings here (__future__), so it is only imported for the type checker
TYPE_CHECKING = False
if TYPE_CHECKING:
    import subprocess

DEFAULT_BUDGET_MS = 150
UNKNOWN = "<unknown>"
EMPTY = "<empty>"
MAX_READING = 200
MAX_OUTPUT = 64 * 1024
CACHE_FILE = "probes.json"


def reading_of(returncode: int | None, output: bytes) -> str:
    if returncode != 0:
        return UNKNOWN
    lines = [line.strip() for line in output.decode("utf-8", "replace").splitlines()]
    text = " ".join(line for line in lines if line)
    return text[:MAX_READING] if text else EMPTY


def _start(root: Path, probe: Probe) -> subprocess.Popen[bytes] | None:
    import subprocess  # only when a probe runs: the pack without probes never pays for it

    env = dict(os.environ, MEMORY=str(root), ROOT=str(root.parent))
    try:
        return subprocess.Popen(
            probe.cmd,
            shell=True,
            cwd=root,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # its own process group, killed whole at the deadline
        )
    except OSError:
        return None


def _kill(process: subprocess.Popen[bytes]) -> None:
    import signal
    import subprocess

    with contextlib.suppress(OSError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=0.05)  # reap the leader; never wait on its pipes


def run_all(root: Path, probes: Sequence[Probe], budget: float) -> dict[str, str]:
    """Run probes concurrently under one deadline ``budget`` seconds away."""
    return {name: reading for name, (reading, _) in measure(root, probes, budget).items()}


def measure(root: Path, probes: Sequence[Probe], budget: float) -> dict[str, tuple[str, float]]:
    """Like :func:`run_all`, with how long each probe took (the budget when it was killed)."""
    import selectors
    import subprocess

    started = time.monotonic()
    deadline = started + budget
    readings = {p.name: (UNKNOWN, budget) for p in probes}
    running: dict[int, tuple[Probe, subprocess.Popen[bytes], bytearray]] = {}
    selector = selectors.DefaultSelector()
    for probe in probes:
        process = _start(root, probe)
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
            _kill(process)
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


# -- the demand cache -------------------------------------------------------------


def _cache_path(root: Path) -> Path:
    return root / layout.STATE_DIR / CACHE_FILE


def load_cache(root: Path) -> dict[str, dict[str, object]]:
    data = load_json(_cache_path(root))
    return data if isinstance(data, dict) else {}


def cached_reading(
    root: Path, probe: Probe, cache: dict[str, dict[str, object]] | None = None
) -> str | None:
    """A reading of ``probe`` younger than its ttl (same command), else None."""
    if probe.ttl is None:
        return None
    entry = (cache if cache is not None else load_cache(root)).get(probe.name)
    if not isinstance(entry, dict) or entry.get("cmd") != probe.cmd:
        return None
    taken = entry.get("at")
    reading = entry.get("reading")
    if not isinstance(taken, int | float) or not isinstance(reading, str):
        return None
    age = time.time() - float(taken)
    return reading if 0 <= age < probe.ttl.total_seconds() else None


def run_demand(root: Path, probe: Probe) -> str:
    """``rouse probe NAME``: reuse a reading younger than ttl, else run it now."""
    cache = load_cache(root)
    reading = cached_reading(root, probe, cache)
    if reading is not None:
        return reading
    reading = run_all(root, [probe], probe.timeout.total_seconds())[probe.name]
    cache[probe.name] = {"reading": reading, "at": time.time(), "cmd": probe.cmd}
    save_json(_cache_path(root), cache)
    return reading
