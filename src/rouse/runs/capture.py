"""A ``subprocess`` command's output, drained while it runs; its process group, stopped whole.

The exec sink's side of :mod:`rouse.runs.child` (the run supervisor forks its
own child there): the same :class:`Output` (the last MAX_OUTPUT bytes kept,
the rest counted), the same loop (the command counts as finished when it
exits; a helper still holding the pipe is not waited for), for a
:class:`subprocess.Popen`; stopping it signals its whole process group.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess

from rouse.runs.child import MAX_OUTPUT, Output, drain_until_exit

__all__ = ["MAX_OUTPUT", "Output", "kill_group", "run_until_exit", "stop_group"]


def run_until_exit(proc: subprocess.Popen[bytes], output: Output, deadline: float) -> int | None:
    """Drain ``proc``'s output until it exits; its exit code, or None at the deadline."""
    assert proc.stdout is not None
    return drain_until_exit(proc.stdout.fileno(), proc.poll, output, deadline)


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
