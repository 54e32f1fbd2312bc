"""The fleet's fault run (issue 14): measures and prints; it asserts nothing.

3 trees × 2 sweepers × 2 workers on one PostgreSQL, random SIGKILLs for
``--seconds`` (default 60), ``--runs`` times (default 3), each then left to
settle. Prints per run: kills, wakes due, delivered, duplicates by id (and those
with no kill between the two arrivals), lost, clones left unstamped.

A PostgreSQL is started for the run with the ``pgserver`` wheel (the dev extra),
or ``ROUSE_TEST_PG=postgresql://…`` names one.

Run: ``.venv/bin/python bench/fleet_faults.py [--seconds 60] [--runs 3]``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

import fleet_chaos  # noqa: E402
from pg_server import PgServer  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rouse-fleet-faults-") as tmp:
        where = Path(tmp)
        server = PgServer.from_env() or PgServer.start(where / "pg")
        for n in range(args.runs):
            result = fleet_chaos.run(where / f"run{n}", server.new_database(), args.seconds, seed=n)
            print(f"run {n + 1}: {result.line()}", flush=True)
            if result.lost:
                print(f"    lost: {', '.join(result.lost)}")


if __name__ == "__main__":
    main()
