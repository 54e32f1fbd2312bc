"""A command started in its own process group, its output drained, its group stopped whole.

Light on purpose: the run supervisor (:mod:`rouse.runs.supervisor`) starts
once per run, so this imports nothing past ``os``, ``select``, ``signal``,
``time`` and :mod:`rouse.core.procs` (no ``subprocess``: the child is forked
and exec'd here). The exec sink drains its ``subprocess`` child with the same loop
(:func:`run_until_exit`) and kills its group whole (:func:`kill_group`).

The output is a pipe read without blocking, of which the last MAX_OUTPUT
bytes are kept; the command counts as finished when it exits (a helper still
holding the pipe is not waited for).
"""

from __future__ import annotations

import os
import select
import time

from rouse.core import procs

TYPE_CHECKING = False
if TYPE_CHECKING:
    import subprocess
    from collections.abc import Callable, Mapping, Sequence
    from typing import Any


def _signals() -> Any:
    """CPython's C module that ``signal`` wraps: the same functions and numbers, without
    the enum import that is most of a supervisor's start-up (it starts once per run)."""
    try:
        return __import__("_signal")
    except ImportError:  # another Python: the module itself
        return __import__("signal")


signal = _signals()

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


def drain_until_exit(
    fd: int, poll: Callable[[], int | None], output: Output, deadline: float
) -> int | None:
    """Read ``fd`` into ``output`` until ``poll`` says the command exited: its exit code,
    or None at the deadline.

    The command counts as finished when it exits, even while a helper it
    started still holds the pipe open: what is already in the pipe is read,
    the rest is not waited for.
    """
    os.set_blocking(fd, False)
    waiting = select.poll()  # (not select.select: no FD_SETSIZE limit)
    waiting.register(fd, select.POLLIN)
    open_pipe = True
    while True:
        code = poll()
        if code is not None:
            if open_pipe:
                _drain(fd, output, deadline)
            return code
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        if not open_pipe:
            time.sleep(min(left, POLL))
            continue
        ready = waiting.poll(min(left, POLL) * 1000)
        if ready and not _read(fd, output):
            open_pipe = False


def run_until_exit(proc: subprocess.Popen[bytes], output: Output, deadline: float) -> int | None:
    """Drain ``proc``'s output until it exits; its exit code, or None at the deadline."""
    assert proc.stdout is not None
    return drain_until_exit(proc.stdout.fileno(), proc.poll, output, deadline)


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL to ``proc``'s whole process group, then reap it."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:  # (not contextlib.suppress: the supervisor does without it)
        proc.wait()
        return
    proc.wait()


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


class Child:
    """A command running in a session (so a process group) of its own."""

    def __init__(self, pid: int, out: int) -> None:
        self.pid = pid
        self.out = out  # the read end of its stdout and stderr
        self.code: int | None = None

    @classmethod
    def spawn(
        cls,
        argv: Sequence[str],
        cwd: str,
        env: Mapping[str, str],
        stdin: int,
        keep: Sequence[int] = (),
    ) -> Child:
        """Fork and exec ``argv`` (its executable a path: never looked up here) in ``cwd``,
        ``stdin`` as its input, its output into a pipe. OSError when it cannot start.

        The command dies with the process that spawns it (SIGKILL, on Linux), and
        inherits the descriptors ``keep`` (the run's locks: their flock is held as
        long as the command, or anything it started, has them open)."""
        if "/" not in argv[0]:
            raise FileNotFoundError(2, "not found on PATH (absolute entries only)")
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()  # closed by a successful exec (both are close-on-exec)
        parent = os.getpid()
        procs.prepare()  # (prctl looked up here: the child imports nothing)
        try:
            pid = os.fork()
        except OSError:
            for fd in (out_r, out_w, err_r, err_w):
                os.close(fd)
            raise
        if pid == 0:  # the child: nothing here may return or raise
            try:
                os.setsid()
                if not procs.die_with_parent(parent):
                    os._exit(127)  # its supervisor is already gone: nothing to run for
                for fd in keep:
                    os.set_inheritable(fd, True)
                os.chdir(cwd)
                os.dup2(stdin, 0)
                os.dup2(out_w, 1)
                os.dup2(out_w, 2)
                _default_signals()
                os.execve(argv[0], list(argv), dict(env))
            except OSError as exc:
                os.write(err_w, f"{exc.errno or 0}:{exc.strerror or exc}".encode())
            except BaseException:
                os.write(err_w, b"0:cannot start")
            os._exit(127)
        os.close(out_w)
        os.close(err_w)
        try:
            said = _read_all(err_r)
        finally:
            os.close(err_r)
        if said:
            os.close(out_r)
            os.waitpid(pid, 0)
            number, _, why = said.decode("utf-8", "replace").partition(":")
            raise OSError(int(number) if number.isdigit() else 0, why)
        return cls(pid, out_r)

    def poll(self) -> int | None:
        """Its exit code once it has exited (a signal's death as ``-N``), else None."""
        if self.code is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:
                self.code = -1
                return self.code
            if pid:
                self.code = os.waitstatus_to_exitcode(status)
        return self.code

    def wait(self, timeout: float) -> int | None:
        end = time.monotonic() + timeout
        while self.poll() is None:
            left = end - time.monotonic()
            if left <= 0:
                return None
            time.sleep(min(left, POLL / 5))
        return self.code

    def signal_group(self, number: int) -> None:
        try:
            os.killpg(self.pid, number)
        except (ProcessLookupError, PermissionError):
            return  # (not contextlib.suppress: the supervisor does without contextlib)

    def stop_group(self, grace: float) -> None:
        """SIGTERM to its whole process group, SIGKILL after ``grace`` seconds."""
        self.signal_group(signal.SIGTERM)
        self.wait(grace)
        self.signal_group(signal.SIGKILL)
        self.wait(float("inf"))

    def close(self) -> None:
        if self.out >= 0:
            os.close(self.out)
            self.out = -1


def _read_all(fd: int) -> bytes:
    data = b""
    while True:
        chunk = os.read(fd, 4096)
        if not chunk:
            return data
        data += chunk


def _default_signals() -> None:
    """In the forked child: SIGINT, SIGPIPE and SIGXFSZ back to their defaults (a Python
    parent ignores SIGPIPE and SIGXFSZ, which an exec'd command would inherit)."""
    for name in ("SIGINT", "SIGPIPE", "SIGXFZ", "SIGXFSZ"):
        number = getattr(signal, name, None)
        if number is not None:
            signal.signal(number, signal.SIG_DFL)
