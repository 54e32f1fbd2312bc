"""The clock (SPEC §3): every rule at fixed instants, just before and at each boundary.

Records are real files in a real tree; a "delivery" applies
``nextdue.stamps_after_delivery`` to the file with ``header.set_fields`` and the
tree is walked again, exactly as the sweeper does.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import (
    BACKLOG,
    INTENTIONS,
    NOW,
    OLD,
    REMINDERS,
    MakeTree,
    set_mtime,
    stamp,
    write_tree,
)
from rouse.core import clock
from rouse.core.clock import Decision, evaluate
from rouse.core.header import set_fields, split
from rouse.core.layout import MACHINE_FIELDS
from rouse.core.nextdue import stamps_after_delivery
from rouse.core.tree import Tree, walk

M = timedelta(minutes=1)
H = timedelta(hours=1)
D = timedelta(days=1)
T0 = datetime(2026, 3, 14, 9, 0)  # the instant most records last moved

X = f"{INTENTIONS}/x"  # the record under test, when it is an intention
R = f"{REMINDERS}/r"  # the reminder under test


def md(fields: Mapping[str, str | datetime], body: str = "Body text.\n") -> str:
    """A record file with the given header fields (datetimes written as stamps)."""
    lines = "".join(
        f"{k}: {stamp(v) if isinstance(v, datetime) else v}\n" for k, v in fields.items()
    )
    return f"---\n{lines}---\n{body}"


def state(root: Path, path: str, now: datetime) -> Decision:
    tree = walk(root)
    return evaluate(tree, tree.records[path], now)


def reason(root: Path, path: str, now: datetime) -> str | None:
    return state(root, path, now).reason


def deliver(root: Path, path: str, now: datetime) -> Decision:
    """Play the sweeper: evaluate, stamp what delivery writes, keep the body."""
    tree = walk(root)
    record = tree.records[path]
    decision = evaluate(tree, record, now)
    assert decision.is_due, f"{path} is not due at {now}"
    file = root / record.rel
    before = file.read_bytes()
    updates = stamps_after_delivery(decision, now)
    assert all(key in MACHINE_FIELDS or key in ("status", "due") for key in updates)
    file.write_bytes(set_fields(before, updates))
    set_mtime(file, now)  # the sweeper writes at (about) its tick's now
    assert split(file.read_bytes())[1] == split(before)[1]  # never a body byte
    return decision


def header_of(root: Path, path: str) -> dict[str, str]:
    return dict(walk(root).records[path].header.fields)


def boundary(root: Path, path: str, at: datetime, why: str) -> None:
    """Not due a minute before ``at``; due for ``why`` at ``at`` exactly."""
    before = state(root, path, at - M)
    assert before.reason is None, f"due early at {at - M}: {before.reason}"
    assert before.due_at == at
    now = state(root, path, at)
    assert now.reason == why
    assert now.due_at == at


# -- moved_at: last-moved, else opened, else mtime ------------------------------------


def test_moved_at_is_last_moved_first(make_tree: MakeTree) -> None:
    root = make_tree({f"{X}/intention.md": md({"opened": T0 - D, "last-moved": T0})})
    decision = state(root, X, NOW)
    assert (decision.moved_at, decision.moved_from) == (T0, "last-moved")
    boundary(root, X, T0 + 2 * H, "stale")


def test_moved_at_falls_back_to_opened(make_tree: MakeTree) -> None:
    root = make_tree({f"{X}/intention.md": md({"status": "open", "opened": T0})})
    decision = state(root, X, NOW)
    assert (decision.moved_at, decision.moved_from) == (T0, "opened")
    boundary(root, X, T0 + 2 * H, "stale")


def test_moved_at_falls_back_to_mtime(make_tree: MakeTree) -> None:
    root = make_tree({f"{X}/intention.md": md({"status": "open"})}, mtime=T0)
    decision = state(root, X, NOW)
    assert (decision.moved_at, decision.moved_from) == (T0, "mtime")
    boundary(root, X, T0 + 2 * H, "stale")


def test_an_empty_last_moved_is_absent_not_bad(make_tree: MakeTree) -> None:
    root = make_tree({f"{X}/intention.md": md({"last-moved": "", "opened": T0})})
    decision = state(root, X, NOW)
    assert decision.moved_from == "opened"
    assert decision.problems == []


def test_mtime_does_not_matter_when_a_stamp_exists(make_tree: MakeTree) -> None:
    root = make_tree({f"{X}/intention.md": md({"last-moved": T0})}, mtime=NOW)
    assert state(root, X, NOW).moved_at == T0


def test_unparseable_last_moved_is_reported_and_falls_back_to_opened(make_tree: MakeTree) -> None:
    root = make_tree({f"{X}/intention.md": md({"last-moved": "yesterday-ish", "opened": T0})})
    decision = state(root, X, NOW)
    assert decision.moved_from == "opened"
    assert [(p.key, p.value, p.path, p.line) for p in decision.problems] == [
        ("last-moved", "yesterday-ish", f"{X}/intention.md", 2)
    ]
    boundary(root, X, T0 + 2 * H, "stale")


def test_unparseable_opened_and_last_moved_fall_back_to_mtime(make_tree: MakeTree) -> None:
    root = make_tree(
        {f"{X}/intention.md": md({"last-moved": "2026-14-01", "opened": "soon"})}, mtime=T0
    )
    decision = state(root, X, NOW)
    assert decision.moved_from == "mtime"
    assert sorted(p.key for p in decision.problems) == ["last-moved", "opened"]
    assert all(p.render().startswith(f"{X}/intention.md:") for p in decision.problems)
    boundary(root, X, T0 + 2 * H, "stale")  # a bad clock field never silences a record


# -- each level's default stale-after ----------------------------------------------------


@pytest.mark.parametrize(
    ("level", "status", "default"),
    [
        ("intention", "open", 2 * H),
        ("goal", "open", 1 * H),
        ("action", "open", 1 * D),
        ("task", "pending", 1 * D),
        ("task", "running", 1 * D),
    ],
)
def test_default_stale_after(
    make_tree: MakeTree, level: str, status: str, default: timedelta
) -> None:
    root = make_tree({f"{X}/{level}.md": md({"status": status, "last-moved": T0})})
    boundary(root, X, T0 + default, "stale")
    assert state(root, X, T0).stale_after == default


@pytest.mark.parametrize(
    ("level", "default"),
    [("intention", 2 * H), ("goal", H), ("action", D), ("task", D)],
)
def test_missing_status_is_the_first_state(
    make_tree: MakeTree, level: str, default: timedelta
) -> None:
    root = make_tree({f"{X}/{level}.md": md({"last-moved": T0})})
    boundary(root, X, T0 + default, "stale")


@pytest.mark.parametrize(
    ("level", "status"),
    [
        ("intention", "done"),
        ("intention", "dropped"),
        ("goal", "done"),
        ("goal", "abandoned"),
        ("action", "done"),
        ("action", "dropped"),
        ("task", "done"),
        ("task", "failed"),
        ("task", "cancelled"),
    ],
)
def test_closed_records_are_never_due(make_tree: MakeTree, level: str, status: str) -> None:
    root = make_tree({f"{X}/{level}.md": md({"status": status, "last-moved": OLD})})
    decision = state(root, X, NOW)
    assert decision.reason is None
    assert decision.due_at is None


def test_backlog_is_never_swept(make_tree: MakeTree) -> None:
    root = make_tree(
        {f"{BACKLOG}/b/backlog.md": md({"status": "open", "last-moved": OLD, "review-every": "1d"})}
    )
    decision = state(root, f"{BACKLOG}/b", NOW)
    assert decision.reason is None and decision.due_at is None


@pytest.mark.parametrize(("written", "used"), [("3h", 3 * H), ("1h30m", 90 * M), ("2w", 14 * D)])
def test_stale_after_is_read(make_tree: MakeTree, written: str, used: timedelta) -> None:
    root = make_tree({f"{X}/intention.md": md({"last-moved": T0, "stale-after": written})})
    boundary(root, X, T0 + used, "stale")


@pytest.mark.parametrize("written", ["5m", "14m", "0m", "1m"])
def test_stale_after_is_floored_at_15m(make_tree: MakeTree, written: str) -> None:
    root = make_tree({f"{X}/intention.md": md({"last-moved": T0, "stale-after": written})})
    boundary(root, X, T0 + 15 * M, "stale")
    decision = state(root, X, T0)
    assert decision.stale_after == 15 * M
    assert decision.problems == []  # a floor is a check warning, not an unreadable field


def test_unparseable_stale_after_is_reported_and_uses_the_default(make_tree: MakeTree) -> None:
    root = make_tree({f"{X}/goal.md": md({"last-moved": T0, "stale-after": "a while"})})
    decision = state(root, X, T0)
    assert [(p.key, p.value) for p in decision.problems] == [("stale-after", "a while")]
    boundary(root, X, T0 + H, "stale")


def test_extreme_values_are_reported_and_never_crash_the_clock(make_tree: MakeTree) -> None:
    root = make_tree(
        {
            f"{INTENTIONS}/a/intention.md": md({"last-moved": "9999-12-31 23:59"}),
            f"{INTENTIONS}/b/intention.md": md({"last-moved": T0, "stale-after": "99999999w"}),
            f"{INTENTIONS}/c/goal.md": md({"opened": T0, "review-every": "9999999999999w"}),
            f"{INTENTIONS}/d/goal.md": md({"opened": "9999-12-31", "review-every": "1w"}),
        }
    )
    tree = walk(root)
    found = {d.record.dir: d for d in clock.decisions(tree, NOW)}
    # out of bounds (docs/clock.md "Bounds"): reported, and the field is treated as absent,
    # so a far-future stamp never silences a record
    problems = {name: found[f"{INTENTIONS}/{name}"].problems for name in "abcd"}
    assert {name: [(p.key, p.value) for p in listed] for name, listed in problems.items()} == {
        "a": [("last-moved", "9999-12-31 23:59")],
        "b": [("stale-after", "99999999w")],
        "c": [("review-every", "9999999999999w")],
        "d": [("opened", "9999-12-31")],
    }
    a, b, c = (found[f"{INTENTIONS}/{name}"] for name in "abc")
    assert a.moved_from == "mtime" and a.reason == "stale"
    assert b.stale_after == 2 * H and b.reason == "stale"
    assert c.review_at is None and c.reason == "stale"
    assert "1900 to 9000" in problems["a"][0].message
    assert "520w" in problems["b"][0].message


# -- swept pushes the base -----------------------------------------------------------


def test_swept_pushes_the_base(make_tree: MakeTree) -> None:
    root = make_tree({f"{X}/intention.md": md({"last-moved": T0, "swept": T0 + 5 * H})})
    boundary(root, X, T0 + 7 * H, "stale")


def test_an_older_swept_does_not_pull_the_base_back(make_tree: MakeTree) -> None:
    root = make_tree({f"{X}/intention.md": md({"last-moved": T0, "swept": T0 - D})})
    boundary(root, X, T0 + 2 * H, "stale")


def test_a_newer_last_moved_beats_swept(make_tree: MakeTree) -> None:
    root = make_tree({f"{X}/intention.md": md({"last-moved": T0 + 3 * H, "swept": T0})})
    boundary(root, X, T0 + 5 * H, "stale")


def test_unparseable_swept_is_reported_and_ignored(make_tree: MakeTree) -> None:
    root = make_tree({f"{X}/intention.md": md({"last-moved": T0, "swept": "now-ish"})})
    assert [p.key for p in state(root, X, T0).problems] == ["swept"]
    boundary(root, X, T0 + 2 * H, "stale")


# -- an open record under it silences ------------------------------------------------------

OPEN_CHILDREN = {
    "task-pending": ("task.md", {"status": "pending"}),
    "task-running": ("task.md", {"status": "running"}),
    "task-no-status": ("task.md", {}),
    "goal-open": ("goal.md", {"status": "open"}),
    "action-open": ("action.md", {"status": "open"}),
    "action-empty-outcome": ("action.md", {"status": "open", "outcome": ""}),
    "intention-open": ("intention.md", {"status": "open"}),
    "reminder-pending": ("reminder.md", {"status": "pending", "due": "2099-01-01"}),
    "nag-stuck-at-fired": ("reminder.md", {"status": "fired", "nag": "1h", "due": "2099-01-01"}),
    "unknown-status": ("task.md", {"status": "paused"}),
    "unknown-reminder-status": ("reminder.md", {"status": "snoozed", "due": "2099-01-01"}),
}

CLOSED_CHILDREN = {
    "task-done": ("task.md", {"status": "done"}),
    "task-failed": ("task.md", {"status": "failed"}),
    "task-cancelled": ("task.md", {"status": "cancelled"}),
    "goal-done": ("goal.md", {"status": "done"}),
    "goal-abandoned": ("goal.md", {"status": "abandoned"}),
    "action-judged": ("action.md", {"status": "open", "outcome": "as-expected"}),
    "action-surprising": ("action.md", {"status": "open", "outcome": "surprising"}),
    "one-shot-fired": ("reminder.md", {"status": "fired", "fired": "2026-03-13 09:00"}),
    "reminder-done": ("reminder.md", {"status": "done", "nag": "1h"}),
    "reminder-expired": ("reminder.md", {"status": "expired", "nag": "1h"}),
    "backlog-open": ("backlog.md", {"status": "open"}),
    "backlog-no-status": ("backlog.md", {}),
    "untrackable-task": ("task.md", "---\nstatus: running\nno closing fence\n"),
    "non-utf8-task": ("task.md", b"---\nstatus: running \xe9\n---\n"),
}


def _parent_with(make_tree: MakeTree, child: str, file: str, header: object, depth: int) -> Path:
    between = "/".join(f"level{i}" for i in range(depth - 1))
    where = f"{X}/{between}/{child}" if between else f"{X}/{child}"
    content: str | bytes
    if isinstance(header, dict):
        content = md({"last-moved": T0 - 3 * D, **header})
    else:
        assert isinstance(header, str | bytes)
        content = header
    files: dict[str, str | bytes] = {
        f"{X}/intention.md": md({"last-moved": T0}),
        f"{where}/{file}": content,
    }
    # levels in between are closed records: only the open one at the bottom may silence
    for i in range(depth - 1):
        files[f"{X}/{'/'.join(f'level{j}' for j in range(i + 1))}/goal.md"] = md(
            {"status": "done", "last-moved": T0 - 3 * D}
        )
    return make_tree(files)


@pytest.mark.parametrize("depth", [1, 3])
@pytest.mark.parametrize("child", sorted(OPEN_CHILDREN))
def test_an_open_record_under_it_at_any_depth_silences(
    make_tree: MakeTree, child: str, depth: int
) -> None:
    file, header = OPEN_CHILDREN[child]
    root = _parent_with(make_tree, child, file, header, depth)
    decision = state(root, X, NOW)
    assert decision.reason is None
    assert decision.due_at is None  # nothing will wake it while the child is open
    assert len(decision.silenced_by) == 1
    assert decision.silenced_by[0].endswith(f"/{child}")
    assert decision.stale_at == T0 + 2 * H  # the arithmetic is still shown


@pytest.mark.parametrize("depth", [1, 3])
@pytest.mark.parametrize("child", sorted(CLOSED_CHILDREN))
def test_a_closed_or_untrackable_record_under_it_never_silences(
    make_tree: MakeTree, child: str, depth: int
) -> None:
    file, header = CLOSED_CHILDREN[child]
    root = _parent_with(make_tree, child, file, header, depth)
    assert state(root, X, NOW).silenced_by == []
    boundary(root, X, T0 + 2 * H, "stale")


def test_the_open_child_gets_swept_instead(make_tree: MakeTree) -> None:
    root = make_tree(
        {
            f"{X}/intention.md": md({"last-moved": OLD}),
            f"{X}/t/task.md": md({"status": "pending", "last-moved": T0}),
        }
    )
    boundary(root, f"{X}/t", T0 + D, "stale")
    assert reason(root, X, T0 + D) is None
    assert [d.record.dir for d in clock.due(walk(root), T0 + D)] == [f"{X}/t"]


def test_when_the_task_finishes_the_parent_is_due_on_its_normal_arithmetic(
    make_tree: MakeTree,
) -> None:
    root = make_tree(
        {
            f"{X}/intention.md": md({"last-moved": T0}),
            f"{X}/t/task.md": md({"status": "running", "last-moved": T0 + 30 * M}),
        }
    )
    assert reason(root, X, NOW) is None
    make_tree({f"{X}/t/task.md": md({"status": "done", "last-moved": T0 + 40 * M})})
    assert reason(root, X, NOW) == "stale"
    assert state(root, X, NOW).due_at == T0 + 2 * H  # an intention has no own clock


# -- goal: its own clock --------------------------------------------------------------


def test_goal_own_clock_is_the_newest_end_among_closed_records_under_it(
    make_tree: MakeTree,
) -> None:
    g = f"{INTENTIONS}/g"
    root = make_tree(
        {
            f"{g}/goal.md": md({"last-moved": T0}),
            f"{g}/a1/action.md": md({"outcome": "as-expected", "last-moved": T0 + 1 * H}),
            f"{g}/a2/action.md": md({"status": "done", "last-moved": T0 + 2 * H}),
            f"{g}/a2/t/task.md": md({"status": "done", "last-moved": T0 + 3 * H}),  # deeper
            f"{g}/a3/task.md": md({"status": "failed", "opened": T0 - D}),
        }
    )
    decision = state(root, g, NOW)
    assert decision.own_clock == T0 + 3 * H
    boundary(root, g, T0 + 4 * H, "stale")


def test_goal_own_clock_end_falls_back_to_opened_then_mtime(make_tree: MakeTree) -> None:
    g = f"{INTENTIONS}/g"
    root = make_tree(
        {
            f"{g}/goal.md": md({"last-moved": T0}),
            f"{g}/a/action.md": md({"status": "done", "opened": T0 + 2 * H}),
        }
    )
    boundary(root, g, T0 + 3 * H, "stale")
    make_tree({f"{g}/b/task.md": md({"status": "done"})}, mtime=T0 + 5 * H)
    assert state(root, g, NOW).own_clock == T0 + 5 * H
    boundary(root, g, T0 + 6 * H, "stale")


def test_goal_own_clock_older_than_moved_at_changes_nothing(make_tree: MakeTree) -> None:
    g = f"{INTENTIONS}/g"
    root = make_tree(
        {
            f"{g}/goal.md": md({"last-moved": T0}),
            f"{g}/a/action.md": md({"status": "done", "last-moved": T0 - D}),
        }
    )
    boundary(root, g, T0 + H, "stale")


def test_goal_own_clock_ignores_records_that_are_still_open(make_tree: MakeTree) -> None:
    """An open backlog item never silences, and it has not ended either: no own clock."""
    g = f"{INTENTIONS}/g"
    root = make_tree(
        {
            f"{g}/goal.md": md({"last-moved": T0}),
            f"{g}/idea/backlog.md": md({"status": "open", "last-moved": T0 + 5 * H}),
        }
    )
    assert state(root, g, NOW).own_clock is None
    boundary(root, g, T0 + H, "stale")


def test_only_goals_have_an_own_clock(make_tree: MakeTree) -> None:
    root = make_tree(
        {
            f"{X}/intention.md": md({"last-moved": T0}),
            f"{X}/t/task.md": md({"status": "done", "last-moved": T0 + 5 * H}),
        }
    )
    decision = state(root, X, NOW)
    assert decision.own_clock is None
    boundary(root, X, T0 + 2 * H, "stale")


# -- review ----------------------------------------------------------------------


def test_review_fires_even_with_open_children(make_tree: MakeTree) -> None:
    g = f"{INTENTIONS}/g"
    root = make_tree(
        {
            f"{g}/goal.md": md({"opened": T0, "last-moved": T0, "review-every": "1d"}),
            f"{g}/t/task.md": md({"status": "running", "last-moved": T0 + 2 * D}),
        }
    )
    boundary(root, g, T0 + D, "review")
    assert state(root, g, T0 + D).silenced_by == [f"{g}/t"]


def test_review_beats_stale(make_tree: MakeTree) -> None:
    root = make_tree({f"{X}/goal.md": md({"opened": T0, "review-every": "3h"})})
    decision = state(root, X, T0 + 3 * H)
    assert decision.stale_at == T0 + H  # stale too, since an hour earlier
    assert decision.reason == "review"
    assert decision.due_at == T0 + 3 * H
    assert state(root, X, T0 + 2 * H).reason == "stale"


def test_review_base_is_reviewed_else_opened_else_mtime(make_tree: MakeTree) -> None:
    a, b, c = (f"{INTENTIONS}/{n}" for n in "abc")
    root = make_tree(
        {
            f"{a}/goal.md": md({"reviewed": T0, "opened": T0 - D, "review-every": "2d"}),
            f"{b}/goal.md": md({"opened": T0, "last-moved": T0 + D, "review-every": "2d"}),
        }
    )
    make_tree({f"{c}/goal.md": md({"last-moved": T0 + D, "review-every": "2d"})}, mtime=T0)
    for path in (a, b, c):
        assert state(root, path, T0 + 2 * D - M).review_at == T0 + 2 * D
        assert reason(root, path, T0 + 2 * D) == "review"


@pytest.mark.parametrize("written", ["1m", "10m", "0m"])
def test_review_every_is_floored_at_15m(make_tree: MakeTree, written: str) -> None:
    root = make_tree(
        {
            f"{X}/goal.md": md({"opened": T0, "review-every": written}),
            f"{X}/t/task.md": md({"status": "running"}),
        }
    )
    boundary(root, X, T0 + 15 * M, "review")


def test_no_review_without_review_every(make_tree: MakeTree) -> None:
    root = make_tree(
        {
            f"{X}/goal.md": md({"opened": OLD, "reviewed": OLD}),
            f"{X}/t/task.md": md({"status": "running"}),
        }
    )
    decision = state(root, X, NOW)
    assert decision.review_at is None and decision.reason is None


def test_review_works_on_an_intention_too(make_tree: MakeTree) -> None:
    root = make_tree(
        {
            f"{X}/intention.md": md({"opened": T0, "review-every": "1w"}),
            f"{X}/t/task.md": md({"status": "pending"}),
        }
    )
    boundary(root, X, T0 + 7 * D, "review")


def test_a_delivered_review_is_not_due_again_until_the_next_period(make_tree: MakeTree) -> None:
    g = f"{INTENTIONS}/g"
    root = make_tree(
        {
            f"{g}/goal.md": md({"opened": T0, "review-every": "1d"}),
            f"{g}/t/task.md": md({"status": "running", "last-moved": T0 + 5 * D}),
        }
    )
    first = T0 + D + 7 * M  # the sweeper ticks a little late
    decision = deliver(root, g, first)
    assert decision.reason == "review"
    assert stamps_after_delivery(decision, first) == {
        "swept": stamp(first),
        "nudges": "1",
        "reviewed": stamp(first),
    }
    assert header_of(root, g)["reviewed"] == stamp(first)
    boundary(root, g, first + D, "review")  # once per period, not every tick
    second = deliver(root, g, first + D)
    assert second.nudge == 2
    assert header_of(root, g)["nudges"] == "2"


# -- actions ------------------------------------------------------------------------


@pytest.mark.parametrize("outcome", ["as-expected", "surprising", "contradicts"])
def test_an_action_with_an_outcome_is_judged_and_not_swept(
    make_tree: MakeTree, outcome: str
) -> None:
    root = make_tree(
        {f"{X}/action.md": md({"status": "open", "outcome": outcome, "last-moved": OLD})}
    )
    decision = state(root, X, NOW)
    assert decision.reason is None and decision.due_at is None


def test_an_action_with_an_empty_outcome_is_swept(make_tree: MakeTree) -> None:
    root = make_tree({f"{X}/action.md": md({"outcome": "", "last-moved": T0})})
    boundary(root, X, T0 + D, "stale")


# -- unknown status counts as open ---------------------------------------------------------


@pytest.mark.parametrize("level", ["intention", "goal", "action", "task"])
def test_an_unknown_status_counts_as_open(make_tree: MakeTree, level: str) -> None:
    root = make_tree({f"{X}/{level}.md": md({"status": "paused", "opened": OLD})})
    decision = state(root, X, NOW)
    assert decision.reason == "stale"
    assert any("paused" in note for note in decision.notes)


def test_an_unknown_reminder_status_counts_as_open(make_tree: MakeTree) -> None:
    root = make_tree({f"{R}/reminder.md": md({"status": "snoozed", "due": T0})})
    boundary(root, R, T0, "due")


# -- stamps after delivery for the stale levels -----------------------------------------


def test_stale_delivery_stamps_swept_and_nudges(make_tree: MakeTree) -> None:
    root = make_tree({f"{X}/intention.md": md({"last-moved": T0})})
    at = T0 + 2 * H
    decision = deliver(root, X, at)
    assert decision.nudge == 1
    assert stamps_after_delivery(decision, at) == {"swept": stamp(at), "nudges": "1"}
    fields = header_of(root, X)
    assert (fields["swept"], fields["nudges"], fields["last-moved"]) == (stamp(at), "1", stamp(T0))
    assert "reviewed" not in fields
    boundary(root, X, at + 2 * H, "stale")  # swept pushed the base
    again = deliver(root, X, at + 2 * H)
    assert again.nudge == 2
    assert header_of(root, X)["nudges"] == "2"
    assert state(root, X, at + 4 * H).nudge == 3


def test_nudges_continue_from_the_written_count(make_tree: MakeTree) -> None:
    root = make_tree({f"{X}/task.md": md({"last-moved": T0, "nudges": "4"})})
    decision = deliver(root, X, T0 + D)
    assert decision.nudge == 5
    assert header_of(root, X)["nudges"] == "5"


def test_bad_nudges_is_reported_and_counts_from_zero(make_tree: MakeTree) -> None:
    root = make_tree({f"{X}/intention.md": md({"last-moved": T0, "nudges": "many"})})
    decision = state(root, X, T0 + 2 * H)
    assert decision.nudge == 1
    assert [p.key for p in decision.problems] == ["nudges"]


def test_the_agent_moving_it_resets_the_clock(make_tree: MakeTree) -> None:
    root = make_tree({f"{X}/intention.md": md({"last-moved": T0})})
    deliver(root, X, T0 + 2 * H)
    path = root / f"{X}/intention.md"
    path.write_bytes(set_fields(path.read_bytes(), {"last-moved": stamp(T0 + 6 * H)}))
    boundary(root, X, T0 + 8 * H, "stale")


# -- one-shot reminders -----------------------------------------------------------------


def test_one_shot_fires_at_due(make_tree: MakeTree) -> None:
    root = make_tree({f"{R}/reminder.md": md({"status": "pending", "due": T0})})
    boundary(root, R, T0, "due")


def test_a_reminder_due_is_its_own_clock_not_the_stale_rule(make_tree: MakeTree) -> None:
    root = make_tree({f"{R}/reminder.md": md({"due": T0 + 30 * D, "last-moved": OLD})})
    assert reason(root, R, NOW) is None
    assert state(root, R, NOW).due_at == T0 + 30 * D


def test_date_only_due_means_midnight(make_tree: MakeTree) -> None:
    root = make_tree({f"{R}/reminder.md": md({"due": "2026-03-14"})})
    boundary(root, R, datetime(2026, 3, 14, 0, 0), "due")


def test_one_shot_after_delivery_is_fired_and_closed(make_tree: MakeTree) -> None:
    root = make_tree(
        {
            f"{X}/intention.md": md({"last-moved": T0 - D}),
            f"{X}/r/reminder.md": md({"status": "pending", "due": T0}),
        }
    )
    r = f"{X}/r"
    assert reason(root, X, NOW) is None  # the pending reminder is an open child
    at = T0 + 3 * M
    decision = deliver(root, r, at)
    assert stamps_after_delivery(decision, at) == {"status": "fired", "fired": stamp(at)}
    fields = header_of(root, r)
    assert (fields["status"], fields["fired"], fields["due"]) == ("fired", stamp(at), stamp(T0))
    assert "fires" not in fields
    assert reason(root, r, NOW + 30 * D) is None  # firing once is all a one-shot does
    assert reason(root, X, NOW) == "stale"  # and fired, it no longer silences


def test_the_agent_re_arms_a_one_shot(make_tree: MakeTree) -> None:
    root = make_tree({f"{R}/reminder.md": md({"due": T0})})
    deliver(root, R, T0)
    path = root / f"{R}/reminder.md"
    path.write_bytes(set_fields(path.read_bytes(), {"due": stamp(T0 + D), "status": "pending"}))
    boundary(root, R, T0 + D, "due")


@pytest.mark.parametrize("status", ["fired", "done", "dropped", "expired"])
def test_closed_one_shot_reminders_never_fire(make_tree: MakeTree, status: str) -> None:
    root = make_tree({f"{R}/reminder.md": md({"status": status, "due": T0})})
    assert reason(root, R, NOW + 30 * D) is None


def test_unparseable_due_is_reported_and_falls_back_to_moved_at(make_tree: MakeTree) -> None:
    root = make_tree({f"{R}/reminder.md": md({"due": "next tuesday", "opened": T0})})
    decision = state(root, R, NOW)
    assert [(p.key, p.value, p.line) for p in decision.problems] == [("due", "next tuesday", 2)]
    boundary(root, R, T0, "due")  # never silenced by a field it cannot read


# -- nagging reminders --------------------------------------------------------------------


def nag_file(**extra: str | datetime) -> str:
    return md({"status": "pending", "due": T0, "nag": "10m", **extra})


def test_nag_whole_life_with_the_default_backoff_and_max_fires(make_tree: MakeTree) -> None:
    root = make_tree({f"{R}/reminder.md": nag_file()})
    steps = [15, 20, 40, 80, 160, 320, 640, 1280, 1440]  # minutes; 2560 is capped at 1d
    at = T0
    for wake, step in enumerate(steps, start=1):
        boundary(root, R, at, "nag")
        decision = deliver(root, R, at)
        assert decision.nudge == wake
        fields = header_of(root, R)
        assert fields["fires"] == str(wake)
        assert fields["status"] == "pending"
        assert fields["set"] == stamp(T0)  # the original due, kept from the first wake
        assert fields["due"] == stamp(at + step * M)
        at += step * M
    # the wake that reaches max-fires (10) is the last one
    boundary(root, R, at, "expire")
    last = deliver(root, R, at)
    assert last.nudge == 10
    assert stamps_after_delivery(last, at) == {
        "status": "expired",
        "fires": "10",
        "ended": "max-fires",
    }
    fields = header_of(root, R)
    assert (fields["status"], fields["fires"], fields["ended"]) == ("expired", "10", "max-fires")
    assert reason(root, R, at + 365 * D) is None


def test_the_first_nag_steps_match_the_spec_example(make_tree: MakeTree) -> None:
    """With ``nag: 10m`` the re-arms fall at +15m, +20m, +40m, +80m (SPEC §3.2)."""
    root = make_tree({f"{R}/reminder.md": nag_file()})
    at = T0 + 2 * M  # a late tick: the step counts from the delivery
    gaps = []
    for _ in range(4):
        deliver(root, R, at)
        new_due = state(root, R, at).due_at
        assert new_due is not None
        gaps.append(new_due - at)
        at = new_due
    assert gaps == [15 * M, 20 * M, 40 * M, 80 * M]


def test_first_nag_stamps(make_tree: MakeTree) -> None:
    root = make_tree({f"{R}/reminder.md": nag_file()})
    decision = state(root, R, T0)
    assert decision.reason == "nag" and decision.nudge == 1
    assert stamps_after_delivery(decision, T0) == {
        "fires": "1",
        "due": stamp(T0 + 15 * M),
        "status": "pending",
        "set": stamp(T0),
    }


def test_set_is_written_the_first_time_only(make_tree: MakeTree) -> None:
    root = make_tree({f"{R}/reminder.md": nag_file()})
    deliver(root, R, T0)
    second = state(root, R, T0 + 15 * M)
    assert "set" not in stamps_after_delivery(second, T0 + 15 * M)
    deliver(root, R, T0 + 15 * M)
    assert header_of(root, R)["set"] == stamp(T0)


def test_set_keeps_the_due_text_as_written(make_tree: MakeTree) -> None:
    root = make_tree({f"{R}/reminder.md": nag_file(due="2026-03-14")})
    deliver(root, R, T0)
    assert header_of(root, R)["set"] == "2026-03-14"


@pytest.mark.parametrize(
    ("nag", "backoff", "steps"),
    [
        ("30m", "fixed", [30, 30, 30, 30]),
        ("30m", "Fixed", [30, 30, 30, 30]),
        ("30m", "1", [30, 30, 30, 30]),
        ("15m", "3", [15, 45, 135, 405]),
        ("1h", "1.5", [60, 90, 135, 202.5]),
        ("20h", "2", [1200, 1440, 1440, 1440]),  # capped at 1d
        ("2d", "fixed", [1440, 1440]),  # a nag over a day is capped too
        ("1m", "fixed", [15, 15, 15]),  # floored at 15m
        ("5m", "2", [15, 15, 20, 40]),  # floor then growth: 5, 10 → 15; 20; 40
    ],
)
def test_nag_steps(make_tree: MakeTree, nag: str, backoff: str, steps: list[float]) -> None:
    root = make_tree(
        {f"{R}/reminder.md": md({"due": T0, "nag": nag, "backoff": backoff, "max-fires": "50"})}
    )
    at = T0
    for step in steps:
        decision = deliver(root, R, at)
        assert decision.reason == "nag"
        assert decision.problems == []
        new_due = state(root, R, at).due_at
        assert new_due is not None
        expected = at + timedelta(minutes=step)
        assert new_due == expected.replace(second=0, microsecond=0)  # stamps are minutes
        at = new_due


def test_max_fires_explicit(make_tree: MakeTree) -> None:
    root = make_tree({f"{R}/reminder.md": nag_file(**{"max-fires": "3"})})
    assert deliver(root, R, T0).reason == "nag"
    assert deliver(root, R, T0 + 15 * M).reason == "nag"
    last = deliver(root, R, T0 + 35 * M)
    assert last.reason == "expire" and last.nudge == 3
    assert header_of(root, R)["ended"] == "max-fires"


def test_max_fires_one_makes_the_first_wake_the_last(make_tree: MakeTree) -> None:
    root = make_tree({f"{R}/reminder.md": nag_file(**{"max-fires": "1"})})
    boundary(root, R, T0, "expire")


def test_expires_makes_the_first_wake_at_or_after_it_the_last(make_tree: MakeTree) -> None:
    root = make_tree({f"{R}/reminder.md": md({"due": T0, "nag": "1h", "expires": T0 + 90 * M})})
    assert deliver(root, R, T0).reason == "nag"  # re-armed to 10:00
    assert deliver(root, R, T0 + H).reason == "nag"  # re-armed to 12:00, past expires
    assert header_of(root, R)["due"] == stamp(T0 + 3 * H)
    # nothing wakes at the expires instant itself: the next wake is the last
    assert reason(root, R, T0 + 90 * M) is None
    boundary(root, R, T0 + 3 * H, "expire")
    last = deliver(root, R, T0 + 3 * H)
    assert stamps_after_delivery(last, T0 + 3 * H) == {
        "status": "expired",
        "fires": "3",
        "ended": "expires",
    }
    assert header_of(root, R)["status"] == "expired"
    assert reason(root, R, T0 + 30 * D) is None


def test_a_nag_past_expires_never_fires_an_ordinary_wake_first(make_tree: MakeTree) -> None:
    root = make_tree({f"{R}/reminder.md": md({"due": T0, "nag": "10m", "expires": T0 - D})})
    boundary(root, R, T0, "expire")
    decision = deliver(root, R, T0)
    assert decision.nudge == 1
    fields = header_of(root, R)
    assert (fields["status"], fields["fires"], fields["ended"]) == ("expired", "1", "expires")


@pytest.mark.parametrize(("offset", "why"), [(timedelta(0), "expire"), (M, "nag")])
def test_expires_boundary_is_at_or_after(make_tree: MakeTree, offset: timedelta, why: str) -> None:
    root = make_tree({f"{R}/reminder.md": md({"due": T0, "nag": "10m", "expires": T0 + offset})})
    assert reason(root, R, T0) == why


def test_expires_on_a_one_shot(make_tree: MakeTree) -> None:
    root = make_tree({f"{R}/reminder.md": md({"due": T0, "expires": T0 - H})})
    decision = state(root, R, T0)
    assert decision.reason == "expire"
    assert stamps_after_delivery(decision, T0)["ended"] == "expires"


def test_a_nag_stuck_at_fired_is_due_now(make_tree: MakeTree) -> None:
    root = make_tree(
        {
            f"{R}/reminder.md": md(
                {"status": "fired", "nag": "10m", "fires": "2", "set": T0, "due": NOW + 5 * D}
            )
        }
    )
    decision = state(root, R, NOW)
    assert decision.reason == "nag"
    assert decision.due_at == NOW
    assert decision.nudge == 3
    assert stamps_after_delivery(decision, NOW) == {
        "fires": "3",
        "due": stamp(NOW + 40 * M),
        "status": "pending",
    }
    deliver(root, R, NOW)
    assert header_of(root, R)["status"] == "pending"
    boundary(root, R, NOW + 40 * M, "nag")


def test_a_nag_stuck_at_fired_with_a_past_due_keeps_that_due(make_tree: MakeTree) -> None:
    root = make_tree({f"{R}/reminder.md": md({"status": "fired", "nag": "1h", "due": T0})})
    decision = state(root, R, NOW)
    assert decision.reason == "nag" and decision.due_at == T0


def test_a_one_shot_at_fired_is_not_stuck(make_tree: MakeTree) -> None:
    root = make_tree({f"{R}/reminder.md": md({"status": "fired", "due": T0})})
    assert reason(root, R, NOW) is None


@pytest.mark.parametrize("status", ["done", "dropped", "expired"])
def test_ended_nags_never_fire(make_tree: MakeTree, status: str) -> None:
    root = make_tree({f"{R}/reminder.md": nag_file(status=status)})
    assert reason(root, R, NOW + 30 * D) is None


# -- bad reminder values fall back and are reported ------------------------------------


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("fires", "x"),
        ("fires", "-1"),
        ("fires", "2.5"),
        ("fires", "²"),  # a digit to str.isdigit, not to int()
        ("max-fires", "lots"),
        ("max-fires", "³"),
        ("backoff", "fast"),
        ("backoff", "0.5"),
        ("backoff", "-2"),
        ("backoff", "nan"),
        ("backoff", "inf"),
        ("expires", "never"),
    ],
)  # (an unreadable nag is absent since 0.4: tests/test_clock_rules.py)
def test_bad_reminder_values_fall_back_and_are_reported(
    make_tree: MakeTree, key: str, value: str
) -> None:
    root = make_tree({f"{R}/reminder.md": nag_file(**{key: value})})
    decision = state(root, R, T0)
    assert [(p.key, p.value) for p in decision.problems] == [(key, value)]
    assert decision.problems[0].line == (4 if key == "nag" else 5)  # after status, due, nag
    assert decision.reason == "nag"  # never wedged
    assert decision.nudge == 1
    assert [(p.key, p.value) for p in clock.field_problems(clock.decisions(walk(root), T0))] == [
        (key, value)
    ]
    deliver(root, R, T0)
    fields = header_of(root, R)
    assert fields["status"] == "pending"
    assert fields["fires"] == "1"
    assert fields["due"] == stamp(T0 + 15 * M)  # step = nag (or the 15m floor) the first time


def test_bad_backoff_falls_back_to_2(make_tree: MakeTree) -> None:
    root = make_tree({f"{R}/reminder.md": nag_file(nag="30m", backoff="steep", fires="2")})
    deliver(root, R, T0)
    assert header_of(root, R)["due"] == stamp(T0 + 120 * M)  # 30m x 2^(3-1)


def test_bad_max_fires_falls_back_to_10(make_tree: MakeTree) -> None:
    root = make_tree({f"{R}/reminder.md": nag_file(**{"max-fires": "x", "fires": "8"})})
    assert reason(root, R, T0) == "nag"
    root2 = make_tree({f"{R}/reminder.md": nag_file(**{"max-fires": "x", "fires": "9"})}, name="m2")
    assert reason(root2, R, T0) == "expire"


def test_a_huge_fires_count_never_crashes_the_step(make_tree: MakeTree) -> None:
    root = make_tree(
        {f"{R}/reminder.md": nag_file(fires="5000", **{"max-fires": "100000", "backoff": "999"})}
    )
    deliver(root, R, T0)
    assert header_of(root, R)["due"] == stamp(T0 + D)


def test_each_bad_field_is_reported_once(make_tree: MakeTree) -> None:
    root = make_tree(
        {
            f"{R}/reminder.md": nag_file(**{"max-fires": "x", "backoff": "y", "fires": "z"}),
            f"{X}/goal.md": md({"opened": "bad", "review-every": "1d", "stale-after": "q"}),
        }
    )
    problems = clock.field_problems(clock.decisions(walk(root), T0))
    keys = sorted((p.path, p.key) for p in problems)
    assert keys == sorted(set(keys))
    assert sorted(k for _, k in keys) == ["backoff", "fires", "max-fires", "opened", "stale-after"]


# -- due() and decisions() ----------------------------------------------------------------


def test_due_lists_only_due_records_earliest_first(make_tree: MakeTree) -> None:
    root = make_tree(
        {
            f"{INTENTIONS}/late/intention.md": md({"last-moved": T0}),
            f"{INTENTIONS}/early/intention.md": md({"last-moved": T0 - H}),
            f"{INTENTIONS}/quiet/intention.md": md({"last-moved": NOW}),
            f"{REMINDERS}/r/reminder.md": md({"due": T0 - D}),
            f"{BACKLOG}/b/backlog.md": md({"opened": OLD}),
        }
    )
    tree = walk(root)
    found = clock.due(tree, NOW)
    assert [(d.record.dir, d.reason) for d in found] == [
        (f"{REMINDERS}/r", "due"),
        (f"{INTENTIONS}/early", "stale"),
        (f"{INTENTIONS}/late", "stale"),
    ]
    assert len(clock.decisions(tree, NOW)) == 5


def test_every_clock_function_takes_now(make_tree: MakeTree) -> None:
    """Nothing reads the wall clock: the same tree at two instants gives two answers."""
    root = make_tree({f"{X}/intention.md": md({"last-moved": T0})})
    tree: Tree = walk(root)
    assert clock.due(tree, T0) == []
    assert len(clock.due(tree, datetime(2099, 1, 1))) == 1


def test_reason_codes_are_the_spec_list() -> None:
    assert set(clock.REASONS) == {"stale", "review", "due", "nag", "expire"}


# -- property: an open record under it means never stale ------------------------------

TYPES = ["intention", "goal", "action", "task", "reminder", "backlog"]
STATUSES = {
    "intention": ["open", "done", "dropped", "", "weird"],
    "goal": ["open", "done", "abandoned", "", "weird"],
    "action": ["open", "done", "dropped", ""],
    "task": ["pending", "running", "done", "failed", "cancelled", ""],
    "reminder": ["pending", "fired", "done", "dropped", "expired", ""],
    "backlog": ["open", "promoted", "dropped", ""],
}


def spec_open(kind: str, status: str, outcome: str, nag: bool) -> bool:
    """SPEC §3.2, restated independently: does this record keep its ancestors quiet?"""
    if kind == "backlog":
        return False
    states = {
        "intention": ({"open", ""}, {"done", "dropped"}),
        "goal": ({"open", ""}, {"done", "abandoned"}),
        "action": ({"open", ""}, {"done", "dropped"}),
        "task": ({"pending", "running", ""}, {"done", "failed", "cancelled"}),
        "reminder": ({"pending", ""}, {"fired", "done", "dropped", "expired"}),
    }[kind]
    if kind == "action" and outcome:
        return False
    if kind == "reminder" and status == "fired":
        return nag
    return status in states[0] or status not in states[1]


record_spec = st.tuples(
    st.sampled_from(TYPES),
    st.integers(0, 5),  # index into the level's statuses
    st.sampled_from(["", "as-expected"]),
    st.booleans(),  # nag
    st.integers(-72, 72),  # last-moved, hours from NOW
)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(record_spec, st.integers(0, 10)), min_size=1, max_size=8))
def test_a_record_with_an_open_record_under_it_is_never_stale_due(
    specs: list[tuple[tuple[str, int, str, bool, int], int]],
) -> None:
    files: dict[str, str | bytes] = {}
    dirs: list[str] = [INTENTIONS]
    meta: dict[str, bool] = {}
    for index, ((kind, s, outcome, nag, hours), parent_pick) in enumerate(specs):
        status = STATUSES[kind][s % len(STATUSES[kind])]
        where = f"{dirs[parent_pick % len(dirs)]}/r{index}"
        fields: dict[str, str | datetime] = {"last-moved": NOW + hours * H, "due": NOW + hours * H}
        if status:
            fields["status"] = status
        if outcome:
            fields["outcome"] = outcome
        if nag:
            fields["nag"] = "1h"
        files[f"{where}/{kind}.md"] = md(fields)
        dirs.append(where)
        meta[where] = spec_open(kind, status, outcome if kind == "action" else "", nag)
    with tempfile.TemporaryDirectory() as tmp:
        tree = walk(write_tree(Path(tmp) / "memory", files))
        for decision in clock.decisions(tree, NOW):
            record = decision.record
            if record.type not in ("intention", "goal", "action", "task"):
                assert decision.reason != "stale"
                continue
            if not meta[record.dir]:
                assert decision.reason is None  # a closed record is never swept
                continue
            silenced = any(meta[d] for d in meta if d.startswith(record.dir + "/"))
            assert bool(decision.silenced_by) == silenced
            if silenced:
                assert decision.reason is None  # (no review-every here)
            else:
                assert decision.stale_at is not None
                assert (decision.reason == "stale") == (decision.stale_at <= NOW)


@pytest.mark.parametrize("outcome", ["weird", "as expected", "done"])
def test_an_unknown_outcome_never_silences_an_action(make_tree: MakeTree, outcome: str) -> None:
    # like an unknown status, a misspelt outcome errs loud: check reports it, the clock sweeps it
    root = make_tree(
        {f"{X}/action.md": md({"status": "open", "outcome": outcome, "last-moved": OLD})}
    )
    assert state(root, X, NOW).reason == "stale"
