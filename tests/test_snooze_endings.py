"""Time as people mean it (issue 19, items 1, 4, 5 and 6).

A snooze that holds (``snoozed-until``: every reader agrees, a signed origin
survives it), every ending a task has (``close --failed/--cancelled``, the
worker's ``running``), the fields the reference conventions define (each with
a reader), and friendlier values (``1.5h``; a motivation without keywords).
Real ``rouse`` processes on small trees, with ``--now``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import INTENTIONS, NOW, stamp, write_tree
from rouse.core import clock, dueplan
from rouse.core.errors import UsageError
from rouse.core.tree import walk
from rouse.records import tasks
from rouse.records.scaffold import init
from rouse.trust.fence import SHORT

T = stamp(NOW)  # Saturday 2026-03-14 12:00
SHIP = f"{INTENTIONS}/ship"
MONDAY = "2026-03-16 09:00"


def rouse(
    tree: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("ROUSE_")}
    base["ROUSE_STAMP_KEY"] = str(tree.parent / "no-key")
    return subprocess.run(
        [sys.executable, "-m", "rouse", "--memory", str(tree), *args],
        env={**base, **(env or {})},
        capture_output=True,
        text=True,
        timeout=60,
    )


def ok(tree: Path, *args: str, env: dict[str, str] | None = None) -> str:
    done = rouse(tree, *args, env=env)
    assert done.returncode == 0, done.stderr
    return done.stdout


def as_json(tree: Path, *args: str) -> Any:
    return json.loads(ok(tree, *args, "--json"))


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "memory"
    init(root, NOW, examples=False)
    ok(root, "new", "intention", "ship", "--set", "closes-when=it ships", "--now", T)
    return root


# -- item 1: a snooze that holds ------------------------------------------------------


def test_every_reader_agrees_on_a_snooze(tree: Path) -> None:
    out = ok(tree, "snooze", "ship", "--until", MONDAY, "--now", T)
    assert "snoozed intention/ship until 2026-03-16 09:00" in out
    saturday_night = "2026-03-14 23:00"  # stale since 14:00, but put off
    assert as_json(tree, "due", "--now", saturday_night) == []
    forecast = as_json(tree, "due", "--until", "2026-03-16 08:59", "--now", saturday_night)
    assert forecast == []
    (item,) = as_json(tree, "due", "--until", "2026-03-16 09:00", "--now", saturday_night)
    assert item["record"] == "intention/ship"
    pack = as_json(tree, "pack", "--now", saturday_night)
    assert pack["due"] == [] and pack["ladder"]["intention"] == 1 and pack["ladder"]["snoozed"] == 1
    assert "(1 of them snoozed)" in ok(tree, "pack", "--now", saturday_night)
    explained = ok(tree, "explain", "ship", "--now", saturday_night)
    assert "snoozed until Mon 2026-03-16 09:00" in explained
    assert "then comes due 2026-03-16 09:00" in explained
    assert "intention ship [open] (snoozed until Mon 2026-03-16 09:00)" in ok(
        tree, "tree", "--now", saturday_night
    )
    assert ok(tree, "sweep", "--once", "--now", saturday_night, "-v").count("delivered") == 0
    assert (
        list((tree / ".rouse" / "nudges").glob("*.md")) == []
        if (tree / ".rouse" / "nudges").exists()
        else True
    )
    ok(tree, "sweep", "--once", "--now", MONDAY, "-q")
    assert len(list((tree / ".rouse" / "nudges").glob("*.md"))) == 1
    assert "snoozed" not in ok(tree, "tree", "--now", MONDAY)  # past: inert


def test_a_snooze_keeps_an_owners_signed_origin(tmp_path: Path) -> None:
    root = tmp_path / "memory"
    key = tmp_path / "key" / "stamp.key"
    env = {"ROUSE_STAMP_KEY": str(key)}
    base = {k: v for k, v in os.environ.items() if not k.startswith("ROUSE_")}

    def run(*args: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "rouse", *args],
            env={**base, **env},
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    run("stamp", "--init-key")
    run("init", "--no-key", str(tmp_path), "--no-examples", "--now", T)
    run("--memory", str(root), "new", "intention", "ship", "--set", "closes-when=x", "--now", T)
    file = root / SHIP / "intention.md"
    run("--memory", str(root), "stamp", "--origin", "owner", str(file))
    run("--memory", str(root), "snooze", "ship", "--until", MONDAY, "--now", T)
    data = json.loads(run("--memory", str(root), "check", "--json"))
    assert not [f for f in data if "origin" in f["message"] and f["path"].startswith(SHIP)]
    woken = json.loads(run("--memory", str(root), "due", "--json", "--now", MONDAY))
    assert [w["record"] for w in woken] == ["intention/ship"]


def test_snooze_refuses_the_past_and_a_backlog_item(tree: Path) -> None:
    done = rouse(tree, "snooze", "ship", "--until", "2026-03-14 11:00", "--now", T)
    assert done.returncode == 2 and "in the past" in done.stderr
    ok(tree, "new", "backlog", "idea", "--now", T)
    done = rouse(tree, "snooze", "idea", "--until", MONDAY, "--now", T)
    assert done.returncode == 2 and "never snoozed" in done.stderr


def test_a_snoozed_parents_open_child_still_comes_due(tree: Path) -> None:
    ok(tree, "new", "goal", "tests", "--under", "ship", "--set", "success-when=green", "--now", T)
    ok(tree, "snooze", "ship", "--until", MONDAY, "--now", T)
    due = as_json(tree, "due", "--now", "2026-03-14 14:00")
    assert [d["record"] for d in due] == ["goal/tests"]  # the snooze is the parent's alone


@settings(max_examples=60, deadline=None)
@given(
    snooze_h=st.integers(min_value=1, max_value=72),
    at_h=st.integers(min_value=0, max_value=96),
    review=st.booleans(),
)
def test_the_plan_decides_a_snooze_as_the_clock_does(
    snooze_h: int, at_h: int, review: bool
) -> None:
    """clockplan (what the fleet mirror keeps) and the clock agree on a snoozed record."""
    extra = "review-every: 1d\n" if review else ""
    scratch = tempfile.TemporaryDirectory()
    root = write_tree(
        Path(scratch.name) / "memory",
        {
            f"{SHIP}/intention.md": (
                "---\nstatus: open\nlast-moved: 2026-03-14 12:00\n"
                f"snoozed-until: {stamp(NOW + timedelta(hours=snooze_h))}\n"
                f"opened: 2026-03-14 12:00\n{extra}---\n"
            )
        },
    )
    tree = walk(root)
    record = tree.records[SHIP]
    plan = dict(clock.clock_plan(tree, record, NOW), kind="intention")
    when = NOW + timedelta(hours=at_h)
    decision = clock.evaluate(tree, record, when)
    planned = dueplan.due_at_time(
        {k: dueplan.aware(v) if isinstance(v, datetime) else v for k, v in plan.items()},
        when.astimezone(),
    )
    if decision.is_due:
        assert planned is not None and planned[0] == decision.reason
        assert decision.due_at is not None
        assert planned[1] == decision.due_at.astimezone()
    else:
        assert planned is None
    scratch.cleanup()


# -- item 4: every ending a task has ----------------------------------------------------


def test_a_task_ends_failed_or_cancelled_with_a_reason(tree: Path) -> None:
    for slug in ("build", "deploy", "lint"):
        ok(tree, "new", "task", slug, "--under", "ship", "--now", T)
    out = ok(tree, "close", "build", "--failed", "the compiler crashed", "--now", T)
    assert "task/build is failed" in out
    data = as_json(tree, "close", "deploy", "--cancelled", "not needed", "--now", T)
    assert data["status"] == "cancelled" and data["reason"] == "not needed"
    text = (tree / SHIP / "deploy" / "task.md").read_text()
    assert "status: cancelled" in text and "cancelled: not needed" in text.split("rouse:log")[1]
    done = rouse(tree, "close", "lint", "--failed", "", "--now", T)
    assert done.returncode == 2 and "needs a reason" in done.stderr
    done = rouse(tree, "close", "ship", "--failed", "oops", "--now", T)
    assert done.returncode == 2 and "cannot end 'failed'" in done.stderr


def test_the_mcp_close_tool_takes_failed_and_cancelled(tree: Path) -> None:
    from rouse.agents.mcp_tools import Tools

    ok(tree, "new", "task", "build", "--under", "ship", "--now", T)
    tools = Tools(tree, now=lambda: NOW)
    assert "is failed" in tools.close("build", "failed", why="red")


def test_start_task_claims_a_pending_task_once(tree: Path) -> None:
    ok(tree, "new", "task", "build", "--under", "ship", "--now", T)
    changed = tasks.start_task(tree, "build", NOW, "host-a:101")
    assert changed.facts["attempts"] == 1
    fields = walk(tree).records[f"{SHIP}/build"].header.fields
    assert fields["status"] == "running" and fields["worker"] == "host-a:101"
    assert fields["started"] == T and fields["attempts"] == "1"
    with pytest.raises(UsageError, match="only a pending task is started"):
        tasks.start_task(tree, "build", NOW, "host-b:202")
    ok(tree, "new", "task", "stopped", "--under", "ship", "--set", f"cancel={T}", "--now", T)
    with pytest.raises(UsageError, match="cancel"):
        tasks.start_task(tree, "stopped", NOW, "host-a:101")
    assert walk(tree).records[f"{SHIP}/stopped"].header.fields["status"] == "pending"


def test_check_and_explain_show_a_pending_cancel(tree: Path) -> None:
    ok(tree, "new", "task", "build", "--under", "ship", "--set", f"cancel={T}", "--now", T)
    findings = json.loads(rouse(tree, "check", "--json").stdout)
    assert any("cancel: 2026-03-14 12:00 is pending" in f["message"] for f in findings)
    assert f"cancel: {SHORT['unknown']} `{T}`" in ok(tree, "explain", "build", "--now", T)


# -- item 5: fields the conventions define, each with a reader ------------------------------


def test_convention_fields_are_known_shown_and_quoted(tree: Path) -> None:
    ok(
        tree,
        *("new", "task", "build", "--under", "ship", "--now", T),
        *("--set", "model=sonnet", "--set", "reasoning=high", "--set", "repo=git@x:y.git"),
        *("--set", "category=ci"),
    )
    ok(
        tree,
        *("new", "goal", "green", "--under", "ship", "--now", T),
        *("--set", "success-when=all green", "--set", "waiting-on=the CI budget"),
        *("--set", "falsifiers=a red main"),
    )
    ok(
        tree,
        "new",
        "action",
        "bisect",
        "--under",
        "ship",
        "--set",
        "closes-when=found it",
        "--now",
        T,
    )
    ok(tree, "new", "reminder", "call", "--set", f"due={T}", "--set", "channel=phone", "--now", T)
    findings = json.loads(rouse(tree, "check", "--json").stdout)
    assert [
        f["message"] for f in findings if "nothing" in f["message"] or "unknown" in f["message"]
    ] == []
    # (no key: nobody signed them, so explain quotes their words as data)
    explained = ok(tree, "explain", "build", "--now", T)
    for key, value in (("model", "sonnet"), ("reasoning", "high"), ("repo", "git@x:y.git")):
        assert f"{key}: {SHORT['unknown']} `{value}`" in explained
    assert f"category: {SHORT['unknown']} `ci`" in explained
    goal = ok(tree, "explain", "green", "--now", T)
    assert f"waiting-on: {SHORT['unknown']} `the CI budget`" in goal
    assert f"falsifiers: {SHORT['unknown']} `a red main`" in goal
    assert f"closes-when: {SHORT['unknown']} `found it`" in ok(
        tree, "explain", "bisect", "--now", T
    )
    later = stamp(NOW + timedelta(days=2))
    ok(tree, "sweep", "--once", "--now", later, "-q")
    wakes = "".join(p.read_text() for p in (tree / ".rouse" / "nudges").glob("*.md"))
    assert "model: sonnet" in wakes and "waiting-on: the CI budget" in wakes
    assert "closes-when: found it" in wakes


def test_an_unknown_reasoning_is_a_warning(tree: Path) -> None:
    ok(tree, "new", "task", "build", "--under", "ship", "--set", "reasoning=max", "--now", T)
    findings = json.loads(rouse(tree, "check", "--json").stdout)
    # the tree has no stamp key: a value from its unsigned file is quoted as data
    said = "unknown reasoning (not signed, quoted) `max`"
    assert any(said in f["message"] for f in findings), findings


def test_worker_fields_are_machine_fields(tree: Path) -> None:
    done = rouse(tree, "new", "task", "x", "--under", "ship", "--set", "attempts=3", "--now", T)
    assert done.returncode == 2 and "attempts" in done.stderr


# -- item 6: friendlier values ---------------------------------------------------------------


def test_a_decimal_interval_is_read(tree: Path) -> None:
    ok(
        tree,
        "new",
        "intention",
        "soon",
        "--set",
        "closes-when=x",
        "--set",
        "stale-after=1.5h",
        "--now",
        T,
    )
    findings = json.loads(rouse(tree, "check", "--json").stdout)
    assert not [f for f in findings if f["level"] == "error"]
    due = as_json(tree, "due", "--now", stamp(NOW + timedelta(minutes=90)))
    assert "intention/soon" in [d["record"] for d in due]
    due = as_json(tree, "due", "--now", stamp(NOW + timedelta(minutes=89)))
    assert "intention/soon" not in [d["record"] for d in due]


def test_a_motivation_without_keywords_stays_whole_under_a_query(tree: Path) -> None:
    ok(tree, "new", "motivation", "users", "--body", "Users first.", "--now", T)
    assert "keywords:" in (tree / "entrypoint/beliefs/motivations/motivation-users.md").read_text()
    ok(
        tree,
        "new",
        "motivation",
        "cost",
        "--body",
        "Keep it cheap.",
        "--set",
        "keywords=money",
        "--now",
        T,
    )
    pack = as_json(tree, "pack", "--query", "database migration", "--now", T)
    bodies = {m["slug"]: m["body"] for m in pack["motivations"]}
    assert bodies["users"] is not None and "Users first." in bodies["users"]
    assert bodies["cost"] is None  # judged off-topic by its keywords
