"""A command's output, drained while it runs; its process group, stopped whole.

Shared by the exec sink and the run supervisor: the output is a pipe read
without blocking, of which the last MAX_OUTPUT bytes are kept; the command
counts as finished when it exits (a helper still holding the pipe is not
waited for); stopping it signals its whole process group.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import time

MAX_OUTPUT = 64 * 1024  # of a command's output, kept (the rest is counted, discarded)
TAIL = 300  # bytes of that output an error message quotes
POLL = 0.05  # seconds between looks at whether a command has exited
DRAIN = 1024 * 1024  # bytes read from the pipe after the command exited, at most


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


def run_until_exit(proc: subprocess.Popen[bytes], output: Output, deadline: float) -> int | None:
    """Drain ``proc``'s output until it exits; its exit code, or None at the deadline.

    The command counts as finished when it exits, even while a helper it
    started still holds the pipe open: what is already in the pipe is read,
    the rest is not waited for.
    """
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


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def stop_group(proc: subprocess.Popen[bytes], grace: float) -> None:
    """SIGTERM to ``proc``'s whole process group, SIGKILL after ``grace`` seconds."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=grace)
    kill_group(proc)
