"""The sweeper benchmark (issue 4): measures and prints; it asserts nothing.

On the SPEC §12 tree (bench/generate.py, ~3,600 files) and its 10× version:

- bare:        a Python walk that stats every .md file and reads its first
               512 bytes (the same baseline as bench/run.py);
- deliver:     one `rouse sweep --once` that delivers every due record (~1,100
               at scale 1) to the file sink, as a process (what cron pays);
- idle cold:   a tick with nothing due and no header cache yet;
- idle warm:   the same tick again, header cache in place (the steady state of
               a sweeper ticking every minute): it should read no unchanged file.
- digest:      (issue 13) every due record delivered to an exec stand-in, once
               one delivery per wake (`--sink exec`) and once as one agent run
               of one digest (`--run exec`), each on a fresh copy of the tree.

Idle ticks run at an instant three weeks before the generator's "now", when no
record is due yet. Run: `.venv/bin/python bench/sweep_bench.py [--scales 1 10]`.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from generate import generate
from run import BARE

STAMP = "%Y-%m-%d %H:%M"


def timed(command: list[str]) -> tuple[float, subprocess.CompletedProcess[str]]:
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    return time.perf_counter() - start, done


def rouse(root: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "rouse", "--memory", str(root), *args]


def bench(scale: int, scratch: Path, runs: int, deliver: bool) -> None:
    now = datetime(2026, 3, 16, 12, 0)
    root = scratch / f"x{scale}" / "memory"
    files = generate(root, scale, now=now)
    time.sleep(2.1)  # let every file settle past the header cache's racy window
    bare = statistics.median(timed([sys.executable, "-c", BARE, str(root)])[0] for _ in range(runs))
    print(f"\n§12 tree ×{scale}: {files} .md files")
    print(f"  {'bare walk (stat + 512 B)':<34}{bare:>8.3f}s")

    early = (now - timedelta(days=21)).strftime(STAMP)
    cold, done = timed(rouse(root, "sweep", "--once", "--now", early))
    assert done.returncode == 0, done.stderr
    warm_runs = [timed(rouse(root, "sweep", "--once", "--now", early))[0] for _ in range(runs)]
    warm = statistics.median(warm_runs)
    print(f"  {'idle tick, cold (no cache)':<34}{cold:>8.3f}s {cold / bare:>6.2f}× bare")
    print(f"  {'idle tick, warm (cache in place)':<34}{warm:>8.3f}s {warm / bare:>6.2f}× bare")

    if deliver:
        due = json.loads(subprocess.run(
            rouse(root, "due", "--json", "--now", now.strftime(STAMP)),
            capture_output=True, text=True, check=True,
        ).stdout)  # fmt: skip
        seconds, done = timed(rouse(root, "sweep", "--once", "--now", now.strftime(STAMP)))
        delivered = len(list((root / ".rouse/nudges").glob("*.md")))
        assert done.returncode == 0, done.stderr
        print(
            f"  {'deliver (sweep --once, file sink)':<34}{seconds:>8.3f}s  "
            f"{delivered} wakes ({len(due)} due), {1000 * seconds / max(delivered, 1):.2f} ms/wake"
        )
        after, done = timed(rouse(root, "sweep", "--once", "--now", now.strftime(STAMP)))
        print(f"  {'the next tick (nothing left due)':<34}{after:>8.3f}s")


STAND_IN = """#!/bin/sh
cat > /dev/null
echo x >> "$0.calls"
"""


def bench_digest(scratch: Path, now: datetime) -> None:
    """One delivery per wake vs one run of one digest, to the same exec stand-in."""
    agent = scratch / "stand-in"
    agent.write_text(STAND_IN)
    agent.chmod(0o755)
    calls = Path(f"{agent}.calls")
    print("\ndigest (issue 13): every due wake of the §12 tree ×1 to an exec stand-in")
    for label, options in (
        ("one delivery per wake (--sink exec)", ["--sink", "exec"]),
        ("one run of one digest (--run exec)", ["--run", "exec"]),
    ):
        root = scratch / f"digest-{options[0][2:]}" / "memory"
        generate(root, 1, now=now)
        calls.unlink(missing_ok=True)
        command = rouse(root, "sweep", "--once", "--now", now.strftime(STAMP), *options)
        seconds, done = timed([*command, "--", str(agent)])
        assert done.returncode == 0, done.stderr
        started = len(calls.read_text().splitlines())
        wakes = json.loads(subprocess.run(
            rouse(root, "log", "--json", "--limit", "10000"),
            capture_output=True, text=True, check=True,
        ).stdout)  # fmt: skip
        delivered = sum(w["state"] == "delivered" for w in wakes)
        print(
            f"  {label:<38}{seconds:>8.3f}s  {delivered} wakes delivered, "
            f"{started} process(es) started"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--scales", type=int, nargs="+", default=[1, 10])
    parser.add_argument("--deliver-at", type=int, nargs="+", default=[1], metavar="SCALE")
    parser.add_argument("--digest-only", action="store_true", help="only the digest rows")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rouse-sweep-bench-") as scratch:
        if not args.digest_only:
            for scale in args.scales:
                bench(scale, Path(scratch), args.runs, scale in args.deliver_at)
        bench_digest(Path(scratch), datetime(2026, 3, 16, 12, 0))


if __name__ == "__main__":
    main()
