"""The exec sink: a command (no shell) fed the wake on stdin, exit 0 = delivered.

How a command runs under one deadline (its output drained, its last bytes
kept, its process group killed whole) is :mod:`rouse.runs.child`'s, shared
with agent runs.
"""

from __future__ import annotations

import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path

from rouse.runs.child import Output, kill_group, run_until_exit
from rouse.sweep.sinks.base import SinkError, check_timeout, child_environment
from rouse.sweep.wake import Wake


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
            code = run_until_exit(proc, output, deadline)
        except BaseException:
            kill_group(proc)
            raise
        finally:
            if proc.stdout is not None:
                proc.stdout.close()
        if code is None:
            kill_group(proc)
            raise SinkError(
                f"{self.argv[0]} did not finish within {self.timeout:g}s: "
                f"killed its process group{output.tail()}"
            )
        if code != 0:
            raise SinkError(f"{self.argv[0]} exited {code}{output.tail()}")
        return "exit 0"
