"""A run ends with everything it started, and one task never has two live runs
(issue 31, items 4 and 5): real ``rouse work`` processes, real ``sh`` agents,
real ``setsid`` children, and real SIGKILLs; no survivor is allowed, by pid.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import INTENTIONS, MakeTree
from rouse.core import header

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux /proc")

TASK = f"{INTENTIONS}/ship/notes/task.md"


@pytest.fixture
def tree(make_tree: MakeTree, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("ROUSE_NOW", raising=False)
    monkeypatch.setenv("ROUSE_STAMP_KEY", str(tmp_path / "no-key"))
    monkeypatch.setenv("LEFT", str(tmp_path / "left"))
    (tmp_path / "left").mkdir()
    return make_tree(
        {
            f"{INTENTIONS}/ship/intention.md": "---\nstatus: open\n---\nShip.\n",
            TASK: "---\nstatus: pending\n---\nWrite the notes.\n",
        }
    )


def rouse(root: Path, *args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "rouse", "--memory", str(root), *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def work(root: Path, script: str, *options: str) -> subprocess.Popen[bytes]:
    return rouse(root, "work", "--once", *options, "--run", "exec", "--", "sh", "-c", script)


def wait_for(condition: object, seconds: float = 30.0) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if condition():  # type: ignore[operator]
            return
        time.sleep(0.05)
    raise AssertionError(f"not true within {seconds}s")


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie has ended: it only waits to be reaped)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in "ZX"


def pids(left: Path, name: str) -> list[int]:
    path = left / name
    return [int(n) for n in path.read_text().split()] if path.exists() else []


def status(root: Path) -> str:
    return header.read_header(root / TASK).fields.get("status", "")


#: the agent: it says it started, leaves a child in its own session and one in its
#: group behind, and sleeps (or ends at once, per its argument)
LEAVES = (
    'echo $$ >> "$LEFT/agents"; '
    'setsid sleep 300 < /dev/null > /dev/null 2>&1 & echo $! >> "$LEFT/kids"; '
    'sleep 300 < /dev/null > /dev/null 2>&1 & echo $! >> "$LEFT/kids"; '
    "{then}"
)


@pytest.mark.parametrize("how", ["exit 0", "cancel", "timeout"])
def test_a_run_ends_with_everything_it_started(tree: Path, how: str) -> None:
    left = Path(os.environ["LEFT"])
    then = "exit 0" if how == "exit 0" else "sleep 120"
    options = ("--task-timeout", "2s") if how == "timeout" else ()
    worker = work(tree, LEAVES.format(then=then), *options)
    wait_for(lambda: len(pids(left, "kids")) == 2)
    if how == "cancel":
        wait_for(lambda: status(tree) == "running")
        assert rouse(tree, "cancel", "notes").wait(timeout=60) == 0
    worker.wait(timeout=90)
    assert status(tree) == {"exit 0": "done", "cancel": "cancelled", "timeout": "failed"}[how]
    survivors = [pid for pid in pids(left, "kids") + pids(left, "agents") if alive(pid)]
    for pid in survivors:
        os.kill(pid, signal.SIGKILL)
    assert survivors == []


def _supervisor(root: Path) -> int:
    (lock,) = (root / ".rouse/tasks").glob("*.lock")
    return int(json.loads(lock.read_text())["pid"])


def test_worker_and_supervisor_killed_together_take_the_agent_with_them(tree: Path) -> None:
    left = Path(os.environ["LEFT"])
    worker = work(tree, 'echo $$ >> "$LEFT/agents"; exec sleep 300')
    wait_for(lambda: pids(left, "agents") and status(tree) == "running")
    (agent,) = pids(left, "agents")
    supervisor = _supervisor(tree)
    os.kill(worker.pid, signal.SIGKILL)
    os.kill(supervisor, signal.SIGKILL)
    worker.wait()
    try:
        wait_for(lambda: not alive(agent), 10)
    finally:
        if alive(agent):
            os.kill(agent, signal.SIGKILL)
    # the next worker takes the lost run back and runs it again: one run at a time
    again = work(tree, 'echo $$ >> "$LEFT/agents"')
    again.wait(timeout=60)
    assert status(tree) == "done"
    assert len(pids(left, "agents")) == 2


def test_what_outlives_a_double_kill_keeps_the_task_claimed_while_it_lives(tree: Path) -> None:
    left = Path(os.environ["LEFT"])
    script = 'echo $$ >> "$LEFT/agents"; sleep 300 & echo $! >> "$LEFT/kids"; wait'
    worker = work(tree, script)
    wait_for(lambda: pids(left, "kids") and status(tree) == "running")
    (kid,) = pids(left, "kids")
    os.kill(worker.pid, signal.SIGKILL)
    os.kill(_supervisor(tree), signal.SIGKILL)
    worker.wait()
    try:
        # the run's child lives on: a second worker must not start a second run
        assert work(tree, script).wait(timeout=60) == 0
        assert alive(kid)
        assert len(pids(left, "agents")) == 1
        assert status(tree) == "running"
    finally:
        os.kill(kid, signal.SIGKILL)
    wait_for(lambda: not alive(kid), 10)
    assert work(tree, 'echo $$ >> "$LEFT/agents"').wait(timeout=60) == 0
    assert status(tree) == "done" and len(pids(left, "agents")) == 2
