"""The pack benchmark (SPEC §12): rouse pack against a bare walk, side by side.

Generates the §12 tree (and a 10× one) under a temporary directory, then times
as separate processes, interleaved in one run:
  - bare:  a Python walk that stats every .md file and reads its first 512 bytes
  - pack (first): `rouse pack` with no cache in .rouse/
  - pack (warm):  `rouse pack` again, cache in place
and prints medians and ratios. It measures and prints; it asserts nothing.
"""

from __future__ import annotations

import argparse
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


def timed(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def rouse_command() -> list[str]:
    """What an agent's hook runs: the installed ``rouse`` script beside this
    interpreter (``python -m rouse`` also imports runpy, ~9 ms more), else -m."""
    script = Path(sys.executable).parent / "rouse"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "rouse"]


def measure(root: Path, runs: int) -> dict[str, float]:
    rouse = [*rouse_command(), "--memory", str(root)]
    bare = [sys.executable, "-c", BARE, str(root)]
    samples: dict[str, list[float]] = {"bare": [], "pack first": [], "pack warm": []}
    for _ in range(runs):
        shutil.rmtree(root / ".rouse", ignore_errors=True)
        samples["bare"].append(timed(bare))
        samples["pack first"].append(timed([*rouse, "pack"]))
        samples["pack warm"].append(timed([*rouse, "pack"]))
    return {name: statistics.median(values) for name, values in samples.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--scales", type=int, nargs="+", default=[1, 10])
    args = parser.parse_args()
    results: dict[int, dict[str, float]] = {}
    print(f"pack runs as: {' '.join(rouse_command())} --memory TREE pack")
    with tempfile.TemporaryDirectory(prefix="rouse-bench-") as scratch:
        for scale in args.scales:
            root = Path(scratch) / f"x{scale}" / "memory"
            files = generate(root, scale)
            time.sleep(2.5)  # past the caches' racy window: "warm" means warm
            runs = args.runs if scale == 1 else max(3, args.runs // 2)
            results[scale] = measure(root, runs)
            print(f"\n§12 tree ×{scale}: {files} .md files, median of {runs} runs")
            print(f"  {'':<12}{'seconds':>9}{'vs bare':>10}")
            bare = results[scale]["bare"]
            for name, value in results[scale].items():
                print(f"  {name:<12}{value:>9.3f}{value / bare:>9.2f}×")
    if 1 in results and 10 in results:
        print("\ngrowth ×1 → ×10 (time ratio):")
        for name in results[1]:
            print(f"  {name:<12}{results[10][name] / results[1][name]:>9.2f}×")


if __name__ == "__main__":
    main()
