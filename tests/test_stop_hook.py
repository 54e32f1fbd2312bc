"""The Stop hook (issue 18, item 5): an idle session woken by the next wake it has not seen.

Every step is a real process: `rouse remind`, `rouse sweep --once` with the
file sink, and `rouse pack --hook claude` fed the JSON Claude Code writes to
a hook's stdin — the waiter runs until a wake, its supersession, its
session's end or its maximum wait ends it, and every wait is bounded.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from conftest import NOW, stamp
from rouse.agents import stop_hook
from rouse.records.scaffold import init

START = stamp(NOW)  # 12:00, the session starts
DUE = "2026-03-14 13:00"
SWEEP = "2026-03-14 13:05"
LATER = "2026-03-14 13:10"
LINUX = sys.platform.startswith("linux")


def env(**extra: str) -> dict[str, str]:
    kept = {k: v for k, v in os.environ.items() if not k.startswith(("ROUSE_", "CLAUDE_"))}
    return {**kept, "ROUSE_NOW": LATER, **extra}


def rouse(tree: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rouse", *args, "--memory", str(tree)],
        input=stdin,
        env=env(),
        capture_output=True,
        text=True,
        timeout=60,
    )


def event(name: str, session: str = "s1", **more: str) -> str:
    return json.dumps({"session_id": session, "hook_event_name": name, "cwd": "/", **more})


def hook_args(tree: Path) -> list[str]:
    return [sys.executable, "-m", "rouse", "pack", "--hook", "claude", "--memory", str(tree)]


class Waiter:
    """`rouse pack --hook claude` for a Stop event, running in the background."""

    def __init__(self, tree: Path, session: str = "s1", wait: str = "60", watch: str = "") -> None:
        self.tree = tree
        self.session = session
        extra = {"ROUSE_STOP_WAIT": wait, **({"ROUSE_STOP_WATCH": watch} if watch else {})}
        self.proc = subprocess.Popen(
            hook_args(tree),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env(**extra),
            text=True,
        )
        assert self.proc.stdin is not None
        self.proc.stdin.write(event("Stop", session))
        self.proc.stdin.close()
        self.proc.stdin = None

    def registration(self) -> object:
        path = stop_hook.waiter_file(self.tree, self.session)
        assert path is not None
        try:
            return json.loads(path.read_text())
        except (OSError, ValueError):
            return None

    def registered(self, pid: int | None = None) -> None:
        """Wait (bounded) until this waiter, or the process ``pid``, is the session's."""
        want = pid or self.proc.pid
        until(lambda: isinstance(r := self.registration(), dict) and r.get("pid") == want)

    def end(self, timeout: float = 30) -> tuple[int, str, str]:
        out, err = self.proc.communicate(timeout=timeout)
        return self.proc.returncode, out, err


def until(condition: Callable[[], bool], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.02)


def remind(tree: Path, slug: str, due: str = DUE) -> None:
    done = rouse(tree, "remind", slug, "--due", due, "--now", START)
    assert done.returncode == 0, done.stderr


def sweep(tree: Path, now: str = SWEEP) -> None:
    done = rouse(tree, "sweep", "--once", "--now", now, "-q")
    assert done.returncode == 0, done.stderr


def start(tree: Path, session: str = "s1") -> None:
    stdin = event("SessionStart", session)
    done = rouse(tree, "pack", "--hook", "claude", "--now", START, stdin=stdin)
    assert done.returncode == 0, done.stderr


@pytest.fixture
def tree(tmp_path: Path) -> Iterator[Path]:
    root = tmp_path / "memory"
    init(root, NOW, examples=False)
    remind(root, "call-bank")
    start(root)
    yield root


def test_a_wake_delivered_while_idle_ends_the_wait_with_exit_2(tree: Path) -> None:
    waiter = Waiter(tree)
    waiter.registered()
    sweep(tree)  # the real file sink writes the nudge file, the ledger vouches for it
    code, out, err = waiter.end()
    assert (code, out) == (2, "")
    assert err.startswith("rouse: 1 record(s) woke you while the session was idle\n")
    assert "  reminder/call-bank — woke you 5m ago (due, nudge 1)\n" in err
    assert stop_hook.waiter_file(tree, "s1") is not None
    assert not stop_hook.waiter_file(tree, "s1").exists()  # nothing left behind
    # shared with the prompt hook's record: the next prompt does not repeat it
    prompt = rouse(tree, "pack", "--hook", "claude", stdin=event("UserPromptSubmit"))
    assert prompt.returncode == 0 and prompt.stdout == ""
    # and the next idle wait has nothing new: it ends silently at its maximum
    code, out, err = Waiter(tree, wait="1").end()
    assert (code, out, err) == (0, "", "")


def test_a_wake_not_yet_seen_ends_the_wait_at_once(tree: Path) -> None:
    sweep(tree)  # delivered during the turn: no prompt has shown it
    code, _, err = Waiter(tree, wait="600").end()
    assert code == 2 and "reminder/call-bank" in err
    remind(tree, "pay-rent", "2026-03-14 13:06")  # a second wake in the same session
    waiter = Waiter(tree)
    waiter.registered()
    sweep(tree, "2026-03-14 13:07")
    code, _, err = waiter.end()
    assert code == 2 and "reminder/pay-rent" in err and "call-bank" not in err


def test_the_slow_poll_finds_a_wake_too(tree: Path) -> None:
    waiter = Waiter(tree, watch="poll")  # what runs where inotify is missing
    waiter.registered()
    sweep(tree)
    code, _, err = waiter.end()
    assert code == 2 and "reminder/call-bank" in err


def test_a_newer_waiter_supersedes_the_older(tree: Path) -> None:
    older = Waiter(tree)
    older.registered()
    newer = Waiter(tree)
    newer.registered()
    assert older.end() == (0, "", "")  # quietly, and leaving the newer one's registration
    newer.registered()
    sweep(tree)
    code, _, err = newer.end()
    assert code == 2 and err.count("reminder/call-bank") == 1


def test_session_end_stops_the_waiter(tree: Path) -> None:
    waiter = Waiter(tree)
    waiter.registered()
    done = rouse(tree, "pack", "--hook", "claude", stdin=event("SessionEnd", reason="other"))
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert waiter.end() == (0, "", "")
    assert not stop_hook.waiter_file(tree, "s1").exists()  # type: ignore[union-attr]


def agent(tmp_path: Path, tree: Path, *flags: str) -> subprocess.Popen[str]:
    """A stand-in for Claude Code: it runs the hook through ``sh -c`` as Claude Code
    does, and holds on (its command line carries ``flags``)."""
    script = tmp_path / "claude"  # (a Claude Code by name: its flags are read)
    command = " ".join(f"'{a}'" for a in hook_args(tree)) + ' < "$1"; true'
    script.write_text(
        "import subprocess, sys, time\n"
        f"hook = subprocess.Popen(['/bin/sh', '-c', {command!r}, 'sh', sys.argv[1]])\n"
        "print(hook.pid, flush=True)\n"
        "hook.wait()\n"
        "time.sleep(600)\n"
    )
    stdin = tmp_path / "stop.json"
    stdin.write_text(event("Stop"))
    return subprocess.Popen(
        [sys.executable, str(script), str(stdin), *flags],
        stdout=subprocess.PIPE,
        env=env(ROUSE_STOP_WAIT="600"),
        text=True,
    )


@pytest.mark.skipif(not LINUX, reason="finds the agent's process through /proc (Linux)")
def test_the_waiter_ends_when_its_agent_process_is_gone(tree: Path, tmp_path: Path) -> None:
    claude = agent(tmp_path, tree)
    try:
        path = stop_hook.waiter_file(tree, "s1")
        assert path is not None
        until(lambda: path.exists())
        waiter = json.loads(path.read_text())["pid"]
    finally:
        claude.kill()  # no SessionEnd hook: the agent is simply gone
        claude.wait(timeout=30)
        assert claude.stdout is not None
        claude.stdout.close()
    until(lambda: not Path(f"/proc/{waiter}").exists() or _zombie(waiter))
    until(lambda: not path.exists())


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


@pytest.mark.skipif(not LINUX, reason="reads the agent's command line through /proc (Linux)")
def test_a_one_shot_print_session_is_not_kept_waiting(tree: Path, tmp_path: Path) -> None:
    claude = agent(tmp_path, tree, "-p", "hi")
    try:
        assert claude.stdout is not None
        hook = int(claude.stdout.readline())
        until(lambda: not Path(f"/proc/{hook}").exists() or _zombie(hook))
        assert not stop_hook.waiter_file(tree, "s1").exists()  # type: ignore[union-attr]
    finally:
        claude.kill()
        claude.wait(timeout=30)
        assert claude.stdout is not None
        claude.stdout.close()


@pytest.mark.skipif(not LINUX, reason="reads the waiter's CPU time from /proc (Linux)")
def test_the_waiter_spends_no_cpu_while_idle(tree: Path) -> None:
    waiter = Waiter(tree, wait="3")
    waiter.registered()
    fields = Path(f"/proc/{waiter.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    at_rest = (int(fields[11]) + int(fields[12])) / ticks  # utime + stime, once waiting
    _, status, usage = os.wait4(waiter.proc.pid, 0)
    waiter.proc.returncode = os.waitstatus_to_exitcode(status)
    assert waiter.proc.returncode == 0
    idle = usage.ru_utime + usage.ru_stime - at_rest
    assert idle < 0.1, f"the waiter spent {idle:.3f} s of CPU in 3 s of waiting"
    assert waiter.proc.stderr is not None and waiter.proc.stderr.read() == ""
    for stream in (waiter.proc.stdout, waiter.proc.stderr):
        assert stream is not None
        stream.close()


def test_without_a_session_id_there_is_nothing_to_wait_for(tree: Path) -> None:
    sweep(tree)
    stdin = json.dumps({"hook_event_name": "Stop"})
    done = subprocess.run(
        hook_args(tree), input=stdin, env=env(ROUSE_STOP_WAIT="600"), capture_output=True,
        text=True, timeout=60,
    )  # fmt: skip
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def test_hostile_state_never_crashes_the_waiter(tree: Path, tmp_path: Path) -> None:
    sessions = tree / ".rouse" / "sessions"
    (sessions / "s1.json").write_text("{not json")  # a damaged seen-set
    (sessions / "s1.waiter").write_text("\x00\xff garbage")  # a damaged registration
    sweep(tree)
    code, _, err = Waiter(tree).end()  # the damaged seen-set shows what still stands, once
    assert code == 2 and "reminder/call-bank" in err and "Traceback" not in err
    # a nudges folder that is a link: nothing is read through it, the wait just ends
    nudges = tree / ".rouse" / "nudges"
    nudges.rename(tmp_path / "moved")
    nudges.symlink_to(tmp_path / "moved")
    assert Waiter(tree, session="s2", wait="1").end() == (0, "", "")
    # a bad maximum falls back to the default, a waiter that cannot register waits not at all
    sessions.rename(tmp_path / "sessions-moved")
    sessions.symlink_to(tmp_path / "sessions-moved")
    assert Waiter(tree, session="s3", wait="soon").end() == (0, "", "")


def test_the_stop_command_rouse_wires_keeps_exit_2_and_only_2(tmp_path: Path) -> None:
    from rouse.agents import wire

    w = wire.Wiring(tmp_path / "memory", tmp_path, tmp_path / "home")
    command = wire.hook_command(w, "claude", str(tmp_path / "gone" / "rouse"), wire.STOP)
    for fake, want in (("exit 2", 2), ("exit 1", 0), ("exit 0", 0)):
        folder = tmp_path / fake.replace(" ", "-")
        folder.mkdir()
        (folder / "rouse").write_text(f"#!/bin/sh\n{fake}\n")
        (folder / "rouse").chmod(0o755)
        done = subprocess.run(
            ["/bin/sh", "-c", command], env={"PATH": f"{folder}:/usr/bin:/bin"},
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert done.returncode == want, (fake, done.stderr)
    done = subprocess.run(
        ["/bin/sh", "-c", command], env={"PATH": str(tmp_path / "empty")},
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert (done.returncode, done.stdout) == (0, "")  # rouse cannot start: say nothing


def test_sigterm_leaves_no_registration_behind(tree: Path) -> None:
    waiter = Waiter(tree)
    waiter.registered()
    waiter.proc.send_signal(signal.SIGTERM)
    code, _, err = waiter.end()
    assert code == 0 and err == ""
    assert not stop_hook.waiter_file(tree, "s1").exists()  # type: ignore[union-attr]


def test_a_sigterm_the_moment_the_registration_lands_still_removes_it(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The SIGTERM handler is in place before the registration is written: a waiter
    ended the instant it registers (the test above once caught that window, exit -15)
    leaves the wait and takes its registration with it."""
    save = stop_hook.save_bytes
    unguarded: list[str] = []

    def save_then_terminated(path: str, text: bytes) -> bool:
        saved = save(path, text)
        if signal.getsignal(signal.SIGTERM) is stop_hook._leave:
            os.kill(os.getpid(), signal.SIGTERM)  # raises in this thread, at once
        else:
            unguarded.append(path)  # a SIGTERM now would kill the waiter where it stands
        return saved

    monkeypatch.setattr(stop_hook, "save_bytes", save_then_terminated)
    assert stop_hook.wait_for_wake(tree, {"session_id": "s1"}, 0.5, watch=False) == []
    assert unguarded == []
    assert not stop_hook.waiter_file(tree, "s1").exists()  # type: ignore[union-attr]


def test_stop_wait_off_takes_nothing_and_waits_for_nothing(tree: Path) -> None:
    sweep(tree)
    assert Waiter(tree, wait="off").end() == (0, "", "")
    prompt = rouse(tree, "pack", "--hook", "claude", stdin=event("UserPromptSubmit"))
    assert "reminder/call-bank" in prompt.stdout  # left for the next prompt
    assert stop_hook.max_wait("4h") == 4 * 3600 and stop_hook.max_wait("90") == 90
    assert stop_hook.max_wait("soon") == stop_hook.WAIT_DEFAULT
    assert stop_hook.max_wait("99d") == stop_hook.WAIT_MOST
