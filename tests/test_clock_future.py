"""A stamp later than now cannot keep a record quiet (issue 29, item 5, second half).

``last-moved``, ``reviewed`` and ``opened`` say when something happened; one
later than now (beyond a minute) is read as unreadable: the clock falls back
as for any unreadable field (to ``opened``, else the file's time), and
``check`` warns.
"""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest

from conftest import INTENTIONS, NOW, MakeTree, stamp
from rouse.core import clock
from rouse.core.tree import walk
from rouse.lint.check import check

SHIP = f"{INTENTIONS}/ship"
FUTURE = "2099-12-31 23:59"
OPENED = stamp(NOW - timedelta(hours=5))


def evaluate(root: Path, rel: str = SHIP) -> clock.Decision:
    tree = walk(root)
    return clock.evaluate(tree, tree.records[rel], NOW)


def test_a_last_moved_in_the_future_falls_back_to_opened(make_tree: MakeTree) -> None:
    root = make_tree(
        {
            f"{SHIP}/intention.md": f"---\ncloses-when: x\nopened: {OPENED}\nlast-moved: {FUTURE}\n---\n"
        }
    )
    decision = evaluate(root)
    assert (decision.moved_from, decision.moved_at) == ("opened", NOW - timedelta(hours=5))
    assert decision.reason == "stale"
    assert [p.key for p in decision.problems] == ["last-moved"]
    assert "later than now" in decision.problems[0].message
    said = [f for f in check(walk(root), NOW) if f.path == f"{SHIP}/intention.md"]
    warned = [f for f in said if "'last-moved'" in f.message]
    assert [f.level for f in warned] == ["warn"], said


def test_an_opened_in_the_future_falls_back_to_the_files_time(make_tree: MakeTree) -> None:
    root = make_tree({f"{SHIP}/intention.md": f"---\ncloses-when: x\nopened: {FUTURE}\n---\n"})
    decision = evaluate(root)
    assert decision.moved_from == "mtime"
    assert decision.reason == "stale"


def test_a_reviewed_in_the_future_does_not_put_a_review_off(make_tree: MakeTree) -> None:
    root = make_tree(
        {
            f"{SHIP}/intention.md": f"---\ncloses-when: x\nopened: {OPENED}\nlast-moved: "
            f"{stamp(NOW)}\nreview-every: 1h\nreviewed: {FUTURE}\n---\n"
        }
    )
    decision = evaluate(root)
    assert decision.reason == "review"
    assert decision.review_at == NOW - timedelta(hours=4)


def test_a_closed_childs_future_end_does_not_hold_its_goal(make_tree: MakeTree) -> None:
    goal = f"{SHIP}/green"
    root = make_tree(
        {
            f"{SHIP}/intention.md": f"---\ncloses-when: x\nopened: {OPENED}\n---\n",
            f"{goal}/goal.md": f"---\nsuccess-when: x\nopened: {OPENED}\n---\n",
            f"{goal}/step/action.md": f"---\nstatus: done\nlast-moved: {FUTURE}\n---\n",
        }
    )
    decision = evaluate(root, goal)
    assert decision.own_clock is None or decision.own_clock <= NOW
    assert decision.reason == "stale"


@pytest.mark.parametrize("minutes", [0, 1])
def test_a_stamp_within_a_minute_of_now_is_read(make_tree: MakeTree, minutes: int) -> None:
    moved = NOW + timedelta(minutes=minutes)
    root = make_tree(
        {f"{SHIP}/intention.md": f"---\ncloses-when: x\nlast-moved: {stamp(moved)}\n---\n"}
    )
    decision = evaluate(root)
    assert (decision.moved_from, decision.problems) == ("last-moved", [])


def test_a_hand_written_future_last_moved_does_not_take_an_owners_intention_off_due(
    tmp_path: Path,
) -> None:
    """The issue's reproduction, with real processes: a signed intention, then
    ``last-moved: 2099-12-31 23:59`` written by hand."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROUSE_")}
    env["ROUSE_STAMP_KEY"] = str(tmp_path / "keys" / "stamp.key")

    def rouse(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "rouse", "--memory", str(tmp_path / "memory"), *args],
            env=env, capture_output=True, text=True, timeout=60,
        )  # fmt: skip

    init = [sys.executable, "-m", "rouse", "init", str(tmp_path), "--now", "2026-03-14 08:00"]
    assert subprocess.run(init, env=env, capture_output=True, timeout=60).returncode == 0
    assert (tmp_path / "keys" / "stamp.key").exists()  # init made the key (signed by default)
    made = rouse("new", "intention", "ship", "--set", "closes-when=x", "--now", "2026-03-14 08:00")
    assert made.returncode == 0, made.stderr
    signed = rouse("stamp", "--origin", "owner", str(tmp_path / "memory" / SHIP / "intention.md"))
    assert signed.returncode == 0, signed.stderr
    path = tmp_path / "memory" / SHIP / "intention.md"
    text = path.read_text()
    path.write_text(text.replace("---\n", f"---\nlast-moved: {FUTURE}\n", 1))
    due = rouse("due", "--now", "2026-03-14 12:00")
    assert "intention/ship" in due.stdout, due.stdout + due.stderr
    checked = rouse("check", "--now", "2026-03-14 12:00")
    assert "'last-moved'" in checked.stdout and "later than now" in checked.stdout
