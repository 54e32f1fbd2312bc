"""The recall benchmark: `rouse recall` on the SPEC §12 tree, first and warm.

Generates the §12 tree (``bench/generate.py``) under a temporary directory,
waits out the index's "written just now" window (files younger than 2 s are
re-read on every recall, so a tree at rest is what gets measured), then times
as separate processes, interleaved in one run:
  - bare:         the pack benchmark's baseline (stat every .md, read 512 bytes)
  - recall first: `rouse recall QUERY` with no .rouse/ (walks, reads every body,
                  builds the FTS5 index)
  - recall warm:  the same again (index and header cache in place)
  - recall one:   after one note changed (only that file is re-read)
and prints medians. It measures and prints; it asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from generate import generate
from run import BARE, timed

QUERY = ("postgres", "migration")


def touch_one_note(root: Path, run: int) -> None:
    path = next((root / "inventory" / "notes").glob("*.md"))
    with path.open("a", encoding="utf-8") as handle:
        handle.write(f"Edited in run {run}: the rollback needs a postgres snapshot.\n")
    past = time.time() - 10  # out of the "written just now" window
    os.utime(path, (past, past))


def measure(root: Path, runs: int) -> dict[str, float]:
    recall = [sys.executable, "-m", "rouse", "--memory", str(root), "recall", *QUERY]
    bare = [sys.executable, "-c", BARE, str(root)]
    samples: dict[str, list[float]] = {
        "bare": [],
        "recall first": [],
        "recall warm": [],
        "recall one": [],
    }
    for run in range(runs):
        shutil.rmtree(root / ".rouse", ignore_errors=True)
        samples["bare"].append(timed(bare))
        samples["recall first"].append(timed(recall))
        samples["recall warm"].append(timed(recall))
        touch_one_note(root, run)
        samples["recall one"].append(timed(recall))
    return {name: statistics.median(values) for name, values in samples.items()}


def index_stats(root: Path) -> str:
    """One in-process first build and warm refresh, to show what each re-read."""
    from rouse.cache.walk import HeaderCache
    from rouse.core.tree import walk
    from rouse.pack.index import Index

    shutil.rmtree(root / ".rouse", ignore_errors=True)
    lines = []
    for label in ("first", "warm"):
        cache = HeaderCache(root)
        tree = walk(root, cache)
        cache.save()
        with Index(root) as index:
            stats = index.refresh(tree)
        lines.append(
            f"  {label}: {stats.read} bodies read, {stats.unchanged} unchanged, "
            f"{cache.misses} headers read"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--scales", type=int, nargs="+", default=[1])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rouse-recall-bench-") as scratch:
        for scale in args.scales:
            root = Path(scratch) / f"x{scale}" / "memory"
            files = generate(root, scale)
            time.sleep(2.5)
            runs = args.runs if scale == 1 else max(3, args.runs // 2)
            results = measure(root, runs)
            query = " ".join(QUERY)
            print(
                f"\nrecall {query!r} on the §12 tree ×{scale}: {files} .md files, "
                f"median of {runs} runs"
            )
            print(f"  {'':<14}{'seconds':>9}{'vs bare':>10}")
            for name, value in results.items():
                print(f"  {name:<14}{value:>9.3f}{value / results['bare']:>9.2f}×")
            print(index_stats(root))


if __name__ == "__main__":
    main()
