"""The task worker's throughput and claim overhead (issue 20).

Drains TASKS pending tasks with ``rouse work --once --jobs JOBS`` and a
stand-in agent that sleeps SLEEP seconds: the wall time against the ideal
(TASKS × SLEEP / JOBS), and the CPU time the worker, its supervisors and the
agents used. Then measures one claim on its own — the supervisor
started and holding the task's lock, the guarded ``running`` stamp, the
release — over CLAIMS tasks, and prints the mean.

    .venv/bin/python bench/work_bench.py [--tasks 200] [--jobs 4] [--sleep 0.2]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

AGENT = "#!/bin/sh\ncat > /dev/null\nsleep {sleep}\necho done\n"


def make_tree(root: Path, tasks: int) -> None:
    home = root / "entrypoint/beliefs/motivations/intentions/drain"
    home.mkdir(parents=True)
    (home / "intention.md").write_text("---\nstatus: open\n---\nDrain the queue.\n")
    for n in range(tasks):
        task = home / f"t{n:04d}"
        task.mkdir()
        (task / "task.md").write_text(
            f"---\nstatus: pending\nopened: 2026-03-14 09:{n % 60:02d}\n---\nTask {n}.\n"
        )
    for name in ("inventory/notes", "inventory/reminders", "inventory/backlog"):
        (root / name).mkdir(parents=True, exist_ok=True)


def drain(tasks: int, jobs: int, sleep: float) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch) / "memory"
        make_tree(root, tasks)
        agent = Path(scratch) / "agent"
        agent.write_text(AGENT.format(sleep=sleep))
        agent.chmod(0o755)
        env = {**os.environ, "ROUSE_STAMP_KEY": str(Path(scratch) / "no-key")}
        command = [sys.executable, "-m", "rouse", "--memory", str(root), "work", "--once"]
        command += ["-q", "--jobs", str(jobs), "--run", "exec", "--", str(agent)]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        subprocess.run(command, env=env, check=True)
        wall = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        done = sum("status: done" in p.read_text() for p in root.glob("entrypoint/**/t*/task.md"))
        ideal = tasks * sleep / jobs
        print(f"drain: {tasks} tasks, --jobs {jobs}, agent sleeps {sleep:g}s")
        print(
            f"  done {done}/{tasks}; wall {wall:.1f}s vs ideal {ideal:.1f}s ({wall / ideal:.2f}×)"
        )
        print(
            "  overhead per task, (wall - ideal) × jobs / tasks: "
            f"{(wall - ideal) * jobs / tasks * 1000:.0f} ms"
        )
        print(
            f"  CPU (the worker, its supervisors and the agents): {cpu:.1f}s, "
            f"{cpu / tasks * 1000:.0f} ms per task"
        )


def claims(count: int) -> None:
    from rouse.core.statedir import state_path
    from rouse.core.tree import walk
    from rouse.records.tasks import start_task
    from rouse.runs.handle import claim
    from rouse.state import locks

    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch) / "memory"
        make_tree(root, count)
        records = [r for r in walk(root).records.values() if r.type == "task"]
        now = datetime(2026, 3, 14, 12, 0)
        spent = {"supervisor": 0.0, "stamp": 0.0, "release": 0.0}
        for record in records:
            lock = state_path(root, locks.task_lock(record.dir))
            spec = {"argv": ["/bin/true"], "cwd": scratch, "env": {}, "timeout": 5}
            spec["locks"] = [str(lock)]
            t0 = time.perf_counter()
            held = claim(spec)
            t1 = time.perf_counter()
            assert not isinstance(held, str)
            start_task(root, record.dir, now, "bench")
            t2 = time.perf_counter()
            held.release()
            t3 = time.perf_counter()
            spent["supervisor"] += t1 - t0
            spent["stamp"] += t2 - t1
            spent["release"] += t3 - t2
        total = sum(spent.values()) / count * 1000
        parts = ", ".join(f"{k} {v / count * 1000:.1f} ms" for k, v in spent.items())
        print(f"claim: {count} tasks in a {count}-task tree: {total:.1f} ms per claim ({parts})")


def precompile() -> None:
    """Byte-compile rouse first, as an installed one is: every run's supervisor is a new
    Python, which (under PYTHONDONTWRITEBYTECODE, or in a fresh checkout) would
    otherwise compile its modules again each time, and the bench would measure that."""
    import compileall

    import rouse

    compileall.compile_dir(Path(rouse.__file__).parent, quiet=1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--jobs", type=int, default=4)
    parser.add_argument("--sleep", type=float, default=0.2)
    parser.add_argument("--claims", type=int, default=50)
    args = parser.parse_args()
    precompile()
    drain(args.tasks, args.jobs, args.sleep)
    claims(args.claims)


if __name__ == "__main__":
    main()
