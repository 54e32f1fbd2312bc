"""Running probes: who may (only from a trusted file: probes are shell commands), the pack
tier under one shared budget, what a reading is, and what a probe leaves behind.

A reading is stdout, trimmed, lines joined, capped at 200 characters; empty
output reads ``<empty>``; a non-zero exit, a timeout or any error reads
exactly ``<unknown>`` — never a remembered value. Demand probes and their ttl
cache are :mod:`rouse.probes.demand`.

Each probe runs in its own session and process group, killed whole at the
deadline. A child that leaves the group (``setsid``, a daemon's double fork)
would outlive that kill, so on Linux rouse is a child subreaper while probes
run: such a child comes back to rouse when its parent dies instead of going
to init, and when the probes are done every process still in a probe's group
or session, or adopted from below since the probes started, is killed and
reaped. Other platforms get the group kill only. The kernel's side (the subreaper,
``/proc``, killing and reaping) is :mod:`rouse.core.procs`, which the run
supervisor uses too; which processes a batch of probes left is decided here.
"""

from __future__ import annotations

import _thread
import contextlib
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from rouse.core import layout, procs
from rouse.probes.definitions import Probe

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


# -- what probes leave behind --------------------------------------------------
# Process-wide state, shared by every batch of probes running in this process (the MCP
# server may run two at once): how many batches are live (rouse is a subreaper while
# any is), and the pid of every live probe's leader, which its own Popen waits for and
# no sweep may touch.

SWEEP_SECONDS = 1.0  # the most one batch spends killing and reaping what its probes left
_LOCK = _thread.allocate_lock()  # _thread, not threading: nothing to import on the pack's path
_state: dict[str, int] = {"batches": 0, "adopting": 0}
_leaders: set[int] = set()


class Batch:
    """Probes started together: registered process-wide until what they left is swept."""

    def __init__(self) -> None:
        self.leaders: list[int] = []
        with _LOCK:
            if _state["batches"] == 0 and procs.LINUX:
                _state["adopting"] = int(procs.set_subreaper(True))
            _state["batches"] += 1
            self.adopting = bool(_state["adopting"])
        # our children before any probe starts (a harness's, another batch's): never swept
        me = os.getpid()
        table = procs.processes() if self.adopting else {}
        self.before = {pid for pid, found in table.items() if found[0] == me}

    def start(self, root: Path, probe: Probe) -> subprocess.Popen[bytes] | None:
        with _LOCK:  # a sweep in another thread never sees a leader not yet registered
            process = _start(root, probe)
            if process is not None:
                self.leaders.append(process.pid)
                _leaders.add(process.pid)
        return process

    def finish(self) -> None:
        """Kill and reap what the probes left behind, then unregister."""
        try:
            if procs.LINUX and self.leaders:
                procs.kill_and_reap(self.left_behind, SWEEP_SECONDS, _LOCK)
        finally:
            with _LOCK:
                _leaders.difference_update(self.leaders)
                _state["batches"] -= 1
                if _state["batches"] == 0 and _state["adopting"]:
                    procs.set_subreaper(False)
                    _state["adopting"] = 0

    def left_behind(self, table: procs.Table) -> set[int]:
        """Pids to kill: still in a probe's group or session, adopted from below since the
        batch started, and everything under those (or under a leader not yet reaped).

        Never a live probe's leader (its Popen reaps it), never a process in rouse's
        own session (no probe's descendant can be: a session can only be left), and
        never a child rouse already had when the batch began.
        """
        me, my_session = os.getpid(), os.getsid(0)
        ours = set(self.leaders)
        below: dict[int, list[int]] = {}
        seeds = []
        for pid, (ppid, pgid, sid) in table.items():
            below.setdefault(ppid, []).append(pid)
            if pid in _leaders or pid == me:
                continue
            # still in a probe's group or session; or adopted from below since we started
            adopted = self.adopting and ppid == me and sid != my_session and pid not in self.before
            if pgid in ours or sid in ours or adopted:
                seeds.append(pid)
        found = set(seeds)
        stack = [*seeds, *ours]
        while stack:
            for child in below.get(stack.pop(), ()):
                if child not in found and child not in _leaders and child != me:
                    found.add(child)
                    stack.append(child)
        return found


def _start(root: Path, probe: Probe) -> subprocess.Popen[bytes] | None:
    import subprocess  # only when a probe runs: the pack without probes never pays for it

    # a probe is rouse's child, never a person: what it writes through rouse signs as agent
    from rouse.trust.speaker import ROUSE_MARKER

    env = dict(os.environ, MEMORY=str(root), ROOT=str(root.parent), **{ROUSE_MARKER: "1"})
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


def kill_group(process: subprocess.Popen[bytes]) -> None:
    import signal
    import subprocess

    with contextlib.suppress(OSError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=0.05)  # reap the leader; never wait on its pipes


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
