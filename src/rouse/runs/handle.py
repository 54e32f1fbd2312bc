"""The starter's side of a supervised run (see :mod:`rouse.runs.supervisor`).

:func:`claim` starts the supervisor and has it take the run's locks;
:meth:`Supervised.go` starts the run, :meth:`Supervised.poll` and
:meth:`Supervised.wait` read its result, :meth:`Supervised.release` lets the
locks go once the result is recorded. :func:`resolve` finds the agent's
executable before anything changes directory, on absolute PATH entries only.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rouse.core.errors import RouseError

#: How long a supervisor may take to start and answer (a loaded machine is slow).
ANSWER_WITHIN = 60.0


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
    nothing matches (starting it then fails with the usual message)."""
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
    """One supervising process: its locks taken, its run not started yet."""

    def __init__(self, proc: subprocess.Popen[bytes], pid: int) -> None:
        self.proc = proc
        self.pid = pid
        self.buffer = b""
        self.ended: Ended | None = None
        self.released = False

    def _send(self, line: str) -> None:
        assert self.proc.stdin is not None
        with contextlib.suppress(OSError):
            self.proc.stdin.write((line + "\n").encode())
            self.proc.stdin.flush()

    def go(self) -> None:
        self._send("go")

    def stop(self) -> None:
        """Ask for the run to be stopped (its group: TERM, then KILL after the grace)."""
        self._send("stop")

    def poll(self, timeout: float = 0) -> Ended | None:
        """The run's result if it has ended (waiting at most ``timeout`` seconds)."""
        if self.ended is None:
            event = _event(self.proc, self, timeout)
            if event is not None and event.get("event") == "ended":
                self.ended = Ended(
                    event["code"], float(event["seconds"]), event["stopped"], event["tail"]
                )
            elif event is None and self.proc.poll() is not None and b"\n" not in self.buffer:
                raise SupervisorError(f"the run's supervisor (pid {self.pid}) died")
        return self.ended

    def wait(self) -> Ended:
        while True:
            ended = self.poll(1.0)
            if ended is not None:
                return ended

    def release(self) -> None:
        """The result is recorded: the supervisor lets its locks go and exits."""
        if self.released:
            return
        self.released = True
        self._send("release")
        with contextlib.suppress(OSError):
            assert self.proc.stdin is not None
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=ANSWER_WITHIN)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()


def _event(proc: subprocess.Popen[bytes], into: Any, timeout: float) -> dict[str, Any] | None:
    """The next JSON event the supervisor wrote, waiting at most ``timeout`` seconds."""
    import selectors

    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    end = time.monotonic() + timeout
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while b"\n" not in into.buffer:
            left = end - time.monotonic()
            if not selector.select(max(0.0, left)):
                if left <= 0:
                    return None
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                return None
            into.buffer += chunk
    line, into.buffer = into.buffer.split(b"\n", 1)
    found: dict[str, Any] = json.loads(line)
    return found


def claim(spec: dict[str, Any]) -> Supervised | str:
    """Start a supervisor for ``spec`` and have it take the locks: the handle, or
    (a string) why not — a lock is taken by a live run."""
    proc = subprocess.Popen(
        [sys.executable, "-S", "-m", "rouse.runs.supervisor"],  # (-S: stdlib only, quicker)
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd="/",
        env=_python_env(),
        start_new_session=True,  # outlives its starter: not in its process group
    )
    assert proc.stdin is not None
    try:
        proc.stdin.write((json.dumps(spec) + "\n").encode())
        proc.stdin.flush()
    except OSError as exc:
        proc.kill()
        proc.wait()
        raise SupervisorError(f"cannot start a run's supervisor: {exc}") from None
    holder = Supervised(proc, proc.pid)
    event = _event(proc, holder, ANSWER_WITHIN)
    if event is None or event.get("event") not in ("locked", "busy"):
        proc.kill()
        proc.wait()
        raise SupervisorError("a run's supervisor did not answer")
    if event["event"] == "busy":
        holder.release()
        return str(event.get("error") or f"taken: {event.get('lock')}")
    return holder


def _python_env() -> dict[str, str]:
    """The supervisor's own environment: this one, with rouse importable as it is here."""
    env = dict(os.environ)
    here = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = here + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env
