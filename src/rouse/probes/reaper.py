"""Probe processes and what they leave behind: the subreaper and orphan reaping.

Each probe runs in its own session and process group, killed whole at the
deadline. A child that leaves the group (``setsid``, a daemon's double fork)
would outlive that kill, so on Linux rouse is a child subreaper while probes
run: such a child comes back to rouse when its parent dies instead of going
to init, and when the probes are done every process still in a probe's group
or session, or adopted from below since the probes started, is killed and
reaped. Other platforms get the group kill only. The kernel's side (the subreaper,
``/proc``, killing and reaping) is :mod:`rouse.core.procs`, which the run
supervisor uses too; which processes a batch of probes left is decided here.

Process-wide state, shared by every batch of probes running in this process
(the MCP server may run two at once): how many batches are live (rouse is a
subreaper while any is), and the pid of every live probe's leader, which its
own Popen waits for and no sweep may touch.
"""

from __future__ import annotations

import _thread
import contextlib
import os

from rouse.core import procs

TYPE_CHECKING = False
if TYPE_CHECKING:
    import subprocess
    from pathlib import Path

    from rouse.probes.definitions import Probe

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
