"""Delivery workers' throughput (issue 14): deliveries per second with 1, 2 and 4 workers.

For each worker count: a fresh database on one PostgreSQL, ``--wakes`` wakes
(default 1,600) queued for workers as a ``--plan-only`` sweeper leaves them,
then that many ``rouse deliver --once --sink webhook URL`` processes started
together against a webhook receiver on loopback (answers 200 at once). Prints
the wall time from the start of the processes to the exit of the last (process
start-up included) and the rate between the first and the last arrival at the
receiver (the steady state), and checks that every wake arrived exactly once.
It asserts nothing else.

A PostgreSQL is started for the run with the ``pgserver`` wheel (the dev extra),
or ``ROUSE_TEST_PG=postgresql://…`` names one.

Run: ``.venv/bin/python bench/fleet_deliver_bench.py [--wakes 1600] [--batch 10]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from pg_server import PgServer  # noqa: E402

ROUSE = [sys.executable, "-m", "rouse"]


class Receiver:
    def __init__(self) -> None:
        self.arrivals: list[tuple[str, float]] = []
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                wake_id = json.loads(body)["id"]
                with receiver.lock:
                    receiver.arrivals.append((wake_id, time.monotonic()))
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.request_queue_size = 128
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/wake"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def queue(dsn: str, count: int) -> list[str]:
    """``count`` wakes of one tree, pending for workers (no attempt made yet)."""
    import psycopg

    from rouse.fleet.pg import PgDatabase
    from rouse.fleet.pg_schema import migrate

    db = PgDatabase(dsn)
    migrate(db, db.where)
    db.close()
    tree = uuid.uuid4().hex
    at = "2026-03-14 12:00:00"
    rows = []
    for n in range(count):
        slug = f"call-{n}"
        wake = {
            "id": f"20260314T120000-{n:016x}",
            "record": f"reminder/{slug}",
            "type": "reminder",
            "slug": slug,
            "path": f"inventory/reminders/{slug}",
            "file": f"inventory/reminders/{slug}/reminder.md",
            "reason": "due",
            "nudge": 1,
            "last_moved": "2026-03-14 11:00",
            "at": at,
            "text": f"reminder/{slug} — due now\nat: inventory/reminders/{slug}\nCall {n}.\n",
        }
        rows.append(
            (
                tree,
                wake["id"],
                wake["record"],
                wake["path"],
                wake["file"],
                wake["reason"],
                wake["nudge"],
                at,
                wake["last_moved"],
                json.dumps(wake, ensure_ascii=False),
            )
        )
    with psycopg.connect(dsn, autocommit=True) as conn, conn.cursor() as cursor:
        cursor.executemany(
            "INSERT INTO outbox (kind, tree, id, record, path, file, reason, nudge, made_at, "
            "last_moved, wake, sink, state, attempts, in_flight) "
            "VALUES ('wake',%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,'workers','pending',0,0)",
            rows,
        )
    return [row[1] for row in rows]


def deliver(dsn: str, workers: int, ids: list[str], batch: int = 10) -> str:
    """``workers`` ``rouse deliver --once`` processes, started together, send the wakes
    queued in ``dsn`` to a receiver on loopback: one line of rates and counts."""
    receiver = Receiver()
    env = {k: v for k, v in os.environ.items() if k not in ("ROUSE_LEDGER", "ROUSE_NOW")}
    argv = [*ROUSE, "deliver", "--ledger", dsn, "--sink", "webhook", receiver.url]
    argv += ["--once", "--batch", str(batch), "-q"]
    try:
        began = time.monotonic()
        procs = [subprocess.Popen(argv, env=env) for _ in range(workers)]
        codes = [proc.wait() for proc in procs]
        wall = time.monotonic() - began
    finally:
        receiver.close()
    counts = Counter(wake_id for wake_id, _ in receiver.arrivals)
    times = sorted(at for _, at in receiver.arrivals)
    steady = (len(times) - 1) / (times[-1] - times[0]) if len(times) > 1 else 0.0
    lost = len(set(ids) - set(counts))
    twice = sum(1 for n in counts.values() if n > 1)
    wakes = len(ids)
    return (
        f"{workers} worker{'s' if workers > 1 else ' '}: {wakes} wakes in {wall:5.2f}s = "
        f"{wakes / wall:6.0f}/s with start-up, {steady:6.0f}/s first to last arrival; "
        f"exit codes {sorted(set(codes))}, lost {lost}, sent twice {twice}"
    )


def measure(server: PgServer, workers: int, wakes: int, batch: int) -> str:
    dsn = server.new_database()
    return deliver(dsn, workers, queue(dsn, wakes), batch)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--wakes", type=int, default=1600)
    parser.add_argument("--batch", type=int, default=10)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    args = parser.parse_args()
    print(f"cpus: {os.cpu_count()}, batch {args.batch}", flush=True)
    with tempfile.TemporaryDirectory(prefix="rouse-deliver-bench-") as tmp:
        server = PgServer.from_env() or PgServer.start(Path(tmp) / "pg")
        try:
            for workers in args.workers:
                print(measure(server, workers, args.wakes, args.batch), flush=True)
        finally:
            handle = getattr(server, "handle", None)
            if handle is not None:
                handle.cleanup()


if __name__ == "__main__":
    main()
