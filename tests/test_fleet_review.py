"""The fleet's sweepers after a review (issue 14): each test is a defect found, now fixed.

On a real PostgreSQL (the suite's; a private one where the database must go
away) and real ``git clone``s of one tree, as in ``test_fleet_sweep``. A
delivery worker's writes are made here by SQL, as ``rouse deliver`` makes them.

- a worker's delivery that lands between a ``--plan-only`` sweeper reading the
  ledger and its hold, give-up or withdrawal is kept (never held and sent
  again, never also written as a nudge file);
- a leader that stamps a delivery late stamps what the standby stamps;
- a sweeper that sends itself sends what a ``--plan-only`` one queued, except
  what a worker holds a live claim on;
- the pack shows a fleet sweeper's nudge files (file sink, give-ups);
- ``--lease``'s help says a leader killed mid-send holds the tree for its send;
- a sweeper started while the database is down waits for it;
- no DSN password reaches a message;
- the fleet's ``trees.root`` is the leader's clone;
- a worker's give-up of a record that moved writes no nudge file;
- ``status``/``log --ledger`` on a database with no ledger create nothing.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from conftest import INTENTIONS, NOW, ago, stamp, write_tree
from pg_server import PgServer
from rouse.core.errors import ChangedUnderfoot
from rouse.core.identity import ensure_tree_id
from rouse.state import sweeper as sweepstate
from rouse.sweep import loop
from rouse.sweep.build import Parts
from rouse.sweep.quiet import QuietHours
from rouse.sweep.sinks import FileSink
from rouse.sweep.tick import Sweeper
from rouse.sweep.wake import Wake
from rouse.trust.origins import origin_reader
from test_fleet_sweep import (  # noqa: F401  (clones, members: fixtures)
    RECORDS,
    TREE_FILES,
    Member,
    clones,
    fields,
    members,
    rouse,
    rows,
    sent,
)

SHIP = f"{INTENTIONS}/ship"
SHIP_FILE = f"{SHIP}/intention.md"


def worker_delivers(dsn: str, path: str, when: datetime) -> None:
    """What ``rouse deliver`` writes when its sink said yes (claim cleared)."""
    rows(
        dsn,
        "UPDATE outbox SET state = 'delivered', in_flight = 0, finished = %s, stamped = 0, "
        "receipt = 'exit 0 (worker w1)', next_attempt = NULL, error = NULL, "
        "claimed_by = NULL, claim_until = NULL WHERE path = %s AND state = 'pending'",
        when.strftime("%Y-%m-%d %H:%M:%S"),
        path,
    )


def before(member: Member, name: str, then: Callable[[], None]) -> None:
    """Run ``then`` right before the sweeper's ledger call ``name`` (between plan and step)."""
    ledger = member.sweeper.ledger
    real = getattr(ledger, name)

    def wrapped(*args: object, **kwargs: object) -> object:
        then()
        return real(*args, **kwargs)

    setattr(ledger, name, wrapped)


def state_of(dsn: str, path: str) -> dict[str, object]:
    (row,) = rows(dsn, "SELECT state, sink, receipt, stamped FROM outbox WHERE path = %s", path)
    return row


# -- 1: a worker's delivery is never overwritten ------------------------------------


def test_a_delivery_landing_before_the_hold_is_not_held_and_sent_again(
    clones: tuple[Path, Path],  # noqa: F811
    pg_dsn: str,
    tmp_path: Path,
    members: list[Member],  # noqa: F811
) -> None:
    a, _ = clones
    planner = Member(
        a, pg_dsn, tmp_path / "ids", plan_only=True, quiet=QuietHours.parse("13:00-14:00")
    )
    members.append(planner)
    planner.tick(NOW)  # queued for the workers
    # quiet hours begin; a worker's result lands after the tick read the ledger
    before(planner, "hold", lambda: worker_delivers(pg_dsn, SHIP, NOW + timedelta(minutes=59)))
    planner.tick(datetime(2026, 3, 14, 13, 0, 30))
    assert state_of(pg_dsn, SHIP)["state"] == "delivered"
    planner.tick(datetime(2026, 3, 14, 14, 0, 30))  # the hours end: nothing to release
    row = state_of(pg_dsn, SHIP)
    assert (row["state"], row["receipt"], row["stamped"]) == ("delivered", "exit 0 (worker w1)", 1)


def test_a_delivery_landing_before_the_give_up_writes_no_nudge_file(
    clones: tuple[Path, Path],  # noqa: F811
    pg_dsn: str,
    tmp_path: Path,
    members: list[Member],  # noqa: F811
) -> None:
    a, _ = clones
    planner = Member(a, pg_dsn, tmp_path / "ids", plan_only=True)
    members.append(planner)
    planner.tick(NOW)
    later = NOW + timedelta(days=1, minutes=1)
    rows(  # failing since 24h and more: the sweeper plans to give it up
        pg_dsn,
        "UPDATE outbox SET attempts = 9, first_failure = %s, next_attempt = %s, error = 'HTTP 503'",
        stamp(NOW) + ":30",
        stamp(later) + ":00",
    )
    before(planner, "given_up", lambda: worker_delivers(pg_dsn, SHIP, later))
    planner.tick(later)
    assert state_of(pg_dsn, SHIP)["state"] == "delivered"
    assert not list((a / ".rouse/nudges").glob("*ship*.md")), "a delivered wake, nudged too"


def test_a_delivery_landing_before_the_withdrawal_is_kept(
    clones: tuple[Path, Path],  # noqa: F811
    pg_dsn: str,
    tmp_path: Path,
    members: list[Member],  # noqa: F811
) -> None:
    a, _ = clones
    planner = Member(a, pg_dsn, tmp_path / "ids", plan_only=True)
    members.append(planner)
    planner.tick(NOW)
    moved(a, NOW + timedelta(minutes=1))  # the agent moved it: the plan withdraws the wake
    before(planner, "withdraw", lambda: worker_delivers(pg_dsn, SHIP, NOW))
    report = planner.tick(NOW + timedelta(minutes=2))
    assert report.withdrawn == []  # type: ignore[attr-defined]
    assert state_of(pg_dsn, SHIP)["state"] == "delivered"


def moved(root: Path, when: datetime) -> None:
    write_tree(
        root,
        {
            SHIP_FILE: f"""
            ---
            status: open
            opened: {stamp(ago(days=2))}
            last-moved: {stamp(when)}
            closes-when: the release is tagged
            ---
            Ship the release.
            """
        },
    )


# -- 2: a late stamp is the same stamp on every clone -------------------------------


def test_a_leaders_late_stamp_is_the_standbys_stamp(
    clones: tuple[Path, Path],  # noqa: F811
    pg_dsn: str,
    tmp_path: Path,
    members: list[Member],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from rouse.sweep import tick

    a, b = clones
    leader, standby = Member(a, pg_dsn, tmp_path / "ids"), Member(b, pg_dsn, tmp_path / "ids")
    members += [leader, standby]
    real = tick.stamp_after_delivery
    calls: list[str] = []

    def busy_once(root: Path, record: object, updates: object) -> bool:
        calls.append(str(root))
        if len(calls) == 1:  # the agent is writing the file as the wake lands
            raise ChangedUnderfoot("the agent is writing it", path=SHIP_FILE)
        return real(root, record, updates)  # type: ignore[arg-type]

    monkeypatch.setattr(tick, "stamp_after_delivery", busy_once)
    assert leader.tick(NOW).delivered  # type: ignore[attr-defined]
    leader.tick(NOW + timedelta(minutes=5))  # the stamp lands now, as of the delivery
    standby.tick(NOW + timedelta(minutes=6))  # stamped from the ledger's row
    assert fields(a, SHIP_FILE)["swept"] == stamp(NOW)
    for rel in RECORDS:  # alike: the next wake (its id) is the same on both clones
        assert (a / rel).read_bytes() == (b / rel).read_bytes(), rel


# -- 3: a sweeper that sends itself sends what was queued ---------------------------


def test_a_sending_leader_sends_what_a_plan_only_leader_queued(
    clones: tuple[Path, Path],  # noqa: F811
    pg_dsn: str,
    tmp_path: Path,
    members: list[Member],  # noqa: F811
) -> None:
    a, b = clones
    ids = tmp_path / "ids"
    planner = Member(a, pg_dsn, ids, plan_only=True)
    planner.tick(NOW)
    planner.close()  # the plan-only sweeper goes (its lease with it); no worker runs
    rows(  # but one worker holds a live claim on one wake: that one stays its own
        pg_dsn,
        "UPDATE outbox SET claimed_by = 'w1', claim_until = now() + interval '1 minute', "
        "in_flight = 1, attempts = 1, last_attempt = %s WHERE path = %s",
        stamp(NOW) + ":10",
        SHIP,
    )
    sender = Member(b, pg_dsn, ids)
    members.append(sender)
    report = sender.tick(NOW + timedelta(minutes=1))
    assert report.leading is True and len(report.delivered) == 2  # type: ignore[attr-defined]
    assert len(sent(ids)) == 2 == len(set(sent(ids)))
    claimed = state_of(pg_dsn, SHIP)
    assert (claimed["state"], claimed["sink"]) == ("pending", "workers")
    rows(
        pg_dsn, "UPDATE outbox SET claim_until = now() - interval '1 second' WHERE path = %s", SHIP
    )
    report = sender.tick(NOW + timedelta(minutes=2))  # the claim lapsed: sent here now
    assert len(report.delivered) == 1 and len(set(sent(ids))) == 3  # type: ignore[attr-defined]
    (row,) = rows(pg_dsn, "SELECT * FROM outbox WHERE path = %s", SHIP)
    assert (row["state"], row["sink"], row["claimed_by"]) == ("delivered", "exec", None)
    assert row["attempts"] == 2 and row["first_failure"] == stamp(NOW) + ":10"  # its silent try
    for rel in RECORDS:
        assert "swept" in fields(b, rel) or fields(b, rel).get("status") == "fired"


# -- 4: the pack sees a fleet sweeper's nudge files ----------------------------------


def test_the_pack_shows_a_fleet_sweepers_nudge_file(tmp_path: Path, pg_dsn: str) -> None:
    root = write_tree(tmp_path / "memory", TREE_FILES)
    ensure_tree_id(root)
    swept = rouse("--memory", str(root), "sweep", "--once", "--now", stamp(NOW), "--ledger", pg_dsn)
    assert swept.returncode == 0, swept.stderr
    assert len(list((root / ".rouse/nudges").glob("*.md"))) == 3
    pack = rouse("--memory", str(root), "pack", "--now", stamp(NOW))
    assert "intention/ship — woke you just now" in pack.stdout, pack.stdout
    assert "intention/docs — woke you just now" in pack.stdout, pack.stdout


def given_up_by_a_worker(root: Path, dsn: str, tmp_path: Path, made: list[Member]) -> Member:
    """A plan-only sweeper over ``root`` that queued ship's wake, which a worker then gave up
    on after 24h (its row as a worker leaves it: given up, not yet stamped)."""
    planner = Member(root, dsn, tmp_path / "ids", plan_only=True)
    made.append(planner)
    planner.tick(NOW)
    rows(
        dsn,
        "UPDATE outbox SET state = 'given_up', stamped = 0, finished = %s, error = 'HTTP 503', "
        "receipt = 'given up after 24h by worker w1' WHERE path = %s",
        "2026-03-15 12:00:00",
        SHIP,
    )
    return planner


def test_a_workers_give_up_nudge_file_is_vouched_for_the_pack(
    clones: tuple[Path, Path],  # noqa: F811
    pg_dsn: str,
    tmp_path: Path,
    members: list[Member],  # noqa: F811
) -> None:
    a, _ = clones
    planner = given_up_by_a_worker(a, pg_dsn, tmp_path, members)
    planner.tick(NOW + timedelta(days=1, minutes=1))
    (nudge,) = (a / ".rouse/nudges").glob("*ship*.md")
    rel = f".rouse/nudges/{nudge.name}"
    known = sweepstate.vouched_nudges(a, [rel])
    assert known[rel][0] == SHIP and known[rel][1].startswith("intention/ship")


def _vouched(root: Path) -> tuple[list[str], dict[str, object]]:
    files = [f".rouse/nudges/{p.name}" for p in (root / ".rouse/nudges").glob("*.md")]
    return files, dict(sweepstate.vouched_nudges(root, files))


def _file_sweeper(root: Path, dsn: str, logs: list[str], **kwargs: object) -> Sweeper:
    from rouse.fleet.sweeping import join

    origins = origin_reader(root, root.parent / "no-key")
    joined = join(dsn, root, lease=30.0, origins=origins)
    sink = kwargs.pop("sink", None) or FileSink(root)
    return Sweeper(
        root,
        Parts(sink, origins=origins, ledger=joined.ledger, fleet=joined.member, **kwargs),
        log=logs.append,
    )


def test_a_nudge_file_delivered_just_before_the_database_went_away_is_vouched(
    clones: tuple[Path, Path],  # noqa: F811
    tmp_path: Path,
) -> None:
    server = PgServer.start()
    dsn = server.new_database()
    a, _ = clones
    logs: list[str] = []
    sink = FileSink(a)
    real = sink.send

    def send_then_lose_the_database(made: Wake, now: datetime) -> str:
        receipt = real(made, now)  # the nudge file is written…
        server.stop()  # …and the database is gone before the ledger hears of it
        return receipt

    sink.send = send_then_lose_the_database  # type: ignore[method-assign]
    sweeper = _file_sweeper(a, dsn, logs, sink=sink)
    try:
        with pytest.raises(Exception, match="ledger"):
            sweeper.tick(NOW)
        sink.send = real  # type: ignore[method-assign]
        server.restart()
        sweeper.tick(NOW + timedelta(minutes=1))
        files, known = _vouched(a)
        assert files and sorted(known) == sorted(files)
    finally:
        sweeper.close()
        server.stop()


def test_a_workers_give_up_written_just_before_the_database_went_away_is_vouched(
    clones: tuple[Path, Path],  # noqa: F811
    tmp_path: Path,
) -> None:
    server = PgServer.start()
    dsn = server.new_database()
    a, _ = clones
    logs: list[str] = []
    sweeper = _file_sweeper(a, dsn, logs, plan_only=True)
    try:
        sweeper.tick(NOW)
        rows(
            dsn,
            "UPDATE outbox SET state = 'given_up', stamped = 0, finished = %s, "
            "error = 'HTTP 503', receipt = 'given up by worker w1'",
            "2026-03-15 12:00:00",
        )
        real = sweeper.ledger.nudged

        def lose_the_database(*args: object, **kwargs: object) -> None:
            server.stop()
            real(*args, **kwargs)  # type: ignore[arg-type]

        sweeper.ledger.nudged = lose_the_database  # type: ignore[method-assign]
        with pytest.raises(Exception, match="ledger"):
            sweeper.tick(NOW + timedelta(days=1, minutes=1))
        sweeper.ledger.nudged = real  # type: ignore[method-assign]
        server.restart()
        sweeper.tick(NOW + timedelta(days=1, minutes=2))
        files, known = _vouched(a)
        assert files and sorted(known) == sorted(files)
    finally:
        sweeper.close()
        server.stop()


# -- 5: the lease's help says what a kill mid-send costs -----------------------------


def test_the_lease_help_says_a_leader_killed_mid_send_holds_the_tree_for_its_send() -> None:
    done = rouse("sweep", "--help")
    said = " ".join(done.stdout.split())
    assert "within two leases of the leader's death (a leader killed mid-send: after its " in said
    assert "send's timeout" in said


# -- 6: a sweeper started while the database is down ---------------------------------


def test_a_sweeper_started_while_the_database_is_down_waits_for_it(
    clones: tuple[Path, Path],  # noqa: F811
    tmp_path: Path,
) -> None:
    from rouse.fleet.pg import PgDatabase
    from rouse.fleet.sweeping import join
    from rouse.sweep.build import Parts
    from rouse.sweep.sinks import ExecSink
    from rouse.sweep.tick import Sweeper
    from rouse.trust.origins import origin_reader

    a, _ = clones
    server = PgServer.start()
    dsn = server.new_database()
    server.stop()
    PgDatabase(dsn).close()  # made without reaching it
    ids = tmp_path / "ids"
    origins = origin_reader(a, tmp_path / "no-key")
    joined = join(dsn, a, lease=30.0, origins=origins)  # no exit 2: the loop waits for it
    lines: list[str] = []
    sink = ExecSink(["sh", "-c", f'echo "$ROUSE_WAKE_ID" >> {ids}'], 10.0, a, os.environ)
    sweeper = Sweeper(
        a, Parts(sink, origins=origins, ledger=joined.ledger, fleet=joined.member), log=lines.append
    )
    codes: list[int] = []
    thread = threading.Thread(
        target=lambda: codes.append(loop.run(sweeper, lambda: NOW, once=False, every=0.2))
    )
    thread.start()
    try:
        wait_for(lambda: any("no ledger yet" in line for line in lines), "the outage line")
        assert sent(ids) == []
        server.restart()
        wait_for(lambda: any("connected to the ledger" in line for line in lines), "its return")
        wait_for(lambda: len(sent(ids)) == len(RECORDS), "every wake")
    finally:
        sweeper.stop.set()
        thread.join(timeout=30)
        sweeper.close()
    assert codes == [0]
    assert len(set(sent(ids))) == len(RECORDS)
    assert sum("no ledger yet" in line for line in lines) == 1  # said once


def test_a_newer_schema_met_after_a_lazy_start_ends_the_loop_as_at_start(
    clones: tuple[Path, Path],  # noqa: F811
    tmp_path: Path,
) -> None:
    from rouse.core.errors import TooNew
    from rouse.fleet.sweeping import join

    a, _ = clones
    server = PgServer.start()
    dsn = server.new_database()
    server.stop()
    origins = origin_reader(a, tmp_path / "no-key")
    joined = join(dsn, a, lease=30.0, origins=origins)
    lines: list[str] = []
    sweeper = Sweeper(
        a,
        Parts(FileSink(a), origins=origins, ledger=joined.ledger, fleet=joined.member),
        log=lines.append,
    )
    server.restart()
    rows(dsn, "CREATE TABLE rouse_schema (version INTEGER NOT NULL)")
    rows(dsn, "INSERT INTO rouse_schema VALUES (99)")
    failed: list[BaseException] = []

    def sweep() -> None:
        try:
            loop.run(sweeper, lambda: NOW, once=False, every=0.2)
        except TooNew as exc:
            failed.append(exc)

    thread = threading.Thread(target=sweep)
    thread.start()
    thread.join(timeout=20)
    sweeper.stop.set()
    thread.join(timeout=10)
    sweeper.close()
    server.stop()
    assert len(failed) == 1 and "newer than this rouse knows" in str(failed[0])


def test_sweep_once_with_the_database_down_says_so_and_exits_1(
    clones: tuple[Path, Path],  # noqa: F811
) -> None:
    a, _ = clones
    done = rouse(
        "--memory", str(a), "sweep", "--once", "--ledger", "postgresql://rouse@127.0.0.1:1/rouse"
    )
    assert done.returncode == 1, done.stderr
    assert "no ledger yet: cannot reach the ledger at postgresql://rouse@127.0.0.1:1/rouse" in (
        done.stderr
    )
    assert "Traceback" not in done.stderr


def wait_for(check: Callable[[], bool], what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.02)


# -- 7: no password in a message --------------------------------------------------------


@pytest.mark.parametrize(
    ("dsn", "where"),
    [
        ("host=db.example user=rouse password=hunter2", "env"),
        ("postgresql://rouse@127.0.0.1:1/rouse?password=hunter2", "option"),
        ("postgresql://rouse@127.0.0.1:1/rouse?sslmode=disable&password=hunter2", "env"),
        ("postgresql://rouse:hunter2@127.0.0.1:1/rouse", "option"),
        ("postgresql://rouse:hunter2@[::1:1/rouse", "option"),  # libpq quotes it back
    ],
)
def test_no_password_of_a_dsn_reaches_a_message(
    clones: tuple[Path, Path],  # noqa: F811
    dsn: str,
    where: str,
) -> None:
    a, _ = clones
    given = ["--ledger", dsn] if where == "option" else []
    env = {"ROUSE_LEDGER": dsn} if where == "env" else {}
    for verb in (["status"], ["log"], ["sweep", "--once"]):
        done = rouse("--memory", str(a), *verb, *given, env=env)
        assert done.returncode in (1, 2) and done.stderr, verb
        assert "hunter2" not in done.stderr + done.stdout, (verb, done.stderr)


def test_redact_hides_every_form_of_password() -> None:
    from rouse.fleet.pg import redact

    assert redact("postgresql://u:pw@h/db") == "postgresql://u:***@h/db"
    assert redact("postgresql://u@h/db?password=pw&sslmode=require") == (
        "postgresql://u@h/db?password=***&sslmode=require"
    )
    assert redact("host=h password='p w\\' x' user=u") == "host=h password=*** user=u"
    assert redact("postgresql:///db?host=/tmp/s") == "postgresql:///db?host=/tmp/s"
    # a password that was not percent-encoded may hold / or @; a query's may hold quotes
    assert redact("postgresql://u:Zm9v/YmFy=@h:1/db") == "postgresql://u:***@h:1/db"
    assert redact("postgresql://u:hun@ter2@h/db") == "postgresql://u:***@h/db"
    assert redact('postgresql://u@h/db?password=hun"ter2&x=1') == (
        "postgresql://u@h/db?password=***&x=1"
    )


# -- 8: the tree's root is the leader's ----------------------------------------------------


def test_the_trees_root_is_the_leaders_clone_whoever_ticked_last(
    clones: tuple[Path, Path],  # noqa: F811
    pg_dsn: str,
    tmp_path: Path,
    members: list[Member],  # noqa: F811
) -> None:
    a, b = clones
    leader = Member(a, pg_dsn, tmp_path / "ids", plan_only=True)
    standby = Member(b, pg_dsn, tmp_path / "ids", plan_only=True)
    members += [leader, standby]
    assert leader.tick(NOW).leading is True  # type: ignore[attr-defined]
    assert standby.tick(NOW + timedelta(seconds=1)).leading is False  # type: ignore[attr-defined]
    (row,) = rows(pg_dsn, "SELECT root, last_tick_by FROM trees")
    assert row["root"] == str(a)  # where the workers' exec sinks find the tree
    assert row["last_tick_by"] == standby.joined.member.held.holder


# -- suspicions -------------------------------------------------------------------------


def test_a_workers_give_up_of_a_record_that_moved_writes_no_nudge_file(
    clones: tuple[Path, Path],  # noqa: F811
    pg_dsn: str,
    tmp_path: Path,
    members: list[Member],  # noqa: F811
) -> None:
    a, _ = clones
    planner = given_up_by_a_worker(a, pg_dsn, tmp_path, members)
    moved(a, NOW + timedelta(hours=20))  # the agent acted on it meanwhile
    report = planner.tick(NOW + timedelta(days=1, minutes=1))
    assert report.given_up == []  # type: ignore[attr-defined]
    assert not list((a / ".rouse/nudges").glob("*ship*.md"))
    row = state_of(pg_dsn, SHIP)
    assert (row["state"], row["stamped"]) == ("given_up", 1)
    assert any("wrote no (further) nudge file" in line for line in planner.logs)


def test_status_and_log_on_a_database_without_a_ledger_create_nothing(
    clones: tuple[Path, Path],  # noqa: F811
    pg_dsn: str,
) -> None:
    a, _ = clones
    status = rouse("--memory", str(a), "status", "--ledger", pg_dsn)
    assert status.returncode == 0, status.stderr
    assert "ledger: 0 pending, 0 held, 0 delivered, 0 given up" in status.stdout
    assert "leader: none yet" in status.stdout
    log = rouse("--memory", str(a), "log", "--ledger", pg_dsn)
    assert (log.returncode, log.stdout) == (0, ""), log.stderr
    check = rouse("--memory", str(a), "status", "--check", "--ledger", pg_dsn)
    assert check.returncode == 1 and "no sweeper leads this tree" in check.stderr
    assert rows(pg_dsn, "SELECT to_regclass('rouse_schema') AS s, to_regclass('wakes') AS w") == [
        {"s": None, "w": None}
    ]


def test_status_refuses_a_newer_schema_without_touching_it(
    clones: tuple[Path, Path],  # noqa: F811
    pg_dsn: str,
) -> None:
    from rouse.fleet.pg_schema import SCHEMA_VERSION

    a, _ = clones
    rows(pg_dsn, "CREATE TABLE rouse_schema (version INTEGER NOT NULL)")
    rows(pg_dsn, "INSERT INTO rouse_schema VALUES (%s)", SCHEMA_VERSION + 1)
    done = rouse("--memory", str(a), "status", "--ledger", pg_dsn)
    assert done.returncode == 2 and "newer than this rouse knows" in done.stderr, done.stderr


def test_the_cli_sweeper_with_no_database_is_not_made_to_exit_2(
    clones: tuple[Path, Path],  # noqa: F811
    tmp_path: Path,
) -> None:
    """``rouse sweep --ledger DSN`` (a loop) started with the database down keeps going."""
    a, _ = clones
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROUSE_")}
    log = tmp_path / "sweep.log"
    with log.open("wb") as err:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "rouse",
                "--memory",
                str(a),
                "sweep",
                "--ledger",
                "postgresql://rouse@127.0.0.1:1/rouse",
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
    try:
        wait_for(lambda: "no ledger yet" in log.read_text(), "the outage line", timeout=20)
        assert proc.poll() is None, log.read_text()  # still running: it backs off and retries
    finally:
        proc.terminate()
        assert proc.wait(timeout=20) == 0


# -- the mirror after a tick that stamped ----------------------------------------------------


def test_the_mirror_holds_the_files_as_the_tick_stamped_them(tmp_path: Path, pg_dsn: str) -> None:
    root = write_tree(tmp_path / "memory", TREE_FILES)
    ensure_tree_id(root)
    at = ("--now", stamp(NOW))
    before = rouse("--memory", str(root), "fleet", "due", "--ledger", pg_dsn, *at)
    swept = rouse("--memory", str(root), "sweep", "--once", "--ledger", pg_dsn, *at)
    assert swept.returncode == 0, swept.stderr
    local = rouse("--memory", str(root), "due", *at)
    assert local.stdout == ""  # every record was stamped by this one tick
    due = rouse("--memory", str(root), "fleet", "due", "--ledger", pg_dsn, *at)
    assert due.returncode == 0, due.stderr
    assert [line for line in due.stdout.splitlines() if "\t" in line] == [], due.stdout
    assert before.returncode == 0  # (no mirror yet: nothing to show, and no error)


def _connections(path: Path) -> int:
    """How many open SQLite connections this process holds on ``path``."""
    import gc
    import sqlite3

    found = 0
    for thing in gc.get_objects():
        if not isinstance(thing, sqlite3.Connection):
            continue
        try:
            files = [row[2] for row in thing.execute("PRAGMA database_list")]
        except sqlite3.ProgrammingError:  # closed
            continue
        found += str(path) in files
    return found


def test_a_fleet_sweeper_opens_the_trees_own_ledger_once(
    clones: tuple[Path, Path],  # noqa: F811
    pg_dsn: str,
) -> None:
    """Its tells and its nudge files' notes both live in .rouse/ledger.sqlite3: one
    connection serves them (a second one was opened for the notes)."""
    from rouse.sweep.channels import Channels

    a, _ = clones
    logs: list[str] = []
    own = (a / ".rouse/ledger.sqlite3").resolve()
    with _file_sweeper(a, pg_dsn, logs, channels=Channels()) as sweeper:
        report = sweeper.tick(NOW)
        assert report.delivered, logs  # the file sink wrote nudge files: noted in it
        assert _connections(own) == 1
    assert _vouched(a)[1], logs
    assert _connections(own) == 0
