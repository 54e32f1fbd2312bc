"""Numbers that stall or spin (issue 10, item 6; docs/clock.md "Bounds").

Counts, intervals and stamps have bounds: a header value outside them is a
field problem with the documented fallback (never a wedged or silenced
record), whatever the clock computes stays a readable date, and the command
line refuses nan, inf and absurd values as usage errors (exit 2).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from conftest import INTENTIONS, REMINDERS, MakeTree, set_mtime, stamp
from rouse.core import clockfields
from rouse.core.clock import Decision, evaluate
from rouse.core.header import set_fields
from rouse.core.nextdue import stamps_after_delivery
from rouse.core.timefmt import LATEST, OutOfRange, parse_stamp
from rouse.core.tree import walk

T0 = datetime(2026, 3, 14, 9, 0)
HUGE = "100000000000000000000000"  # 10^23: past SQLite's integers and every float clock
R = f"{REMINDERS}/r"
X = f"{INTENTIONS}/x"


def md(fields: Mapping[str, str | datetime]) -> str:
    lines = "".join(
        f"{k}: {stamp(v) if isinstance(v, datetime) else v}\n" for k, v in fields.items()
    )
    return f"---\n{lines}---\nBody.\n"


def state(root: Path, path: str, now: datetime) -> Decision:
    tree = walk(root)
    return evaluate(tree, tree.records[path], now)


def deliver(root: Path, path: str, now: datetime) -> dict[str, str]:
    """Play the sweeper: evaluate, write what delivery writes; the header after it."""
    decision = state(root, path, now)
    assert decision.is_due, f"{path} is not due at {now}"
    file = root / decision.record.rel
    file.write_bytes(set_fields(file.read_bytes(), stamps_after_delivery(decision, now)))
    set_mtime(file, min(now, LATEST))
    return dict(walk(root).records[path].header.fields)


# -- counts -----------------------------------------------------------------------------


def test_a_huge_fires_count_still_wakes_and_is_stamped(make_tree: MakeTree) -> None:
    root = make_tree({f"{R}/reminder.md": md({"due": T0, "nag": "10m", "fires": HUGE})})
    decision = state(root, R, T0)
    assert [(p.key, p.value) for p in decision.problems] == [("fires", HUGE)]
    assert "from 0 to 1000000" in decision.problems[0].message
    assert "(read as 0)" in decision.problems[0].message
    assert (decision.reason, decision.nudge) == ("nag", 1)  # not an instant last wake
    fields = deliver(root, R, T0)
    assert fields["fires"] == "1" and fields["status"] == "pending"
    assert fields["due"] == stamp(T0 + timedelta(minutes=15))


@pytest.mark.parametrize(
    "value", [HUGE, "1000001", "9" * 5000], ids=["1e23", "1000001", "5000-digits"]
)
def test_counts_above_the_bound_fall_back(make_tree: MakeTree, value: str) -> None:
    root = make_tree(
        {
            f"{X}/intention.md": md({"last-moved": T0, "nudges": value}),
            f"{R}/reminder.md": md({"due": T0, "nag": "1h", "fires": "9", "max-fires": value}),
        }
    )
    stale = state(root, X, T0 + timedelta(hours=2))
    assert [p.key for p in stale.problems] == ["nudges"]
    assert (stale.reason, stale.nudge) == ("stale", 1)
    nag = state(root, R, T0)
    assert [p.key for p in nag.problems] == ["max-fires"]
    assert nag.reason == "expire"  # max-fires read as 10: the tenth firing is the last


def test_the_largest_count_still_reads() -> None:
    assert clockfields.parse_count("1000000") == clockfields.MOST_COUNT == 1_000_000
    assert clockfields.parse_count("0001") == 1
    with pytest.raises(OutOfRange):
        clockfields.parse_count("1000001")
    assert clockfields.count_problem("fires", "1000000") is None
    assert clockfields.count_problem("fires", HUGE) == (
        f"'fires' must be a whole number from 0 to 1000000, got '{HUGE}'"
    )


# -- stamps and intervals ---------------------------------------------------------------


def test_a_stamp_past_the_bounds_never_silences_a_reminder(make_tree: MakeTree) -> None:
    root = make_tree({f"{R}/reminder.md": md({"due": "9999-12-31 23:00", "opened": T0})})
    decision = state(root, R, T0)
    assert [(p.key, p.value) for p in decision.problems] == [("due", "9999-12-31 23:00")]
    assert "years 1900 to 9000" in decision.problems[0].message
    assert decision.reason == "due"  # it fires on its moved_at, and says why


@pytest.mark.parametrize(("key", "value"), [("nag", "521w"), ("stale-after", "3641d")])
def test_an_interval_past_ten_years_is_a_field_problem(
    make_tree: MakeTree, key: str, value: str
) -> None:
    path, fields = (
        (R, {"due": T0, "nag": value})
        if key == "nag"
        else (X, {"last-moved": T0, "stale-after": value})
    )
    root = make_tree({f"{path}/{'reminder' if path == R else 'intention'}.md": md(fields)})
    decision = state(root, path, T0 + timedelta(hours=2))
    assert [(p.key, p.value) for p in decision.problems] == [(key, value)]
    assert "at most 520w" in decision.problems[0].message
    assert decision.is_due


# -- what the clock computes never overflows ---------------------------------------------


def test_a_nag_re_armed_at_the_end_of_the_calendar_never_overflows(make_tree: MakeTree) -> None:
    root = make_tree({f"{R}/reminder.md": md({"due": T0, "nag": "1h", "backoff": "fixed"})})
    end = datetime(9999, 12, 31, 23, 0)
    decision = state(root, R, end)
    assert decision.reason == "nag"
    updates = stamps_after_delivery(decision, end)  # 23:00 + 1h is past datetime.max
    assert updates["fires"] == "1" and updates["status"] == "pending"
    assert updates["due"] == "9999-12-31 23:59"


def test_a_nag_re_armed_near_the_last_stamp_stays_readable(make_tree: MakeTree) -> None:
    root = make_tree({f"{R}/reminder.md": md({"due": T0, "nag": "1h", "backoff": "fixed"})})
    late = datetime(9000, 12, 31, 23, 30)
    fields = deliver(root, R, late)
    assert fields["due"] == "9000-12-31 23:59"  # not 9001-01-01 00:30, which reads as absent
    assert parse_stamp(fields["due"]) == LATEST
    assert state(root, R, late).problems == []


def test_a_stale_time_saturates_at_the_last_stamp(make_tree: MakeTree) -> None:
    moved = datetime(9000, 12, 31, 23, 0)
    root = make_tree({f"{X}/intention.md": md({"last-moved": moved, "stale-after": "520w"})})
    decision = state(root, X, moved)
    assert decision.problems == []
    assert decision.stale_at == LATEST and decision.due_at == LATEST


# -- the command line ---------------------------------------------------------------------


def rouse(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROUSE_")}
    env["ROUSE_PROBES"] = "off"
    return subprocess.run(
        [sys.executable, "-m", "rouse", *args], env=env, capture_output=True, text=True, timeout=60
    )


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tree laid by ``rouse init`` (the verbs below never write to it)."""
    base = tmp_path_factory.mktemp("numbers")
    made = rouse("init", "--no-key", str(base))
    assert made.returncode == 0, made.stderr
    return base / "memory"


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["sweep", "--once", "--every", "nan"], "--every"),
        (["sweep", "--once", "--every", "inf"], "--every"),
        (["sweep", "--once", "--every", "1e300"], "--every"),
        (["sweep", "--once", "--timeout", "nan"], "--timeout"),
        (["sweep", "--once", "--timeout", "inf"], "--timeout"),
        (["sweep", "--once", "--sink", "exec", "--timeout", "1e9", "--", "true"], "--timeout"),
        (["log", "--limit", HUGE], "--limit"),
        (["recall", "certificate", "--limit", HUGE], "--limit"),
        (["pack", "--max-chars", HUGE], "--max-chars"),
        (["pack", "--max-ch", HUGE], "--max-chars"),  # an abbreviation: argparse's path
        (["pack", "--probe-budget", "100000000000000000000"], "--probe-budget"),
        (["pack", "--probe-budget", "-1"], "--probe-budget"),
        (["check", "--probe-budget", HUGE], "--probe-budget"),
        (["--now", "0001-01-01 00:00", "pack"], "--now"),
        (["--now", "9999-12-31 23:00", "sweep", "--once"], "--now"),
        (["due", "--until", "+1000w"], "--until"),
    ],
    ids=lambda value: " ".join(value) if isinstance(value, list) else None,
)
def test_absurd_numbers_are_one_line_usage_errors(tree: Path, args: list[str], option: str) -> None:
    done = rouse("--memory", str(tree), *args)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("rouse: "), done.stderr
    assert option in lines[0] and "internal error" not in lines[0]
    assert not list((tree / ".rouse").glob("ledger*"))  # no tick ran


def test_the_stamp_years_are_usable_to_their_edges(tree: Path) -> None:
    for now in ("1900-01-01 00:00", "9000-12-31 23:59"):
        done = rouse("--memory", str(tree), "--now", now, "pack")
        assert done.returncode == 0 and "rouse:" not in done.stderr, done.stderr
    far = rouse("--memory", str(tree), "--now", "9000-12-31 23:00", "due", "--until", "+59m")
    assert far.returncode == 0, far.stderr
    past = rouse("--memory", str(tree), "--now", "9000-12-31 23:00", "due", "--until", "+2h")
    assert past.returncode == 2 and "1900 to 9000" in past.stderr


def test_explain_check_and_the_pack_show_an_out_of_bounds_count(tmp_path: Path) -> None:
    assert rouse("init", "--no-key", str(tmp_path)).returncode == 0
    root = tmp_path / "memory"
    made = rouse("--memory", str(root), "remind", "big", "--due", "2026-01-01 09:00", "--nag", "1h")
    assert made.returncode == 0, made.stderr
    file = root / REMINDERS / "big" / "reminder.md"
    file.write_bytes(set_fields(file.read_bytes(), {"fires": HUGE}))
    at = ("--memory", str(root), "--now", "2026-01-02 09:00")
    explained = rouse(*at, "explain", "big")
    assert explained.returncode == 0, explained.stderr
    assert "due now: nag (since 2026-01-01 09:00), nudge 1" in explained.stdout
    # (the tree has no key, so its files are not signed: their values are quoted data)
    assert (
        f"'fires' must be a whole number from 0 to 1000000, got (not signed, quoted) `{HUGE}` (read as 0)"
        in (explained.stdout)
    )
    checked = rouse(*at, "check")
    assert checked.returncode == 1
    assert f"{REMINDERS}/big/reminder.md" in checked.stdout and "'fires'" in checked.stdout
    pack = rouse(*at, "pack")
    assert pack.returncode == 0
    assert f"unreadable clock field: {REMINDERS}/big/reminder.md" in pack.stdout


def test_a_sweep_delivers_and_stamps_a_reminder_with_a_huge_count(tmp_path: Path) -> None:
    assert rouse("init", "--no-key", str(tmp_path)).returncode == 0
    root = tmp_path / "memory"
    made = rouse("--memory", str(root), "remind", "big", "--due", "2026-01-01 09:00", "--nag", "1h")
    assert made.returncode == 0, made.stderr
    file = root / REMINDERS / "big" / "reminder.md"
    file.write_bytes(set_fields(file.read_bytes(), {"fires": HUGE}))
    swept = rouse("--memory", str(root), "--now", "2026-01-02 09:00", "sweep", "--once")
    assert swept.returncode == 0, swept.stderr
    assert "delivered reminder/big (nag, nudge 1)" in swept.stderr
    fields = dict(walk(root).records[f"{REMINDERS}/big"].header.fields)
    assert fields["fires"] == "1" and fields["due"] == "2026-01-02 10:00"
    again = rouse("--memory", str(root), "--now", "2026-01-02 09:30", "sweep", "--once")
    assert again.returncode == 0 and "delivered reminder/big" not in again.stderr
