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
- stop, idle:       Claude Code's Stop hook with nothing new: it registers its
                    waiter, watches, finds nothing to wake the session with and,
                    its maximum wait set to a millisecond (`ROUSE_STOP_WAIT`),
                    leaves at once instead of sleeping (exit 0, says nothing);
- and, for scale only: the session start (the pack) and a prompt with one new wake.

Targets: each idle hook ≤ 1.5× `python -c pass` (medians of --runs rounds, ≥ 9).
Run: `.venv/bin/python bench/hooks_bench.py [--scale 1] [--runs 15]`.
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
from generate import generate

NOW = datetime(2026, 3, 16, 12, 0)
STAMP = "%Y-%m-%d %H:%M"
TARGET = 1.5  # × python -c pass
SESSION = "bench"


def rouse_command() -> list[str]:
    """The installed ``rouse`` script next to this Python (what `rouse wire` pins)."""
    script = Path(sys.executable).parent / "rouse"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "rouse"]


def timed(
    command: list[str], stdin: str = "", env: dict[str, str] | None = None, code: int = 0
) -> tuple[float, str]:
    """Seconds the process took (fork to exit, as an agent waits for it) and its stdout."""
    start = time.perf_counter()
    done = subprocess.run(
        command, input=stdin, capture_output=True, text=True, env=env, check=False
    )
    took = time.perf_counter() - start
    if done.returncode != code or done.stderr:
        raise SystemExit(f"{' '.join(command[-6:])}: exit {done.returncode}: {done.stderr}")
    return took, done.stdout


class Hooks:
    """The commands measured, on one prepared tree."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.command = [*rouse_command(), "pack", "--memory", str(root), "--hook", "claude"]
        self.command += ["--now", NOW.strftime(STAMP)]
        self.seen = root / ".rouse" / "sessions" / f"{SESSION}.json"
        self.nudges = sorted(p.name for p in (root / ".rouse" / "nudges").glob("*.md"))
        self.stop_env = {**os.environ, "ROUSE_STOP_WAIT": "0.001"}

    def event(self, name: str) -> str:
        return json.dumps({"session_id": SESSION, "hook_event_name": name, "cwd": str(self.root)})

    def python(self) -> float:
        return timed([sys.executable, "-c", "pass"], self.event("UserPromptSubmit"))[0]

    def prompt_idle(self) -> float:
        took, out = timed(self.command, self.event("UserPromptSubmit"))
        if out:
            raise SystemExit(f"the idle prompt hook printed something: {out[:200]}")
        return took

    def stop_idle(self) -> float:
        took, out = timed(self.command, self.event("Stop"), env=self.stop_env)
        if out:
            raise SystemExit(f"the idle Stop hook printed something: {out[:200]}")
        return took

    def session_start(self) -> float:
        took, out = timed(self.command, self.event("SessionStart"))
        if not out.startswith("now: "):
            raise SystemExit(f"the session start printed no pack: {out[:200]}")
        return took

    def one_new(self) -> float:
        self.seen.write_text(json.dumps({"seen": self.nudges[:-1]}))
        took, out = timed(self.command, self.event("UserPromptSubmit"))
        if not out.startswith("rouse: 1 record(s) woke you"):
            raise SystemExit(f"one new wake was not shown: {out[:200]}")
        return took


def prepare(root: Path, scale: int) -> tuple[Hooks, int]:
    files = generate(root, scale, now=NOW)
    sweep = ["--memory", str(root), "sweep", "--once", "-q", "--now", NOW.strftime(STAMP)]
    timed([*rouse_command(), *sweep])
    time.sleep(2.5)  # past the racy window of the sweep's last write: a settled tree
    hooks = Hooks(root)
    hooks.session_start()  # the session's seen-set: every wake so far was in its pack
    return hooks, files


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--scale", type=int, default=1)
    parser.add_argument("--runs", type=int, default=15, help="rounds (at least 9)")
    options = parser.parse_args()
    runs = max(options.runs, 9)
    with tempfile.TemporaryDirectory(prefix="rouse-hooks-") as scratch:
        hooks, files = prepare(Path(scratch) / "memory", options.scale)
        print(f"hooks run as: {' '.join(hooks.command[:-2])} (stdin: the agent's JSON)")
        print(f"§12 tree ×{options.scale}: {files} .md files, {len(hooks.nudges)} nudge files")
        cases: dict[str, Callable[[], float]] = {
            "python -c pass": hooks.python,
            "prompt, idle": hooks.prompt_idle,
            "stop, idle": hooks.stop_idle,
            "session start (pack)": hooks.session_start,
            "prompt, one new wake": hooks.one_new,
        }
        samples: dict[str, list[float]] = {name: [] for name in cases}
        for round_ in range(runs):
            names = list(cases)
            shift = round_ % len(names)  # each case takes each place in the order in turn
            for name in names[shift:] + names[:shift]:
                samples[name].append(cases[name]())
    medians = {name: statistics.median(values) for name, values in samples.items()}
    floor = medians["python -c pass"]
    print(f"median of {runs} interleaved rounds:")
    print(f"  {'':<24}{'ms':>8}{'× python':>10}{'target':>9}")
    missed = []
    for name, value in medians.items():
        target = TARGET if name in ("prompt, idle", "stop, idle") else None
        ratio = value / floor
        verdict = ""
        if target is not None:
            verdict = f"≤ {target}×" + ("" if ratio <= target else "  MISSED")
            if ratio > target:
                missed.append(name)
        print(f"  {name:<24}{value * 1000:>8.1f}{ratio:>9.2f}×  {verdict}")
    if missed:
        print(f"missed: {', '.join(missed)}")
        return 1
    print("every target met")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
