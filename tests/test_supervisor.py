"""The run supervisor (issue 20, item 5): one supervising process per agent run.

It holds the run's lock and keeps its deadline, so a SIGKILLed sweeper leaves
no unsupervised run behind, and the next sweeper does not start a second one.
Real processes: ``rouse sweep`` started as a user would, a stand-in agent on PATH.
"""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import INTENTIONS, MakeTree, ago, stamp
from rouse.runs.handle import claim, resolve
from rouse.sweep import ledger

AGENT = """#!{python}
import os, sys, time
sys.stdin.read()
with open(os.environ["STANDIN_LOG"], "a") as out:
    out.write(f"start {{os.getpid()}}\\n")
time.sleep(float(os.environ.get("STANDIN_SLEEP", "0")))
with open(os.environ["STANDIN_LOG"], "a") as out:
    out.write(f"end {{os.getpid()}}\\n")
"""


def wait_for(condition: object, seconds: float = 30.0) -> None:
    """Poll ``condition`` (a callable) until true, at most ``seconds``."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if condition():  # type: ignore[operator]
            return
        time.sleep(0.05)
    raise AssertionError(f"not true within {seconds}s")


@pytest.fixture
def tree(make_tree: MakeTree) -> Path:
    moved = stamp(ago(hours=3))
    return make_tree(
        {
            f"{INTENTIONS}/alpha/intention.md": f"""
            ---
            status: open
            last-moved: {moved}
            ---
            Do alpha.
            """
        }
    )


@pytest.fixture
def agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "agent"
    script.write_text(AGENT.format(python=sys.executable))
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    log = tmp_path / "agent.log"
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("STANDIN_LOG", str(log))
    monkeypatch.delenv("ROUSE_NOW", raising=False)
    return log


def sweeper(tree: Path, *args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "rouse", "--memory", str(tree), "sweep", "--once", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def test_a_killed_sweeper_leaves_its_run_supervised_and_no_second_run_starts(
    tree: Path, agent: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STANDIN_SLEEP", "60")
    run = ("--run", "exec", "--run-timeout", "4s", "--", "agent")
    first = sweeper(tree, *run)
    wait_for(lambda: agent.exists() and "start" in agent.read_text())
    first.send_signal(signal.SIGKILL)
    first.wait()
    # the next sweeper finds the run's lock held by its supervisor: the wake waits
    assert sweeper(tree, *run).wait(timeout=60) == 0
    assert agent.read_text().count("start") == 1
    with ledger.Ledger(tree) as db:
        (entry,) = db.recent()
    assert entry.state == "held" and "a run is still live" in (entry.error or "")
    # the supervisor keeps the deadline though nobody waits for it: killed at 4s
    pid = int(agent.read_text().split()[1])
    wait_for(lambda: not Path(f"/proc/{pid}").exists() or _zombie(pid), 30)
    assert "end" not in agent.read_text()
    # (written just after the agent is reaped: on a loaded machine, a moment later)
    wait_for(lambda: list((tree / ".rouse/runs").glob("*.log")), 10)
    logs = list((tree / ".rouse/runs").glob("*.log"))
    assert len(logs) == 1 and "killed (its process group) at the deadline" in logs[0].read_text()


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in "ZX"
    except OSError:
        return True


def test_the_executable_is_resolved_on_absolute_path_entries_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    here = tmp_path / "rel"
    here.mkdir()
    (here / "tool").write_text("#!/bin/sh\n")
    (here / "tool").chmod(0o755)
    monkeypatch.chdir(tmp_path)
    assert resolve(["tool", "-x"], {"PATH": f"rel{os.pathsep}/nonexistent"}) == ["tool", "-x"]
    found = resolve(["tool"], {"PATH": f"rel{os.pathsep}{here}"})
    assert found == [str(here / "tool")]
    assert resolve(["./rel/tool"], {"PATH": ""}) == [str(here / "tool")]


def test_a_lock_held_elsewhere_means_busy_and_nothing_runs(tmp_path: Path) -> None:
    lock = tmp_path / "one.lock"
    spec = {
        "argv": ["/bin/true"],
        "cwd": str(tmp_path),
        "env": {},
        "timeout": 5,
        "locks": [str(lock)],
    }
    held = claim(spec)
    assert not isinstance(held, str)
    try:
        assert claim(spec) == f"taken: {lock}"
    finally:
        held.release()  # never started: released without running
    again = claim(spec)
    assert not isinstance(again, str)
    again.go()
    ended = again.wait()
    again.release()
    assert ended.ok and ended.code == 0


@pytest.mark.parametrize(
    ("argv0", "says"),
    [
        ("/nonexistent/agent", "No such file or directory"),
        ("no-such-agent", "not found on PATH (absolute entries only)"),  # never looked up
        ("plain.txt", "Permission denied"),  # not executable
    ],
)
def test_a_run_that_cannot_start_ends_127_and_its_log_says_why(
    tmp_path: Path, argv0: str, says: str
) -> None:
    (tmp_path / "plain.txt").write_text("not a program\n")
    (tmp_path / "no-such-agent").write_text("#!/bin/sh\necho ran\n")  # in cwd: never run
    (tmp_path / "no-such-agent").chmod(0o755)
    argv = [str(tmp_path / argv0) if argv0 == "plain.txt" else argv0]
    spec = {
        "argv": argv,
        "cwd": str(tmp_path),
        "env": {"PATH": "."},
        "timeout": 5,
        "locks": [str(tmp_path / "run.lock")],
        "log": str(tmp_path / "run.log"),
    }
    held = claim(spec)
    assert not isinstance(held, str)
    held.go()
    ended = held.wait()
    held.release()
    assert ended.code == 127 and not ended.ok
    log = (tmp_path / "run.log").read_text()
    assert f"cannot run {argv[0]}: {says}" in log and "ran" not in log.split("---", 1)[1]
