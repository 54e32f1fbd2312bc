"""``rouse deliver``: delivery workers on a real PostgreSQL (issue 14, deliverable 4).

Every test queues wakes as a ``--plan-only`` sweeper leaves them for workers
(``sink = 'workers'``, ``state = 'pending'``, no attempt yet) and runs real
``rouse deliver`` processes against a real sink: a webhook server on loopback,
or a shell command.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from rouse.sweep.ledger import backoff
from rouse.sweep.wake import Wake

ROUSE = [sys.executable, "-m", "rouse"]
MADE = datetime(2026, 3, 14, 12, 0)
SECRET = "whsec_" + base64.b64encode(b"k" * 24).decode()


# -- helpers ------------------------------------------------------------------


def new_tree() -> str:
    return uuid.uuid4().hex


def make_wake(tree: str, n: int) -> Wake:
    slug = f"call-{n}"
    return Wake(
        id=f"20260314T120000-{tree[:6]}{n:010d}",
        record=f"reminder/{slug}",
        type="reminder",
        slug=slug,
        path=f"inventory/reminders/{slug}",
        file=f"inventory/reminders/{slug}/reminder.md",
        reason="due",
        nudge=1,
        last_moved="2026-03-14 11:00",
        at=MADE.strftime("%Y-%m-%d %H:%M:%S"),
        text=f"reminder/{slug} — due now\nat: inventory/reminders/{slug}\nCall {n}.\n",
    )


def queue(dsn: str, tree: str, count: int) -> list[str]:
    """``count`` wakes of ``tree`` left for workers, as a --plan-only sweeper writes them.

    (Written here, by the contract, not through the sweeper's ledger code.)
    """
    from rouse.fleet.pg import PgDatabase
    from rouse.fleet.pg_schema import migrate

    db = PgDatabase(dsn)
    try:
        migrate(db, db.where)
        ids = []
        for n in range(count):
            wake = make_wake(tree, n)
            db.execute(
                "INSERT INTO outbox (kind, tree, id, record, path, file, reason, nudge, made_at, "
                "last_moved, wake, sink, state, attempts, in_flight, last_attempt) "
                "VALUES ('wake',?,?,?,?,?,?,?,?,?,?,'workers','pending',0,0,NULL)",
                (
                    tree,
                    wake.id,
                    wake.record,
                    wake.path,
                    wake.file,
                    wake.reason,
                    wake.nudge,
                    wake.at,
                    wake.last_moved,
                    json.dumps(wake.as_dict(), ensure_ascii=False),
                ),
            )
            ids.append(wake.id)
    finally:
        db.close()
    return ids


def rows(dsn: str, sql: str = "SELECT * FROM outbox ORDER BY id", *params: object) -> list[Any]:
    import psycopg
    from psycopg.rows import dict_row

    with psycopg.connect(dsn, autocommit=True, row_factory=dict_row) as conn:
        return conn.execute(sql, params).fetchall()


def execute(dsn: str, sql: str, *params: object) -> None:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(sql, params)


def environment(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("ROUSE_LEDGER", "ROUSE_NOW")}
    env.update(extra)
    return env


def deliver(
    *args: str, env: dict[str, str] | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*ROUSE, "deliver", *args],
        env=env or environment(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def start(*args: str, env: dict[str, str] | None = None, log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(
            [*ROUSE, "deliver", *args],
            env=env or environment(),
            stdout=out,
            stderr=subprocess.STDOUT,
        )


def wait_for(
    what: Callable[[], object],
    seconds: float = 10.0,
    alive: subprocess.Popen[bytes] | None = None,
) -> None:
    """Poll ``what`` until it is true (a condition, not a fixed sleep), while ``alive`` runs."""
    end = time.monotonic() + seconds
    while not what():
        assert alive is None or alive.poll() is None, f"the worker exited {alive.returncode}"
        assert time.monotonic() < end, f"timed out waiting for {what}"
        time.sleep(0.02)


def lines(path: Path) -> list[str]:
    return path.read_text().split() if path.exists() else []


class Receiver:
    """A webhook sink on loopback: keeps each POST (its JSON and headers), answers ``status``."""

    def __init__(self, status: int = 200):
        self.status = status
        self.posts: list[tuple[dict[str, Any], dict[str, str], bytes]] = []
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                with receiver.lock:
                    receiver.posts.append(
                        (json.loads(body), {k.lower(): v for k, v in self.headers.items()}, body)
                    )
                self.send_response(receiver.status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/wake"

    def ids(self) -> list[str]:
        with self.lock:
            return [payload["id"] for payload, _, _ in self.posts]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    found = Receiver()
    yield found
    found.close()


# -- (a) one worker, a webhook ---------------------------------------------------


def test_one_worker_delivers_every_owed_wake_signed_and_names_itself(
    pg_dsn: str, receiver: Receiver
) -> None:
    tree = new_tree()
    ids = queue(pg_dsn, tree, 12)
    done = deliver(
        "--ledger",
        pg_dsn,
        "--sink",
        "webhook",
        receiver.url,
        "--once",
        "--batch",
        "5",
        env=environment(ROUSE_WEBHOOK_SECRET=SECRET),
    )
    assert done.returncode == 0, done.stderr
    assert sorted(receiver.ids()) == ids
    assert "12 delivered, 0 failed, 0 given up" in done.stderr
    key = base64.b64decode(SECRET.removeprefix("whsec_"))
    for payload, headers, body in receiver.posts:
        n = int(payload["id"][-10:])
        assert payload == make_wake(tree, n).payload()  # the sweeper's webhook payload
        signed = f"{headers['webhook-id']}.{headers['webhook-timestamp']}.".encode() + body
        expected = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
        assert headers["webhook-id"] == payload["id"]
        assert headers["webhook-signature"] == f"v1,{expected}"
    found = rows(pg_dsn)
    assert [row["state"] for row in found] == ["delivered"] * 12
    for row in found:
        assert row["stamped"] == 0  # its sweeper stamps the record
        assert row["in_flight"] == 0 and row["attempts"] == 1
        assert row["claimed_by"] is None and row["claim_until"] is None
        assert row["receipt"].startswith("HTTP 200 (worker ")
        assert f":{_pid(row['receipt'])}:" in row["receipt"]
    assert len({row["receipt"] for row in found}) == 1  # one worker, named the same
    again = deliver("--ledger", pg_dsn, "--sink", "webhook", receiver.url, "--once")
    assert again.returncode == 0 and again.stderr == ""  # nothing owed: nothing said
    assert len(receiver.posts) == 12


def _pid(receipt: str) -> str:
    return receipt.rsplit("(worker ", 1)[1].split(":")[1]


def test_exec_sink_gets_the_wake_on_stdin_and_its_trees_recorded_root(
    pg_dsn: str, tmp_path: Path
) -> None:
    known, unknown, other = new_tree(), new_tree(), new_tree()
    for tree in (known, unknown, other):
        queue(pg_dsn, tree, 2)
    execute(pg_dsn, "INSERT INTO trees (tree, root, host) VALUES (%s, '/srv/memory', 'box')", known)
    out = tmp_path / "out"
    out.mkdir()
    script = (
        'cat > "$OUT/$ROUSE_WAKE_ID.txt"; env | grep "^ROUSE_" | sort > "$OUT/$ROUSE_WAKE_ID.env"'
    )
    done = deliver(
        "--ledger",
        pg_dsn,
        "--sink",
        "exec",
        "--once",
        "--tree",
        known,
        unknown,
        "--",
        "sh",
        "-c",
        script,
        env=environment(OUT=str(out), ROUSE_MEMORY="/not/this/one"),
    )
    assert done.returncode == 0, done.stderr
    by_tree = {row["id"]: row for row in rows(pg_dsn)}
    sent = sorted(path.stem for path in out.glob("*.txt"))
    assert sent == sorted(i for i, row in by_tree.items() if row["tree"] != other)
    for wake_id in sent:
        tree = by_tree[wake_id]["tree"]
        wake = make_wake(tree, int(wake_id[-10:]))
        assert (out / f"{wake_id}.txt").read_text() == wake.text
        env = dict(
            line.split("=", 1) for line in (out / f"{wake_id}.env").read_text().split("\n") if line
        )
        assert env["ROUSE_WAKE_ID"] == wake_id and env["ROUSE_WAKE_IDS"] == wake_id
        assert env["ROUSE_RECORD"] == wake.record and env["ROUSE_REASON"] == "due"
        assert env["ROUSE_PATH"] == wake.path and env["ROUSE_NUDGE"] == "1"
        assert env["ROUSE_TREE"] == tree
        if tree == known:
            assert env["ROUSE_MEMORY"] == "/srv/memory"
        else:
            assert "ROUSE_MEMORY" not in env  # no root recorded: none made up
        assert by_tree[wake_id]["receipt"].startswith("exit 0 (worker ")
    assert {row["state"] for row in by_tree.values() if row["tree"] == other} == {"pending"}


# -- (b) concurrent workers --------------------------------------------------------


@pytest.mark.parametrize("workers", [2, 4])
def test_concurrent_workers_deliver_every_wake_exactly_once(
    pg_dsn: str, receiver: Receiver, workers: int, tmp_path: Path
) -> None:
    tree = new_tree()
    ids = queue(pg_dsn, tree, 200)
    procs = [
        start(
            "--ledger",
            pg_dsn,
            "--sink",
            "webhook",
            receiver.url,
            "--once",
            "--batch",
            "4",
            log=tmp_path / f"worker{n}.log",
        )
        for n in range(workers)
    ]
    for proc in procs:
        assert proc.wait(timeout=60) == 0
    counts = Counter(receiver.ids())
    assert sorted(counts) == ids
    assert set(counts.values()) == {1}  # no wake id sent twice
    found = rows(pg_dsn)
    assert {row["state"] for row in found} == {"delivered"}
    assert {row["attempts"] for row in found} == {1}
    names = {_pid(row["receipt"]) for row in found}
    assert names <= {str(proc.pid) for proc in procs}


# -- (c) a worker killed while it holds claims ----------------------------------------


def test_a_killed_workers_claims_expire_and_only_the_wake_in_flight_counts_an_attempt(
    pg_dsn: str, tmp_path: Path
) -> None:
    tree = new_tree()
    ids = queue(pg_dsn, tree, 3)
    started, sent, pids = tmp_path / "started", tmp_path / "sent", tmp_path / "pids"
    hang = 'echo $$ >> "$PIDS"; echo "$ROUSE_WAKE_ID" >> "$STARTED"; exec sleep 30'
    env = environment(STARTED=str(started), SENT=str(sent), PIDS=str(pids))
    first = start(
        "--ledger",
        pg_dsn,
        "--sink-cmd",
        f"sh -c '{hang}'",
        "--sink",
        "exec",
        "--timeout",
        "1",
        "--lease",
        "6",
        env=env,
        log=tmp_path / "first.log",
    )
    try:
        wait_for(lambda: lines(started), alive=first)
        claimed = rows(pg_dsn, "SELECT id, claimed_by FROM outbox WHERE claimed_by IS NOT NULL")
        assert sorted(row["id"] for row in claimed) == ids  # it holds all three
        first.send_signal(signal.SIGKILL)
        first.wait()
    finally:
        for pid in lines(pids):  # the hung command outlives its worker: end it
            with contextlib.suppress(ProcessLookupError):
                os.killpg(int(pid), signal.SIGKILL)
    in_flight = lines(started)
    assert len(in_flight) == 1
    left = {row["id"]: row for row in rows(pg_dsn)}
    for wake_id in ids:  # only the wake being sent is in flight and counts an attempt
        sending = wake_id == in_flight[0]
        assert left[wake_id]["in_flight"] == left[wake_id]["attempts"] == int(sending)
        assert (left[wake_id]["last_attempt"] is None) != sending
    # its claims run out (their lease, on the database's clock; not waited for here)
    execute(pg_dsn, "UPDATE outbox SET claim_until = now() - interval '1 second'")
    second = deliver(
        "--ledger",
        pg_dsn,
        "--sink",
        "exec",
        "--once",
        "--",
        "sh",
        "-c",
        'echo "$ROUSE_WAKE_ID" >> "$SENT"',
        env=env,
    )
    assert second.returncode == 0, second.stderr
    assert sorted(lines(sent)) == ids  # nothing lost; the one in flight sent again, same id
    assert in_flight[0] in lines(sent)
    for row in rows(pg_dsn):
        assert row["state"] == "delivered"
        if row["id"] == in_flight[0]:
            assert row["attempts"] == 2  # the silent attempt counts, as a failure
            assert row["first_failure"] == left[row["id"]]["last_attempt"]
        else:  # never sent before: no failure charged, no 24 h clock started
            assert row["attempts"] == 1 and row["first_failure"] is None
        assert "no result recorded" not in (row["error"] or "")  # cleared on delivery
        assert row["receipt"].startswith("exit 0 (worker ")
        assert _pid(row["receipt"]) != str(first.pid)


# -- (d) failures back off; 24 h of them give the wake up ---------------------------------


def test_failures_back_off_on_the_ledgers_schedule_and_give_up_after_24h(
    pg_dsn: str,
) -> None:
    tree = new_tree()
    [wake_id] = queue(pg_dsn, tree, 1)
    failing = Receiver(status=500)
    try:

        def run(at: datetime) -> subprocess.CompletedProcess[str]:
            return deliver(
                "--ledger",
                pg_dsn,
                "--sink",
                "webhook",
                failing.url,
                "--once",
                "--now",
                at.strftime("%Y-%m-%d %H:%M:%S"),
            )

        first = run(MADE)
        assert first.returncode == 1
        assert "not delivered" in first.stderr and "HTTP 500" in first.stderr
        [row] = rows(pg_dsn)
        assert row["state"] == "pending" and row["attempts"] == 1 and row["in_flight"] == 0
        assert row["first_failure"] == "2026-03-14 12:00:00"
        assert row["next_attempt"] == _t(MADE + backoff(1)) == "2026-03-14 12:01:00"
        assert row["claimed_by"] is None and "HTTP 500" in row["error"]

        waiting = run(MADE + timedelta(seconds=30))  # before its next try: not claimed
        assert waiting.returncode == 0 and len(failing.posts) == 1

        second = run(MADE + timedelta(minutes=1))
        assert second.returncode == 1 and len(failing.posts) == 2
        [row] = rows(pg_dsn)
        assert row["attempts"] == 2 and row["first_failure"] == "2026-03-14 12:00:00"
        assert row["next_attempt"] == _t(MADE + timedelta(minutes=1) + backoff(2))

        # its next try is an hour out at most, but 24h after the first failure it is given up
        execute(pg_dsn, "UPDATE outbox SET next_attempt = '2026-03-15 13:00:00'")
        late = run(MADE + timedelta(hours=24))
        assert late.returncode == 1 and "gave up on reminder/call-0" in late.stderr
        assert len(failing.posts) == 2  # given up, not sent again
        [row] = rows(pg_dsn)
        assert row["state"] == "given_up" and row["stamped"] == 0  # its sweeper writes the nudge
        assert row["attempts"] == 2 and row["finished"] == "2026-03-15 12:00:00"
        assert row["receipt"].startswith("given up by worker ")
        assert "HTTP 500" in row["receipt"] and row["claimed_by"] is None
        assert row["id"] == wake_id
    finally:
        failing.close()


def _t(value: datetime) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%S")


# -- stopping: SIGTERM finishes the wake in flight and gives the rest back ---------------


def test_sigterm_finishes_the_wake_in_flight_and_gives_back_unsent_claims(
    pg_dsn: str, tmp_path: Path
) -> None:
    tree = new_tree()
    ids = queue(pg_dsn, tree, 3)
    started, go = tmp_path / "started", tmp_path / "go"
    wait_go = 'echo "$ROUSE_WAKE_ID" >> "$STARTED"; while [ ! -e "$GO" ]; do sleep 0.02; done'
    env = environment(STARTED=str(started), GO=str(go))
    worker = start(
        "--ledger",
        pg_dsn,
        "--sink",
        "exec",
        "--",
        "sh",
        "-c",
        wait_go,
        env=env,
        log=tmp_path / "worker.log",
    )
    wait_for(lambda: lines(started), alive=worker)
    worker.send_signal(signal.SIGTERM)
    time.sleep(0.2)  # let the handler run while the command waits (asserts hold either way)
    go.touch()
    assert worker.wait(timeout=20) == 0, (tmp_path / "worker.log").read_text()
    found = {row["id"]: row for row in rows(pg_dsn)}
    sent = lines(started)
    assert 1 <= len(sent) < len(ids)  # it stopped before the last one
    for wake_id in sent:
        assert found[wake_id]["state"] == "delivered"  # the one in flight finished and written
    for wake_id in set(ids) - set(sent):
        row = found[wake_id]
        assert row["state"] == "pending" and row["claimed_by"] is None
        assert row["attempts"] == 0 and row["in_flight"] == 0 and row["last_attempt"] is None


# -- a lost database ----------------------------------------------------------------


def test_a_lost_database_is_waited_out_and_the_held_result_written_first(
    tmp_path: Path,
) -> None:
    from pg_server import PgServer

    server = PgServer.start()
    try:
        dsn = server.new_database()
        tree = new_tree()
        ids = queue(dsn, tree, 2)
        started, go = tmp_path / "started", tmp_path / "go"
        wait_go = 'echo "$ROUSE_WAKE_ID" >> "$STARTED"; while [ ! -e "$GO" ]; do sleep 0.02; done'
        log = tmp_path / "worker.log"
        worker = start(
            "--ledger",
            dsn,
            "--sink",
            "exec",
            "--every",
            "0.2",
            "--batch",
            "1",
            "--",
            "sh",
            "-c",
            wait_go,
            env=environment(STARTED=str(started), GO=str(go)),
            log=log,
        )
        try:
            wait_for(lambda: lines(started), alive=worker)
            server.stop()  # the sink is sending; its result cannot be written
            go.touch()
            wait_for(lambda: "lost the ledger" in log.read_text(), alive=worker)
            server.restart()
            wait_for(lambda: {row["state"] for row in rows(dsn)} == {"delivered"}, seconds=20)
            worker.send_signal(signal.SIGTERM)
            assert worker.wait(timeout=20) == 0
        finally:
            if worker.poll() is None:
                worker.kill()
        said = log.read_text()
        assert said.count("lost the ledger") == 1  # said once, however long it takes
        assert "holding 1 result to write when it is back" in said
        assert "is back after" in said
        assert sorted(lines(started)) == ids  # each sent once: the held result was written
        assert all(row["attempts"] == 1 for row in rows(dsn))
    finally:
        with contextlib.suppress(subprocess.CalledProcessError):
            server.stop()  # (fails if already stopped: the test failed before restarting it)
        server.handle.cleanup()  # type: ignore[attr-defined]  # (its files, now, not at exit)


def test_a_worker_started_while_the_database_is_down_waits_for_it(
    tmp_path: Path, receiver: Receiver
) -> None:
    from pg_server import PgServer

    server = PgServer.start()
    try:
        dsn = server.new_database()
        ids = queue(dsn, new_tree(), 2)
        server.stop()
        log = tmp_path / "worker.log"
        worker = start(
            "--ledger", dsn, "--sink", "webhook", receiver.url, "--every", "0.2", log=log
        )
        try:
            wait_for(lambda: "trying again in 1s" in log.read_text(), alive=worker)
            server.restart()
            wait_for(lambda: sorted(receiver.ids()) == ids, seconds=20, alive=worker)
            worker.send_signal(signal.SIGTERM)
            assert worker.wait(timeout=20) == 0, log.read_text()
        finally:
            if worker.poll() is None:
                worker.kill()
        said = log.read_text()
        assert said.count("trying again in") == 1, said  # said once, however long it takes
        assert "is back after" in said
        assert [(row["state"], row["attempts"]) for row in rows(dsn)] == [("delivered", 1)] * 2
    finally:
        with contextlib.suppress(subprocess.CalledProcessError):
            server.stop()
        server.handle.cleanup()  # type: ignore[attr-defined]


# -- a claim that ran out while the worker was away (a laptop suspend) ----------------------


class Suspending:
    """A sink whose first send "suspends" its worker past its lease.

    Meanwhile the worker's other claims run out on the database's clock (its own
    clock, stopped in suspend, sees nothing of it) and another worker delivers them.
    """

    kind = "test"
    holdable = True

    def __init__(self, dsn: str, receiver: Receiver):
        self.dsn = dsn
        self.receiver = receiver
        self.sent: list[str] = []
        self.other: subprocess.CompletedProcess[str] | None = None

    def describe(self) -> str:
        return "a sink that suspends"

    def send(self, wake: Wake, now: datetime) -> str:
        self.sent.append(wake.id)
        if self.other is None:
            execute(
                self.dsn,
                "UPDATE outbox SET claim_until = now() - interval '1 second' WHERE id <> %s",
                wake.id,
            )
            self.other = deliver(
                "--ledger", self.dsn, "--sink", "webhook", self.receiver.url, "--once"
            )
        return "sent"


def test_claims_that_ran_out_while_the_worker_was_suspended_are_not_sent(
    pg_dsn: str, receiver: Receiver
) -> None:
    from rouse.fleet.deliver import DeliveryWorker

    ids = queue(pg_dsn, new_tree(), 3)
    sink = Suspending(pg_dsn, receiver)
    said: list[str] = []
    worker = DeliveryWorker(pg_dsn, sink, timeout=5, lease=60, once=True, log=said.append)
    assert worker.run() == 0, said
    assert sink.other is not None and sink.other.returncode == 0, sink.other
    assert len(sink.sent) == 1 and len(receiver.ids()) == 2
    assert sorted(sink.sent + receiver.ids()) == ids  # each wake sent once: none twice
    assert sum("not sending" in line and "ran out" in line for line in said) == 2, said
    assert {row["state"] for row in rows(pg_dsn)} == {"delivered"}


# -- a lease too short for the sink's timeout --------------------------------------------


def test_a_lease_barely_above_the_timeout_is_refused_not_spun_on(pg_dsn: str) -> None:
    queue(pg_dsn, new_tree(), 3)
    barely = deliver(
        "--ledger",
        pg_dsn,
        "--once",
        "--timeout",
        "10",
        "--lease",
        "10.0001",
        "--sink",
        "exec",
        "--",
        "true",
        timeout=15,
    )
    assert barely.returncode == 2
    assert "--lease 10.0001 must be at least 5s longer than the sink's timeout" in barely.stderr
    assert "--lease 15 or more" in barely.stderr and barely.stderr.count("\n") == 1
    assert {row["claimed_by"] for row in rows(pg_dsn)} == {None}
    least = deliver(  # the shortest lease it takes: every wake sent, each once
        "--ledger",
        pg_dsn,
        "--once",
        "--timeout",
        "1",
        "--lease",
        "6",
        "--sink",
        "exec",
        "--",
        "true",
    )
    assert least.returncode == 0, least.stderr
    assert [(row["state"], row["attempts"]) for row in rows(pg_dsn)] == [("delivered", 1)] * 3


# -- quiet hours ----------------------------------------------------------------------


def test_quiet_hours_claim_nothing_inside_the_window_and_leave_held_rows_alone(
    pg_dsn: str, receiver: Receiver
) -> None:
    ids = queue(pg_dsn, new_tree(), 3)
    execute(pg_dsn, "UPDATE outbox SET state = 'held' WHERE id = %s", ids[0])

    def run(at: str, *more: str) -> subprocess.CompletedProcess[str]:
        return deliver(
            "--ledger", pg_dsn, "--sink", "webhook", receiver.url, "--once", "--now", at, *more
        )

    inside = run("2026-03-14 23:00:00", "--quiet", "22:00-07:00")
    assert inside.returncode == 0, inside.stderr
    assert "quiet hours 22:00-07:00: claiming nothing until 2026-03-15 07:00" in inside.stderr
    assert receiver.ids() == []
    for row in rows(pg_dsn):
        assert row["claimed_by"] is None and row["attempts"] == 0 and row["last_attempt"] is None
    after = run("2026-03-15 07:00:00", "--quiet", "22:00-07:00")
    assert after.returncode == 0, after.stderr
    assert sorted(receiver.ids()) == ids[1:]
    found = {row["id"]: row for row in rows(pg_dsn)}
    assert found[ids[0]]["state"] == "held" and found[ids[0]]["attempts"] == 0  # its sweeper's
    bad = run("2026-03-15 07:00:00", "--quiet", "22:00")
    assert bad.returncode == 2 and "bad --quiet '22:00'" in bad.stderr


def test_a_worker_inside_quiet_hours_starts_claiming_when_they_end(
    pg_dsn: str, receiver: Receiver, tmp_path: Path
) -> None:
    ids = queue(pg_dsn, new_tree(), 2)
    log = tmp_path / "worker.log"
    worker = start(
        "--ledger",
        pg_dsn,
        "--sink",
        "webhook",
        receiver.url,
        "--quiet",
        "22:00-07:00",
        "--every",
        "5",
        "--now",
        "2026-03-15 06:59:59",
        log=log,
    )
    try:
        wait_for(lambda: sorted(receiver.ids()) == ids, seconds=10, alive=worker)
        worker.send_signal(signal.SIGTERM)
        assert worker.wait(timeout=20) == 0, log.read_text()
    finally:
        if worker.poll() is None:
            worker.kill()
    assert "claiming nothing until 2026-03-15 07:00" in log.read_text()
    for row in rows(pg_dsn):  # claimed once the window was over, not before
        assert row["state"] == "delivered" and row["last_attempt"] >= "2026-03-15 07:00:00"


# -- (e) refused ------------------------------------------------------------------


def test_the_file_sink_and_a_missing_dsn_are_refused(pg_dsn: str) -> None:
    file_sink = deliver("--ledger", pg_dsn, "--sink", "file", "--once")
    assert file_sink.returncode == 2
    assert "a worker has no tree" in file_sink.stderr
    assert file_sink.stderr.count("\n") == 1  # one line

    no_dsn = deliver("--sink", "stdout", "--once")
    assert no_dsn.returncode == 2
    assert "--ledger postgresql://" in no_dsn.stderr and "ROUSE_LEDGER" in no_dsn.stderr

    not_pg = deliver("--sink", "stdout", "--once", env=environment(ROUSE_LEDGER="/tmp/x.db"))
    assert not_pg.returncode == 2 and "must be a postgresql:// URL" in not_pg.stderr

    short = deliver(
        "--ledger", pg_dsn, "--sink", "exec", "--timeout", "5", "--lease", "5", "--", "true"
    )
    assert short.returncode == 2 and "must outlive the send" in short.stderr

    bad_tree = deliver("--ledger", pg_dsn, "--sink", "stdout", "--tree", "memory/")
    assert bad_tree.returncode == 2 and "32 hex digits" in bad_tree.stderr

    assert rows(pg_dsn, "SELECT to_regclass('wakes') AS t")[0]["t"] is None  # nothing touched
