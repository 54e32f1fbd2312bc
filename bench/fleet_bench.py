"""The fleet benchmark (issue 14): measures and prints; it asserts nothing.

1. Delivery workers on the bench tree: the §12 tree (bench/generate.py, ~1,600
   records due) is swept once with ``rouse sweep --once --plan-only --ledger
   DSN``, which queues its wakes in a fresh database; then 1, 2 and 4 ``rouse
   deliver --once --sink webhook URL`` processes, started together, deliver
   them to a receiver on loopback. Prints the plan-only tick's time, each
   run's wall time and rate (process start-up included) and the steady rate
   from the first to the last arrival, and counts lost and doubled ids.
2. The mirror and the fleet views: ``bench/fleet_mirror_bench.py`` (the ×10
   tree cold and after 100 edits; ``fleet due`` across 10 mirrored trees).

A PostgreSQL is started with the ``pgserver`` wheel (the dev extra), or
``ROUSE_TEST_PG=postgresql://…`` names one. Run:
``.venv/bin/python bench/fleet_bench.py [--workers 1 2 4] [--skip-mirror]``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

from fleet_deliver_bench import deliver  # noqa: E402
from generate import generate  # noqa: E402
from pg_server import PgServer  # noqa: E402

ROUSE = [sys.executable, "-m", "rouse"]
NOW = datetime(2026, 3, 14, 12, 0)


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROUSE_")}
    env["ROUSE_PROBES"] = "off"
    return env


def queue_bench_tree(where: Path, dsn: str) -> tuple[list[str], float]:
    """Lay the bench tree and queue its due wakes with one plan-only tick: (ids, seconds)."""
    root = where / "memory"
    generate(root, 1, now=NOW)
    (root / ".rouse-tree").write_text(f"tree: {os.urandom(16).hex()}\n")
    at = NOW.strftime("%Y-%m-%d %H:%M")
    argv = [*ROUSE, "--memory", str(root), "--now", at, "sweep", "--once", "--plan-only"]
    began = time.monotonic()
    done = subprocess.run(
        [*argv, "--ledger", dsn, "-q"],
        env=_env(),
        capture_output=True,
        text=True,
        check=False,
    )
    seconds = time.monotonic() - began
    if done.returncode not in (0, 1):
        raise SystemExit(f"plan-only sweep failed: {done.stderr}")
    import psycopg

    with psycopg.connect(dsn) as conn:
        found = conn.execute("SELECT id FROM outbox WHERE sink = 'workers'").fetchall()
    return [row[0] for row in found], seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--skip-mirror", action="store_true")
    args = parser.parse_args()
    print(f"cpus: {os.cpu_count()}", flush=True)
    with tempfile.TemporaryDirectory(prefix="rouse-fleet-bench-") as tmp:
        server = PgServer.from_env() or PgServer.start(Path(tmp) / "pg")
        for workers in args.workers:
            dsn = server.new_database()
            ids, seconds = queue_bench_tree(Path(tmp) / f"tree{workers}", dsn)
            print(f"plan-only tick of the bench tree: {len(ids)} wakes queued in {seconds:.2f}s")
            print(deliver(dsn, workers, ids), flush=True)
    if not args.skip_mirror:
        subprocess.run([sys.executable, str(HERE / "fleet_mirror_bench.py")], check=False)


if __name__ == "__main__":
    main()
