"""The clock's 0.4 decisions (issue 31, item 2b), one test each.

An action with an outcome has ended whatever its status says; an unreadable
``nag:`` is absent; status words are read case-insensitively; a record file
with no header fence is swept as an open record on the file's time. And what
is written down as today's behaviour, pinned: a snooze re-arms a reminder
and restarts its nag history; a series snoozed past its ``until`` fires once
then ends; ``monthly 31`` clamps like ``1mo``; and the refusals (``snooze
--clear`` with no snooze, snoozing or re-closing an ended record, ``close
--dropped --series``, ``promote --under`` a goal, a ``move`` back in time).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import pytest

from conftest import INTENTIONS, NOW, REMINDERS, set_mtime, stamp
from rouse.core import clock, levels, nextdue, recurrence
from rouse.core.errors import UsageError
from rouse.core.tree import walk
from rouse.lint.check import check
from rouse.records import lifecycle, promoting
from rouse.records.scaffold import init, new, remind

T = stamp(NOW)
SHIP = f"{INTENTIONS}/ship"
STEP = f"{SHIP}/step"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "memory"
    init(root, NOW - timedelta(days=1), examples=False)
    return root


def write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def decision(root: Path, rel: str, now: datetime = NOW) -> clock.Decision:
    tree = walk(root)
    return clock.evaluate(tree, tree.records[rel], now)


def findings(root: Path, rel: str) -> list[str]:
    return [f"{f.level}: {f.message}" for f in check(walk(root), NOW) if f.path == rel]


# -- decisions of 0.4 -------------------------------------------------------------------


def test_an_action_with_an_outcome_has_ended_whatever_its_status(root: Path) -> None:
    write(root, f"{SHIP}/intention.md", f"---\ncloses-when: x\nopened: {T}\n---\n")
    action = write(
        root,
        f"{STEP}/action.md",
        "---\nstatus: finished\noutcome: surprising\nlast-moved: 2026-03-01 09:00\n---\n",
    )
    assert not levels.is_open(walk(root).records[STEP])
    # it no longer keeps its intention quiet, nor comes due itself
    assert decision(root, SHIP).silenced_by == []
    assert decision(root, STEP).reason is None
    said = findings(root, f"{STEP}/action.md")
    assert any("unknown status 'finished'" in s and "outcome ends it" in s for s in said), said
    # without an outcome, an unknown status still counts as open (err loud)
    action.write_text("---\nstatus: finished\nlast-moved: 2026-03-01 09:00\n---\n")
    assert decision(root, STEP).reason == "stale"


def test_an_unreadable_nag_is_absent_the_reminder_fires_once(root: Path) -> None:
    rel = f"{REMINDERS}/call"
    write(root, f"{rel}/reminder.md", "---\ndue: 2026-03-14 09:00\nnag: often\n---\n")
    found = decision(root, rel)
    assert found.reason == "due"  # not "nag"
    assert [p.key for p in found.problems] == ["nag"]
    assert "no nagging" in found.problems[0].message
    assert nextdue.stamps_after_delivery(found, NOW) == {"status": "fired", "fired": T}
    said = findings(root, f"{rel}/reminder.md")
    assert any(s.startswith("error: 'nag' must") for s in said), said


@pytest.mark.parametrize(("status", "open_"), [("Done", False), ("DROPPED", False), ("Open", True)])
def test_status_words_are_read_case_insensitively(root: Path, status: str, open_: bool) -> None:
    write(root, f"{SHIP}/intention.md", f"---\ncloses-when: x\nstatus: {status}\n---\n")
    assert levels.is_open(walk(root).records[SHIP]) is open_
    assert not [s for s in findings(root, f"{SHIP}/intention.md") if "status" in s]


def test_a_record_with_no_header_fence_is_swept_on_the_files_time(root: Path) -> None:
    path = write(root, f"{SHIP}/intention.md", "Ship the thing.\n")
    set_mtime(path, NOW - timedelta(hours=3))
    found = decision(root, SHIP)
    assert (found.reason, found.moved_from) == ("stale", "mtime")
    assert found.due_at == NOW - timedelta(hours=1)  # the intention's 2h default
    said = findings(root, f"{SHIP}/intention.md")
    assert any(s.startswith("warn:") and "no header" in s for s in said), said


# -- written down as today's behaviour -----------------------------------------------------


def test_snoozing_a_reminder_re_arms_it_and_restarts_its_nag_history(root: Path) -> None:
    rel = f"{REMINDERS}/call"
    path = write(
        root,
        f"{rel}/reminder.md",
        "---\nstatus: pending\ndue: 2026-03-14 11:00\nnag: 1h\nfires: 4\n"
        "set: 2026-03-14 07:00\nfired: 2026-03-14 11:00\n---\n",
    )
    lifecycle.snooze(root, "call", NOW, until="2026-03-15 09:00")
    text = path.read_text()
    assert "due: 2026-03-15 09:00" in text and "status: pending" in text
    for gone in ("fires:", "set:", "fired:"):
        assert gone not in text.split("---\n")[1]
    assert decision(root, rel, datetime(2026, 3, 15, 9, 0)).nudge == 1


def test_a_series_snoozed_past_its_until_fires_once_then_ends(root: Path) -> None:
    remind(root, "standup", "2026-03-16 09:00", NOW, every="daily 09:00", until="2026-03-18 09:00")
    rel = f"{REMINDERS}/standup"
    lifecycle.snooze(root, "standup", NOW, until="2026-03-20 09:00")
    at = datetime(2026, 3, 20, 9, 0)
    fired = decision(root, rel, at)
    assert fired.reason == "due"
    assert nextdue.stamps_after_delivery(fired, at) == {"status": "fired", "fired": stamp(at)}


def test_monthly_31_clamps_to_the_months_last_day_like_1mo() -> None:
    jan31 = datetime(2026, 1, 31, 9, 0)
    monthly = recurrence.parse_every("monthly 31 09:00")
    month = recurrence.parse_every("1mo")
    assert recurrence.next_after(monthly, jan31, jan31) == datetime(2026, 2, 28, 9, 0)
    assert recurrence.next_after(month, jan31, jan31) == datetime(2026, 2, 28, 9, 0)
    feb = datetime(2026, 2, 28, 9, 0)
    assert recurrence.next_after(monthly, jan31, feb) == datetime(2026, 3, 31, 9, 0)
    assert recurrence.next_after(month, jan31, feb) == datetime(2026, 3, 31, 9, 0)


def test_snooze_clear_with_no_snooze_is_refused(root: Path) -> None:
    new(root, "intention", "ship", NOW, fields={"closes-when": "x"})
    with pytest.raises(UsageError, match="not snoozed: nothing to clear"):
        lifecycle.snooze(root, "ship", NOW, clear=True)


def test_snoozing_or_re_closing_an_ended_record_is_refused(root: Path) -> None:
    new(root, "intention", "ship", NOW, fields={"closes-when": "x"})
    lifecycle.close(root, "ship", NOW, "done")
    with pytest.raises(UsageError, match="only open records snooze"):
        lifecycle.snooze(root, "ship", NOW, until="2026-03-15 09:00")
    with pytest.raises(UsageError, match="done"):
        lifecycle.close(root, "ship", NOW, "dropped", "changed my mind")


def test_close_dropped_series_is_refused(root: Path) -> None:
    remind(root, "standup", None, NOW, every="daily 09:00")
    with pytest.raises(UsageError, match="--series goes with --done"):
        lifecycle.close(root, "standup", NOW, "dropped", "no more", series=True)


def test_promote_under_a_goal_is_refused(root: Path) -> None:
    new(root, "intention", "ship", NOW, fields={"closes-when": "x"})
    new(root, "goal", "green", NOW, under="ship", fields={"success-when": "x"})
    new(root, "backlog", "idea", NOW)
    with pytest.raises(UsageError, match="is a goal: an intention nests under an intention"):
        promoting.promote(root, "idea", "it is done", NOW, under="green")
    assert (root / "inventory/backlog/idea/backlog.md").exists()  # nothing moved


def test_a_move_to_before_the_last_move_is_refused(root: Path) -> None:
    new(root, "intention", "ship", NOW, fields={"closes-when": "x"})
    lifecycle.move(root, "ship", NOW)
    with pytest.raises(UsageError, match="does not take time back"):
        lifecycle.move(root, "ship", NOW - timedelta(hours=1))


# -- a forecast respects a snooze (issue 34, item 9) -------------------------------------


@pytest.mark.parametrize(
    "fields", ["review-every: 1d\nreviewed: 2026-11-29 09:00", "stale-after: 1d"]
)
def test_a_forecast_puts_nothing_inside_a_snooze(root: Path, fields: str) -> None:
    write(
        root,
        f"{SHIP}/intention.md",
        f"---\ncloses-when: x\nopened: 2026-11-29 09:00\nlast-moved: 2026-11-29 09:00\n"
        f"{fields}\nsnoozed-until: 2026-12-07 09:00\n---\n",
    )
    tree = walk(root)
    now, until = datetime(2026, 12, 1, 12, 0), datetime(2026, 12, 7, 12, 0)
    assert not clock.due(tree, now)  # (due itself was right)
    (row,) = [
        d for d in nextdue.forecast(clock.decisions(tree, until), until) if d.record.dir == SHIP
    ]
    assert row.due_at == datetime(2026, 12, 7, 9, 0)
    # and once the snooze is over, the record is due from its end, not from inside it
    after = decision(root, SHIP, datetime(2026, 12, 7, 10, 0))
    assert after.is_due and after.due_at == datetime(2026, 12, 7, 9, 0)
