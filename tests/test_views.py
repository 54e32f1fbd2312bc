"""The read verbs' renderings (issue 12): due rows that say when, JSON a script can trust.

Library-level: ``rouse.pack.views`` (due rows, explain, tree) and
``rouse.sweep.status``, on trees written by ``make_tree`` at the fixed ``NOW``.
Expected relative ages come from ``human_age`` itself, so these tests hold
whatever its exact wording becomes.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from conftest import BELIEFS, INTENTIONS, NOTES, NOW, REMINDERS, MakeTree, stamp
from rouse.core import clock
from rouse.core.timefmt import human_age
from rouse.core.tree import display_ids, walk
from rouse.pack import explain, views
from rouse.state import sweeper as sweepstate
from rouse.sweep import status as status_mod

#: ISO 8601 with seconds and an offset, as every --json time is.
ISO = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:[+-]\d{2}:\d{2}|Z)$")
AT = NOW + timedelta(hours=1)  # a forecast: --until +1h


def iso(value: datetime) -> str:
    """A naive local time as the JSON writes it: ISO 8601 with the local offset."""
    return value.astimezone().isoformat()


def intention(moved: datetime, stale_after: str = "2h", **extra: str) -> str:
    lines = ["status: open", f"last-moved: {stamp(moved)}", f"stale-after: {stale_after}"]
    lines += [f"{key.replace('_', '-')}: {value}" for key, value in extra.items()]
    return "---\n" + "\n".join(lines) + "\ncloses-when: x\n---\n"


def reminder(due: datetime, **extra: str) -> str:
    lines = ["status: pending", f"due: {stamp(due)}"]
    lines += [f"{key.replace('_', '-')}: {value}" for key, value in extra.items()]
    return "---\n" + "\n".join(lines) + "\n---\n"


@pytest.fixture
def clocks(make_tree: MakeTree) -> Path:
    """One record for every reason code, due at NOW, plus two that come due before AT."""
    return make_tree(
        {
            # moved 61m ago, stale after 2h: comes due in 59 minutes (the case)
            f"{INTENTIONS}/forecast/intention.md": intention(NOW - timedelta(minutes=61)),
            f"{INTENTIONS}/long-still/intention.md": intention(NOW - timedelta(hours=3), "1h"),
            f"{INTENTIONS}/reviewed/intention.md": intention(
                NOW - timedelta(minutes=1),
                review_every="1d",
                reviewed=stamp(NOW - timedelta(days=1, hours=1)),
            ),
            f"{REMINDERS}/call/reminder.md": reminder(datetime(2026, 3, 13, 9, 0)),
            f"{REMINDERS}/nagger/reminder.md": reminder(
                NOW - timedelta(hours=1), nag="1h", fires="2"
            ),
            f"{REMINDERS}/later-nag/reminder.md": reminder(
                NOW + timedelta(minutes=40), nag="1h", fires="2"
            ),
            f"{REMINDERS}/last/reminder.md": reminder(
                NOW - timedelta(minutes=30), nag="1h", fires="2", max_fires="3"
            ),
        }
    )


def rows(root: Path, at: datetime) -> dict[str, list[str]]:
    """``rouse due``'s rows at the real ``NOW``, forecasting to ``at``, by record id."""
    tree = walk(root)
    found = clock.select_due(clock.decisions(tree, at))
    lines = views.due_lines(tree, found, NOW)
    return {line.split("\t")[0]: line.split("\t") for line in lines}


# -- due rows say when --------------------------------------------------------


def test_a_forecast_row_says_when_it_comes_due(clocks: Path) -> None:
    due_at = NOW + timedelta(minutes=59)
    found = rows(clocks, AT)["intention/forecast"]
    assert found == [
        "intention/forecast",
        "stale",
        f"due {human_age(due_at, NOW)} (12:59)",
        f"{INTENTIONS}/forecast",
    ]
    assert "in" in found[2]  # it lies ahead of the real now, so it does not read "ago"


def test_each_reason_says_when_in_its_own_words(clocks: Path) -> None:
    found = {key: row[1:3] for key, row in rows(clocks, AT).items()}
    assert found == {
        "intention/forecast": [
            "stale",
            f"due {human_age(NOW + timedelta(minutes=59), NOW)} (12:59)",
        ],
        "intention/long-still": [
            "stale",
            f"went stale {human_age(NOW - timedelta(hours=2), NOW)} (10:00)",
        ],
        "intention/reviewed": [
            "review",
            f"review due {human_age(NOW - timedelta(hours=1), NOW)} (11:00)",
        ],
        "reminder/call": [
            "due",
            f"due {human_age(datetime(2026, 3, 13, 9), NOW)} (2026-03-13 09:00)",
        ],
        "reminder/nagger": [
            "nag",
            f"nag #3 due {human_age(NOW - timedelta(hours=1), NOW)} (11:00)",
        ],
        "reminder/later-nag": [
            "nag",
            f"nag #3 due {human_age(NOW + timedelta(minutes=40), NOW)} (12:40)",
        ],
        "reminder/last": [
            "expire",
            f"last wake #3 due {human_age(NOW - timedelta(minutes=30), NOW)} (11:30)",
        ],
    }


def test_a_row_on_another_day_shows_the_date(make_tree: MakeTree) -> None:
    root = make_tree({f"{REMINDERS}/far/reminder.md": reminder(datetime(2026, 3, 20, 9, 0))})
    (row,) = rows(root, datetime(2026, 3, 21, 0, 0)).values()
    assert row[2].endswith("(2026-03-20 09:00)")


def test_the_header_says_what_the_rows_are(clocks: Path) -> None:
    assert views.due_header(0, NOW, None) == "nothing is due at 2026-03-14 12:00"
    assert views.due_header(3, NOW, None) is None
    forecast = views.due_header(7, NOW, AT)
    assert forecast is not None
    assert "7 record(s)" in forecast and "2026-03-14 13:00" in forecast
    assert "2026-03-14 12:00" in forecast and "if nothing moves" in forecast
    nothing = views.due_header(0, NOW, AT)
    assert nothing is not None and nothing.startswith("nothing comes due by 2026-03-14 13:00")


def test_due_rows_sort_slugs_naturally_when_due_together(make_tree: MakeTree) -> None:
    same = datetime(2026, 3, 14, 9, 0)
    root = make_tree(
        {f"{REMINDERS}/big-{n}/reminder.md": reminder(same) for n in (10, 2, 1)},
    )
    tree = walk(root)
    found = views.due_order(clock.select_due(clock.decisions(tree, NOW)))
    assert [d.record.slug for d in found] == ["big-1", "big-2", "big-10"]


# -- JSON: ISO times with the local offset, seconds, snake_case -----------------


def test_due_item_times_are_iso_with_the_local_offset(
    clocks: Path, local_tz: Callable[[str], None]
) -> None:
    local_tz("Europe/Paris")  # +01:00 in March before the change
    tree = walk(clocks)
    ids = display_ids(tree)
    found = clock.select_due(clock.decisions(tree, AT))
    items = {ids[d.record.dir]: views.due_item(d, ids[d.record.dir]) for d in found}
    item = items["intention/forecast"]
    assert item["due_at"] == "2026-03-14T12:59:00+01:00"
    assert item["moved_at"] == "2026-03-14T10:59:00+01:00"
    assert items["reminder/nagger"]["nudge"] == 3
    for item in items.values():
        assert ISO.match(item["due_at"]) and ISO.match(item["moved_at"])


def test_explain_json_has_iso_times_and_seconds(clocks: Path) -> None:
    tree = walk(clocks)
    data = explain.explain(tree, tree.resolve("reviewed"), NOW)
    assert data["now"] == iso(NOW)
    assert data["moved_at"] == iso(NOW - timedelta(minutes=1))
    assert data["stale_after"] == 7200 and data["review_every"] == 86400
    assert data["review_at"] == iso(NOW - timedelta(hours=1)) == data["due_at"]
    assert data["stale_at"] == iso(NOW + timedelta(minutes=119))
    nag = explain.explain(tree, tree.resolve("last"), NOW)
    assert nag["reminder"] == {
        "due": iso(NOW - timedelta(minutes=30)),
        "nag": 3600,
        "backoff": None,
        "fires": 2,
        "max_fires": 3,
        "expires": None,
        "set": None,
        "fired": None,
    }
    json.dumps(data)


def test_explain_text_keeps_plain_stamps(clocks: Path) -> None:
    tree = walk(clocks)
    data = explain.explain(tree, tree.resolve("reviewed"), NOW)
    lines = explain.explain_lines(data, NOW)
    assert "due now: review (since 2026-03-14 11:00), nudge 1" in lines
    assert "moved_at: 2026-03-14 11:59 (from last-moved)" in lines
    assert "stale_after: 2h (never below the 15m floor)" in lines
    assert "review_every: 1d" in lines
    last = explain.explain_lines(explain.explain(tree, tree.resolve("last"), NOW), NOW)
    assert "nag: 1h" in last and "max-fires: 3" in last and "due: 2026-03-14 11:30" in last


def test_status_json_times_are_iso(make_tree: MakeTree) -> None:
    root = make_tree({f"{INTENTIONS}/a/intention.md": intention(NOW)})
    (root / ".rouse").mkdir()
    sweepstate.write_state(root, NOW - timedelta(minutes=5), 300.0, "file")
    (root / ".rouse/sweep.lock").write_text(
        json.dumps({"pid": os.getpid(), "since": "2026-03-14 11:00:00"})
    )
    data = status_mod.status(walk(root), NOW)
    assert data["now"] == iso(NOW)
    assert data["last_tick"] == iso(NOW - timedelta(minutes=5))
    assert data["sweeper"]["since"] == iso(datetime(2026, 3, 14, 11, 0))
    assert data["sweeper"]["interval"] == 300.0
    lines = status_mod.status_lines(data)
    assert "now: 2026-03-14 12:00" in lines and "last tick: 2026-03-14 11:55" in lines
    assert any("since 2026-03-14 11:00" in line for line in lines)


# -- tree: natural order, and as JSON -------------------------------------------


@pytest.fixture
def numbered(make_tree: MakeTree) -> Path:
    files: dict[str, str] = {}
    for n in (10, 2, 1):
        files[f"{INTENTIONS}/big-{n}/intention.md"] = intention(NOW)
        files[f"{INTENTIONS}/big-2/step-{n}/goal.md"] = "---\nstatus: open\n---\n"
        files[f"{BELIEFS}/belief-big-{n}.md"] = f"Belief {n}.\n"
        files[f"{NOTES}/note-{n}.md"] = "---\nkeywords: k\n---\n"
    return make_tree(files)


def test_tree_lists_numbers_in_natural_order(numbered: Path) -> None:
    lines = views.tree_lines(walk(numbered), NOW)

    def order(prefix: str) -> list[str]:
        return [line.strip() for line in lines if line.strip().startswith(prefix)]

    assert order("belief") == ["belief big-1", "belief big-2", "belief big-10"]
    assert order("intention") == [
        "intention big-1 [open]",
        "intention big-2 [open]",
        "intention big-10 [open]",
    ]
    assert order("goal") == ["goal step-1 [open]", "goal step-2 [open]", "goal step-10 [open]"]
    assert order("note") == ["note note-1", "note note-2", "note note-10"]


def test_tree_json_nests_records_in_natural_order(numbered: Path) -> None:
    data = views.tree_json(walk(numbered), NOW)
    assert [c["slug"] for c in data["context"]] == ["big-1", "big-2", "big-10"]
    assert data["context"][0] == {
        "kind": "belief",
        "slug": "big-1",
        "path": f"{BELIEFS}/belief-big-1.md",
    }
    records = data["records"]
    assert [r["slug"] for r in records] == ["big-1", "big-2", "big-10"]
    big2 = records[1]
    assert {k: big2[k] for k in ("record", "type", "path", "status", "open")} == {
        "record": "intention/big-2",
        "type": "intention",
        "path": f"{INTENTIONS}/big-2",
        "status": "open",
        "open": True,
    }
    assert [c["slug"] for c in big2["children"]] == ["step-1", "step-2", "step-10"]
    assert big2["children"][0]["children"] == []
    notes = data["inventory"]["notes"]
    assert [n["path"] for n in notes] == [f"{NOTES}/note-{n}.md" for n in (1, 2, 10)]
    assert data["inventory"]["probes"] is None and data["skipped"] == []
    json.dumps(data)


def test_explain_shows_a_repeating_reminder_s_rule_and_its_next_occurrence(
    make_tree: MakeTree,
) -> None:
    """Issue 34, item 7: ``explain`` names the ``every:`` rule, its end and what follows."""
    root = make_tree(
        {
            f"{REMINDERS}/standup/reminder.md": (
                "---\nstatus: pending\ndue: 2026-03-16 09:00\nevery: weekdays 09:00\n"
                "until: 2026-06-30\n---\nStand-up in five minutes.\n"
            )
        }
    )
    tree = walk(root)
    data = explain.explain(tree, tree.resolve("standup"), NOW)
    assert data["reminder"]["every"] == "weekdays 09:00"
    assert data["reminder"]["until"] == iso(datetime(2026, 6, 30, 0, 0))
    assert data["reminder"]["next_occurrence"] == iso(datetime(2026, 3, 17, 9, 0))
    lines = explain.explain_lines(data, NOW)
    assert "every: weekdays 09:00" in lines and "until: 2026-06-30 00:00" in lines
    assert "next-occurrence: 2026-03-17 09:00" in lines
    json.dumps(data)
