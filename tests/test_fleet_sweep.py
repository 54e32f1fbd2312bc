"""Sweepers in a fleet (issue 14): one PostgreSQL ledger shared by the clones of a tree.

On a real PostgreSQL (the suite's, a fresh database per test) and real ``git
clone``s sharing one ``.rouse-tree``:

- two sweepers over two clones: each due wake is delivered once (the exec sink
  appends its id to a file), and both clones end stamped, with the same bytes;
- one leads (plans and sends), the other stands by and stamps from the ledger;
  a released lease goes to the standby, which sends nothing twice;
- ``--plan-only``: new wakes are queue rows for the delivery workers, nothing is
  sent, a worker's delivery (written here by SQL, as a worker would) is
  stamped, a worker's give-up becomes one nudge file, a live claim is not
  withdrawn, quiet hours hold the queue and release it;
- ``rouse status``/``rouse log --ledger DSN`` read the tree's rows, and status
  names the leader; the options refuse what they cannot mean.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from conftest import INTENTIONS, NOW, REMINDERS, ago, stamp, write_tree
from rouse.core.header import parse_header
from rouse.core.identity import IDENTITY_FILE, ensure_tree_id
from rouse.sweep.build import Parts
from rouse.sweep.quiet import QuietHours
from rouse.sweep.sinks import ExecSink
from rouse.sweep.tick import Sweeper
from rouse.trust.origins import origin_reader

TREE_FILES = {
    f"{INTENTIONS}/ship/intention.md": f"""
        ---
        status: open
        opened: {stamp(ago(days=2))}
        last-moved: {stamp(ago(hours=3))}
        closes-when: the release is tagged
        ---
        Ship the release.
        """,
    f"{INTENTIONS}/docs/intention.md": f"""
        ---
        status: open
        opened: {stamp(ago(days=2))}
        last-moved: {stamp(ago(hours=5))}
        closes-when: the docs are out
        ---
        Write the docs.
        """,
    f"{REMINDERS}/call/reminder.md": f"""
        ---
        status: pending
        set: {stamp(ago(days=1))}
        due: {stamp(ago(minutes=30))}
        ---
        Call the printer.
        """,
}
RECORDS = sorted(TREE_FILES)


def git(*args: str, cwd: Path) -> None:
    subprocess.run(
        ["git", "-c", "user.name=rouse", "-c", "user.email=rouse@example.org", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
    )


@pytest.fixture
def clones(tmp_path: Path) -> tuple[Path, Path]:
    """One tree (with its .rouse-tree) committed, and two clones of it."""
    origin = write_tree(tmp_path / "origin", TREE_FILES)
    ensure_tree_id(origin)
    git("init", "-q", cwd=origin)
    git("add", "-A", cwd=origin)
    git("commit", "-q", "-m", "the tree", cwd=origin)
    for name in ("a", "b"):
        git("clone", "-q", str(origin), str(tmp_path / name), cwd=tmp_path)
    return tmp_path / "a", tmp_path / "b"


def fields(root: Path, rel: str) -> dict[str, str]:
    return parse_header((root / rel).read_bytes()).fields


class Member:
    """A fleet sweeper over one clone, built as ``rouse sweep --ledger DSN`` builds it."""

    def __init__(
        self, root: Path, dsn: str, ids: Path, *, lease: float = 30.0, **kwargs: object
    ) -> None:
        from rouse.fleet.sweeping import join

        self.logs: list[str] = []
        origins = origin_reader(root, root.parent / "no-key")
        self.joined = join(dsn, root, lease=lease, origins=origins)
        sink = ExecSink(["sh", "-c", f'echo "$ROUSE_WAKE_ID" >> {ids}'], 10.0, root, os.environ)
        voice = {name: kwargs.pop(name) for name in ("verbosity", "interval") if name in kwargs}
        self.sweeper = Sweeper(
            root,
            Parts(
                sink, origins=origins, ledger=self.joined.ledger, fleet=self.joined.member, **kwargs
            ),
            log=self.logs.append,
            **voice,
        )

    def tick(self, now: datetime) -> object:
        return self.sweeper.tick(now)

    def close(self) -> None:
        self.sweeper.close()


@pytest.fixture
def members() -> Iterator[list[Member]]:
    made: list[Member] = []
    yield made
    for one in made:
        one.close()


def planner_of(
    root: Path, dsn: str, tmp_path: Path, members: list[Member], **kwargs: object
) -> Member:
    """A plan-only sweeper over ``root`` (a member of the fleet), ticked once at NOW."""
    planner = Member(root, dsn, tmp_path / "ids", plan_only=True, **kwargs)
    members.append(planner)
    planner.tick(NOW)
    return planner


def sent(ids: Path) -> list[str]:
    return ids.read_text().split() if ids.exists() else []


def rows(dsn: str, sql: str, *params: object) -> list[dict[str, object]]:
    import psycopg
    from psycopg.rows import dict_row

    with psycopg.connect(dsn, autocommit=True, row_factory=dict_row) as conn:
        found = conn.execute(sql, params)
        return list(found.fetchall()) if found.description else []


# -- two clones, one ledger --------------------------------------------------------


def test_two_sweepers_over_two_clones_deliver_each_wake_once_and_stamp_both(
    clones: tuple[Path, Path], pg_dsn: str, tmp_path: Path, members: list[Member]
) -> None:
    a, b = clones
    ids = tmp_path / "ids"
    one, two = Member(a, pg_dsn, ids), Member(b, pg_dsn, ids)
    members += [one, two]
    for minutes in range(3):  # both tick, in turn, three times
        at = NOW + timedelta(minutes=minutes)
        first = one.tick(at)
        second = two.tick(at)
        assert first.leading is True and second.leading is False  # type: ignore[attr-defined]
    delivered = sent(ids)
    assert len(delivered) == len(RECORDS) == len(set(delivered))  # each due wake once
    for rel in RECORDS:  # both clones stamped, and alike: their merge has nothing to do
        assert (a / rel).read_bytes() == (b / rel).read_bytes(), rel
    assert fields(a, RECORDS[0])["nudges"] == "1"
    assert fields(b, f"{REMINDERS}/call/reminder.md")["status"] == "fired"
    assert any("stands by" in line for line in two.logs)
    assert not [line for line in one.logs + two.logs if "could not" in line or "error" in line]
    assert sum("stamped" in line and "delivered per the ledger" in line for line in two.logs) == 3
    state = rows(pg_dsn, "SELECT state, stamped, COUNT(*) AS n FROM outbox GROUP BY 1, 2")
    assert state == [{"state": "delivered", "stamped": 1, "n": 3}]
    (tree,) = rows(pg_dsn, "SELECT root, host, last_tick, last_tick_by FROM trees")
    assert tree["root"] in (str(a), str(b)) and tree["last_tick"] is not None


def test_a_released_lease_goes_to_the_standby_which_sends_nothing_twice(
    clones: tuple[Path, Path], pg_dsn: str, tmp_path: Path, members: list[Member]
) -> None:
    a, b = clones
    ids = tmp_path / "ids"
    one, two = Member(a, pg_dsn, ids), Member(b, pg_dsn, ids)
    members.append(two)
    assert one.tick(NOW).leading is True  # type: ignore[attr-defined]
    one.close()  # a clean exit lets the lease go
    report = two.tick(NOW + timedelta(minutes=1))
    assert report.leading is True and report.delivered == []  # type: ignore[attr-defined]
    assert len(sent(ids)) == 3 == len(set(sent(ids)))
    assert any("leads this tree now" in line for line in two.logs)
    (lease,) = rows(pg_dsn, "SELECT token, holder FROM leaders")
    assert lease["token"] == 2 and lease["holder"] == two.joined.member.held.holder
    for rel in RECORDS:  # the new leader's clone was stamped from the ledger's rows
        assert (a / rel).read_bytes() == (b / rel).read_bytes(), rel


def test_a_leader_that_lost_its_lease_stops_before_the_next_send(
    clones: tuple[Path, Path], pg_dsn: str, tmp_path: Path, members: list[Member]
) -> None:
    a, b = clones
    ids = tmp_path / "ids"
    one, two = Member(a, pg_dsn, ids), Member(b, pg_dsn, ids)
    members += [one, two]
    assert two.tick(NOW - timedelta(days=30)).leading is True  # type: ignore[attr-defined]
    # the leader stalls past its lease, and the other clone's sweeper takes over
    rows(pg_dsn, "UPDATE leaders SET expires = now() - interval '1 second'")
    assert one.tick(NOW).leading is True  # type: ignore[attr-defined]
    rows(pg_dsn, "UPDATE outbox SET state = 'withdrawn'")  # owed again, to whoever leads
    report = two.tick(NOW)  # its lease was taken: it stands by, sends nothing
    assert report.leading is False and report.delivered == []  # type: ignore[attr-defined]
    assert len(sent(ids)) == 3


# -- --plan-only: a queue for the delivery workers ---------------------------------


def queue(dsn: str) -> list[dict[str, object]]:
    return rows(
        dsn,
        "SELECT id, path, sink, state, attempts, in_flight, last_attempt, next_attempt, "
        "claimed_by, claim_until, stamped FROM outbox ORDER BY path",
    )


def test_plan_only_queues_new_wakes_for_the_workers_and_sends_nothing(
    clones: tuple[Path, Path], pg_dsn: str, tmp_path: Path, members: list[Member]
) -> None:
    a, _ = clones
    ids = tmp_path / "ids"
    planner = Member(a, pg_dsn, ids, plan_only=True)
    members.append(planner)
    report = planner.tick(NOW)
    assert len(report.queued) == 3 and report.delivered == []  # type: ignore[attr-defined]
    assert sent(ids) == [] and not (a / ".rouse/nudges").exists()
    for row in queue(pg_dsn):
        assert row["sink"] == "workers" and row["state"] == "pending"
        assert (row["attempts"], row["in_flight"], row["stamped"]) == (0, 0, 0)
        assert row["last_attempt"] is None and row["next_attempt"] is None
        assert row["claimed_by"] is None and row["claim_until"] is None
    assert "swept" not in fields(a, RECORDS[0])
    again = planner.tick(NOW + timedelta(minutes=1))  # owed to the workers: left alone
    assert again.queued == [] and len(queue(pg_dsn)) == 3  # type: ignore[attr-defined]


def test_plan_only_stamps_what_a_worker_delivered(
    clones: tuple[Path, Path], pg_dsn: str, tmp_path: Path, members: list[Member]
) -> None:
    a, b = clones
    planner = Member(a, pg_dsn, tmp_path / "ids", plan_only=True)
    standby = Member(b, pg_dsn, tmp_path / "ids")
    members += [planner, standby]
    planner.tick(NOW)
    ship = f"{INTENTIONS}/ship"
    # a worker claimed the ship wake, sent it, and said so (as rouse deliver does)
    rows(
        pg_dsn,
        "UPDATE outbox SET state = 'delivered', stamped = 0, attempts = 1, finished = %s, "
        "receipt = 'exit 0 (worker w1)', claimed_by = NULL, claim_until = NULL "
        "WHERE path = %s",
        "2026-03-14 12:00:30",
        ship,
    )
    report = planner.tick(NOW + timedelta(minutes=2))
    assert report.stamped == 1 and report.delivered == []  # type: ignore[attr-defined]
    header = fields(a, f"{ship}/intention.md")
    assert header["nudges"] == "1" and header["swept"] == "2026-03-14 12:00"  # as it landed
    (row,) = rows(pg_dsn, "SELECT stamped FROM outbox WHERE path = %s", ship)
    assert row["stamped"] == 1
    standby.tick(NOW + timedelta(minutes=3))  # the other clone stamps the same bytes
    assert (b / f"{ship}/intention.md").read_bytes() == (a / f"{ship}/intention.md").read_bytes()


def test_plan_only_writes_a_workers_give_up_as_one_nudge_file(
    clones: tuple[Path, Path], pg_dsn: str, tmp_path: Path, members: list[Member]
) -> None:
    a, _ = clones
    planner = planner_of(a, pg_dsn, tmp_path, members)
    docs = f"{INTENTIONS}/docs"
    rows(
        pg_dsn,
        "UPDATE outbox SET state = 'given_up', stamped = 0, finished = %s, error = 'HTTP 503', "
        "receipt = 'given up after 24h by worker w1' WHERE path = %s",
        "2026-03-15 12:00:00",
        docs,
    )
    later = NOW + timedelta(days=1, minutes=1)
    report = planner.tick(later)
    assert len(report.given_up) == 1  # type: ignore[attr-defined]
    (nudge,) = (a / ".rouse/nudges").glob("*docs*.md")
    text = nudge.read_text()
    assert "Write the docs." in text and "delivery workers could not deliver" in text
    assert "HTTP 503" in text
    assert fields(a, f"{docs}/intention.md")["nudges"] == "1"
    (row,) = rows(pg_dsn, "SELECT state, stamped, receipt FROM outbox WHERE path = %s", docs)
    assert row["state"] == "given_up" and row["stamped"] == 1
    assert str(row["receipt"]).startswith(".rouse/nudges/")
    planner.tick(later + timedelta(minutes=1))
    assert len(list((a / ".rouse/nudges").glob("*docs*.md"))) == 1  # written once


def test_plan_only_leaves_a_live_claim_alone_and_withdraws_once_it_lapses(
    clones: tuple[Path, Path], pg_dsn: str, tmp_path: Path, members: list[Member]
) -> None:
    a, _ = clones
    planner = planner_of(a, pg_dsn, tmp_path, members, verbosity=2)
    ship = f"{INTENTIONS}/ship"
    rows(
        pg_dsn,
        "UPDATE outbox SET claimed_by = 'w1', claim_until = now() + interval '1 minute', "
        "in_flight = 1, attempts = 1 WHERE path = %s",
        ship,
    )
    write_tree(  # the agent moved it: the wake has nothing left to say
        a,
        {
            f"{ship}/intention.md": f"""
            ---
            status: open
            opened: {stamp(ago(days=2))}
            last-moved: {stamp(NOW + timedelta(minutes=1))}
            closes-when: the release is tagged
            ---
            Ship the release.
            """
        },
    )
    report = planner.tick(NOW + timedelta(minutes=2))
    assert report.withdrawn == []  # type: ignore[attr-defined]
    (row,) = rows(pg_dsn, "SELECT state FROM outbox WHERE path = %s", ship)
    assert row["state"] == "pending"  # the worker is sending it: not pulled from under it
    assert any("a delivery worker is sending it" in line for line in planner.logs)
    rows(
        pg_dsn, "UPDATE outbox SET claim_until = now() - interval '1 second' WHERE path = %s", ship
    )
    report = planner.tick(NOW + timedelta(minutes=3))
    assert len(report.withdrawn) == 1  # type: ignore[attr-defined]
    (row,) = rows(pg_dsn, "SELECT state FROM outbox WHERE path = %s", ship)
    assert row["state"] == "withdrawn"


@pytest.mark.parametrize("cut_off", [1, 0])
def test_plan_only_records_no_failure_on_a_wake_a_worker_holds_a_live_claim_on(
    clones: tuple[Path, Path], pg_dsn: str, tmp_path: Path, members: list[Member], cut_off: int
) -> None:
    """A wake the tick read as owed by a sweeper that sent it itself (``cut_off``: cut off
    mid-send): before the tick resends it (queues it for the workers), it went to them
    and one claimed it and is sending it now (a sweeper leading meanwhile, say). The
    resend is skipped: no failure recorded under the worker's live claim, its in-flight
    attempt left alone."""
    from rouse.sweep.plan import Step
    from rouse.sweep.report import TickReport

    a, _ = clones
    planner = planner_of(a, pg_dsn, tmp_path, members, verbosity=2)
    ship = f"{INTENTIONS}/ship"
    rows(
        pg_dsn,
        "UPDATE outbox SET sink = 'exec', in_flight = %s, attempts = 1, last_attempt = %s "
        "WHERE path = %s",
        cut_off,
        "2026-03-14 12:00:00",
        ship,
    )
    ((wake_id,),) = [(r["id"],) for r in queue(pg_dsn) if r["path"] == ship]
    read = planner.joined.ledger.get(str(wake_id))  # what the tick read
    assert read is not None and read.in_flight == bool(cut_off) and read.sink == "exec"
    rows(
        pg_dsn,
        "UPDATE outbox SET sink = 'workers', claimed_by = 'w1', "
        "claim_until = now() + interval '1 minute', in_flight = 1, attempts = 2, "
        "error = NULL, first_failure = NULL WHERE path = %s",
        ship,
    )
    later = NOW + timedelta(minutes=1)
    planner.sweeper.carrier.carry_out(Step("send", None, read), {}, later, TickReport(later))
    (row,) = rows(
        pg_dsn,
        "SELECT sink, in_flight, attempts, error, first_failure, claimed_by FROM outbox "
        "WHERE path = %s",
        ship,
    )
    assert row == {
        "sink": "workers",
        "in_flight": 1,
        "attempts": 2,
        "error": None,
        "first_failure": None,
        "claimed_by": "w1",
    }
    assert any("a delivery worker is sending it" in line for line in planner.logs)


def test_plan_only_holds_the_queue_in_quiet_hours_and_releases_it_after(
    clones: tuple[Path, Path], pg_dsn: str, tmp_path: Path, members: list[Member]
) -> None:
    a, _ = clones
    planner = Member(
        a, pg_dsn, tmp_path / "ids", plan_only=True, quiet=QuietHours.parse("11:00-13:00")
    )
    members.append(planner)
    report = planner.tick(NOW)
    assert len(report.held) == 3  # type: ignore[attr-defined]
    assert {row["state"] for row in queue(pg_dsn)} == {"held"}
    assert report.next_at == datetime(2026, 3, 14, 13, 0)  # type: ignore[attr-defined]
    report = planner.tick(datetime(2026, 3, 14, 13, 0))
    assert len(report.queued) == 3  # type: ignore[attr-defined]
    for row in queue(pg_dsn):
        assert (row["state"], row["sink"], row["in_flight"]) == ("pending", "workers", 0)


# -- the command line ----------------------------------------------------------------


def rouse(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith("ROUSE_")}
    full.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "rouse", *args], env=full, capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--plan-only"], "--plan-only leaves delivery to `rouse deliver` workers"),
        (["--lease", "10"], "--lease is a fleet leader's lease"),
        (["--ledger", "sqlite:///x"], "--ledger must be a postgresql:// URL"),
    ],
)
def test_fleet_options_without_a_fleet_are_refused(
    clones: tuple[Path, Path], args: list[str], says: str
) -> None:
    a, _ = clones
    done = rouse("--memory", str(a), "sweep", "--once", *args)
    assert done.returncode == 2 and says in done.stderr, done.stderr
    assert not (a / ".rouse/ledger.sqlite3").exists()


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--plan-only", "--digest"], "--plan-only sends nothing, so --digest"),
        (["--plan-only", "--run", "claude"], "--plan-only sends nothing, so --run"),
        (["--plan-only", "--sink", "stdout"], "--plan-only sends nothing, so --sink"),
        (
            [
                "--plan-only",
                "--escalate",
                "webhook",
                "http://127.0.0.1:9/",
                "--escalate-after",
                "2",
            ],
            "--plan-only sends nothing, so --escalate",
        ),
        (["--lease", "1"], "--lease must be from 2 to 3600 seconds"),
        (["--lease", "nan"], "--lease must be from 2 to 3600 seconds"),
    ],
)
def test_fleet_options_that_mean_nothing_are_refused(
    clones: tuple[Path, Path], pg_dsn: str, args: list[str], says: str
) -> None:
    a, _ = clones
    done = rouse("--memory", str(a), "sweep", "--once", "--ledger", pg_dsn, *args)
    assert done.returncode == 2 and says in done.stderr, done.stderr
    assert rows(pg_dsn, "SELECT to_regclass('wakes') AS t") == [{"t": None}]  # nothing done


def test_a_tree_without_an_id_gets_one_and_is_told_once_to_commit_it(
    tmp_path: Path, pg_dsn: str
) -> None:
    root = write_tree(tmp_path / "memory", TREE_FILES)
    done = rouse("--memory", str(root), "sweep", "--once", "--ledger", pg_dsn)
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("commit it") == 1 and IDENTITY_FILE in done.stderr
    made = (root / IDENTITY_FILE).read_text()
    again = rouse("--memory", str(root), "sweep", "--once", env={"ROUSE_LEDGER": pg_dsn})
    assert again.returncode == 0 and "commit it" not in again.stderr, again.stderr
    assert (root / IDENTITY_FILE).read_text() == made
    nudges = sorted(f".rouse/nudges/{p.name}" for p in (root / ".rouse/nudges").glob("*.md"))
    assert len(nudges) == 3  # sent once, by the first
    # the fleet's ledger; the tree's own file only vouches for its nudge files (for the pack)
    local = sqlite3.connect(root / ".rouse/ledger.sqlite3")
    found = local.execute("SELECT state, stamped, receipt FROM outbox ORDER BY receipt").fetchall()
    local.close()
    assert found == [("delivered", 1, nudge) for nudge in nudges]


def test_status_and_log_read_the_fleets_ledger_and_name_the_leader(
    clones: tuple[Path, Path], pg_dsn: str, tmp_path: Path, members: list[Member]
) -> None:
    a, b = clones
    one = Member(a, pg_dsn, tmp_path / "ids")
    members.append(one)
    one.tick(NOW)
    status = rouse("--memory", str(b), "status", "--ledger", pg_dsn, "--now", stamp(NOW))
    assert status.returncode == 0, status.stderr
    lines = status.stdout.splitlines()
    assert "ledger: 0 pending, 0 held, 3 delivered, 0 given up" in lines
    tree = (a / IDENTITY_FILE).read_text().split()[1]
    from rouse.fleet.pg import redact

    assert f"fleet: tree {tree} in {redact(pg_dsn)}" in lines
    (leader,) = [line for line in lines if line.startswith("leader: ")]
    assert f"pid {os.getpid()} (token 1) since " in leader and "lease until" in leader
    data = json.loads(
        rouse("--memory", str(b), "status", "--json", env={"ROUSE_LEDGER": pg_dsn}).stdout
    )
    assert data["ledger"]["delivered"] == 3 and data["fleet"]["tree"] == tree
    assert data["fleet"]["leader"]["pid"] == os.getpid() and data["fleet"]["leader"]["live"]
    log = rouse("--memory", str(b), "log", "--ledger", pg_dsn)
    assert log.returncode == 0, log.stderr
    assert (
        sum(" delivered " in line and "via exec" in line for line in log.stdout.splitlines()) == 3
    )
    entries = json.loads(rouse("--memory", str(b), "log", "--json", "--ledger", pg_dsn).stdout)
    assert {e["state"] for e in entries} == {"delivered"} and len(entries) == 3
    local = rouse("--memory", str(b), "log")  # without --ledger: this clone's own file
    assert local.returncode == 0 and local.stdout == ""
    one.close()
    check = rouse("--memory", str(a), "status", "--check", "--ledger", pg_dsn)
    assert check.returncode == 1 and "no sweeper leads this tree" in check.stderr


def test_log_with_the_fleets_ledger_says_an_escalations_state_as_the_plain_log_does(
    clones: tuple[Path, Path], pg_dsn: str, tmp_path: Path, members: list[Member]
) -> None:
    """``rouse log --ledger DSN`` said a given-up escalation as ``given_up``, the plain
    ``rouse log`` as ``given up``: one wording."""
    a, _ = clones
    one = Member(a, pg_dsn, tmp_path / "ids")
    members.append(one)
    one.tick(NOW)
    book = one.joined.ledger
    wake = book.recent(1)[0].wake
    book.add_escalation(replace(wake, id="esc-1"), wake.id, 1, "exec", NOW)
    book.given_up("esc-1", NOW, "no answer")
    log = rouse("--memory", str(a), "log", "--ledger", pg_dsn)
    assert log.returncode == 0, log.stderr
    said = [line for line in log.stdout.splitlines() if "escalated" in line]
    assert said == ["    escalated to the owner, level 1 via exec: given up"]


def test_status_with_a_ledger_and_no_tree_id_says_how_to_get_one(
    tmp_path: Path, pg_dsn: str
) -> None:
    root = write_tree(tmp_path / "memory", TREE_FILES)
    done = rouse("--memory", str(root), "status", "--ledger", pg_dsn)
    assert done.returncode == 2 and "has no .rouse-tree yet" in done.stderr
    assert not (root / IDENTITY_FILE).exists()


PROBE = """
import json, sys
from rouse.cli.main import main
code = main({argv!r})
sys.stderr.write("\\nMODULES " + json.dumps(sorted(sys.modules)))
"""


def test_sweep_status_and_log_without_a_dsn_never_load_the_fleet(
    clones: tuple[Path, Path],
) -> None:
    a, _ = clones
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROUSE_")}
    for verb in (["sweep", "--once"], ["status"], ["log"]):
        argv = ["--memory", str(a), *verb]
        done = subprocess.run(
            [sys.executable, "-c", PROBE.format(argv=argv)],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        loaded = json.loads(done.stderr.rsplit("MODULES ", 1)[1])
        assert [m for m in loaded if m.startswith(("rouse.fleet", "psycopg"))] == [], verb
