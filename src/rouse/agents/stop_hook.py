"""The Stop hook: an idle Claude Code session woken by the next wake it has not seen.

Claude Code runs it in the background (``asyncRewake``) at each turn's end and wakes the
model when it exits 2, with its stderr as the message. It owns the session's waiter
registration (``.rouse/sessions/<id>.waiter``: a newer waiter overwrites it and the older
one leaves quietly), the wait (inotify on Linux, else a slow poll: no CPU spent while
nothing happens) and noticing the session's end (SessionEnd removes the registration;
the waiter watches the agent's process, and a stream-json session's input). What a wake
is, and whether it stands, is ``prompt_hook``'s (:func:`~rouse.agents.prompt_hook.take_new`:
a wake is shown once per session, whichever hook shows it); printing is ``hook``'s. Up to
its wait it imports nothing heavy (no pathlib, json, contextlib, enum).
"""

from __future__ import annotations

import os
import select
import time

from rouse.agents import prompt_hook
from rouse.agents.agentproc import Agent
from rouse.core import inotify
from rouse.state.files import NUDGES_DIR, STATE_DIR, dumps, save_bytes, suppress, through_link
from rouse.state.shapes import WAITER

TYPE_CHECKING = False
if not TYPE_CHECKING:
    try:  # signal's C half: the module itself imports enum (~4 ms) for its names
        import _signal as signal
    except ImportError:
        import signal
if TYPE_CHECKING:
    import signal
    from collections.abc import Mapping
    from pathlib import Path
    from typing import Any

    from rouse.state import nudges

#: How long an idle session is waited on by default: a working day left open.
WAIT_DEFAULT = 12 * 3600
#: The Stop hook's ``timeout`` in the settings rouse writes (Claude Code kills it then);
#: a wait stays below it.
HOOK_TIMEOUT = 24 * 3600
WAIT_MOST = HOOK_TIMEOUT - 600
CHECK_EVERY = 60.0  # with inotify: a look at the session's processes and transcript anyway
POLL_EVERY = 3.0  # without it: the slow poll
SETTLE_EVERY = 0.5  # while a new nudge file waits for the ledger to vouch for it
SUFFIX = ".waiter"

# inotify(7): the events that can mean a new wake, a newer waiter, or the session's end
NUDGE_EVENTS = inotify.IN_CREATE | inotify.IN_MOVED_TO
SESSION_EVENTS = inotify.IN_CLOSE_WRITE | inotify.IN_MOVED_TO | inotify.IN_DELETE


def waiter_file(root: str | Path, session_id: object) -> Path | None:
    """Where this session's waiter registers, or None without a usable session id."""
    from pathlib import Path

    path = _waiter(root, session_id)
    return None if path is None else Path(path)


def _waiter(root: str | Path, session_id: object) -> str | None:
    seen = prompt_hook.seen_file(root, session_id)
    return None if seen is None else seen.removesuffix(".json") + SUFFIX


def end_session(root: str | Path, session_id: object) -> None:
    """The SessionEnd side: whichever waiter this session has leaves at once."""
    path = _waiter(root, session_id)
    if path is not None and not through_link(path):
        with suppress(OSError):
            os.unlink(path)


def wait_for_wake(
    root: str | Path, session: Mapping[str, Any], max_wait: float, watch: bool = True
) -> list[tuple[str, nudges.Nudge]]:
    """Wait (at most ``max_wait`` seconds) for wakes this session has not seen.

    Returns them (already marked seen), or [] when the wait ended without one:
    superseded by a newer waiter, the session ended, the maximum reached, a
    one-shot ``claude -p`` session (nobody to wake), or no place to register.
    """
    session_id = session.get("session_id")
    me = _waiter(root, session_id)
    if me is None or max_wait <= 0:
        return []
    agent = Agent()
    try:
        if agent.one_shot:
            return []  # it ends after this turn: the next session's pack shows the wakes
        if through_link(me):
            return []
        with suppress(OSError):
            os.makedirs(os.path.dirname(me), exist_ok=True)
        mark = {"pid": os.getpid(), "at": time.time_ns()}
        # the handler first: a SIGTERM the instant the registration lands leaves with it
        previous = signal.signal(signal.SIGTERM, _leave)
        try:
            if not save_bytes(me, dumps(mark)):
                return []  # a link, a read-only tree: no registration, so no wait
            return _wait(root, session, mark, agent, max_wait, watch)
        except _Left:
            return []
        finally:
            signal.signal(signal.SIGTERM, previous)
            if WAITER.read(me) == mark:
                with suppress(OSError):
                    os.unlink(me)
    finally:
        agent.close()


class _Left(Exception):
    """SIGTERM: leave the wait (the registration is removed on the way out)."""


def _leave(signum: int, frame: object) -> None:
    raise _Left


def _wait(
    root: str | Path,
    session: Mapping[str, Any],
    mark: dict[str, int],
    agent: Agent,
    max_wait: float,
    watch: bool,
) -> list[tuple[str, nudges.Nudge]]:
    """The wait itself, while this waiter's registration says ``mark``. The watch begins
    only when there is a wait to sleep through (a waiter that leaves at its first look
    never pays for ctypes and inotify), and every look follows the watch's start:
    nothing written before it is missed."""
    deadline = time.monotonic() + max_wait
    session_id = session.get("session_id")
    me = _waiter(root, session_id)
    assert me is not None  # (registered: its caller found it)
    transcript = session.get("transcript_path")
    log = transcript if isinstance(transcript, str) and transcript else None
    had_log = log is not None and os.path.isfile(log)
    poller = select.poll()
    watcher: NudgeWatcher | None = None
    gone = agent.register(poller)
    try:
        while True:
            if WAITER.read(me) != mark or agent.gone():
                return []  # superseded, or the session has ended
            if had_log and log is not None and not os.path.exists(log):
                return []
            found: list[tuple[str, nudges.Nudge]] = []
            unsettled = False
            if not prompt_hook.nothing_new(root, session_id):
                try:
                    found, unsettled = prompt_hook.take_new(root, session_id)
                except prompt_hook.Busy:
                    unsettled = True  # the lock is held elsewhere: look again soon
            if found:
                return found
            left = deadline - time.monotonic()
            if left <= 0:
                return []
            if watch and watcher is None:
                watcher = NudgeWatcher(os.fspath(root), os.path.dirname(me))
                if watcher.fd is not None:
                    poller.register(watcher.fd, select.POLLIN)
                continue  # look again, now that the watch is on
            quiet = CHECK_EVERY if watcher is not None and watcher.fd is not None else POLL_EVERY
            events = poller.poll(1000 * min(left, SETTLE_EVERY if unsettled else quiet))
            if any(fd in gone for fd, _ in events):
                return []
            if watcher is not None:
                watcher.drain()
    finally:
        if watcher is not None:
            watcher.close()


class NudgeWatcher:
    """inotify on ``.rouse/nudges/`` and ``.rouse/sessions/`` (Linux, :mod:`rouse.core.inotify`).

    ``fd`` is None where inotify cannot be had (another system, a limit
    reached): the wait is then a slow poll. No watch follows a symlink.
    """

    def __init__(self, root: str, sessions: str) -> None:
        self.root = root
        self.fd: int | None = None
        self.nudges = False
        self.inotify = inotify.open_inotify()
        if self.inotify is None:
            return
        self.fd = self.inotify.fd
        if not self._watch(sessions, SESSION_EVENTS):
            self.close()  # without its own registration watched, a poll is the honest wait
            return
        self._watch_nudges()

    def _watch(self, folder: str, mask: int) -> bool:
        assert self.inotify is not None
        return self.inotify.add(folder, mask | inotify.IN_ONLYDIR | inotify.IN_DONT_FOLLOW) >= 0

    def _watch_nudges(self) -> None:
        """Watch the nudges folder; until the first sweep makes it, ``.rouse/`` for it."""
        if self.nudges or self.fd is None:
            return
        state = os.path.join(self.root, STATE_DIR)
        folder = os.path.join(state, NUDGES_DIR)
        if prompt_hook.usable_dir(state) is None:
            return  # missing, or behind a link: nothing is read there, so nothing to watch for
        if prompt_hook.usable_dir(folder) is not None:
            self.nudges = self._watch(folder, NUDGE_EVENTS)
        elif not os.path.lexists(folder):
            self._watch(state, inotify.IN_CREATE | inotify.IN_MOVED_TO)

    def drain(self) -> None:
        """Read and drop what inotify says: the loop looks at the folders itself."""
        if self.fd is None:
            return
        with suppress(OSError):
            while os.read(self.fd, 65536):
                pass
        self._watch_nudges()

    def close(self) -> None:
        if self.fd is not None:
            with suppress(OSError):
                os.close(self.fd)
            self.fd = None


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
