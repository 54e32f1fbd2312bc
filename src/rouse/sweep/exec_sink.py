"""The exec sink: a command (no shell) fed the wake on stdin, exit 0 = delivered.

Also the running of a command under one deadline, shared with agent runs
(:mod:`rouse.sweep.runner`): its output drained and its last bytes kept, its
process group killed whole when the deadline passes.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path

from rouse.sweep.sink_base import SinkError, check_timeout, child_environment
from rouse.sweep.wake import Wake

MAX_OUTPUT = 64 * 1024  # of an exec command's output, kept for the error message
TAIL = 300  # bytes of that output the error message quotes
POLL = 0.05  # seconds between looks at whether an exec command has exited
DRAIN = 1024 * 1024  # bytes read from the pipe after the command exited, at most


class ExecSink:
    """Run a command (no shell) with the wake text on stdin; exit 0 = delivered."""

    kind = "exec"
    holdable = True

    def __init__(
        self, argv: Sequence[str], timeout: float, root: Path, base_env: Mapping[str, str]
    ):
        self.argv = list(argv)
        self.timeout = check_timeout(timeout)
        self.root = root
        self.base_env = child_environment(base_env)

    def describe(self) -> str:
        return f"exec {' '.join(self.argv)}"

    def environment(self, wake: Wake) -> dict[str, str]:
        return {
            **self.base_env,
            "ROUSE_WAKE_ID": wake.id,
            # the wakes it carries: a digest's, or this wake's own id
            "ROUSE_WAKE_IDS": " ".join(getattr(wake, "wake_ids", None) or [wake.id]),
            "ROUSE_RECORD": wake.record,
            "ROUSE_PATH": wake.path,
            "ROUSE_REASON": wake.reason,
            "ROUSE_NUDGE": str(wake.nudge),
            "ROUSE_MEMORY": str(self.root),
            # a message to the owner (rouse tell) adds its own: ROUSE_TELL_ID, ROUSE_CHANNEL
            **(getattr(wake, "extra_env", None) or {}),
        }

    def send(self, wake: Wake, now: datetime) -> str:
        deadline = time.monotonic() + self.timeout
        # stdin is a file, so a command that ignores it never blocks us; the
        # output is a pipe we drain, keeping its last MAX_OUTPUT bytes in memory
        with tempfile.TemporaryFile() as stdin:
            stdin.write(wake.text.encode("utf-8"))
            stdin.seek(0)
            try:
                proc = subprocess.Popen(
                    self.argv,
                    stdin=stdin,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    env=self.environment(wake),
                    start_new_session=True,  # its own process group, killed whole on timeout
                )
            except OSError as exc:
                raise SinkError(f"cannot run {self.argv[0]}: {exc.strerror or exc}") from None
        output = Output()
        try:
            code = _run(proc, output, deadline)
        except BaseException:
            _kill_group(proc)
            raise
        finally:
            if proc.stdout is not None:
                proc.stdout.close()
        if code is None:
            _kill_group(proc)
            raise SinkError(
                f"{self.argv[0]} did not finish within {self.timeout:g}s: "
                f"killed its process group{output.tail()}"
            )
        if code != 0:
            raise SinkError(f"{self.argv[0]} exited {code}{output.tail()}")
        return "exit 0"


class Output:
    """The last MAX_OUTPUT bytes of a command's output, and how many came before."""

    def __init__(self) -> None:
        self.kept = bytearray()
        self.discarded = 0

    def add(self, chunk: bytes) -> None:
        self.kept += chunk
        extra = len(self.kept) - MAX_OUTPUT
        if extra > 0:
            del self.kept[:extra]
            self.discarded += extra

    def tail(self) -> str:
        """``: <the last few hundred bytes, on one line>`` and what was discarded."""
        text = " ".join(self.kept[-TAIL:].decode("utf-8", errors="replace").split())
        note = f" ({self.discarded} bytes of output discarded)" if self.discarded else ""
        return f"{note}: {text}" if text else note


def _run(proc: subprocess.Popen[bytes], output: Output, deadline: float) -> int | None:
    """Drain ``proc``'s output until it exits; its exit code, or None at the deadline.

    The command counts as finished when it exits, even while a helper it
    started still holds the pipe open: what is already in the pipe is read,
    the rest is not waited for.
    """
    import selectors

    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    os.set_blocking(fd, False)
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        open_pipe = True
        while True:
            code = proc.poll()
            if code is not None:
                if open_pipe:
                    _drain(fd, output, deadline)
                return code
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            if not open_pipe:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    return proc.wait(timeout=min(left, POLL))
                continue
            if selector.select(min(left, POLL)) and not _read(fd, output):
                selector.unregister(fd)
                open_pipe = False


def _read(fd: int, output: Output) -> bool:
    """One read into ``output``; False at the end of the pipe."""
    try:
        chunk = os.read(fd, 65536)
    except BlockingIOError:
        return True
    output.add(chunk)
    return bool(chunk)


def _drain(fd: int, output: Output, deadline: float) -> None:
    """Read what the pipe holds now, not what a helper goes on writing.

    A pipe holds at most 1 MiB (Linux's default ``pipe-max-size``), so this
    stops after that much, or at the deadline, whichever comes first.
    """
    budget = DRAIN
    while budget > 0 and time.monotonic() < deadline:
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            return
        if not chunk:
            return
        output.add(chunk)
        budget -= len(chunk)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
