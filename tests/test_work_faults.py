"""Never twice, never lost (issue 20, item 4): real ``rouse work`` processes racing
over the same tasks and SIGKILLed at random points.

The stand-in agent appends ``start TASK ATTEMPT`` and ``end TASK ATTEMPT`` to a
side-effect file. Whatever the kills: every task ends exactly once (done, or
failed after three lost attempts), each attempt's run happens at most once,
and two runs of one task never overlap.
"""

from __future__ import annotations

import itertools
import os
import random
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import INTENTIONS, MakeTree
from rouse.core import header
from rouse.core.body import log_entries

TASKS = 12
STANDIN = """#!{python}
import os, sys, time
sys.stdin.read()
task, attempt = os.environ["ROUSE_TASK"].rsplit("/", 1)[1], os.environ["ROUSE_TASK_ATTEMPT"]
log = os.environ["EFFECTS"]
with open(log, "a") as out:
    out.write(f"start {{task}} {{attempt}} {{time.time():.6f}}\\n")
time.sleep(0.5)
with open(log, "a") as out:
    out.write(f"end {{task}} {{attempt}} {{time.time():.6f}}\\n")
"""


@pytest.fixture
def tree(make_tree: MakeTree) -> Path:
    files = {
        f"{INTENTIONS}/ship/intention.md": "---\nstatus: open\n---\nShip.\n",
        **{
            f"{INTENTIONS}/ship/t{n:02d}/task.md": f"---\nstatus: pending\n---\nTask {n}.\n"
            for n in range(TASKS)
        },
    }
    return make_tree(files)


def ended(root: Path) -> dict[str, str]:
    found = {}
    for n in range(TASKS):
        status = header.read_header(root / f"{INTENTIONS}/ship/t{n:02d}/task.md").fields["status"]
        found[f"t{n:02d}"] = status
    return found


def test_workers_killed_at_random_points_end_every_task_exactly_once(
    tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent = tmp_path / "agent"
    agent.write_text(STANDIN.format(python=sys.executable))
    agent.chmod(agent.stat().st_mode | stat.S_IXUSR)
    effects = tmp_path / "effects.log"
    monkeypatch.setenv("EFFECTS", str(effects))
    monkeypatch.delenv("ROUSE_NOW", raising=False)
    monkeypatch.setenv("ROUSE_STAMP_KEY", str(tmp_path / "no-key"))
    rng = random.Random(int(os.environ.get("FAULT_SEED", "20")))
    command = [sys.executable, "-m", "rouse", "--memory", str(tree), "work", "--once", "-q"]
    command += ["--jobs", "2", "--run", "exec", "--", str(agent)]
    workers: list[subprocess.Popen[bytes]] = []
    kills = 0
    deadline = time.monotonic() + 45
    while time.monotonic() < deadline:
        workers = [w for w in workers if w.poll() is None]
        if all(s in ("done", "failed") for s in ended(tree).values()):
            break
        while len(workers) < 3:  # three workers race over the same tasks
            workers.append(subprocess.Popen(command, stdout=subprocess.DEVNULL))
        time.sleep(rng.uniform(0.05, 0.3))
        if kills < 8 and workers and rng.random() < 0.8:
            victim = rng.choice(workers)
            victim.send_signal(signal.SIGKILL)  # at a random point: claiming, running, ending
            victim.wait()
            kills += 1
    for worker in workers:
        worker.wait(timeout=30)
    assert kills >= 4
    final = ended(tree)
    assert all(s in ("done", "failed") for s in final.values()), final
    # every task ended exactly once: one ending line in its log
    for n in range(TASKS):
        rel = f"{INTENTIONS}/ship/t{n:02d}/task.md"
        raw = (tree / rel).read_bytes()
        _, rest = header.split(raw, rel)
        endings = [e for e in log_entries(rest) if ": done: " in e or ": failed: " in e]
        assert len(endings) == 1, (rel, log_entries(rest))
        attempts = int(header.read_header(tree / rel).fields["attempts"])
        assert 1 <= attempts <= 3
    # the supervisors of killed workers finish their runs: wait for the last "end"
    lines = effects.read_text().splitlines()
    starts = [line.split() for line in lines if line.startswith("start")]
    pairs = [(task, attempt) for _, task, attempt, _ in starts]
    assert len(pairs) == len(set(pairs))  # each attempt ran at most once
    runs: dict[str, list[tuple[float, float]]] = {}
    ends = {(t, a): float(at) for kind, t, a, at in (x.split() for x in lines) if kind == "end"}
    for _, task, attempt, at in starts:
        runs.setdefault(task, []).append((float(at), ends.get((task, attempt), float("inf"))))
    for task, spans in runs.items():
        spans.sort()
        for (_, first_end), (second_start, _) in itertools.pairwise(spans):
            assert first_end <= second_start, f"two live runs of {task}"
    done = [t for t, s in final.items() if s == "done"]
    assert all(task in runs for task in done)  # a task done was run
