"""One suite, two ledgers: the SQLite file and the fleet's PostgreSQL run the same rules.

Every test here takes ``book``: a :class:`~rouse.sweep.ledger.Ledger` on SQLite
or a :class:`~rouse.fleet.pg_schema.PgLedger` on a real PostgreSQL (a fresh
database per test), and must pass on both.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from conftest import NOW
from rouse.core.errors import UsageError
from rouse.sweep.ledger import Ledger
from rouse.sweep.wake import Wake

TREE = "0123456789abcdef0123456789abcdef"


def _wake(wake_id: str = "w1", path: str = "inventory/reminders/r", **changes: object) -> Wake:
    fields: dict[str, object] = {
        "id": wake_id,
        "record": "reminder/r",
        "type": "reminder",
        "slug": "r",
        "path": path,
        "file": f"{path}/reminder.md",
        "reason": "due",
        "nudge": 1,
        "last_moved": "2026-03-14 11:00",
        "at": "2026-03-14 12:00:00",
        "text": "reminder/r — due just now\nat: inventory/reminders/r\n",
    }
    fields.update(changes)
    return Wake(**fields)  # type: ignore[arg-type]


def open_pg(dsn: str, tree: str = TREE) -> Ledger:
    from rouse.fleet.pg_schema import PgLedger

    return PgLedger(dsn, tree)


@pytest.fixture(params=["sqlite", "postgresql"])
def book(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Ledger]:
    if request.param == "sqlite":
        opened = Ledger(tmp_path)
    else:
        opened = open_pg(request.getfixturevalue("pg_dsn"))
    with opened:
        yield opened


def test_a_wake_is_written_once_and_read_back(book: Ledger) -> None:
    assert book.add(_wake(), "file", NOW) is None
    entry = book.get("w1")
    assert entry is not None and entry.wake == _wake()
    assert entry.state == "pending" and entry.in_flight and entry.attempts == 1
    assert entry.last_attempt == NOW


def test_the_same_wake_twice_is_kept_once_and_the_second_sees_the_first(book: Ledger) -> None:
    book.add(_wake(), "webhook", NOW)
    book.delivered("w1", NOW, "HTTP 200", stamped=False)
    again = book.add(_wake(), "webhook", NOW + timedelta(minutes=1))
    assert again is not None and again.state == "delivered" and again.receipt == "HTTP 200"
    assert book.counts()["delivered"] == 1


def test_a_withdrawn_wake_due_again_is_owed_again(book: Ledger) -> None:
    book.add(_wake(), "webhook", NOW)
    book.withdraw("w1", NOW, "moved")
    later = NOW + timedelta(minutes=5)
    assert book.add(_wake(), "webhook", later) is None
    entry = book.get("w1")
    assert entry is not None and entry.state == "pending" and entry.attempts == 1
    assert entry.last_attempt == later and entry.receipt is None


def test_a_revived_wake_is_the_wake_as_it_is_now(book: Ledger) -> None:
    book.add(_wake(text="reminder/r — due just now\nthe old body\n"), "webhook", NOW)
    book.withdraw("w1", NOW, "moved")
    later = NOW + timedelta(hours=2)
    fresh = _wake(at="2026-03-14 14:00:00", text="reminder/r — due 2h ago\nthe new body\n")
    assert book.add(fresh, "webhook", later) is None
    entry = book.get("w1")
    assert entry is not None and entry.wake == fresh  # its text and its time, not the old ones
    assert [e.wake.made_at for e in book.recent()] == [fresh.made_at]


def test_a_wake_no_longer_owed_is_not_held_given_up_or_withdrawn(book: Ledger) -> None:
    book.add(_wake(), "webhook", NOW)
    book.delivered("w1", NOW, "HTTP 200", stamped=False)  # it landed since the tick read it
    assert not book.hold("w1")
    assert not book.given_up("w1", NOW, "nudges/w1.md", stamped=True)
    assert not book.withdraw("w1", NOW, "moved")
    entry = book.get("w1")
    assert entry is not None and (entry.state, entry.receipt) == ("delivered", "HTTP 200")
    assert not entry.stamped


def test_retries_back_off_and_land(book: Ledger) -> None:
    book.add(_wake(), "webhook", NOW)
    book.failed("w1", NOW, "HTTP 500")
    entry = book.get("w1")
    assert entry is not None
    assert entry.first_failure == NOW and entry.next_attempt == NOW + timedelta(minutes=1)
    assert not entry.in_flight and entry.error == "HTTP 500"
    later = NOW + timedelta(minutes=1)
    book.start_attempt("w1", "webhook", later)
    book.failed("w1", later, "HTTP 502")
    entry = book.get("w1")
    assert entry is not None
    assert entry.first_failure == NOW and entry.next_attempt == later + timedelta(minutes=2)
    book.start_attempt("w1", "webhook", later + timedelta(minutes=2))
    book.delivered("w1", later + timedelta(minutes=2), "HTTP 200", stamped=True)
    entry = book.get("w1")
    assert entry is not None and entry.state == "delivered" and entry.attempts == 3
    assert book.open_entries() == []


def test_open_entries_are_held_pending_and_unstamped(book: Ledger) -> None:
    book.add(_wake("a", "p/a"), "exec", NOW, held=True)
    book.add(_wake("b", "p/b"), "file", NOW)
    book.delivered("b", NOW, "x", stamped=False)
    book.add(_wake("c", "p/c"), "file", NOW)
    book.delivered("c", NOW, "x", stamped=True)
    book.add(_wake("d", "p/d"), "file", NOW)
    book.withdraw("d", NOW, "moved")
    book.add(_wake("e", "p/e"), "file", NOW)
    book.given_up("e", NOW, "nudges/e.md", stamped=True)
    assert [e.id for e in book.open_entries()] == ["a", "b"]
    held = book.get("a")
    assert held is not None and held.state == "held" and held.attempts == 0
    assert book.counts() == {
        "pending": 0,
        "held": 1,
        "delivered": 2,
        "given_up": 1,
        "withdrawn": 1,
    }


def test_defer_holds_without_counting_an_attempt(book: Ledger) -> None:
    book.add(_wake(), "exec", NOW)
    book.defer("w1", "run budget spent")
    entry = book.get("w1")
    assert entry is not None and entry.state == "held" and entry.attempts == 0
    assert entry.error == "run budget spent"
    book.defer("w1", "again")
    entry = book.get("w1")
    assert entry is not None and entry.attempts == 0


def test_recent_is_newest_first_with_escalations(book: Ledger) -> None:
    for n in range(5):
        book.add(_wake(f"w{n}", f"p/{n}", at=f"2026-03-14 12:0{n}:00"), "file", NOW)
    book.add_escalation(_wake("e1", "p/4"), "w4", 1, "webhook", NOW)
    recent = book.recent(3)
    assert [e.id for e in recent] == ["w4", "w3", "w2"]
    assert recent[0].escalations == ("level 1 via webhook: pending",)


def test_digests_runs_and_escalations_round_trip(book: Ledger) -> None:
    book.add(_wake("a", "p/a"), "exec", NOW)
    book.add(_wake("b", "p/b"), "exec", NOW)
    assert book.digest_of(["a", "b"]) is None
    book.start_digest("d1", ["a", "b"], "exec", NOW)
    book.start_digest("d1", ["a", "b"], "exec", NOW + timedelta(minutes=1))
    assert book.digest_of(["a", "b"]) == "d1"
    book.finish("d1", NOW, receipt="exit 0", error=None)
    book.start_run("r1", "d1", ["a", "b"], "claude -p", NOW)
    book.end_run("r1", "ran", 0, 1.5)
    book.run_answered("r1", 0)
    (run,) = book.runs()
    assert run["state"] == "not answered" and run["exit"] == 0 and run["woken"] == 2
    assert book.runs_since(NOW - timedelta(hours=1)) == [NOW]
    book.delivered("a", NOW, "exit 0", stamped=True)
    first, woken = book.streak("p/a", "2026-03-14 11:00")
    assert first is not None and woken == 1
    assert not book.escalated("p/a", "2026-03-14 11:00", 1)
    book.add_escalation(_wake("e1", "p/a"), "a", 1, "webhook", NOW)
    assert book.escalated("p/a", "2026-03-14 11:00", 1)
    assert [w.id for w, _level in book.pending_escalations()] == ["e1"]
    book.tried("e1", NOW, receipt=None, error="HTTP 500")
    book.tried("e1", NOW + timedelta(minutes=1), receipt=None, error="HTTP 500")
    ((_, tries),) = book.pending_escalations()  # the ledger's one retry rule: 1m, then 2m
    assert tries == (NOW, NOW + timedelta(minutes=3))
    book.tried("e1", NOW, receipt="HTTP 200", error=None)
    assert book.pending_escalations() == []


def test_trees_share_a_database_without_seeing_each_other(pg_dsn: str) -> None:
    with open_pg(pg_dsn, "a" * 32) as one, open_pg(pg_dsn, "b" * 32) as two:
        one.add(_wake("w-one"), "file", NOW)
        two.add(_wake("w-two"), "file", NOW)
        assert [e.id for e in one.open_entries()] == ["w-one"]
        assert [e.id for e in two.open_entries()] == ["w-two"]
        assert two.get("w-one") is None


def test_a_newer_schema_is_refused_with_a_clear_error(pg_dsn: str) -> None:
    from rouse.fleet.pg_schema import SCHEMA_VERSION

    with open_pg(pg_dsn) as first:
        first.db.execute("UPDATE rouse_schema SET version = ?", (SCHEMA_VERSION + 1,))
    with pytest.raises(UsageError, match="newer than this rouse knows"):
        open_pg(pg_dsn)


def test_two_machines_migrating_at_once_apply_each_step_once(pg_dsn: str) -> None:
    import threading

    from rouse.fleet.pg_schema import SCHEMA_VERSION, version

    errors: list[BaseException] = []

    def start() -> None:
        try:
            open_pg(pg_dsn).close()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=start) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    with open_pg(pg_dsn) as book:
        assert version(book.db) == SCHEMA_VERSION
