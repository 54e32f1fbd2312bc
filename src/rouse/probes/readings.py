"""Running probes: the pack tier under one shared budget, demand probes with a ttl cache.

A reading is stdout, trimmed, lines joined, capped at 200 characters; empty
output reads ``<empty>``; a non-zero exit, a timeout or any error reads
exactly ``<unknown>`` — never a remembered value. Cache ages are wall-clock
(``--now`` never affects probes).

Each probe runs in its own session and process group, killed whole at the
deadline. A child that leaves the group (``setsid``, a daemon's double fork)
would outlive that kill, so on Linux rouse is a child subreaper while probes
run: such a child comes back to rouse when its parent dies instead of going
to init, and when the probes are done every process still in a probe's group
or session, or adopted from below since the probes started, is killed and
reaped (see "Orphans" below). Other platforms get the group kill only.

The demand cache (``.rouse/probes.json``) is believed only for the probe it
answers — same name, cmd, ttl and tree — and, with a stamp key, only when the
entry's HMAC verifies; :func:`cache_findings` names what is ignored.
"""

from __future__ import annotations

import _thread
import contextlib
import json
import math
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from rouse.core import home, layout
from rouse.core.statefile import load_json, save_json
from rouse.probes.definitions import Probe
from rouse.trust.origins import StampFinding
from rouse.trust.stampkey import load_key

# typing costs ~5 ms to import on the pack's start-up path; annotations are
# strings here (__future__), so it is only imported for the type checker
TYPE_CHECKING = False
if TYPE_CHECKING:
    import subprocess
    from collections.abc import Callable

DEFAULT_BUDGET_MS = 150
UNKNOWN = "<unknown>"
EMPTY = "<empty>"
MAX_READING = 200
MAX_OUTPUT = 64 * 1024
CACHE_FILE = "probes.json"
CACHE_VERSION = 2


def reading_of(returncode: int | None, output: bytes) -> str:
    if returncode != 0:
        return UNKNOWN
    lines = [line.strip() for line in output.decode("utf-8", "replace").splitlines()]
    text = " ".join(line for line in lines if line)
    return text[:MAX_READING] if text else EMPTY


# -- orphans -------------------------------------------------------------------
#
# Process-wide state, shared by every batch of probes running in this process
# (the MCP server may run two at once): how many batches are live (rouse is a
# subreaper while any is), and the pid of every live probe's leader, which its
# own Popen waits for and no sweep may touch.

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


class _Batch:
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


def _sweep(batch: _Batch) -> None:
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


# -- running ---------------------------------------------------------------------


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
    if not probes:
        return {}
    batch = _Batch()
    try:
        return _measure(root, probes, budget, batch)
    finally:
        batch.finish()


def _measure(
    root: Path, probes: Sequence[Probe], budget: float, batch: _Batch
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


def _plausible(reading: str) -> bool:
    """Could :func:`reading_of` have given this? (one line, 1-200 characters)"""
    return 0 < len(reading) <= MAX_READING and len(reading.splitlines()) == 1


def _number(value: object) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


class DemandCache:
    """``.rouse/probes.json``: the last demand readings, each bound to the probe it answers.

    The file is ``{"version": 2, "entries": {NAME: {"cmd", "ttl", "reading", "at"
    [, "mac"]}}}``. An entry is reused only by the probe of the same name whose
    ``cmd`` and ``ttl`` are the entry's, within that ttl (wall-clock), and only
    when its reading is one a probe could give. With a stamp key each entry
    carries ``mac``, the HMAC-SHA256 under the key of the versioned message
    :meth:`message` (which names the tree too), and an entry whose MAC is
    missing or wrong is ignored: the probe runs again. Without a key, binding
    to the name, cmd and ttl is all there is (the state is the agent's to edit).
    """

    def __init__(self, root: Path, key_path: Path | None = None):
        self.root = root
        self.path = _cache_path(root)
        self.key_path = key_path
        self.raw = load_json(self.path)
        entries = self.raw.get("entries") if self._current(self.raw) else None
        self.entries: dict[str, object] = entries if isinstance(entries, dict) else {}
        self._key: tuple[bool, bytes | None] | None = None  # (keyed, secret), read when needed
        self._tree: str | None = None

    @staticmethod
    def _current(raw: object) -> bool:
        return isinstance(raw, dict) and raw.get("version") == CACHE_VERSION

    def key(self) -> tuple[bool, bytes | None]:
        """``(keyed, secret)``: is there a key file, and its secret when it can be used."""
        if self._key is None:
            key = load_key(self.key_path or home.stamp_key_path())
            self._key = (key is not None, key.secret if key is not None else None)
        return self._key

    def message(self, name: str, cmd: str, ttl: float, reading: str, at: float) -> bytes:
        """What an entry's MAC covers: a compact JSON array, so no field bleeds into another."""
        if self._tree is None:
            self._tree = os.path.realpath(self.root)
        fields = ["rouse-probe-reading", CACHE_VERSION, self._tree, name, cmd, ttl, reading, at]
        return json.dumps(fields, ensure_ascii=True, separators=(",", ":")).encode("ascii")

    def _mac(self, secret: bytes, name: str, fields: tuple[str, float, str, float]) -> str:
        import hashlib
        import hmac

        return hmac.new(secret, self.message(name, *fields), hashlib.sha256).hexdigest()

    @staticmethod
    def _fields(entry: object) -> tuple[str, float, str, float] | None:
        """``(cmd, ttl, reading, at)`` of a well-formed entry, else None."""
        if not isinstance(entry, dict):
            return None
        cmd, reading = entry.get("cmd"), entry.get("reading")
        ttl, at = _number(entry.get("ttl")), _number(entry.get("at"))
        if not isinstance(cmd, str) or not isinstance(reading, str) or ttl is None or at is None:
            return None
        if not _plausible(reading):
            return None
        return cmd, ttl, reading, at

    def _vouched(self, name: str, entry: object, fields: tuple[str, float, str, float]) -> bool:
        """Does rouse stand behind this entry? Without a key: yes (the floor)."""
        keyed, secret = self.key()
        if not keyed:
            return True
        if secret is None or not isinstance(entry, dict):
            return False
        import hmac

        mac = entry.get("mac")
        return isinstance(mac, str) and hmac.compare_digest(mac, self._mac(secret, name, fields))

    def reading(self, probe: Probe) -> str | None:
        """A reading of ``probe`` younger than its ttl, bound to it and vouched for; else None."""
        if probe.ttl is None:
            return None
        entry = self.entries.get(probe.name)
        fields = self._fields(entry)
        if fields is None:
            return None
        cmd, ttl, reading, at = fields
        if cmd != probe.cmd or ttl != probe.ttl.total_seconds():
            return None
        if not self._vouched(probe.name, entry, fields):
            return None
        return reading if 0 <= time.time() - at < ttl else None

    def put(self, probe: Probe, reading: str, at: float) -> bool:
        """Record a reading (only for a probe with a ttl: no other is ever reused)."""
        keyed, secret = self.key()
        if probe.ttl is None or (keyed and secret is None):
            return False
        fields = (probe.cmd, probe.ttl.total_seconds(), reading, at)
        entry: dict[str, object] = {"cmd": fields[0], "ttl": fields[1], "reading": reading}
        entry["at"] = at
        if secret is not None:
            entry["mac"] = self._mac(secret, probe.name, fields)
        self.entries[probe.name] = entry
        return True

    def save(self) -> bool:
        return save_json(self.path, {"version": CACHE_VERSION, "entries": self.entries})

    def findings(self) -> list[StampFinding]:
        """What in the file is ignored, one warning each (for ``rouse check``)."""
        rel = f"{layout.STATE_DIR}/{CACHE_FILE}"
        fix = "delete it, or let `rouse probe NAME` write it anew"
        if self.raw is None:
            if not os.path.lexists(self.path):
                return []
            return [
                StampFinding(
                    "warn",
                    rel,
                    f"the probe reading cache cannot be read as JSON rouse wrote: ignored — {fix}",
                )
            ]
        if not self._current(self.raw) or not isinstance(self.raw.get("entries"), dict):
            return [
                StampFinding(
                    "warn",
                    rel,
                    "the probe reading cache is not in the layout rouse writes (written by hand, "
                    f"or by an older rouse): every reading in it is ignored — {fix}",
                )
            ]
        keyed, secret = self.key()
        found = []
        for name, entry in self.entries.items():
            shown = repr(name[:80])
            fields = self._fields(entry)
            if fields is None:
                found.append(
                    StampFinding(
                        "warn",
                        rel,
                        f"probe reading {shown} is not one rouse writes: ignored — {fix}",
                    )
                )
            elif keyed and secret is not None and not self._vouched(name, entry, fields):
                found.append(
                    StampFinding(
                        "warn",
                        rel,
                        f"probe reading {shown} does not verify with the stamp key (edited by "
                        "hand, written before the key existed, or copied from another tree): "
                        f"ignored — `rouse probe {name[:80]}` runs it again",
                    )
                )
        return found


def load_cache(root: Path, key_path: Path | None = None) -> DemandCache:
    """The demand cache of the tree at ``root`` (key: ``key_path``, else the usual place)."""
    return DemandCache(root, key_path)


def cached_reading(root: Path, probe: Probe, cache: DemandCache | None = None) -> str | None:
    """A reading of ``probe`` younger than its ttl that rouse vouches for, else None."""
    return (cache if cache is not None else load_cache(root)).reading(probe)


def cache_findings(root: Path, key_path: Path | None = None) -> list[StampFinding]:
    """``check``'s warnings about ``.rouse/probes.json``: entries that are ignored
    because they are malformed or (with a stamp key) do not verify."""
    return load_cache(root, key_path).findings()


def run_demand(root: Path, probe: Probe, key_path: Path | None = None) -> str:
    """``rouse probe NAME``: reuse a reading younger than ttl, else run it now."""
    reading = load_cache(root, key_path).reading(probe)
    if reading is not None:
        return reading
    taken = time.time()
    reading = run_all(root, [probe], probe.timeout.total_seconds())[probe.name]
    cache = load_cache(root, key_path)  # read again: another run may have written meanwhile
    if cache.put(probe, reading, taken):
        cache.save()
    return reading
