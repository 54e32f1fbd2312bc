"""The starter's side of a supervised run (see :mod:`rouse.runs.supervisor`).

:func:`start` starts the supervisor with a spec and returns at once; its
:meth:`Supervised.answer` says whether it took the run's locks (:func:`claim`
does both, waiting). :meth:`Supervised.go` starts the run,
:meth:`Supervised.poll` and :meth:`Supervised.wait` read its result,
:meth:`Supervised.release` lets the locks go once the result is recorded.
:func:`ready` waits on many supervisors at once (``rouse work --jobs``).
:func:`resolve` finds the agent's executable before anything changes
directory, on absolute PATH entries only.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rouse.core import procs
from rouse.core.errors import RouseError
from rouse.runs.wire import Frames, WireError, frame

#: How long a supervisor may take to start and answer (a loaded machine is slow).
ANSWER_WITHIN = 60.0
#: How long a run whose supervisor died may take to die of the SIGKILL its starter sends.
ORPHAN_DIES_WITHIN = 5.0
#: Where the supervisor is: run as a module, with the standard library only (``-S``).
_COMMAND = (sys.executable, "-S", "-m", "rouse.runs.supervisor")


class SupervisorError(RouseError):
    """The supervising process could not be started or stopped answering."""


@dataclass
class Ended:
    """How a supervised run ended."""

    code: int | None  # None: stopped (deadline, cancel, stop)
    seconds: float
    stopped: str | None  # deadline, cancel, stop
    tail: str  # ``: <the last few hundred bytes>`` (for an error message)

    @property
    def ok(self) -> bool:
        return self.code == 0 and self.stopped is None


def resolve(argv: Sequence[str], env: Mapping[str, str]) -> list[str]:
    """``argv`` with its executable made absolute: a path as given (from here), or the
    first match on ``env``'s PATH, relative and empty entries ignored. Unchanged when
    nothing matches (starting it then fails: a bare name is never looked up again)."""
    name = argv[0]
    if "/" in name:
        return [os.path.abspath(name), *argv[1:]]
    for entry in env.get("PATH", os.defpath).split(os.pathsep):
        if not entry or not os.path.isabs(entry):
            continue
        candidate = os.path.join(entry, name)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return [candidate, *argv[1:]]
    return list(argv)


class Supervised:
    """One supervising process: started with its spec, its locks maybe taken."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        self.pid = proc.pid
        self.frames = Frames()
        self.eof = False
        #: None until it answered; then "" (it holds the locks) or why not (busy)
        self.refused: str | None = None
        self.ended: Ended | None = None
        #: the run's pid, which is its process group's (None until it started)
        self.run_pid: int | None = None
        self.released = False
        self.started = time.monotonic()

    def fileno(self) -> int:
        assert self.proc.stdout is not None
        return self.proc.stdout.fileno()

    def _send(self, message: str) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(frame(message))
            self.proc.stdin.flush()
        except OSError:
            pass  # gone: poll says so

    def _read(self, timeout: float) -> dict[str, Any] | None:
        """The next event, waiting at most ``timeout`` seconds for it."""
        end = time.monotonic() + timeout
        while not self.frames.whole and not self.eof:
            if not _readable(self.fileno(), max(0.0, end - time.monotonic())):
                return None
            chunk = os.read(self.fileno(), 65536)
            if not chunk:
                self.eof = True
            self.frames.feed(chunk)
        try:
            found = self.frames.next()
        except WireError as exc:
            raise SupervisorError(f"the run's supervisor (pid {self.pid}) said {exc}") from None
        return found if isinstance(found, dict) else None

    @property
    def waiting(self) -> bool:
        """Whether an event may still come (it has not ended, nor said all it had)."""
        return not self.eof or self.frames.whole

    def answer(self, timeout: float = 0) -> str | None:
        """None until the supervisor has answered; then "" (the locks are taken) or why
        not (a lock is taken by a live run). SupervisorError: it died or said nonsense,
        or did not answer within :data:`ANSWER_WITHIN` of its start."""
        if self.refused is None:
            event = self._read(timeout)
            if event is not None and event.get("event") == "locked":
                self.refused = ""
            elif event is not None and event.get("event") == "busy":
                self.refused = str(event.get("error") or f"taken: {event.get('lock')}")
                self.release()
            elif event is not None or self.eof:
                self.kill()
                raise SupervisorError("a run's supervisor did not answer")
            elif time.monotonic() - self.started > ANSWER_WITHIN:
                self.kill()
                raise SupervisorError(f"a run's supervisor did not answer in {ANSWER_WITHIN:g}s")
        return self.refused

    def go(self) -> None:
        self._send("go")

    def stop(self) -> None:
        """Ask for the run to be stopped (its group: TERM, then KILL after the grace)."""
        self._send("stop")

    def poll(self, timeout: float = 0) -> Ended | None:
        """The run's result if it has ended (waiting at most ``timeout`` seconds).

        SupervisorError if the supervisor died first: its run, which nothing keeps
        to its deadline or lock any more, is killed (its whole process group) here.
        """
        end = time.monotonic() + timeout
        while self.ended is None:
            event = self._read(max(0.0, end - time.monotonic()))
            if event is not None and event.get("event") == "running":
                self.run_pid = int(event["pid"])
                continue
            if event is not None and event.get("event") == "ended":
                self.ended = Ended(
                    event["code"], float(event["seconds"]), event["stopped"], event["tail"]
                )
            elif event is None and self.eof:
                self._orphaned()
                raise SupervisorError(f"the run's supervisor (pid {self.pid}) died")
            break
        return self.ended

    def _orphaned(self) -> None:
        """The supervisor died mid-run: kill the run's process group, if it started, and
        wait (a few seconds at most) until it has died, so the locks it inherited are
        free when this returns (unless something of it that left the group holds them)."""
        if self.run_pid is not None and self.run_pid > 1:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.run_pid, signal.SIGKILL)
            end = time.monotonic() + ORPHAN_DIES_WITHIN
            while procs.group_alive(self.run_pid) and time.monotonic() < end:
                time.sleep(0.01)
            self.run_pid = None

    def wait(self) -> Ended:
        while True:
            ended = self.poll(1.0)
            if ended is not None:
                return ended

    def release(self, *, wait: bool = True) -> None:
        """The result is recorded: the supervisor lets its locks go and exits. ``wait``:
        until it has (else :meth:`gone` says when)."""
        if not self.released:
            self.released = True
            self._send("release")
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.close()
            except OSError:
                pass
        if wait:
            try:
                self.proc.wait(timeout=ANSWER_WITHIN)
            except subprocess.TimeoutExpired:
                self.kill()
            self._close()

    def gone(self) -> bool:
        """Released and exited (its locks are free)."""
        if self.proc.poll() is None:
            return False
        self._close()
        return True

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait()
        self._close()

    def _close(self) -> None:
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None and not pipe.closed:
                with contextlib.suppress(OSError):
                    pipe.close()


def _readable(fd: int, timeout: float) -> bool:
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        return bool(selector.select(timeout))


def ready(handles: Iterable[Supervised], timeout: float) -> list[Supervised]:
    """The handles with something to read (an event, or their end), waiting at most
    ``timeout`` seconds for the first."""
    listening = [h for h in handles if h.waiting]
    found = [h for h in listening if h.frames.whole]
    if found or not listening:
        if not found and timeout > 0:
            time.sleep(timeout)
        return found
    with selectors.DefaultSelector() as selector:
        for handle in listening:
            selector.register(handle.fileno(), selectors.EVENT_READ, handle)
        return [key.data for key, _ in selector.select(timeout)]


def start(spec: dict[str, Any]) -> Supervised:
    """Start a supervisor for ``spec`` (it takes the locks); at once, without waiting for
    its answer (:meth:`Supervised.answer`)."""
    try:
        proc = subprocess.Popen(
            _COMMAND,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd="/",
            env=_python_env(),
            start_new_session=True,  # outlives its starter: not in its process group
        )
    except OSError as exc:
        raise SupervisorError(f"cannot start a run's supervisor: {exc}") from None
    held = Supervised(proc)
    assert proc.stdin is not None
    try:
        proc.stdin.write(frame(spec))
        proc.stdin.flush()
    except OSError as exc:
        held.kill()
        raise SupervisorError(f"cannot start a run's supervisor: {exc}") from None
    return held


def claim(spec: dict[str, Any]) -> Supervised | str:
    """Start a supervisor for ``spec`` and have it take the locks: the handle, or
    (a string) why not — a lock is taken by a live run."""
    held = start(spec)
    while True:
        refused = held.answer(1.0)
        if refused is not None:
            return held if refused == "" else refused


#: the directory rouse is imported from here: the supervisor imports it from there too
_HERE = str(Path(__file__).resolve().parents[2])


def _python_env() -> dict[str, str]:
    """The supervisor's own environment: this one, with rouse importable as it is here."""
    env = dict(os.environ)
    env["PYTHONPATH"] = _HERE + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env
