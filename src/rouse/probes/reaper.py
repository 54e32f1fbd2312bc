"""Probe processes and what they leave behind: the subreaper and orphan reaping.

Each probe runs in its own session and process group, killed whole at the
deadline. A child that leaves the group (``setsid``, a daemon's double fork)
would outlive that kill, so on Linux rouse is a child subreaper while probes
run: such a child comes back to rouse when its parent dies instead of going
to init, and when the probes are done every process still in a probe's group
or session, or adopted from below since the probes started, is killed and
reaped. Other platforms get the group kill only.

Process-wide state, shared by every batch of probes running in this process
(the MCP server may run two at once): how many batches are live (rouse is a
subreaper while any is), and the pid of every live probe's leader, which its
own Popen waits for and no sweep may touch.
"""

from __future__ import annotations

import _thread
import contextlib
import os
import sys
import time

# typing costs ~5 ms to import on the pack's start-up path; annotations are
# strings here (__future__), so it is only imported for the type checker
TYPE_CHECKING = False
if TYPE_CHECKING:
    import subprocess
    from collections.abc import Callable
    from pathlib import Path

    from rouse.probes.definitions import Probe

_LINUX = sys.platform.startswith("linux")
PR_SET_CHILD_SUBREAPER = 36
SWEEP_SECONDS = 1.0  # the most one batch spends killing and reaping what its probes left
_LOCK = _thread.allocate_lock()  # _thread, not threading: nothing to import on the pack's path
_state: dict[str, int] = {"batches": 0, "adopting": 0}
_leaders: set[int] = set()
_prctl: list[Callable[..., int] | None] = []  # [] until looked up; [None] when unavailable


def _set_subreaper(on: bool) -> bool:
    """``prctl(PR_SET_CHILD_SUBREAPER, on)``; True when it took effect. Linux only.

    ``ctypes`` is imported here, the first time probes run (about 2-3 ms), never
    when the module is imported: a pack without probes does not pay for it.
    """
    if not _prctl:
        call: Callable[..., int] | None = None
        if _LINUX:
            try:
                import ctypes

                function = ctypes.CDLL(None, use_errno=True).prctl
                function.restype = ctypes.c_int
                function.argtypes = [ctypes.c_int, *[ctypes.c_ulong] * 4]
                call = function
            except (ImportError, OSError, AttributeError):
                call = None
        _prctl.append(call)
    found = _prctl[0]
    return found is not None and found(PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0) == 0


def _stat(pid: int | str) -> tuple[int, int, int] | None:
    """``(ppid, pgid, sid)`` of a process, from ``/proc/PID/stat``."""
    try:
        fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY)
        try:
            data = os.read(fd, 4096)
        finally:
            os.close(fd)
    except OSError:
        return None
    # the command name is in parentheses and may hold anything: fields follow the last ')'
    fields = data[data.rfind(b")") + 2 :].split()
    try:  # state ppid pgrp session ...
        return int(fields[1]), int(fields[2]), int(fields[3])
    except (IndexError, ValueError):
        return None


def _processes() -> dict[int, tuple[int, int, int]]:
    """Every process ``/proc`` shows, by pid."""
    table = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return {}
    for name in names:
        if name.isdigit():
            found = _stat(name)
            if found is not None:
                table[int(name)] = found
    return table


class Batch:
    """Probes started together: registered process-wide until what they left is swept."""

    def __init__(self) -> None:
        self.leaders: list[int] = []
        with _LOCK:
            if _state["batches"] == 0 and _LINUX:
                _state["adopting"] = int(_set_subreaper(True))
            _state["batches"] += 1
            self.adopting = bool(_state["adopting"])
        # our children before any probe starts (a harness's, another batch's): never swept
        me = os.getpid()
        table = _processes() if self.adopting else {}
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
            if _LINUX and self.leaders:
                _sweep(self)
        finally:
            with _LOCK:
                _leaders.difference_update(self.leaders)
                _state["batches"] -= 1
                if _state["batches"] == 0 and _state["adopting"]:
                    _set_subreaper(False)
                    _state["adopting"] = 0

    def left_behind(self, table: dict[int, tuple[int, int, int]]) -> set[int]:
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


def _sweep(batch: Batch) -> None:
    """Kill what ``batch`` left behind and reap the ones that are (or become) our children.

    A killed process's own children come back to us once it dies, so this
    rescans until a scan finds nothing (or :data:`SWEEP_SECONDS` pass).
    """
    import signal

    deadline = time.monotonic() + SWEEP_SECONDS
    me = os.getpid()
    spared: set[int] = set()  # not ours to kill (another user's, say, after a setuid): left
    while True:
        with _LOCK:
            table = _processes()
            victims = batch.left_behind(table) - spared
            for pid in victims:
                try:
                    os.kill(pid, signal.SIGKILL)
                except PermissionError:
                    spared.add(pid)
                except OSError:
                    pass
            victims -= spared
        if not victims:
            return
        pending = {pid for pid in victims if table[pid][0] == me}
        while True:
            for pid in list(pending):
                try:
                    if os.waitpid(pid, os.WNOHANG)[0]:
                        pending.discard(pid)
                except ChildProcessError:  # reaped by another batch's sweep
                    pending.discard(pid)
            if not pending or time.monotonic() >= deadline:
                break
            time.sleep(0.001)
        if time.monotonic() >= deadline:
            return
        if not any(table[pid][0] == me for pid in victims):
            time.sleep(0.001)  # only dying grandchildren: give their parents time to go


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
