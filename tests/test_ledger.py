"""The delivery ledger: migrations, backoff, read-only views, quiet hours."""

from __future__ import annotations

import sqlite3
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from conftest import NOW
from rouse.core.errors import UsageError
from rouse.state import sweeper
from rouse.sweep import ledger
from rouse.sweep.ledger import Ledger, backoff
from rouse.sweep.ledger.sqlite import SCHEMA_VERSION
from rouse.sweep.quiet import QuietHours
from rouse.sweep.wake import Wake


def _wake(wake_id: str = "w1", path: str = "inventory/reminders/r") -> Wake:
    return Wake(
        id=wake_id,
        record="reminder/r",
        type="reminder",
        slug="r",
        path=path,
        file=f"{path}/reminder.md",
        reason="due",
        nudge=1,
        last_moved="2026-03-14 11:00",
        at="2026-03-14 12:00:00",
        text="reminder/r — due just now\nat: inventory/reminders/r\n",
    )


def test_fresh_ledger_is_migrated_and_reopens(tmp_path: Path) -> None:
    with Ledger(tmp_path) as first:
        first.add(_wake(), "file", NOW)
    with Ledger(tmp_path) as again:
        version = again.db.execute("PRAGMA user_version").fetchone()[0]
        assert version == SCHEMA_VERSION
        entry = again.get("w1")
        assert entry is not None and entry.wake == _wake()
        assert entry.state == "pending" and entry.in_flight and entry.attempts == 1


def test_a_newer_ledger_is_refused(tmp_path: Path) -> None:
    path = tmp_path / sweeper.LEDGER
    path.parent.mkdir()
    with sqlite3.connect(path) as db:
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    db.close()
    with pytest.raises(UsageError, match="newer than this rouse"):
        Ledger(tmp_path)


def test_backoff_doubles_from_a_minute_to_an_hour() -> None:
    minutes = [backoff(n) / timedelta(minutes=1) for n in range(1, 10)]
    assert minutes == [1, 2, 4, 8, 16, 32, 60, 60, 60]
    assert backoff(1000) == timedelta(hours=1)


# Attempts, backoff, delivery and the open entries are the shared suite's
# (tests/test_ledger_backends.py), run on this SQLite ledger and on PostgreSQL.


def test_read_only_views_never_create_the_database(tmp_path: Path) -> None:
    assert sweeper.undelivered_counts(tmp_path) == {"pending": 0, "held": 0, "given_up": 0}
    assert sweeper.counts(tmp_path)["delivered"] == 0
    assert ledger.recent(tmp_path) == []
    assert not (tmp_path / ".rouse").exists()


def test_counts_and_undelivered_counts(tmp_path: Path) -> None:
    with Ledger(tmp_path) as book:
        book.add(_wake("a", "p/a"), "exec", NOW, held=True)
        book.add(_wake("b", "p/b"), "webhook", NOW)
        book.add(_wake("c", "p/c"), "webhook", NOW)
        book.given_up("c", NOW, ".rouse/nudges/x.md", stamped=True)
        book.add(_wake("d", "p/d"), "file", NOW)
        book.delivered("d", NOW, "ok", stamped=True)
    assert sweeper.undelivered_counts(tmp_path) == {"pending": 1, "held": 1, "given_up": 1}
    later = NOW + timedelta(days=1)
    assert sweeper.undelivered_counts(tmp_path, since=later)["given_up"] == 0
    counts = sweeper.counts(tmp_path)
    assert counts == {"pending": 1, "held": 1, "delivered": 1, "given_up": 1, "withdrawn": 0}
    lines = ledger.log_lines(ledger.recent(tmp_path))
    assert sum(" given up " in line for line in lines) == 1
    assert any(line.strip() == ".rouse/nudges/x.md" for line in lines)


def test_recent_is_newest_first_and_limited(tmp_path: Path) -> None:
    with Ledger(tmp_path) as book:
        for n in range(5):
            made = _wake(f"w{n}", f"p/{n}")
            at = (NOW + timedelta(minutes=n)).strftime(sweeper.TIME_FORMAT)
            book.add(Wake(**{**made.as_dict(), "at": at}), "file", NOW)
    assert [e.id for e in ledger.recent(tmp_path, 3)] == ["w4", "w3", "w2"]
    data = ledger.recent(tmp_path, 1)[0].as_json()
    assert data["state"] == "pending" and data["record"] == "reminder/r"


@pytest.mark.parametrize(
    ("window", "inside", "outside"),
    [
        ("22:00-07:00", ["22:00", "23:59", "00:00", "06:59"], ["07:00", "12:00", "21:59"]),
        ("09:00-17:30", ["09:00", "17:29"], ["08:59", "17:30", "23:00"]),
    ],
)
def test_quiet_hours_window(window: str, inside: list[str], outside: list[str]) -> None:
    quiet = QuietHours.parse(window)
    day = NOW.date()

    def at(hhmm: str) -> datetime:
        return datetime.combine(day, datetime.strptime(hhmm, "%H:%M").time())

    assert all(quiet.holds(at(t)) for t in inside)
    assert not any(quiet.holds(at(t)) for t in outside)
    assert str(quiet) == window


def test_quiet_hours_end_is_the_next_end() -> None:
    quiet = QuietHours.parse("22:00-07:00")
    assert quiet.ends_after(datetime(2026, 3, 14, 23, 0)) == datetime(2026, 3, 15, 7, 0)
    assert quiet.ends_after(datetime(2026, 3, 15, 3, 0)) == datetime(2026, 3, 15, 7, 0)


@pytest.mark.parametrize("bad", ["22-07", "25:00-07:00", "22:00-22:00", "10:60-11:00", ""])
def test_bad_quiet_hours_are_refused(bad: str) -> None:
    with pytest.raises(UsageError, match="HH:MM-HH:MM"):
        QuietHours.parse(bad)
