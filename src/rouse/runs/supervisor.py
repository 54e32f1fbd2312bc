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
- the run's leftovers: it is a subreaper (Linux), and when the run ends, however
  it ends, every process still below it is killed and reaped — a run ends with
  everything it started. The run itself inherits the locks' descriptors and is
  killed when the supervisor dies, so even a SIGKILL here never leaves a run
  going without its lock held;
- the run's log: a head the starter wrote, the exit and duration, the last
  64 KiB of output.

It talks to its starter over its stdin and stdout in framed messages
(:mod:`rouse.runs.wire`). Starter → supervisor: the spec (a dict), then
``go`` (start it), ``stop``, ``release`` (the result is recorded: let the
locks go); end of input means the starter is gone (a run in flight goes on to
its end). Supervisor → starter: events, ``busy`` (a lock is taken: nothing
ran) or ``locked``, ``running`` with the run's pid (its process group's), then
``ended`` with the exit code, the seconds and why it was stopped, if it was.
Nothing here knows what a wake or a task is.

It starts once per run, so it is kept light: it loads no ``subprocess``,
``json``, ``re``, ``tempfile``, nor the enums of ``signal`` (the run is forked
by :mod:`rouse.runs.child`), and reads a watched record's header with
:mod:`rouse.core.header` only when the file holds the word ``cancel`` at all.
"""

from __future__ import annotations

import fcntl
import os
import select
import sys
import time

from rouse.core import procs
from rouse.runs.child import MAX_OUTPUT, Child, Output, drain_until_exit, signal
from rouse.runs.wire import Frames, WireError, frame

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: How often (seconds) the supervisor looks at the watched record and its starter.
LOOK = 0.2
#: The most (seconds) spent killing and reaping what a run left behind.
LEFTOVERS = 5.0
_OPEN = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
#: bytes of a watched record read to look for ``cancel`` (more than the header reader's
#: 64 KiB, so a stamp it would see is never missed)
_HEAD = 128 * 1024


class Control:
    """The starter's side of the conversation: messages in (unbuffered), messages out."""

    def __init__(self) -> None:
        self.frames = Frames()
        self.gone = False  # end of input: the starter is gone

    def next(self, timeout: float | None) -> object | None:
        """The next message, None at the end of input or when ``timeout`` passes."""
        end = None if timeout is None else time.monotonic() + timeout
        waiting = select.poll()
        waiting.register(0, select.POLLIN)
        while not self.frames.whole and not self.gone:
            left = None if end is None else max(0.0, end - time.monotonic())
            if not waiting.poll(None if left is None else left * 1000):
                return None
            try:
                chunk = os.read(0, 65536)
            except OSError:
                chunk = b""
            if not chunk:
                self.gone = True
            self.frames.feed(chunk)
        try:
            return self.frames.next()
        except WireError:
            self.gone = True  # nonsense from the starter: treat it as gone
            return None

    def say(self, **event: Any) -> None:
        try:
            os.write(1, frame(event))
        except OSError:
            return  # a starter gone is no error of ours


def take_locks(paths: list[str]) -> tuple[list[int], str | None]:
    """Flock each path without waiting: (the open descriptors, the first one taken)."""
    held: list[int] = []
    for path in paths:
        fd = os.open(path, _OPEN, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            for other in held:
                os.close(other)
            return [], path
        os.ftruncate(fd, 0)
        since = time.strftime("%Y-%m-%d %H:%M:%S")
        os.write(fd, f'{{"pid": {os.getpid()}, "since": "{since}"}}'.encode())
        held.append(fd)
    return held, None


class Watch:
    """Whether a record has been cancelled: looked at again only when its file changed."""

    def __init__(self, path: str | None) -> None:
        self.path = path
        self.seen: tuple[int, int, int] | None = None

    def cancelled(self) -> bool:
        """Whether the record carries a ``cancel:`` stamp (unreadable: no)."""
        if not self.path:
            return False
        try:
            info = os.lstat(self.path)
        except OSError:
            return False
        seen = (info.st_ino, info.st_size, info.st_mtime_ns)
        if seen == self.seen:
            return False
        self.seen = seen
        try:
            return _cancel_stamp(self.path)
        except Exception:  # a file being replaced, or not a record: no cancel seen
            self.seen = None
            return False


def _cancel_stamp(path: str) -> bool:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    try:
        head = os.read(fd, _HEAD)
    finally:
        os.close(fd)
    if b"cancel" not in head.lower():
        return False  # (the header reader, and its re, only when the word is there)
    from rouse.core.header import read_header

    found = read_header(path)
    return bool((found.fields.get("cancel") or "").strip())


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _prompt_file(text: str) -> int:
    """An unlinked scratch file holding the prompt, opened for reading (the run's stdin)."""
    scratch = os.environ.get("TMPDIR") or "/tmp"
    data = text.encode("utf-8")
    for n in range(100):
        path = os.path.join(scratch, f".rouse-prompt-{os.getpid()}-{time.time_ns()}-{n}")
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        except FileExistsError:
            continue
        os.unlink(path)
        _write_all(fd, data)
        os.lseek(fd, 0, os.SEEK_SET)
        return fd
    raise FileExistsError(17, f"no scratch file for the prompt in {scratch}")


def run(spec: dict[str, Any], control: Control, held: list[int]) -> dict[str, Any]:
    """Start the run and supervise it to its end; the ``ended`` event's fields.

    The run inherits the locks ``held`` (so they stay taken while anything of it
    lives, whatever kills this process) and dies with this process; when it
    ends, everything it started is killed and reaped (see :func:`_sweep`)."""
    output = Output()
    started = time.monotonic()
    deadline = started + float(spec["timeout"])
    argv = list(spec["argv"])
    try:
        stdin = _prompt_file(str(spec.get("prompt", "")))
        try:
            child = Child.spawn(argv, spec["cwd"], spec["env"], stdin, held)
        finally:
            os.close(stdin)
    except OSError as exc:
        output.add(f"cannot run {argv[0]}: {exc.strerror or exc}".encode())
        return finish(spec, output, 127, 0.0, None)
    control.say(event="running", pid=child.pid)  # (its starter stops it if this dies)
    watch = Watch(spec.get("watch"))
    stopped: str | None = None
    code: int | None = None
    try:
        while True:
            slice_end = min(deadline, time.monotonic() + LOOK)
            code = drain_until_exit(child.out, child.poll, output, slice_end)
            if code is not None:
                break
            if time.monotonic() >= deadline:
                stopped = "deadline"
            elif STOP[0] or (not control.gone and control.next(0) == "stop"):
                stopped = "stop"
            elif watch.cancelled():
                stopped = "cancel"
            if stopped:
                child.stop_group(float(spec.get("grace", 5)))
                drain_until_exit(child.out, child.poll, output, time.monotonic() + 0.5)
                break
    finally:
        if child.poll() is None:
            child.stop_group(0.5)
        child.close()
        _sweep()
    return finish(spec, output, None if stopped else code, time.monotonic() - started, stopped)


def _sweep() -> None:
    """Kill and reap every process still below this one: what the run left behind.

    This process is a subreaper (see :func:`main`), so a child that left the
    run's group (``setsid``, a daemon's double fork) came back to it when its
    parent died: nothing the run started is out of reach (Linux; elsewhere
    the group kill only)."""
    me = os.getpid()
    procs.kill_and_reap(lambda table: procs.descendants(table, me), LEFTOVERS)


#: What ends a run log's head: the run's output follows it (the worker reads it from there).
LOG_HEAD_END = "\n---\n"


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
        + LOG_HEAD_END
    )
    log = spec.get("log")
    if log:
        write_atomic(str(log), head.encode() + bytes(output.kept))
    return {
        "event": "ended",
        "code": code,
        "seconds": round(seconds, 3),
        "stopped": stopped,
        "tail": output.tail(),
    }


def write_atomic(path: str, data: bytes) -> None:
    """``data`` at ``path``: a temp file beside it, renamed over (never through a link)."""
    directory, name = os.path.split(path)
    temp = os.path.join(directory, f".{name}.{os.getpid()}-{time.time_ns()}")
    try:
        os.makedirs(directory or ".", exist_ok=True)
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    except OSError:
        return
    try:
        try:
            _write_all(fd, data)
            os.fchmod(fd, 0o644)
        finally:
            os.close(fd)
        os.replace(temp, path)
    except OSError:
        try:
            os.unlink(temp)
        except OSError:
            return  # (not contextlib.suppress: the supervisor does without contextlib)


#: set by SIGTERM: stop the run (the starter hands it back)
STOP = [False]


def _on_term(signum: int, frame: object) -> None:
    STOP[0] = True


def main() -> int:
    """The supervisor's life: spec, locks, go, the run, its result, release."""
    signal.signal(signal.SIGTERM, _on_term)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    control = Control()
    spec = control.next(None)
    if not isinstance(spec, dict):
        return 2
    try:
        held, busy = take_locks(list(spec.get("locks", [])))
    except OSError as exc:
        control.say(event="busy", lock="", error=f"cannot take a run lock: {exc}")
        return 0
    if busy is not None:
        control.say(event="busy", lock=busy)
        return 0
    control.say(event="locked", pid=os.getpid())
    if control.next(None) != "go" or STOP[0]:
        return 0  # the starter changed its mind, or is gone: nothing ran
    procs.set_subreaper(True)  # what the run leaves behind comes back here, to be killed
    result = run(spec, control, held)
    control.say(**result)
    # keep the locks until the starter has recorded the result (or is gone)
    while not control.gone:
        said = control.next(None)
        if said in ("release", None):
            break
    for fd in held:
        os.close(fd)
    return 0


if __name__ == "__main__":
    sys.exit(main())
