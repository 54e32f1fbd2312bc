"""The sweeper in-process: plan, deliver, stamp, retry, give up, hold, archive.

Real sinks are exercised in test_sinks.py and the fault tests; here a
recording sink stands in where the test is about the sweeper's own
arithmetic (which tick sends what, and what gets stamped).
"""

from __future__ import annotations

import itertools
import os
import stat
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from conftest import INTENTIONS, NOW, OLD, REMINDERS, MakeTree, ago, stamp
from rouse.core import clock
from rouse.core.errors import ChangedUnderfoot
from rouse.core.header import parse_header
from rouse.core.tree import walk
from rouse.records import lifecycle
from rouse.state import sweeper as sweepstate
from rouse.state.sweeper import last_tick
from rouse.sweep import ledger, status, tick, wake
from rouse.sweep.build import Parts
from rouse.sweep.ledger import Ledger
from rouse.sweep.plan import plan
from rouse.sweep.quiet import QuietHours
from rouse.sweep.sinks import FileSink, SinkError
from rouse.sweep.tick import Sweeper
from rouse.sweep.wake import Wake

SHIP = f"{INTENTIONS}/ship"


class Recorder:
    """A sink that records what it was handed; fails while ``failing`` is true."""

    kind = "exec"
    holdable = True

    def __init__(self, failing: int = 0):
        self.failing = failing  # fail this many sends (-1: forever)
        self.sent: list[Wake] = []

    def describe(self) -> str:
        return "recorder"

    def send(self, wake: Wake, now: datetime) -> str:
        self.sent.append(wake)
        if self.failing:
            self.failing -= 1
            raise SinkError("the receiver is down")
        return "ok"


def fields(root: Path, rel: str) -> dict[str, str]:
    return parse_header((root / rel).read_bytes()).fields


@pytest.fixture
def logs() -> list[str]:
    return []


def make_sweeper(root: Path, sink: object, logs: list[str], **kwargs: object) -> Sweeper:
    voice = {name: kwargs.pop(name) for name in ("verbosity", "interval") if name in kwargs}
    return Sweeper(root, Parts(sink, **kwargs), log=logs.append, **voice)  # type: ignore[arg-type]


@pytest.fixture
def stale(make_tree: MakeTree) -> Path:
    return make_tree(
        {
            f"{SHIP}/intention.md": f"""
            ---
            status: open
            opened: {stamp(ago(days=2))}
            last-moved: {stamp(ago(hours=3))}
            closes-when: the release is tagged
            ---
            Ship the release.
            """
        }
    )


def nudge_files(root: Path) -> list[str]:
    directory = root / ".rouse/nudges"
    return sorted(p.name for p in directory.glob("*.md")) if directory.is_dir() else []


# -- the plain path ------------------------------------------------------------


def test_a_due_record_gets_one_wake_then_its_stamp(stale: Path, logs: list[str]) -> None:
    before = (stale / f"{SHIP}/intention.md").read_bytes()
    with make_sweeper(stale, FileSink(stale), logs) as sw:
        report = sw.tick(NOW)
    assert len(report.delivered) == 1 and report.stamped == 1 and report.undelivered == 0
    (name,) = nudge_files(stale)
    assert name == "20260314-120000-intention-ship.md"
    text = (stale / ".rouse/nudges" / name).read_text()
    assert text.startswith(f"intention/ship — nudge 1, last moved 3h ago\nat: {SHIP}\n")
    # (no key: nobody signed it, so its fields and body are quoted as data)
    quoted = "closes-when: the release is tagged\n\nShip the release.\n```\n"
    assert f"origin: unknown\n\n{wake.NOTES['unknown']}\n```text\n{quoted}" in text
    after = (stale / f"{SHIP}/intention.md").read_bytes()
    assert fields(stale, f"{SHIP}/intention.md")["swept"] == stamp(NOW)
    assert fields(stale, f"{SHIP}/intention.md")["nudges"] == "1"
    assert after.endswith(b"---\nShip the release.\n")
    assert before.split(b"---\n", 2)[2] == after.split(b"---\n", 2)[2]  # body untouched
    assert any("delivered intention/ship (stale, nudge 1)" in line for line in logs)


def test_nothing_due_means_nothing_written(stale: Path, logs: list[str]) -> None:
    with make_sweeper(stale, FileSink(stale), logs) as sw:
        report = sw.tick(ago(hours=2))
    assert report.delivered == [] and nudge_files(stale) == []
    assert report.next_at == ago(hours=1)  # last-moved + 2h


def test_the_next_tick_does_not_wake_it_again(stale: Path, logs: list[str]) -> None:
    sink = Recorder()
    with make_sweeper(stale, sink, logs) as sw:
        sw.tick(NOW)
        sw.tick(NOW + timedelta(minutes=1))
        sw.tick(NOW + timedelta(hours=1, minutes=59))
        assert len(sink.sent) == 1
        sw.tick(NOW + timedelta(hours=2))
    assert [w.nudge for w in sink.sent] == [1, 2]
    assert fields(stale, f"{SHIP}/intention.md")["nudges"] == "2"


def test_stamping_keeps_the_mode_and_every_body_byte(make_tree: MakeTree, logs: list[str]) -> None:
    body = "Line one\r\nünïcode — ✓\r\n\r\n```\n---\nnot: a header\n```\n"
    root = make_tree(
        {f"{SHIP}/intention.md": f"---\r\nlast-moved: {stamp(ago(days=1))}\r\n---\r\n{body}"}
    )
    path = root / f"{SHIP}/intention.md"
    path.chmod(0o600)
    with make_sweeper(root, Recorder(), logs) as sw:
        sw.tick(NOW)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_bytes().endswith(b"---\r\n" + body.encode())
    assert fields(root, f"{SHIP}/intention.md")["nudges"] == "1"


# -- reviews and reminders -------------------------------------------------------


def test_a_review_fires_once_per_period_not_once_per_tick(
    make_tree: MakeTree, logs: list[str]
) -> None:
    root = make_tree(
        {
            f"{SHIP}/intention.md": f"---\nlast-moved: {stamp(ago(days=9))}\n---\n",
            f"{SHIP}/win/goal.md": f"""
            ---
            opened: {stamp(ago(days=9))}
            review-every: 1d
            success-when: a green week
            ---
            """,
            # open work under the goal: it is never stale, but it is still reviewed
            f"{SHIP}/win/fix/task.md": "---\nstatus: running\n---\n",
        }
    )
    sink = Recorder()
    with make_sweeper(root, sink, logs) as sw:
        for minute in range(0, 3 * 24 * 60 + 1, 10):  # a tick every 10 minutes for 3 days
            sw.tick(NOW + timedelta(minutes=minute))
    reviews = [w for w in sink.sent if w.path == f"{SHIP}/win"]
    assert [w.reason for w in reviews] == ["review"] * 4
    assert [w.made_at for w in reviews] == [NOW + timedelta(days=d) for d in range(4)]
    assert fields(root, f"{SHIP}/win/goal.md")["reviewed"] == stamp(NOW + timedelta(days=3))
    # the task is stale after a day without moving: it wakes too, on its own clock
    assert {w.reason for w in sink.sent if w.path == f"{SHIP}/win/fix"} == {"stale"}
    assert not [w for w in sink.sent if w.path == SHIP]  # silenced by the open task


def test_review_beats_stale_one_wake_per_record(make_tree: MakeTree, logs: list[str]) -> None:
    root = make_tree(
        {
            f"{SHIP}/intention.md": f"""
            ---
            opened: {stamp(ago(days=5))}
            last-moved: {stamp(ago(days=5))}
            review-every: 2d
            ---
            """
        }
    )
    sink = Recorder()
    with make_sweeper(root, sink, logs) as sw:
        sw.tick(NOW)
    assert [w.reason for w in sink.sent] == ["review"]
    header = fields(root, f"{SHIP}/intention.md")
    assert header["reviewed"] == header["swept"] == stamp(NOW) and header["nudges"] == "1"


def nag_fire_times(due: datetime, nag_minutes: int, fires: int) -> list[datetime]:
    times, at = [], due
    for n in range(1, fires + 1):
        times.append(at)
        step = min(max(nag_minutes * 2 ** (n - 1), 15), 24 * 60)
        at += timedelta(minutes=step)
    return times


def test_a_nagging_reminder_lives_its_whole_life(make_tree: MakeTree, logs: list[str]) -> None:
    due = datetime(2026, 3, 14, 9, 0)
    root = make_tree(
        {
            f"{REMINDERS}/pay/reminder.md": f"---\nstatus: pending\ndue: {stamp(due)}\nnag: 10m\n---\nPay rent.\n"
        }
    )
    rel = f"{REMINDERS}/pay/reminder.md"
    expected = nag_fire_times(due, 10, 10)
    gaps = [(b - a) // timedelta(minutes=1) for a, b in itertools.pairwise(expected)]
    assert gaps[:4] == [15, 20, 40, 80]  # the spec's +15m, +20m, +40m, +80m…
    sink = Recorder()
    with make_sweeper(root, sink, logs) as sw:
        for n, at in enumerate(expected, start=1):
            sw.tick(at - timedelta(minutes=1))  # a minute early: nothing
            assert len(sink.sent) == n - 1
            sw.tick(at)
            assert len(sink.sent) == n
            header = fields(root, rel)
            assert header["fires"] == str(n)
            assert header["set"] == stamp(due)  # the original due, written once
            if n < 10:
                assert header["status"] == "pending"
                assert header["due"] == stamp(expected[n])
        sw.tick(expected[-1] + timedelta(days=30))
    assert [w.reason for w in sink.sent] == ["nag"] * 9 + ["expire"]
    assert [w.nudge for w in sink.sent] == list(range(1, 11))
    assert "last nudge" in sink.sent[-1].text
    header = fields(root, rel)
    assert header["status"] == "expired" and header["ended"] == "max-fires"
    assert header["fires"] == "10"


def test_a_nag_past_expires_goes_straight_to_its_last_wake(
    make_tree: MakeTree, logs: list[str]
) -> None:
    root = make_tree(
        {
            f"{REMINDERS}/late/reminder.md": f"""
            ---
            due: {stamp(ago(hours=3))}
            nag: 1h
            expires: {stamp(ago(hours=1))}
            ---
            """
        }
    )
    sink = Recorder()
    with make_sweeper(root, sink, logs) as sw:
        sw.tick(NOW)
        sw.tick(NOW + timedelta(days=2))
    assert [w.reason for w in sink.sent] == ["expire"]
    header = fields(root, f"{REMINDERS}/late/reminder.md")
    assert header["status"] == "expired" and header["ended"] == "expires"


def test_a_one_shot_reminder_fires_once(make_tree: MakeTree, logs: list[str]) -> None:
    root = make_tree({f"{REMINDERS}/call/reminder.md": f"---\ndue: {stamp(ago(minutes=1))}\n---\n"})
    sink = Recorder()
    with make_sweeper(root, sink, logs) as sw:
        for minute in range(0, 120, 5):
            sw.tick(NOW + timedelta(minutes=minute))
    assert [w.reason for w in sink.sent] == ["due"]
    header = fields(root, f"{REMINDERS}/call/reminder.md")
    assert header["status"] == "fired" and header["fired"] == stamp(NOW)


def test_a_nag_stuck_at_fired_is_recovered(make_tree: MakeTree, logs: list[str]) -> None:
    root = make_tree(
        {
            f"{REMINDERS}/stuck/reminder.md": f"""
            ---
            status: fired
            due: {stamp(ago(days=1))}
            nag: 30m
            fires: 2
            set: {stamp(ago(days=2))}
            ---
            """
        }
    )
    sink = Recorder()
    with make_sweeper(root, sink, logs) as sw:
        sw.tick(NOW)
    assert [(w.reason, w.nudge) for w in sink.sent] == [("nag", 3)]
    header = fields(root, f"{REMINDERS}/stuck/reminder.md")
    assert header["status"] == "pending" and header["fires"] == "3"
    assert header["due"] == stamp(NOW + timedelta(hours=2))  # 30m × 2^2
    assert header["set"] == stamp(ago(days=2))


# -- the mtime trap ----------------------------------------------------------------


def test_rouse_own_stamp_never_counts_as_the_agent_moving_it(
    make_tree: MakeTree, logs: list[str]
) -> None:
    """No last-moved, no opened: moved_at is the mtime, which our stamp would change."""
    root = make_tree({f"{SHIP}/intention.md": "---\nstatus: open\n---\nNo stamps at all.\n"})
    with make_sweeper(root, FileSink(root), logs) as sw:
        sw.tick(NOW)
        header = fields(root, f"{SHIP}/intention.md")
        assert header["opened"] == stamp(OLD)  # the mtime it had, kept as its start
        tree = walk(root)
        assert clock.moved_at(tree.records[SHIP]) == (OLD, "opened")
        report = sw.tick(NOW + timedelta(minutes=5))
    assert report.archived == []
    assert len(nudge_files(root)) == 1  # still waiting for the agent


# -- nudge files ---------------------------------------------------------------------


def test_nudge_files_are_archived_once_the_agent_moves(stale: Path, logs: list[str]) -> None:
    with make_sweeper(stale, FileSink(stale), logs) as sw:
        sw.tick(NOW)
        (name,) = nudge_files(stale)
        assert sw.tick(NOW + timedelta(minutes=10)).archived == []
        lifecycle.move(stale, "ship", NOW + timedelta(minutes=20))
        report = sw.tick(NOW + timedelta(minutes=21))
    assert report.archived == [name]
    assert nudge_files(stale) == []
    assert (stale / ".rouse/nudges/done" / name).is_file()


def test_nudge_files_are_archived_once_the_record_ends(
    make_tree: MakeTree, logs: list[str]
) -> None:
    root = make_tree({f"{REMINDERS}/call/reminder.md": f"---\ndue: {stamp(ago(minutes=1))}\n---\n"})
    with make_sweeper(root, FileSink(root), logs) as sw:
        sw.tick(NOW)
        assert sw.tick(NOW + timedelta(minutes=1)).archived == []  # fired is rouse's own write
        lifecycle.close(root, "call", NOW, "done")
        assert len(sw.tick(NOW + timedelta(minutes=2)).archived) == 1


def test_two_records_with_one_slug_get_two_nudge_files(
    make_tree: MakeTree, logs: list[str]
) -> None:
    old = stamp(ago(days=1))
    root = make_tree(
        {
            f"{INTENTIONS}/a/intention.md": f"---\nstatus: open\nlast-moved: {old}\n---\n",
            f"{INTENTIONS}/a/same/task.md": f"---\nlast-moved: {old}\n---\n",
            f"{INTENTIONS}/b/intention.md": "---\nstatus: done\n---\n",
            f"{INTENTIONS}/b/same/task.md": f"---\nlast-moved: {old}\n---\n",
        }
    )
    with make_sweeper(root, FileSink(root), logs) as sw:
        sw.tick(NOW)
    names = nudge_files(root)
    assert names == ["20260314-120000-task-same-2.md", "20260314-120000-task-same.md"]
    records = {(root / ".rouse/nudges" / n).read_text().split("\n")[0] for n in names}
    assert records == {"task/same — nudge 1, last moved yesterday"}


# -- bad files ----------------------------------------------------------------------


def test_a_bad_file_is_logged_once_and_skipped(stale: Path, logs: list[str]) -> None:
    bad = stale / f"{INTENTIONS}/broken/intention.md"
    bad.parent.mkdir(parents=True)
    bad.write_bytes(b"---\nstatus: open\nlast-moved: 2020-01-01\n" + b"x: y\n" * 600)
    worse = stale / f"{INTENTIONS}/binary/intention.md"
    worse.parent.mkdir(parents=True)
    worse.write_bytes(b"---\nstatus: \xff\xfe\n---\n")
    sink = Recorder()
    with make_sweeper(stale, sink, logs) as sw:
        sw.tick(NOW)
        sw.tick(NOW + timedelta(hours=3))
    assert {w.path for w in sink.sent} == {SHIP}
    assert sum("broken/intention.md" in line and "unterminated" in line for line in logs) == 1
    assert sum("binary/intention.md" in line for line in logs) == 1


def test_a_record_vanishing_mid_tick_is_skipped(stale: Path, logs: list[str]) -> None:
    class Deleting(Recorder):
        def send(self, wake: Wake, now: datetime) -> str:
            (stale / wake.file).unlink()
            return super().send(wake, now)

    with make_sweeper(stale, Deleting(), logs) as sw:
        report = sw.tick(NOW)
        assert report.delivered and report.stamped == 0
        assert any("not yet stamped" in line for line in logs)
        sw.tick(NOW + timedelta(minutes=1))  # the restamp finds it gone and lets it be
        assert sw.ledger.open_entries() == []


# -- the ledger's side: retries, give-up, quiet hours, crashes ------------------------


def test_a_failing_sink_retries_the_same_wake_with_backoff(stale: Path, logs: list[str]) -> None:
    sink = Recorder(failing=3)
    path = f"{SHIP}/intention.md"
    attempts: list[int] = []
    with make_sweeper(stale, sink, logs) as sw:
        for second in range(0, 20 * 60, 30):  # a tick every 30 seconds for 20 minutes
            at = NOW + timedelta(seconds=second)
            before = len(sink.sent)
            sw.tick(at)
            if len(sink.sent) > before:
                attempts.append(second // 60)
            if len(sink.sent) < 4:
                assert "swept" not in fields(stale, path)  # never stamped without delivery
    assert attempts == [0, 1, 3, 7]  # +1m, +2m, +4m after each failure
    assert len({w.id for w in sink.sent}) == 1
    assert fields(stale, path)["swept"] == stamp(NOW + timedelta(minutes=7))
    assert fields(stale, path)["nudges"] == "1"


def test_a_wake_failing_for_24h_is_given_up_as_a_nudge_file(stale: Path, logs: list[str]) -> None:
    sink = Recorder(failing=-1)
    with make_sweeper(stale, sink, logs) as sw:
        for minute in range(0, 24 * 60, 60):
            assert sw.tick(NOW + timedelta(minutes=minute)).given_up == []
        report = sw.tick(NOW + timedelta(hours=24))
    assert len(report.given_up) == 1
    (name,) = nudge_files(stale)
    text = (stale / ".rouse/nudges" / name).read_text()
    assert text.startswith("intention/ship — nudge 1") and "given up" in text
    assert fields(stale, f"{SHIP}/intention.md")["nudges"] == "1"
    assert sweepstate.undelivered_counts(stale) == {"pending": 0, "held": 0, "given_up": 1}
    assert len({w.id for w in sink.sent}) == 1


def test_quiet_hours_hold_a_wake_until_they_end(stale: Path, logs: list[str]) -> None:
    night = datetime(2026, 3, 14, 23, 0)
    sink = Recorder()
    with make_sweeper(stale, sink, logs, quiet=QuietHours.parse("22:00-07:00")) as sw:
        report = sw.tick(night)
        assert report.held and report.undelivered == 0 and sink.sent == []
        assert report.next_at is not None and report.next_at <= datetime(2026, 3, 15, 7, 0)
        sw.tick(datetime(2026, 3, 15, 6, 59))
        assert sink.sent == []
        assert sweepstate.undelivered_counts(stale)["held"] == 1
        sw.tick(datetime(2026, 3, 15, 7, 0))
    assert len(sink.sent) == 1 and sink.sent[0].id == report.held[0]
    assert fields(stale, f"{SHIP}/intention.md")["swept"] == "2026-03-15 07:00"


def test_quiet_hours_never_hold_the_file_sink(stale: Path, logs: list[str]) -> None:
    with make_sweeper(stale, FileSink(stale), logs, quiet=QuietHours.parse("00:00-23:59")) as sw:
        assert len(sw.tick(NOW).delivered) == 1


def test_a_pending_wake_is_withdrawn_when_the_agent_acts_first(
    stale: Path, logs: list[str]
) -> None:
    sink = Recorder(failing=1)
    with make_sweeper(stale, sink, logs) as sw:
        sw.tick(NOW)
        lifecycle.move(stale, "ship", NOW + timedelta(seconds=30))
        report = sw.tick(NOW + timedelta(minutes=2))
    assert len(sink.sent) == 1 and len(report.withdrawn) == 1
    assert "swept" not in fields(stale, f"{SHIP}/intention.md")
    assert sweepstate.counts(stale)["withdrawn"] == 1


def test_a_wake_left_in_flight_is_resent_with_its_id(stale: Path, logs: list[str]) -> None:
    sink = Recorder()
    with make_sweeper(stale, sink, logs) as sw:
        decision = clock.due(walk(stale), NOW)[0]
        made = wake.build(decision, "intention/ship", NOW, "", "unknown")
        sw.ledger.add(made, "exec", NOW)  # written, sending… and then the process died
        report = sw.tick(NOW + timedelta(seconds=20))
    assert [w.id for w in sink.sent] == [made.id] and report.delivered == [made.id]
    (entry,) = ledger.recent(stale)
    assert entry.attempts == 2 and entry.state == "delivered"


def test_a_delivered_wake_whose_stamp_was_deferred_is_stamped_not_resent(
    stale: Path, logs: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    real = tick.stamp_after_delivery
    calls: list[int] = []

    def busy_once(root: Path, record: object, updates: dict[str, str | None]) -> bool:
        calls.append(1)
        if len(calls) == 1:
            raise ChangedUnderfoot("kept changing", path="x")
        return real(root, record, updates)  # type: ignore[arg-type]

    monkeypatch.setattr(tick, "stamp_after_delivery", busy_once)
    sink = Recorder()
    with make_sweeper(stale, sink, logs) as sw:
        assert sw.tick(NOW).stamped == 0
        assert "swept" not in fields(stale, f"{SHIP}/intention.md")
        sw.tick(NOW + timedelta(minutes=1))
    assert len(sink.sent) == 1  # delivered once, never resent
    header = fields(stale, f"{SHIP}/intention.md")
    # stamped as of the delivery, not the later tick that wrote it (clones agree on it)
    assert header["nudges"] == "1" and header["swept"] == stamp(NOW)
    (entry,) = ledger.recent(stale)
    assert entry.state == "delivered" and entry.stamped


def test_a_stamp_that_landed_before_a_crash_is_confirmed(stale: Path, logs: list[str]) -> None:
    sink = Recorder()
    with make_sweeper(stale, sink, logs) as sw:
        sw.tick(NOW)
        (entry,) = ledger.recent(stale)
        sw.ledger.db.execute(  # as if killed between the stamp and the ledger's mark
            "UPDATE outbox SET state = 'pending', in_flight = 1 WHERE id = ?", (entry.id,)
        )
        report = sw.tick(NOW + timedelta(minutes=1))
    assert report.delivered == [entry.id] and len(sink.sent) == 1
    assert fields(stale, f"{SHIP}/intention.md")["nudges"] == "1"


def test_the_agent_changing_a_reminder_mid_send_is_not_undone(
    make_tree: MakeTree, logs: list[str]
) -> None:
    root = make_tree(
        {f"{REMINDERS}/r/reminder.md": f"---\ndue: {stamp(ago(minutes=5))}\nnag: 1h\n---\n"}
    )
    rel = f"{REMINDERS}/r/reminder.md"

    class AgentSaysDone(Recorder):
        def send(self, wake: Wake, now: datetime) -> str:
            lifecycle.close(root, "r", now, "done")
            return super().send(wake, now)

    with make_sweeper(root, AgentSaysDone(), logs) as sw:
        report = sw.tick(NOW)
        sw.tick(NOW + timedelta(hours=3))
    assert len(report.delivered) == 1
    header = fields(root, rel)
    assert header["status"] == "done" and "fires" not in header
    assert sweepstate.counts(root)["pending"] == 0


# -- the plan is pure; an idle tick reads nothing -------------------------------------


def test_planning_touches_nothing(stale: Path) -> None:
    tree = walk(stale)
    listing = sorted(str(p) for p in stale.rglob("*"))
    first = plan(tree, NOW, [])
    second = plan(tree, NOW, [])
    assert [s.action for s in first.steps] == ["new"] == [s.action for s in second.steps]
    assert sorted(str(p) for p in stale.rglob("*")) == listing


def test_an_idle_tick_reads_no_unchanged_file(
    stale: Path, logs: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from rouse.cache import walk as cache

    reads: list[str] = []
    real = cache.read_header

    def counting(path: Path, rel: str | None = None, info=None):  # type: ignore[no-untyped-def]
        reads.append(str(rel))
        return real(path, rel, info)

    monkeypatch.setattr(cache, "read_header", counting)
    with make_sweeper(stale, Recorder(), logs) as sw:
        sw.tick(ago(hours=2))
        assert reads  # the first tick reads the headers once
        reads.clear()
        sw.tick(ago(hours=1, minutes=30))
    assert reads == []


# -- what status and the pack read -------------------------------------------------------


def test_last_tick_and_status(stale: Path, logs: list[str]) -> None:
    assert last_tick(stale) == (None, None)
    with make_sweeper(stale, FileSink(stale), logs, interval=30.0) as sw:
        sw.tick(NOW)
    assert last_tick(stale) == (NOW, 30.0)
    data = status.status(walk(stale), NOW)
    assert data["last_tick"] == NOW.astimezone().isoformat()
    assert data["ledger"] == {"pending": 0, "held": 0, "delivered": 1, "given_up": 0}


def test_status_before_any_sweeper(stale: Path) -> None:
    data = status.status(walk(stale), NOW)
    assert data["last_tick"] is None and data["sweeper"] is None
    assert data["ledger"]["pending"] == 0
    assert not (stale / ".rouse" / "ledger.sqlite3").exists()


def test_ledger_file_is_in_the_state_dir(stale: Path, logs: list[str]) -> None:
    with make_sweeper(stale, FileSink(stale), logs):
        pass
    assert (stale / sweepstate.LEDGER).is_file()
    with Ledger(stale) as book:
        assert book.open_entries() == []
    assert os.path.isdir(stale / ".rouse")


# -- what the sweeper says (issue 12, item 6) ---------------------------------------------


def test_an_idle_tick_says_nothing_and_reports_it_was_idle(stale: Path, logs: list[str]) -> None:
    with make_sweeper(stale, FileSink(stale), logs) as sw:
        report = sw.tick(ago(hours=2))  # nothing is due yet
    assert logs == [] and report.eventful is False


def test_a_tick_that_delivers_is_eventful(stale: Path, logs: list[str]) -> None:
    with make_sweeper(stale, FileSink(stale), logs) as sw:
        assert sw.tick(NOW).eventful is True
        assert sw.tick(NOW + timedelta(minutes=1)).eventful is False  # nothing more to do


def test_errors_only_keeps_failures_and_drops_deliveries(stale: Path, logs: list[str]) -> None:
    sink = Recorder(failing=1)
    with make_sweeper(stale, sink, logs, verbosity=tick.ERRORS) as sw:
        first = sw.tick(NOW)
        assert first.eventful and len(logs) == 1 and "not delivered intention/ship" in logs[0]
        second = sw.tick(NOW + timedelta(minutes=1))  # the retry lands
    assert second.delivered and second.eventful
    assert len(logs) == 1  # the delivery itself is not an error: not said


def test_a_wake_held_again_is_not_news(stale: Path, logs: list[str]) -> None:
    with make_sweeper(stale, Recorder(), logs, quiet=QuietHours.parse("11:00-13:00")) as sw:
        first = sw.tick(NOW)
        again = sw.tick(NOW + timedelta(minutes=5))
    assert first.held and first.eventful
    assert not again.eventful and sweepstate.undelivered_counts(stale)["held"] == 1
    assert sum(" held " in line for line in logs) == 1


def test_say_filters_by_level(stale: Path, logs: list[str]) -> None:
    for verbosity, heard in ((tick.ERRORS, ["e"]), (tick.EVENTS, ["e", "i"]),
                             (tick.EVERY_TICK, ["e", "i", "d"])):  # fmt: skip
        logs.clear()
        with make_sweeper(stale, FileSink(stale), logs, verbosity=verbosity) as sw:
            sw.say("e", tick.ERRORS)
            sw.say("i", tick.EVENTS)
            sw.say("d", tick.EVERY_TICK)
        assert logs == heard
