"""The Stop hook: an idle Claude Code session woken by the next wake it has not seen.

Claude Code runs this hook in the background (``asyncRewake``) each time a
turn ends, and wakes the model when it exits 2, with its stderr as the
message. :func:`wait_for_wake` is that wait: it returns the wakes to give
(the prompt hook's :func:`~rouse.agents.prompt_hook.take_new`, so a wake is
shown at most once per session, whichever hook shows it), or nothing when
the wait ends without one.

What it owns: the session's waiter registration (``.rouse/sessions/<id>.waiter``,
one per session; a newer waiter overwrites it and the older one leaves
quietly), the wait itself (inotify on Linux, else a slow poll; no CPU spent
while nothing happens), and noticing the end of the session: the SessionEnd
hook removes the registration (:func:`end_session`), and the waiter watches
the agent's process, and for a stream-json session its input, by itself.
What it does not own: what a wake is, or whether it still stands
(``prompt_hook``, ``core.nudges``), and printing (``hook``).
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import time
from pathlib import Path

from rouse.agents import prompt_hook
from rouse.core import layout, nudges, statedir, statefile, stateshapes

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

#: How long an idle session is waited on by default: a working day left open.
WAIT_DEFAULT = 12 * 3600
#: The Stop hook's ``timeout`` in the settings rouse writes; a wait stays below it.
HOOK_TIMEOUT = 24 * 3600
WAIT_MOST = HOOK_TIMEOUT - 600
CHECK_EVERY = 60.0  # with inotify: a look at the session's processes and transcript anyway
POLL_EVERY = 3.0  # without it: the slow poll
SETTLE_EVERY = 0.5  # while a new nudge file waits for the ledger to vouch for it
SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ash", "ksh", "mksh", "busybox", "fish"})
SUFFIX = ".waiter"

# inotify(7): the events that can mean a new wake, a newer waiter, or the session's end
IN_MODIFY, IN_CLOSE_WRITE, IN_MOVED_TO, IN_CREATE, IN_DELETE = 0x2, 0x8, 0x80, 0x100, 0x200
IN_ONLYDIR, IN_DONT_FOLLOW, IN_CLOEXEC, IN_NONBLOCK = 0x01000000, 0x02000000, 0o2000000, 0o4000
NUDGE_EVENTS = IN_CREATE | IN_MOVED_TO
SESSION_EVENTS = IN_CLOSE_WRITE | IN_MOVED_TO | IN_DELETE


def waiter_file(root: Path, session_id: object) -> Path | None:
    """Where this session's waiter registers, or None without a usable session id."""
    seen = prompt_hook.seen_file(root, session_id)
    return None if seen is None else seen.with_suffix(SUFFIX)


def end_session(root: Path, session_id: object) -> None:
    """The SessionEnd side: whichever waiter this session has leaves at once."""
    path = waiter_file(root, session_id)
    if path is not None and not statefile.through_link(path):
        with contextlib.suppress(OSError):
            path.unlink()


def wait_for_wake(
    root: Path, session: Mapping[str, Any], max_wait: float, watch: bool = True
) -> list[tuple[str, nudges.Nudge]]:
    """Wait (at most ``max_wait`` seconds) for wakes this session has not seen.

    Returns them (already marked seen), or [] when the wait ended without one:
    superseded by a newer waiter, the session ended, the maximum reached, a
    one-shot ``claude -p`` session (nobody to wake), or no place to register.
    """
    session_id = session.get("session_id")
    me = waiter_file(root, session_id)
    if me is None or max_wait <= 0:
        return []
    agent = Agent.find()
    watcher: Watcher | None = None
    try:
        if agent.one_shot:
            return []  # it ends after this turn: the next session's pack shows the wakes
        if statefile.through_link(me):
            return []
        with contextlib.suppress(OSError):
            me.parent.mkdir(parents=True, exist_ok=True)
        watcher = Watcher(root, me.parent) if watch else None  # before registering: then
        # a registered waiter is one already asleep
        mark = {"pid": os.getpid(), "at": time.time_ns()}
        if not statefile.save_json(me, mark):
            return []  # a link, a read-only tree: no registration, so no wait
        previous = signal.signal(signal.SIGTERM, _leave)
        try:
            transcript = session.get("transcript_path")
            return _wait(root, session_id, me, mark, agent, max_wait, watcher, transcript)
        except _Left:
            return []
        finally:
            signal.signal(signal.SIGTERM, previous)
            if stateshapes.WAITER.read(me) == mark:
                with contextlib.suppress(OSError):
                    me.unlink()
    finally:
        agent.close()
        if watcher is not None:
            watcher.close()


class _Left(Exception):
    """SIGTERM: leave the wait (the registration is removed on the way out)."""


def _leave(signum: int, frame: object) -> None:
    raise _Left


def _wait(
    root: Path,
    session_id: object,
    me: Path,
    mark: dict[str, int],
    agent: Agent,
    max_wait: float,
    watcher: Watcher | None,
    transcript: object,
) -> list[tuple[str, nudges.Nudge]]:
    deadline = time.monotonic() + max_wait
    log = Path(transcript) if isinstance(transcript, str) and transcript else None
    had_log = log is not None and log.is_file()
    poller = select.poll()
    watching = watcher is not None and watcher.fd is not None
    if watcher is not None and watcher.fd is not None:
        poller.register(watcher.fd, select.POLLIN)
    gone = agent.register(poller)
    while True:
        if stateshapes.WAITER.read(me) != mark or agent.gone():
            return []  # superseded, or the session has ended
        if had_log and log is not None and not log.exists():
            return []
        found, unsettled = prompt_hook.take_new(root, session_id)
        if found:
            return found
        left = deadline - time.monotonic()
        if left <= 0:
            return []
        quiet = CHECK_EVERY if watching else POLL_EVERY
        events = poller.poll(1000 * min(left, SETTLE_EVERY if unsettled else quiet))
        if any(fd in gone for fd, _ in events):
            return []
        if watcher is not None:
            watcher.drain()


class Watcher:
    """inotify on ``.rouse/nudges/`` and ``.rouse/sessions/`` (Linux), through ctypes.

    ``fd`` is None where inotify cannot be had (another system, a limit
    reached): the wait is then a slow poll. No watch follows a symlink.
    """

    def __init__(self, root: Path, sessions: Path) -> None:
        self.root = root
        self.fd: int | None = None
        self.nudges = False
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)  # the process's own symbols: libc's
            self._add = libc.inotify_add_watch
            self._add.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
            fd = libc.inotify_init1(IN_CLOEXEC | IN_NONBLOCK)
        except (OSError, AttributeError):
            return
        if fd < 0:
            return
        self.fd = fd
        if not self._watch(sessions, SESSION_EVENTS):
            self.close()  # without its own registration watched, a poll is the honest wait
            return
        self._watch_nudges()

    def _watch(self, folder: Path, mask: int) -> bool:
        assert self.fd is not None
        flags = mask | IN_ONLYDIR | IN_DONT_FOLLOW
        return bool(self._add(self.fd, os.fsencode(folder), flags) >= 0)

    def _watch_nudges(self) -> None:
        """Watch the nudges folder; until the first sweep makes it, ``.rouse/`` for it."""
        if self.nudges or self.fd is None:
            return
        if statedir.path_problem(self.root, nudges.DIR, directory=True) is not None:
            return  # behind a link: nothing is read there, so nothing to watch for
        if nudges.nudge_dir(self.root).is_dir():
            self.nudges = self._watch(nudges.nudge_dir(self.root), NUDGE_EVENTS)
        else:
            self._watch(self.root / layout.STATE_DIR, IN_CREATE | IN_MOVED_TO)

    def drain(self) -> None:
        """Read and drop what inotify says: the loop looks at the folders itself."""
        if self.fd is None:
            return
        with contextlib.suppress(OSError):
            while os.read(self.fd, 65536):
                pass
        self._watch_nudges()

    def close(self) -> None:
        if self.fd is not None:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = None


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

    def __init__(self, pids: list[int], args: list[str], stdin: int | None) -> None:
        self.parent = os.getppid()
        self.pids = pids
        self.one_shot = _one_shot(args)
        self.fds: list[int] = []
        self.stdin = stdin

    @classmethod
    def find(cls) -> Agent:
        parent = os.getppid()
        above = _stat_parent(parent)
        agent = above[0] if above is not None and above[1] in SHELLS else parent
        pids = [p for p in dict.fromkeys((parent, agent)) if p > 1]
        args = _cmdline(agent)
        return cls(pids, args, _input_pipe(agent) if _prints(args) else None)

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
            with contextlib.suppress(OSError):
                os.close(fd)
        self.fds, self.stdin = [], None


def _stat_parent(pid: int) -> tuple[int, str] | None:
    """A process's parent and its name, from ``/proc/<pid>/stat``; None without /proc."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text("utf-8", "replace")
        name = text[text.index("(") + 1 : text.rindex(")")]
        return int(text[text.rindex(")") + 2 :].split()[1]), name
    except (OSError, ValueError, IndexError):
        return None


def _cmdline(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
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


def _one_shot(args: list[str]) -> bool:
    return _prints(args) and not _streams(args)


def _input_pipe(pid: int) -> int | None:
    """A read end of the agent's stdin, when that is a pipe (never read from)."""
    import stat

    path = f"/proc/{pid}/fd/0"
    try:
        if not stat.S_ISFIFO(os.stat(path).st_mode):
            return None
        return os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None


def max_wait(given: str | None) -> float:
    """``ROUSE_STOP_WAIT``: seconds, or an interval (``4h``), or ``off``; else the default."""
    if not given:
        return WAIT_DEFAULT
    text = given.strip().lower()
    if text in ("off", "no", "0"):
        return 0.0
    try:
        seconds = float(text)
    except ValueError:
        from rouse.core.timefmt import parse_interval

        try:
            seconds = parse_interval(text).total_seconds()
        except ValueError:
            return WAIT_DEFAULT
    return min(max(seconds, 0.0), WAIT_MOST)
