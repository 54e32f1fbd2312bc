"""The supervising process of one agent run (``python -m rouse.runs.supervisor``).

Started by whoever wants a run (the sweeper's ``--run``, ``rouse work``) in a
session of its own, it owns what must not die with its starter:

- the run's locks (flock, taken without waiting): the tree's one-run lock for
  ``sweep --run``, a task's claim for ``rouse work``. They are held from before
  the run starts until the starter has recorded its result, or until the run
  is over and the starter is gone: a killed starter never leaves a run without
  its lock, and a dead supervisor's locks are released by the OS at once;
- the run's deadline, and stopping it: its whole process group gets SIGTERM,
  then SIGKILL after a grace, at the deadline, when the watched record carries
  a ``cancel:`` stamp, or when the starter says ``stop`` (or sends SIGTERM);
- the run's log: a head the starter wrote, the exit and duration, the last
  64 KiB of output.

It talks to its starter over its stdin and stdout, one line each way at a
time. Starter → supervisor: the spec (one JSON object), then ``go`` (start
it), ``stop``, ``release`` (the result is recorded: let the locks go); end
of input means the starter is gone (a run in flight goes on to its end).
Supervisor → starter: JSON events, ``busy`` (a lock is taken: nothing ran)
or ``locked``, then ``ended`` with the exit code, the seconds and why it was
stopped, if it was. Nothing here knows what a wake or a task is.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from rouse.core import header
from rouse.runs.capture import MAX_OUTPUT, Output, run_until_exit, stop_group

#: How often (seconds) the supervisor looks at the watched record and its starter.
LOOK = 0.2


class Control:
    """The starter's side of the conversation: lines in (unbuffered), JSON out."""

    def __init__(self) -> None:
        self.buffer = b""
        self.gone = False  # end of input: the starter is gone

    def line(self, timeout: float | None) -> str | None:
        """The next line, None at the end of input or when ``timeout`` passes."""
        import selectors

        end = None if timeout is None else time.monotonic() + timeout
        with selectors.DefaultSelector() as selector:
            selector.register(0, selectors.EVENT_READ)
            while b"\n" not in self.buffer and not self.gone:
                left = None if end is None else max(0.0, end - time.monotonic())
                if not selector.select(left):
                    return None
                chunk = os.read(0, 65536)
                if not chunk:
                    self.gone = True
                self.buffer += chunk
        if b"\n" not in self.buffer:
            return None
        line, self.buffer = self.buffer.split(b"\n", 1)
        return line.decode("utf-8", "replace").strip()

    def say(self, **event: Any) -> None:
        with contextlib.suppress(OSError):  # a starter gone is no error of ours
            os.write(1, (json.dumps(event) + "\n").encode())


def take_locks(paths: list[str]) -> tuple[list[int], str | None]:
    """Flock each path without waiting: (the open descriptors, the first one taken)."""
    held: list[int] = []
    for path in paths:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            for other in held:
                os.close(other)
            return [], path
        os.ftruncate(fd, 0)
        since = datetime.now().strftime("%Y-%m-%d %H:%M:%S")
        os.write(fd, json.dumps({"pid": os.getpid(), "since": since}).encode())
        held.append(fd)
    return held, None


def cancelled(path: str | None) -> bool:
    """Whether the record at ``path`` carries a ``cancel:`` stamp (unreadable: no)."""
    if not path:
        return False
    try:
        found = header.read_header(path)
    except (OSError, ValueError):
        return False
    return bool((found.fields.get("cancel") or "").strip())


def run(spec: dict[str, Any], control: Control) -> dict[str, Any]:
    """Start the run and supervise it to its end; the ``ended`` event's fields."""
    output = Output()
    started = time.monotonic()
    timeout = float(spec["timeout"])
    deadline = started + timeout
    with tempfile.TemporaryFile() as stdin:
        stdin.write(str(spec.get("prompt", "")).encode("utf-8"))
        stdin.seek(0)
        try:
            proc = subprocess.Popen(
                spec["argv"],
                cwd=spec["cwd"],
                stdin=stdin,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                env=spec["env"],
                start_new_session=True,  # its own process group, stopped whole
            )
        except OSError as exc:
            output.add(f"cannot run {spec['argv'][0]}: {exc.strerror or exc}".encode())
            return finish(spec, output, 127, 0.0, None)
    stopped: str | None = None
    code: int | None = None
    try:
        while True:
            slice_end = min(deadline, time.monotonic() + LOOK)
            code = run_until_exit(proc, output, slice_end)
            if code is not None:
                break
            if time.monotonic() >= deadline:
                stopped = "deadline"
            elif STOP[0] or (not control.gone and control.line(0) == "stop"):
                stopped = "stop"
            elif cancelled(spec.get("watch")):
                stopped = "cancel"
            if stopped:
                stop_group(proc, float(spec.get("grace", 5)))
                run_until_exit(proc, output, time.monotonic() + 0.5)
                break
    finally:
        if proc.poll() is None:
            stop_group(proc, 0.5)
        if proc.stdout is not None:
            proc.stdout.close()
    return finish(spec, output, None if stopped else code, time.monotonic() - started, stopped)


def finish(
    spec: dict[str, Any], output: Output, code: int | None, seconds: float, stopped: str | None
) -> dict[str, Any]:
    """Write the run's log (its head, exit, duration, the last 64 KiB); the result."""
    ended = {
        "deadline": "killed (its process group) at the deadline",
        "cancel": "stopped (its process group): the record was cancelled",
        "stop": "stopped (its process group) by its starter",
    }
    exit_line = ended[stopped] if stopped else str(code)
    head = (
        str(spec.get("log_head", ""))
        + f"exit: {exit_line}\n"
        + f"duration: {seconds:.1f}s\n"
        + f"output: the last {MAX_OUTPUT // 1024} KiB"
        + (f" ({output.discarded} bytes before them discarded)" if output.discarded else "")
        + "\n---\n"
    )
    log = spec.get("log")
    if log:
        write_atomic(Path(log), head.encode() + bytes(output.kept))
    return {
        "event": "ended",
        "code": code,
        "seconds": round(seconds, 3),
        "stopped": stopped,
        "tail": output.tail(),
    }


def write_atomic(path: Path, data: bytes) -> None:
    """``data`` at ``path``: a temp file beside it, renamed over (never through a link)."""
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
            os.chmod(temp, 0o644)
            os.replace(temp, path)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(temp)


#: set by SIGTERM: stop the run (the starter hands it back)
STOP = [False]


def _on_term(signum: int, frame: object) -> None:
    STOP[0] = True


def main() -> int:
    """The supervisor's life: spec, locks, go, the run, its result, release."""
    signal.signal(signal.SIGTERM, _on_term)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    control = Control()
    first = control.line(None)
    if not first:
        return 2
    spec = json.loads(first)
    try:
        held, busy = take_locks(list(spec.get("locks", [])))
    except OSError as exc:
        control.say(event="busy", lock="", error=f"cannot take a run lock: {exc}")
        return 0
    if busy is not None:
        control.say(event="busy", lock=busy)
        return 0
    control.say(event="locked", pid=os.getpid())
    if control.line(None) != "go" or STOP[0]:
        return 0  # the starter changed its mind, or is gone: nothing ran
    result = run(spec, control)
    control.say(**result)
    # keep the locks until the starter has recorded the result (or is gone)
    while not control.gone:
        said = control.line(None)
        if said in ("release", None):
            break
    for fd in held:
        os.close(fd)
    return 0


if __name__ == "__main__":
    sys.exit(main())
