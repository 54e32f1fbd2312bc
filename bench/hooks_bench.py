"""The agent hooks against `python -c pass`, side by side (issue 24): measures, prints, and
exits 1 when a target is missed (a benchmark, never a timed test; CI does not run it).

On the SPEC §12 tree (bench/generate.py, ~3,600 files) after one `rouse sweep
--once` has delivered every due record to the file sink (~1,600 nudge files,
all vouched for by the ledger) and a session has started (its SessionStart
hook marked them all seen), each command is run as a process, the way an
agent runs it (the installed `rouse` script beside this interpreter), its
stdin the JSON the agent writes, interleaved round by round:

- python -c pass:   the floor any Python hook pays (this same interpreter);
- prompt, idle:     the UserPromptSubmit hook with nothing new (prints nothing);
- stop, idle:       Claude Code's Stop hook with nothing new: it finds the
                    session's agent, registers its waiter, looks, finds nothing
                    to wake the session with and, its maximum wait set to a
                    nanosecond (`ROUSE_STOP_WAIT=1e-9`), leaves instead of
                    sleeping (exit 0, says nothing);
- and, for scale only: the same Stop hook left to sleep 0.1 s (its watch begins:
  ctypes and inotify; what matters there is CPU, as Claude Code runs it in the
  background), the session start (the pack) and a prompt with one new wake.

Each row gives the wall time (fork to exit) and the CPU time (user + system).
Targets: each idle hook's wall time ≤ 1.5× `python -c pass`'s (medians of
--runs rounds, at least 9), for this checkout. With `--baseline REF` REF's hooks
(bench/baseline.py) run on a twin tree in the same rounds, their rows marked "before";
both sides' ``src/`` byte-compiled and first on ``PYTHONPATH`` alike.
Run: `.venv/bin/python bench/hooks_bench.py [--scale 1] [--runs 15] [--baseline REF]`.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from baseline import HERE, checkout, compiled, describe, env_for
from generate import generate

NOW = datetime(2026, 3, 16, 12, 0)
STAMP = "%Y-%m-%d %H:%M"
TARGET = 1.5  # × python -c pass
TARGETS = ("prompt, idle", "stop, idle")
ASLEEP = "0.1"  # seconds a Stop hook sleeps in its wait, for its CPU (its wall is the wait)
SESSION = "bench"


def rouse_command() -> list[str]:
    """The installed ``rouse`` script next to this Python (what `rouse wire` pins)."""
    script = Path(sys.executable).parent / "rouse"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "rouse"]


class Run:
    """One process's wall time (fork to exit, as an agent waits for it), its CPU time
    (user and system, from wait4) and its stdout."""

    def __init__(
        self, command: list[str], stdin: str = "", env: dict[str, str] | None = None
    ) -> None:
        start = time.perf_counter()
        proc = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        proc.stdin.write(stdin.encode())
        proc.stdin.close()
        self.out = proc.stdout.read().decode()
        err = proc.stderr.read().decode()
        _, status, usage = os.wait4(proc.pid, 0)
        self.wall = time.perf_counter() - start
        self.cpu = usage.ru_utime + usage.ru_stime
        proc.returncode = os.waitstatus_to_exitcode(status)
        proc.stdout.close()
        proc.stderr.close()
        if proc.returncode != 0 or err:
            raise SystemExit(f"{' '.join(command[-6:])}: exit {proc.returncode}: {err}")


class Hooks:
    """The commands measured, on one prepared tree, by one rouse (``env``: its path)."""

    def __init__(self, root: Path, env: dict[str, str]) -> None:
        self.root, self.env = root, env
        self.command = [*rouse_command(), "pack", "--memory", str(root), "--hook", "claude"]
        self.command += ["--now", NOW.strftime(STAMP)]
        self.seen = root / ".rouse" / "sessions" / f"{SESSION}.json"
        self.nudges = sorted(p.name for p in (root / ".rouse" / "nudges").glob("*.md"))

    def event(self, name: str) -> str:
        return json.dumps({"session_id": SESSION, "hook_event_name": name, "cwd": str(self.root)})

    def python(self) -> Run:
        return Run([sys.executable, "-c", "pass"], self.event("UserPromptSubmit"))

    def prompt_idle(self) -> Run:
        run = Run(self.command, self.event("UserPromptSubmit"), self.env)
        if run.out:
            raise SystemExit(f"the idle prompt hook printed something: {run.out[:200]}")
        return run

    def stop(self, wait: str) -> Run:
        run = Run(self.command, self.event("Stop"), {**self.env, "ROUSE_STOP_WAIT": wait})
        if run.out:
            raise SystemExit(f"the idle Stop hook printed something: {run.out[:200]}")
        return run

    def session_start(self) -> Run:
        run = Run(self.command, self.event("SessionStart"), self.env)
        if not run.out.startswith("now: "):
            raise SystemExit(f"the session start printed no pack: {run.out[:200]}")
        return run

    def one_new(self) -> Run:
        self.seen.write_text(json.dumps({"seen": self.nudges[:-1]}))
        run = Run(self.command, self.event("UserPromptSubmit"), self.env)
        if not run.out.startswith("rouse: 1 record(s) woke you"):
            raise SystemExit(f"one new wake was not shown: {run.out[:200]}")
        return run


def prepare(root: Path, scale: int, env: dict[str, str]) -> tuple[Hooks, int]:
    files = generate(root, scale, now=NOW)
    sweep = ["--memory", str(root), "sweep", "--once", "-q", "--now", NOW.strftime(STAMP)]
    Run([*rouse_command(), *sweep], env=env)
    time.sleep(2.5)  # past the racy window of the sweep's last write: a settled tree
    hooks = Hooks(root, env)
    hooks.session_start()  # the session's seen-set: every wake so far was in its pack
    return hooks, files


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--scale", type=int, default=1)
    parser.add_argument("--runs", type=int, default=15, help="rounds (at least 9)")
    parser.add_argument(
        "--baseline",
        metavar="REF",
        help="a git revision whose hooks run beside this checkout's, in the same rounds",
    )
    options = parser.parse_args()
    runs = max(options.runs, 9)
    with tempfile.TemporaryDirectory(prefix="rouse-hooks-") as scratch:
        sides = {"": env_for(compiled(HERE))}
        if options.baseline:
            print(f"before: {describe(options.baseline)}; now: this checkout")
            sides = {"before ": env_for(checkout(options.baseline, Path(scratch))), **sides}
        cases: dict[str, Callable[[], Run]] = {}
        for prefix, env in sides.items():
            where = Path(scratch) / f"memory-{prefix.strip() or 'now'}" / "memory"
            hooks, files = prepare(where, options.scale, env)
            cases.setdefault("python -c pass", hooks.python)
            cases[f"{prefix}prompt, idle"] = hooks.prompt_idle
            cases[f"{prefix}stop, idle"] = lambda hooks=hooks: hooks.stop("1e-9")
            cases[f"{prefix}stop, asleep {ASLEEP}s"] = lambda hooks=hooks: hooks.stop(ASLEEP)
            cases[f"{prefix}session start (pack)"] = hooks.session_start
            cases[f"{prefix}prompt, one new wake"] = hooks.one_new
        print(f"hooks run as: {' '.join(hooks.command[:-2])} (stdin: the agent's JSON)")
        print(f"§12 tree ×{options.scale}: {files} .md files, {len(hooks.nudges)} nudge files")
        samples: dict[str, list[Run]] = {name: [] for name in cases}
        for round_ in range(runs):
            names = list(cases)
            shift = round_ % len(names)  # each case takes each place in the order in turn
            for name in names[shift:] + names[:shift]:
                samples[name].append(cases[name]())
    wall = {name: statistics.median(r.wall for r in runs_) for name, runs_ in samples.items()}
    cpu = {name: statistics.median(r.cpu for r in runs_) for name, runs_ in samples.items()}
    floor, floor_cpu = wall["python -c pass"], cpu["python -c pass"]
    print(f"median of {runs} interleaved rounds (wall: fork to exit; CPU: user + system):")
    print(f"  {'':<31}{'wall ms':>9}{'× python':>10}{'CPU ms':>9}{'× python':>10}   target")
    missed = []
    for name in cases:
        ratio = wall[name] / floor
        verdict = ""
        if name in TARGETS:
            verdict = f"wall ≤ {TARGET}×" + ("" if ratio <= TARGET else "  MISSED")
            if ratio > TARGET:
                missed.append(name)
        print(
            f"  {name:<31}{wall[name] * 1000:>9.1f}{ratio:>9.2f}×"
            f"{cpu[name] * 1000:>9.1f}{cpu[name] / floor_cpu:>9.2f}×   {verdict}"
        )
    if missed:
        print(f"missed: {', '.join(missed)}")
        return 1
    print("every target met")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
