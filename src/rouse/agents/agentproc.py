"""The agent's process, as the Stop hook's waiter watches it (Linux ``/proc``, pidfds).

The waiter (:mod:`rouse.agents.stop_hook`) leaves when the session ends: when
Claude Code's process is gone, when this hook is left an orphan, or when a
stream-json session's input is closed; and it does not wait at all in a
one-shot ``claude -p``, which ends after its turn. Light to import, as the
rest of the Stop hook's path up to its wait (no pathlib).
"""

from __future__ import annotations

import os
import select
import stat

from rouse.state.files import suppress

SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ash", "ksh", "mksh", "busybox", "fish"})


class Agent:
    """The agent's process (Claude Code): the one that ran the hook's shell.

    Found through ``/proc`` (Linux): the hook's parent, or its grandparent when
    the parent is the shell Claude Code runs a command hook in. Watched with a
    pidfd where there is one, else checked at each look. ``one_shot``: it is
    ``claude -p`` with a prompt (no ``--input-format stream-json``), which ends
    after its turn and would only wait for this hook at exit. A stream-json
    session's input is watched too: when its writer closes it, the session is
    ending (Claude Code would otherwise wait for this hook for 30 s).
    """

    def __init__(self) -> None:
        self.parent = os.getppid()
        above = _stat_parent(self.parent)
        agent = above[0] if above is not None and above[1] in SHELLS else self.parent
        self.pids = [p for p in dict.fromkeys((self.parent, agent)) if p > 1]
        args = _cmdline(agent)
        self.one_shot = _prints(args) and not _streams(args)
        self.fds: list[int] = []
        self.stdin = _input_pipe(agent) if _prints(args) else None

    def register(self, poller: select.poll) -> set[int]:
        """Watch the processes (and the stream-json input) in ``poller``; their fds."""
        for pid in self.pids:
            opener = getattr(os, "pidfd_open", None)
            if opener is None:
                break
            try:
                fd = opener(pid)
            except OSError:
                continue
            self.fds.append(fd)
            poller.register(fd, select.POLLIN)
        if self.stdin is not None:
            poller.register(self.stdin, 0)  # 0: only a hang-up (or an error) is reported
            return {*self.fds, self.stdin}
        return set(self.fds)

    def gone(self) -> bool:
        """Has the session's process ended (or left this hook an orphan)?"""
        if os.getppid() != self.parent:
            return True
        for pid in self.pids:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return True
            except OSError:
                pass  # alive, another user's
        if self.stdin is not None:
            ready = select.poll()
            ready.register(self.stdin, 0)
            if ready.poll(0):
                return True
        return False

    def close(self) -> None:
        for fd in [*self.fds, *([self.stdin] if self.stdin is not None else [])]:
            with suppress(OSError):
                os.close(fd)
        self.fds, self.stdin = [], None


def _stat_parent(pid: int) -> tuple[int, str] | None:
    """A process's parent and its name, from ``/proc/<pid>/stat``; None without /proc."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as handle:
            text = handle.read()
        name = text[text.index("(") + 1 : text.rindex(")")]
        return int(text[text.rindex(")") + 2 :].split()[1]), name
    except (OSError, ValueError, IndexError):
        return None


def _cmdline(pid: int) -> list[str]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            raw = handle.read()
    except OSError:
        return []
    return [os.fsdecode(part) for part in raw.split(b"\0") if part]


def _prints(args: list[str]) -> bool:
    """Is this Claude Code (by name: its executable, or the script node runs) printing?"""
    named = any("claude" in os.path.basename(a) for a in args[:2])
    return named and ("-p" in args[1:] or "--print" in args[1:])


def _streams(args: list[str]) -> bool:
    pairs = zip(args, [*args[1:], ""], strict=True)
    return "--input-format=stream-json" in args or ("--input-format", "stream-json") in pairs


def _input_pipe(pid: int) -> int | None:
    """A read end of the agent's stdin, when that is a pipe (never read from)."""
    path = f"/proc/{pid}/fd/0"
    try:
        if not stat.S_ISFIFO(os.stat(path).st_mode):
            return None
        return os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
