"""What an agent can write cannot silence the clock (issue 29 item 5, acts.json).

``.rouse/acts.json`` says which wakes a verb answered. With a stamp key it is MACed
like the caches, so a forged one (the issue's one line) reads as empty and ``check``
says so; with or without a key an act later than now answers nothing, and pruning
never drops an act because another is dated far ahead. Real processes throughout:
``rouse remind``, ``rouse sweep --once`` (file sink), ``rouse pack --json``, ``check``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from conftest import NOW, stamp
from rouse.records.scaffold import init
from rouse.state import acts
from rouse.trust import stampkey

T = stamp(NOW)
LATER = stamp(NOW + timedelta(minutes=5))
REMINDER = "inventory/reminders/x"
FORGED = '{"version":1,"acts":{"inventory/reminders/x":"2099-01-01T00:00:00"}}'


def rouse(tree: Path, key: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROUSE_")}
    env["ROUSE_STAMP_KEY"] = str(key)
    return subprocess.run(
        [sys.executable, "-m", "rouse", *args, "--memory", str(tree)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def ok(tree: Path, key: Path, *args: str) -> str:
    done = rouse(tree, key, *args)
    assert done.returncode == 0, done.stderr
    return done.stdout


def woken(tree: Path, key: Path) -> list[Any]:
    data: dict[str, Any] = json.loads(ok(tree, key, "pack", "--json", "--now", LATER))
    return [w["path"] for w in data["woken"]]


def fired(tmp_path: Path, keyed: bool) -> tuple[Path, Path]:
    """A tree whose reminder x fired at T (its nudge file written), keyed or not."""
    tree = tmp_path / "memory"
    init(tree, NOW, examples=False)
    key = tmp_path / "keys" / "stamp.key"
    if keyed:
        stampkey.init_key(key)
    ok(tree, key, "remind", "x", "--due", T, "--body", "Call the bank", "--now", T)
    ok(tree, key, "sweep", "--once", "--now", T, "-q")
    assert woken(tree, key) == [REMINDER]
    return tree, key


@pytest.mark.parametrize("keyed", [True, False], ids=["keyed", "unkeyed"])
def test_the_forged_line_silences_nothing(tmp_path: Path, keyed: bool) -> None:
    tree, key = fired(tmp_path, keyed)
    (tree / ".rouse" / acts.FILE).write_text(FORGED)
    assert woken(tree, key) == [REMINDER]  # the pack still shows the wake
    ok(tree, key, "sweep", "--once", "--now", LATER, "-q")
    assert list((tree / ".rouse" / "nudges").glob("*.md"))  # not archived as answered
    assert woken(tree, key) == [REMINDER]
    checked = rouse(tree, key, "check", "--now", LATER)
    assert ".rouse/acts.json" in checked.stdout + checked.stderr


def test_under_a_key_an_unmaced_file_of_the_right_format_is_refused(tmp_path: Path) -> None:
    tree, key = fired(tmp_path, keyed=True)
    body = {"version": acts.VERSION, "acts": {REMINDER: "2026-03-14T12:04:00"}}
    (tree / ".rouse" / acts.FILE).write_text(
        f"{acts.MAGIC.decode()} {acts.VERSION} -\n{json.dumps(body)}"
    )
    assert woken(tree, key) == [REMINDER]
    checked = rouse(tree, key, "check", "--now", LATER)
    assert "not written by rouse under the stamp key" in checked.stdout


def test_a_real_act_still_answers_and_check_is_quiet(tmp_path: Path) -> None:
    tree, key = fired(tmp_path, keyed=True)
    ok(tree, key, "move", "x", "--now", stamp(NOW + timedelta(minutes=1)))
    assert woken(tree, key) == []
    checked = rouse(tree, key, "check", "--now", LATER)
    assert ".rouse/acts.json" not in checked.stdout


def test_an_act_later_than_now_is_no_answer(tmp_path: Path) -> None:
    tree, key = fired(tmp_path, keyed=False)
    acts.note(tree, REMINDER, datetime(2099, 1, 1))  # well formed, but ahead of now
    assert woken(tree, key) == [REMINDER]


def test_pruning_counts_back_from_the_act_being_written(tmp_path: Path) -> None:
    tree = tmp_path / "memory"
    init(tree, NOW, examples=False)
    acts.note(tree, "old", NOW - acts.KEEP - timedelta(days=1))
    acts.note(tree, "a", NOW - timedelta(days=10))
    acts.note(tree, "far", datetime(2099, 1, 1))
    acts.note(tree, "b", NOW)
    # "far" answers nothing and pushes nothing out; "old" is past KEEP before "b"
    assert acts.load(tree) == {"a": NOW - timedelta(days=10), "b": NOW}
