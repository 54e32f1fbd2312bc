"""Failover in a fleet (issue 14): a leader killed, a leader stopping, the database lost.

- real ``rouse sweep --ledger DSN`` processes over two clones of one tree, with
  a 2s lease: the leader is killed with SIGKILL and the standby leads within
  two lease periods, sending nothing twice; ``rouse status`` names the leader;
  a leader stopped with SIGTERM lets its lease go at once;
- the PostgreSQL server stopped mid-tick, right after a sink said yes and
  before the ledger could record it, then started again: the loop says it
  lost the ledger and that it reconnected, no wake is lost and none is sent
  twice (the delivery kept in memory is written first).

Each test prints its counts (run with ``-s`` to see them).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path

import pytest

from conftest import NOW, stamp
from pg_server import PgServer
from rouse.sweep import loop
from rouse.sweep.build import Parts
from rouse.sweep.sinks import ExecSink
from rouse.sweep.tick import Sweeper
from rouse.sweep.wake import Wake
from rouse.trust.origins import origin_reader
from test_fleet_sweep import RECORDS, clones, fields, rows, sent  # noqa: F401  (a fixture)

LEASE = 2.0


def wait_for(
    check: Callable[[], bool], timeout: float = 15, what: str = "it", logs: Path | None = None
) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            said = "".join(f"\n{p.name}: {p.read_text()}" for p in (logs or Path()).glob("*.log"))
            pytest.fail(f"timed out waiting for {what}{said}")
        time.sleep(0.02)


def spawn(
    root: Path, dsn: str, ids: Path, log: Path, lease: float = LEASE
) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROUSE_")}
    with log.open("wb") as err:
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "rouse",
                "--memory",
                str(root),
                "sweep",
                "--ledger",
                dsn,
                "--lease",
                f"{lease:g}",
                "--now",
                stamp(NOW),
                "--timeout",
                "1",
                "--sink",
                "exec",
                "--",
                "sh",
                "-c",
                f'echo "$ROUSE_WAKE_ID" >> {ids}',
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=err,
        )


def leader_pid(dsn: str) -> int | None:
    if rows(dsn, "SELECT to_regclass('leaders') AS t") == [{"t": None}]:
        return None  # no sweeper has opened the ledger yet
    found = rows(dsn, "SELECT pid FROM leaders WHERE expires > now()")
    return int(found[0]["pid"]) if found else None  # type: ignore[call-overload]


@pytest.fixture
def procs() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for proc in started:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)


def test_the_standby_leads_within_two_leases_of_the_leader_being_killed(
    clones: tuple[Path, Path],  # noqa: F811
    pg_dsn: str,
    tmp_path: Path,
    procs: list[subprocess.Popen[bytes]],
) -> None:
    a, b = clones
    ids = tmp_path / "ids"
    leader = spawn(a, pg_dsn, ids, tmp_path / "a.log")
    procs.append(leader)
    wait_for(lambda: len(sent(ids)) == len(RECORDS), what="the deliveries", logs=tmp_path)
    assert leader_pid(pg_dsn) == leader.pid
    standby = spawn(b, pg_dsn, ids, tmp_path / "b.log")
    procs.append(standby)
    wait_for(lambda: "stands by" in (tmp_path / "b.log").read_text(), what="the standby")
    wait_for(lambda: "swept" in fields(b, RECORDS[0]), what="the standby's stamps")
    status = subprocess.run(
        [sys.executable, "-m", "rouse", "--memory", str(b), "status", "--ledger", pg_dsn],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert f" pid {leader.pid} (token 1) since " in status.stdout, status.stderr

    leader.send_signal(signal.SIGKILL)
    killed = time.monotonic()
    leader.wait(timeout=10)
    wait_for(lambda: leader_pid(pg_dsn) == standby.pid, timeout=4 * LEASE, what="a takeover")
    took = time.monotonic() - killed
    print(f"\nleader killed: the standby led after {took:.2f}s (lease {LEASE:g}s)")
    assert took <= 2 * LEASE
    (lease,) = rows(pg_dsn, "SELECT token FROM leaders")
    assert lease["token"] == 2  # a new term: fenced off from the dead leader's
    status = subprocess.run(
        [sys.executable, "-m", "rouse", "--memory", str(b), "status", "--ledger", pg_dsn],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert f" pid {standby.pid} (token 2) since " in status.stdout, status.stderr
    wait_for(lambda: "leads this tree now" in (tmp_path / "b.log").read_text(), what="its line")
    delivered = sent(ids)
    print(f"wakes due {len(RECORDS)}, delivered {len(delivered)}, by id {len(set(delivered))}")
    assert len(delivered) == len(set(delivered)) == len(RECORDS)  # none lost, none twice


def test_a_leader_stopped_with_sigterm_lets_its_lease_go(
    clones: tuple[Path, Path],  # noqa: F811
    pg_dsn: str,
    tmp_path: Path,
    procs: list[subprocess.Popen[bytes]],
) -> None:
    a, b = clones
    ids = tmp_path / "ids"
    lease = 6.0  # long enough that a lapse (4s and more after the exit) is told from a release
    leader = spawn(a, pg_dsn, ids, tmp_path / "a.log", lease)
    procs.append(leader)
    wait_for(lambda: leader_pid(pg_dsn) == leader.pid, what="the leader", logs=tmp_path)
    standby = spawn(b, pg_dsn, ids, tmp_path / "b.log", lease)
    procs.append(standby)
    wait_for(lambda: "stands by" in (tmp_path / "b.log").read_text(), what="the standby")
    leader.send_signal(signal.SIGTERM)
    assert leader.wait(timeout=10) == 0
    stopped = time.monotonic()
    (row,) = rows(pg_dsn, "SELECT pid, token, expires <= now() AS lapsed FROM leaders")
    assert row in (
        {"pid": leader.pid, "token": 1, "lapsed": True},
        {"pid": standby.pid, "token": 2, "lapsed": False},
    )
    wait_for(lambda: leader_pid(pg_dsn) == standby.pid, timeout=2 * lease, what="a takeover")
    took = time.monotonic() - stopped
    print(f"\nleader stopped: the standby led after {took:.2f}s (lease {lease:g}s)")
    assert took < lease / 2  # it looks every third of the lease: no waiting the lease out
    assert len(sent(ids)) == len(set(sent(ids))) == len(RECORDS)


class StopsTheServer:
    """The real exec sink; after its ``after``-th delivery lands, the database goes away
    (the worst moment: the sink said yes, the ledger has not heard)."""

    def __init__(self, inner: ExecSink, server: PgServer, after: int) -> None:
        self.inner = inner
        self.kind = inner.kind
        self.holdable = inner.holdable
        self.timeout = inner.timeout
        self.server = server
        self.after = after
        self.count = 0

    def describe(self) -> str:
        return self.inner.describe()

    def send(self, wake: Wake, now: datetime) -> str:
        receipt = self.inner.send(wake, now)
        self.count += 1
        if self.count == self.after:
            self.server.stop()
        return receipt


def test_the_database_lost_mid_tick_loses_no_wake_and_doubles_none(
    clones: tuple[Path, Path],  # noqa: F811
    tmp_path: Path,
) -> None:
    from rouse.fleet.sweeping import join

    a, _ = clones
    server = PgServer.start()
    dsn = server.new_database()
    ids = tmp_path / "ids"
    origins = origin_reader(a, tmp_path / "no-key")
    joined = join(dsn, a, lease=30.0, origins=origins)
    inner = ExecSink(["sh", "-c", f'echo "$ROUSE_WAKE_ID" >> {ids}'], 10.0, a, os.environ)
    lines: list[str] = []
    sweeper = Sweeper(
        a,
        Parts(
            StopsTheServer(inner, server, after=2),
            origins=origins,
            ledger=joined.ledger,
            fleet=joined.member,
        ),
        log=lines.append,
    )
    started = time.monotonic()

    def clock() -> datetime:
        return NOW.replace(second=min(int(time.monotonic() - started), 59))

    codes: list[int] = []
    thread = threading.Thread(
        target=lambda: codes.append(loop.run(sweeper, clock, once=False, every=0.2))
    )
    thread.start()
    try:
        wait_for(lambda: any("lost the ledger" in line for line in lines), what="the outage")
        assert len(sent(ids)) == 2
        server.restart()
        wait_for(lambda: any("reconnected" in line for line in lines), what="the reconnection")
        wait_for(lambda: len(sent(ids)) >= len(RECORDS), what="every wake")
        wait_for(
            lambda: rows(dsn, "SELECT COUNT(*) AS n FROM outbox WHERE stamped = 1")[0]["n"] == 3,
            what="every stamp",
        )
    finally:
        sweeper.stop.set()
        thread.join(timeout=30)
        sweeper.close()
    assert codes == [0]
    delivered = sent(ids)
    said = [line for line in lines if "ledger" in line]
    print(f"\n{len(RECORDS)} due, {len(delivered)} delivered, {len(set(delivered))} ids: {said}")
    assert len(delivered) == len(set(delivered)) == len(RECORDS)
    states = rows(dsn, "SELECT id, state, receipt FROM outbox ORDER BY id")
    assert {row["state"] for row in states} == {"delivered"}
    (second,) = [row for row in states if row["id"] == delivered[1]]
    assert second["receipt"] == "exit 0"  # kept in memory, written when the database came back
    assert any("recorded there once it is back" in line for line in lines)
    assert sum("lost the ledger" in line for line in lines) == 1  # said once
    for rel in RECORDS:
        assert "swept" in fields(a, rel) or fields(a, rel).get("status") == "fired"
