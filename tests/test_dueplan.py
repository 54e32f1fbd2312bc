"""One rule (issue 30, item 1): a plan decides as the clock does, at every later instant.

The clock's decision at ``t0`` holds a :class:`rouse.core.dueplan.DuePlan`; at
any later ``t`` its verdict — read from the plan itself, from the walk
cache's list of microseconds, and from the fleet's aware columns — must be
the clock's own decision at ``t``. Random records and instants around the DST
changes of New York and Berlin.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import INTENTIONS, REMINDERS, stamp, write_tree
from rouse.cache import plans
from rouse.core import clock
from rouse.core.clock import plan_of
from rouse.core.dueplan import aware, due_at_time
from rouse.core.timefmt import real
from rouse.core.tree import walk

#: (zone, the day clocks change there), both ways
CHANGES = [
    ("America/New_York", datetime(2026, 3, 8)),
    ("America/New_York", datetime(2026, 11, 1)),
    ("Europe/Berlin", datetime(2026, 3, 29)),
    ("Europe/Berlin", datetime(2026, 10, 25)),
]
INTERVALS = ["15m", "45m", "1h", "3h", "2h30m", "1d", "1d2h", "2d", "1w"]
SHIP = f"{INTENTIONS}/ship"
CALL = f"{REMINDERS}/call"


@pytest.fixture(scope="module")
def zone() -> Iterator[Any]:
    import os

    before = os.environ.get("TZ")

    def use(name: str) -> None:
        os.environ["TZ"] = name
        time.tzset()

    yield use
    if before is None:
        os.environ.pop("TZ", None)
    else:
        os.environ["TZ"] = before
    time.tzset()


minutes = st.integers(-3 * 24 * 60, 12 * 60)
maybe_interval = st.none() | st.sampled_from(INTERVALS)


@st.composite
def cases(draw: st.DrawFn) -> tuple[str, datetime, dict[str, str], list[int]]:
    name, day = draw(st.sampled_from(CHANGES))
    t0 = day + timedelta(minutes=draw(st.integers(-12 * 60, 12 * 60)))

    def before() -> str:
        return stamp(t0 + timedelta(minutes=min(draw(minutes), 0)))

    kind = draw(st.sampled_from(["intention", "goal", "action", "task", "reminder"]))
    fields: dict[str, str] = {"kind": kind, "last-moved": before()}
    if kind == "reminder":
        fields["due"] = stamp(t0 + timedelta(minutes=draw(minutes)))
        if draw(st.booleans()):
            fields["nag"] = draw(st.sampled_from(INTERVALS))
            fields["fires"] = str(draw(st.integers(0, 4)))
            fields["max-fires"] = str(draw(st.integers(1, 6)))
        if draw(st.booleans()):
            fields["expires"] = stamp(t0 + timedelta(minutes=draw(minutes)))
    else:
        for key in ("stale-after", "review-every"):
            value = draw(maybe_interval)
            if value is not None:
                fields[key] = value
        for key in ("opened", "reviewed", "swept"):
            if draw(st.booleans()):
                fields[key] = before()
        if draw(st.booleans()):
            fields["snoozed-until"] = stamp(t0 + timedelta(minutes=draw(minutes)))
        if draw(st.booleans()):
            fields["child"] = draw(st.sampled_from(["open", "done"]))
    later = draw(st.lists(st.integers(0, 4 * 24 * 60), min_size=1, max_size=8))
    return name, t0, fields, later


def _tree(root: Path, fields: dict[str, str]) -> str:
    kind = fields.pop("kind")
    child = fields.pop("child", None)
    rel = CALL if kind == "reminder" else SHIP if kind == "intention" else f"{SHIP}/{kind}"
    header = "".join(f"{k}: {v}\n" for k, v in fields.items())
    files = {f"{rel}/{kind}.md": f"---\ncloses-when: x\n{header}---\n"}
    if kind != "intention" and kind != "reminder":
        files[f"{SHIP}/intention.md"] = "---\ncloses-when: x\nstatus: done\n---\n"
    if child is not None:
        child_kind = "task" if kind in ("action", "task") else "action"
        status = "pending" if child_kind == "task" and child == "open" else child
        files[f"{rel}/c/{child_kind}.md"] = f"---\nstatus: {status}\n---\n"
    write_tree(root, files)
    return rel


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow,
          HealthCheck.function_scoped_fixture])  # fmt: skip
@given(case=cases())
def test_the_plan_decides_as_the_clock_at_every_later_instant(
    zone: Any, tmp_path_factory: pytest.TempPathFactory, case: Any
) -> None:
    name, t0, fields, later = case
    zone(name)
    t0 = real(t0)  # (a time in the gap names the instant after it, as every stamp does)
    root = tmp_path_factory.mktemp("plan") / "memory"
    rel = _tree(root, dict(fields))
    tree = walk(root)
    record = tree.records[rel]
    decision = clock.evaluate(tree, record, t0)
    assert not decision.problems
    plan = plan_of(decision)
    stored = plans.make_plan(tree, record, t0)
    columns = {
        key: (aware(value) if isinstance(value, datetime) else value)
        for key, value in plan.columns().items()
    }
    columns["kind"] = record.type
    for offset in later:
        t = datetime.fromtimestamp(t0.timestamp() + offset * 60)  # real minutes later
        truth = clock.evaluate(tree, record, t)
        expected = None if truth.reason is None else (truth.reason, truth.due_at)
        assert plan.at(t) == expected, (name, t0, fields, t)
        fleet = due_at_time(columns, t.astimezone())
        if expected is None:
            assert fleet is None
        else:
            assert fleet is not None and fleet[0] == expected[0]
            assert fleet[1].timestamp() == expected[1].timestamp()
        if isinstance(stored, list):
            at = plans.micros(t)
            assert at is not None
            due = stored[2] is not None and at >= stored[2]
            assert due == (expected is not None)
            if due:
                made = plans._verdict(record, stored, at)
                assert (made[3], plans.instant(made[4])) == expected
