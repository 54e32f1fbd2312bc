"""The pack benchmark (SPEC §12): rouse pack against a bare walk, side by side.

Generates the §12 tree (and a 10× one) under a temporary directory, then times
as separate processes, interleaved in one run:
  - bare:   a Python walk that stats every .md file and reads its first 512 bytes
  - first:  `rouse pack` with no cache in .rouse/
  - warm:   `rouse pack` again, cache in place
  - due:    `rouse due` (cache in place)
  - status: `rouse status` (cache in place)
and prints medians and the ratios against the targets (issue 24): warm ≤ 0.8×
bare, first ≤ 1.5× bare, due and status ≤ 1.1× warm. It exits 1 when a target
is missed, so a regression is seen; it is a benchmark, not a timed test.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from generate import generate

BARE = """
import os, sys
for directory, _, files in os.walk(sys.argv[1]):
    for name in files:
        if name.endswith(".md"):
            path = os.path.join(directory, name)
            os.stat(path)
            with open(path, "rb") as handle:
                handle.read(512)
"""
COMMANDS = ("bare", "first", "warm", "due", "status")
#: (what, against, at most): each target is one ratio of medians
TARGETS = (
    ("warm", "bare", 0.8),
    ("first", "bare", 1.5),
    ("due", "warm", 1.1),
    ("status", "warm", 1.1),
)


def timed(command: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(
        command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env
    )
    return time.perf_counter() - start


def rouse_command() -> list[str]:
    """What an agent's hook runs: the installed ``rouse`` script beside this
    interpreter (``python -m rouse`` also imports runpy, ~9 ms more), else -m."""
    script = Path(sys.executable).parent / "rouse"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "rouse"]


def measure(root: Path, runs: int, rouse: list[str]) -> dict[str, float]:
    env = dict(os.environ)
    memory = [*rouse, "--memory", str(root)]
    commands = {
        "bare": [sys.executable, "-c", BARE, str(root)],
        "first": [*memory, "pack"],
        "warm": [*memory, "pack"],
        "due": [*memory, "due"],
        "status": [*memory, "status"],
    }
    samples: dict[str, list[float]] = {name: [] for name in COMMANDS}
    for _ in range(runs):
        shutil.rmtree(root / ".rouse", ignore_errors=True)
        for name in COMMANDS:  # interleaved: each run times every command once, in turn
            samples[name].append(timed(commands[name], env))
    return {name: statistics.median(values) for name, values in samples.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--scales", type=int, nargs="+", default=[1, 10])
    parser.add_argument(
        "--rouse", help="the command to run rouse as (default: the rouse script beside python)"
    )
    args = parser.parse_args()
    rouse = args.rouse.split() if args.rouse else rouse_command()
    results: dict[int, dict[str, float]] = {}
    missed: list[str] = []
    print(f"rouse runs as: {' '.join(rouse)} --memory TREE VERB")
    with tempfile.TemporaryDirectory(prefix="rouse-bench-") as scratch:
        for scale in args.scales:
            root = Path(scratch) / f"x{scale}" / "memory"
            files = generate(root, scale)
            time.sleep(2.5)  # past the caches' racy window: "warm" means warm
            results[scale] = found = measure(root, args.runs, rouse)
            print(f"\n§12 tree ×{scale}: {files} .md files, median of {args.runs} runs")
            print(f"  {'':<8}{'seconds':>9}{'vs bare':>9}{'vs warm':>9}")
            for name in COMMANDS:
                value = found[name]
                print(
                    f"  {name:<8}{value:>9.3f}{value / found['bare']:>8.2f}×"
                    f"{value / found['warm']:>8.2f}×"
                )
            for what, against, most in TARGETS:
                ratio = found[what] / found[against]
                verdict = "ok" if ratio <= most else "MISSED"
                print(f"  target {what} ≤ {most}× {against}: {ratio:.2f}× {verdict}")
                if ratio > most:
                    missed.append(f"×{scale} {what}/{against} {ratio:.2f} > {most}")
    if 1 in results and 10 in results:
        print("\ngrowth ×1 → ×10 (time ratio):")
        for name in COMMANDS:
            print(f"  {name:<8}{results[10][name] / results[1][name]:>9.2f}×")
    if missed:
        print(f"\ntargets missed: {'; '.join(missed)}")
        return 1
    print("\nevery target met")
    return 0


if __name__ == "__main__":
    sys.exit(main())
