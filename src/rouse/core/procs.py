"""Processes a rouse process started, and what they leave behind (Linux).

Owns the three kernel features both kinds of children rouse starts rely on
(probes, :mod:`rouse.probes.readings`; agent runs, :mod:`rouse.runs.supervisor`):
being a *child subreaper* (an orphan from below comes back to us instead of
going to init), a forked child's *parent-death signal* (it dies with the
process that forked it), and killing and reaping a set of processes read
from ``/proc`` until none is left. Which processes are to go is the caller's
rule, not this module's. Elsewhere than Linux every call here does nothing.

Light on purpose: the run supervisor starts once per run, so this imports
only ``os``, ``sys`` and ``time``, and ``ctypes`` the first time a ``prctl``
is asked for.
"""

from __future__ import annotations

import os
import sys
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from contextlib import AbstractContextManager

LINUX = sys.platform.startswith("linux")
PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
SIGKILL = 9
#: ``(ppid, pgid, sid)`` of each process, by pid
Table = dict[int, tuple[int, int, int]]
_prctl: list[Callable[..., int] | None] = []  # [] until looked up; [None] when unavailable


def _lookup() -> Callable[..., int] | None:
    """libc's ``prctl``, looked up once (None elsewhere than Linux, or without ctypes)."""
    if not _prctl:
        found: Callable[..., int] | None = None
        if LINUX:
            try:
                import ctypes

                function = ctypes.CDLL(None, use_errno=True).prctl
                function.restype = ctypes.c_int
                function.argtypes = [ctypes.c_int, *[ctypes.c_ulong] * 4]
                found = function
            except (ImportError, OSError, AttributeError):
                found = None
        _prctl.append(found)
    return _prctl[0]


def _call(option: int, value: int) -> bool:
    """``prctl(option, value)``; True when it took effect (Linux only)."""
    call = _lookup()
    return call is not None and call(option, value, 0, 0, 0) == 0


def set_subreaper(on: bool) -> bool:
    """Become (or stop being) a child subreaper; True when it took effect."""
    return _call(PR_SET_CHILD_SUBREAPER, int(on))


def prepare() -> None:
    """Look ``prctl`` up now, so a forked child calls it without importing anything."""
    _lookup()


def die_with_parent(parent: int) -> bool:
    """In a forked child: be SIGKILLed when ``parent`` (the process that forked it) dies.

    False when ``parent`` is already gone (the signal would never come): the
    caller must not run on. Where the kernel cannot do it, True and nothing done.
    """
    _call(PR_SET_PDEATHSIG, SIGKILL)
    return os.getppid() == parent


def _fields(pid: int | str) -> list[bytes]:
    """The fields of ``/proc/PID/stat`` after the command's name: state, ppid, pgrp, …"""
    try:
        fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY)
        try:
            data = os.read(fd, 4096)
        finally:
            os.close(fd)
    except OSError:
        return []
    # the command name is in parentheses and may hold anything: fields follow the last ')'
    return data[data.rfind(b")") + 2 :].split()


def stat(pid: int | str) -> tuple[int, int, int] | None:
    """``(ppid, pgid, sid)`` of a process, from ``/proc/PID/stat``."""
    fields = _fields(pid)
    try:  # state ppid pgrp session ...
        return int(fields[1]), int(fields[2]), int(fields[3])
    except (IndexError, ValueError):
        return None


def group_alive(pgid: int) -> bool:
    """Whether a process of group ``pgid`` still runs (zombies have ended: their files
    are closed, their locks let go). Elsewhere than Linux: whether the group exists."""
    if not LINUX:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    for name in os.listdir("/proc"):
        if name.isdigit():
            fields = _fields(name)
            if len(fields) > 2 and fields[2] == str(pgid).encode() and fields[0] not in b"ZX":
                return True
    return False


def processes() -> Table:
    """Every process ``/proc`` shows, by pid."""
    table = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return {}
    for name in names:
        if name.isdigit():
            found = stat(name)
            if found is not None:
                table[int(name)] = found
    return table


def descendants(table: Table, pid: int) -> set[int]:
    """Every process below ``pid`` in ``table`` (its children, theirs, and so on)."""
    below: dict[int, list[int]] = {}
    for child, (ppid, _, _) in table.items():
        below.setdefault(ppid, []).append(child)
    found: set[int] = set()
    stack = [pid]
    while stack:
        for child in below.get(stack.pop(), ()):
            if child not in found and child != pid:
                found.add(child)
                stack.append(child)
    return found


class _NoLock:
    def __enter__(self) -> object:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def kill_and_reap(
    victims_in: Callable[[Table], set[int]],
    seconds: float,
    guard: AbstractContextManager[object] | None = None,
) -> None:
    """SIGKILL every process ``victims_in(table)`` names, and reap those that are (or
    become) our children; rescanned until a scan names none, or ``seconds`` pass.

    A killed process's own children come back to a subreaper once it dies, so
    each scan may name new ones. ``guard`` (a lock) is held while a scan reads
    the table and kills, so another thread never races a process it registers.
    """
    deadline = time.monotonic() + seconds
    me = os.getpid()
    spared: set[int] = set()  # not ours to kill (another user's, after a setuid): left
    lock = guard if guard is not None else _NoLock()
    while True:
        with lock:
            table = processes()
            victims = victims_in(table) - spared
            for pid in victims:
                try:
                    os.kill(pid, SIGKILL)
                except PermissionError:
                    spared.add(pid)
                except OSError:
                    pass
            victims -= spared
        if not victims:
            return
        _reap({pid for pid in victims if table[pid][0] == me}, deadline)
        if time.monotonic() >= deadline:
            return
        if not any(table[pid][0] == me for pid in victims):
            time.sleep(0.001)  # only dying grandchildren: give their parents time to go


def _reap(pending: set[int], deadline: float) -> None:
    """Wait for our killed children, until they are reaped or the deadline passes."""
    while True:
        for pid in list(pending):
            try:
                if os.waitpid(pid, os.WNOHANG)[0]:
                    pending.discard(pid)
            except ChildProcessError:  # reaped elsewhere (another thread's sweep)
                pending.discard(pid)
        if not pending or time.monotonic() >= deadline:
            return
        time.sleep(0.001)
