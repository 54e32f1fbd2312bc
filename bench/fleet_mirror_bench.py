"""The fleet mirror benchmark (issue 14): measures and prints; it asserts nothing.

- mirror cold:    the first sync of the §12 tree ×10 (~36k files) into an empty database;
- mirror idle:    the next sync, nothing changed (a leader's steady tick);
- 100 edits:      a sync after 100 files were edited (bodies and headers);
- fleet due:      ``fleet.due.due`` in-process, and ``rouse fleet due`` as a process,
                  over 10 mirrored trees (§12 ×1 each: ~36k rows in all);
- fleet recall:   ``rouse fleet recall`` as a process over the same 10 trees.

Walk times are printed apart from sync times: the sweeper walks anyway.
The database is ``ROUSE_TEST_PG`` if set, else one started here (the
``pgserver`` wheel, as the tests do). Run:
``.venv/bin/python bench/fleet_mirror_bench.py [--scale 10] [--trees 10]``.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path

from rouse.cache.walk import cached_walk
from rouse.core.identity import ensure_tree_id
from rouse.fleet import due as fleet_due
from rouse.fleet.mirror import Mirror
from rouse.fleet.pg import PgDatabase
from rouse.fleet.pg_schema import migrate
from rouse.trust.origins import origin_reader

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from generate import generate
from pg_server import PgServer

NOW = datetime(2026, 3, 16, 12, 0)
STAMP = "%Y-%m-%d %H:%M"


def database(server: PgServer) -> str:
    dsn = server.new_database()
    db = PgDatabase(dsn)
    migrate(db, db.where)
    db.close()
    return dsn


def mirror_for(root: Path, dsn: str) -> Mirror:
    tree, _ = ensure_tree_id(root)
    return Mirror(root, PgDatabase(dsn), tree, origin_reader(root, root.parent / "no-key"))


def timed_sync(mirror: Mirror) -> tuple[float, float, int]:
    start = time.perf_counter()
    tree = cached_walk(mirror.root)
    walked = time.perf_counter() - start
    written = mirror.sync(tree, NOW)
    return walked, time.perf_counter() - start - walked, written


def edit(root: Path, count: int, seed: int) -> None:
    """Edit ``count`` random .md files: a line appended, an mtime never seen before."""
    rng = random.Random(seed)
    files = sorted(p for p in root.rglob("*.md") if ".rouse" not in p.parts)
    for n, path in enumerate(rng.sample(files, count)):
        with path.open("a", encoding="utf-8") as handle:
            handle.write(f"\nedited {n}: the nightly deploy moved\n")
        stamp = (NOW - timedelta(hours=1, seconds=n)).timestamp()
        os.utime(path, (stamp, stamp))


def bench_mirror(scratch: Path, dsn: str, scale: int) -> None:
    root = scratch / f"x{scale}" / "memory"
    files = generate(root, scale, now=NOW)
    time.sleep(2.1)  # past the racy window: every mtime is trusted
    mirror = mirror_for(root, dsn)
    print(f"\nmirror of the §12 tree ×{scale}: {files} .md files")
    for label in ("cold (empty database)", "idle (nothing changed)"):
        walked, synced, written = timed_sync(mirror)
        print(f"  {label:<30} walk {walked:7.3f}s  sync {synced:7.3f}s  {written:>6} rows written")
    edit(root, 100, seed=scale)
    walked, synced, written = timed_sync(mirror)
    stats = mirror.stats
    print(
        f"  {'after 100 edits':<30} walk {walked:7.3f}s  sync {synced:7.3f}s  {written:>6} rows "
        f"written ({stats.written} read, {stats.clock} clock only)"
    )
    again = mirror_for(root, dsn)  # a new sweeper process: it reads back what the rows hold
    walked, synced, written = timed_sync(again)
    print(
        f"  {'a new process, idle':<30} walk {walked:7.3f}s  sync {synced:7.3f}s  {written:>6} rows"
    )


def rouse(*args: str) -> list[str]:
    return [sys.executable, "-m", "rouse", *args]


def process_seconds(command: list[str], runs: int) -> tuple[float, str]:
    times, out = [], ""
    for _ in range(runs):
        start = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        times.append(time.perf_counter() - start)
        out = done.stdout
    return statistics.median(times), out


def bench_views(scratch: Path, dsn: str, trees: int, runs: int) -> None:
    rows = 0
    for n in range(trees):
        root = scratch / f"fleet{n}" / "memory"
        rows += generate(root, 1, now=NOW, seed=100 + n)
    time.sleep(2.1)
    for n in range(trees):
        mirror_for(scratch / f"fleet{n}" / "memory", dsn).sync(
            cached_walk(scratch / f"fleet{n}" / "memory"), NOW
        )
    print(f"\nfleet views over {trees} mirrored trees (§12 ×1 each, {rows} rows)")
    db = PgDatabase(dsn)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        items = fleet_due.due(db, NOW)
        times.append(time.perf_counter() - start)
    print(f"  {'fleet due, in-process':<30} {statistics.median(times):7.3f}s  {len(items)} records")
    at = ["--now", NOW.strftime(STAMP), "fleet"]
    seconds, out = process_seconds(rouse(*at, "due", "--ledger", dsn), runs)
    print(f"  {'rouse fleet due (process)':<30} {seconds:7.3f}s  {len(out.splitlines())} rows")
    seconds, out = process_seconds(rouse(*at, "due", "--ledger", dsn, "--json"), runs)
    print(f"  {'rouse fleet due --json':<30} {seconds:7.3f}s")
    seconds, out = process_seconds(
        rouse(*at, "recall", "postgres", "backup", "--ledger", dsn), runs
    )
    print(f"  {'rouse fleet recall (2 words)':<30} {seconds:7.3f}s")
    seconds, out = process_seconds(rouse(*at, "status", "--ledger", dsn), runs)
    print(f"  {'rouse fleet status':<30} {seconds:7.3f}s  {len(out.splitlines())} trees")
    db.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--scale", type=int, default=10, help="the mirrored tree's scale")
    parser.add_argument("--trees", type=int, default=10, help="trees for the fleet views")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rouse-fleet-bench-") as name:
        scratch = Path(name)
        server = PgServer.from_env() or PgServer.start(scratch / "pg")
        bench_mirror(scratch, database(server), args.scale)
        bench_views(scratch, database(server), args.trees, args.runs)


if __name__ == "__main__":
    main()
