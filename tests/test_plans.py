"""Clock plans in the walk cache (issue 24): a warm walk decides from stored
instants, and decides exactly as the clock does.

The property: on a random tree, the plans a cached walk kept decide at random
later instants exactly as a fresh ``clock`` evaluation of an uncached walk —
the same records due, for the same reason, at the same instants, with the same
nudge, the same snoozed count and the same unreadable fields — and still do
after random edits, moves and deletes (with the sweeper's plan-less walk
sometimes in between).
"""

from __future__ import annotations

import heapq
import json
import os
import random
import shutil
import tempfile
from datetime import datetime, timedelta
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import INTENTIONS, NOW, REMINDERS, set_mtime, stamp, write_tree
from rouse.cache.plans import survey
from rouse.cache.walk import HeaderCache, cached_walk
from rouse.core import clock
from rouse.core.tree import Tree, walk


def _settle(root: Path, when: datetime) -> None:
    """Every directory's mtime to ``when`` (past the racy window, distinct per round)."""
    for directory, _, _ in os.walk(root):
        if ".rouse" not in Path(directory).parts:
            set_mtime(Path(directory), when)


def _fields(rng: random.Random, kind: str) -> dict[str, str]:
    def at(hours: int) -> str:
        return stamp(NOW + timedelta(hours=rng.randint(-hours, hours), minutes=rng.randint(0, 59)))

    fields: dict[str, str] = {}
    if kind == "reminder":
        fields["status"] = rng.choice(["pending", "pending", "fired", "done", "odd"])
        if rng.random() < 0.9:
            fields["due"] = at(72)
        if rng.random() < 0.3:
            fields["nag"] = rng.choice(["30m", "1h", "bogus"])
            fields["fires"] = str(rng.randint(0, 4))
            if rng.random() < 0.5:
                fields["max-fires"] = str(rng.randint(1, 5))
        if rng.random() < 0.3:
            fields["expires"] = at(96)
        if rng.random() < 0.1:
            fields["every"] = rng.choice(["1d", "weekly"])
        return fields
    states = {
        "intention": ["open", "open", "done", "dropped"],
        "goal": ["open", "open", "done"],
        "action": ["open", "done"],
        "task": ["pending", "running", "done"],
        "backlog": ["open", "dropped"],
    }[kind]
    fields["status"] = rng.choice([*states, "weird"] if rng.random() < 0.05 else states)
    if rng.random() < 0.9:
        fields["last-moved"] = at(60)
    if rng.random() < 0.3:
        fields["swept"] = at(30)
    if rng.random() < 0.2:
        fields["stale-after"] = rng.choice(["10m", "3h", "2d", "nonsense"])
    if rng.random() < 0.2:
        fields["review-every"] = rng.choice(["4h", "1d"])
        if rng.random() < 0.5:
            fields["reviewed"] = at(48)
    if rng.random() < 0.2:
        fields["snoozed-until"] = at(48)
    if rng.random() < 0.1:
        fields["nudges"] = rng.choice(["2", "x"])
    if kind == "action" and rng.random() < 0.2:
        fields["outcome"] = rng.choice(["as-expected", "surprising", "maybe"])
    return fields


def _text(fields: dict[str, str]) -> str:
    return "---\n" + "".join(f"{k}: {v}\n" for k, v in fields.items()) + "---\nbody\n"


def _random_tree(rng: random.Random) -> dict[str, str]:
    files: dict[str, str] = {}
    for i in range(rng.randint(1, 5)):
        top = f"{INTENTIONS}/i{i}"
        files[f"{top}/intention.md"] = _text(_fields(rng, "intention"))
        for j in range(rng.randint(0, 3)):
            kind = rng.choice(["goal", "task", "backlog"])
            mid = f"{top}/{kind[0]}{j}"
            files[f"{mid}/{kind}.md"] = _text(_fields(rng, kind))
            if kind == "goal":
                for k in range(rng.randint(0, 3)):
                    low = rng.choice(["action", "task"])
                    files[f"{mid}/{low[0]}{k}/{low}.md"] = _text(_fields(rng, low))
    for i in range(rng.randint(0, 4)):
        files[f"{REMINDERS}/r{i}/reminder.md"] = _text(_fields(rng, "reminder"))
    return files


def _verdicts(tree: Tree, when: datetime) -> tuple[object, ...]:
    """What the clock says at ``when``, fresh: the due ones, the snoozed count, problems."""
    every = clock.decisions(tree, when)
    due = sorted(
        (d.record.dir, d.reason, d.due_at, d.moved_at, d.moved_from, d.nudge)
        for d in clock.select_due(every)
    )
    snoozed = sum(d.snoozed_until is not None for d in every)
    problems = sorted(p.render() for p in clock.field_problems(every))
    return due, snoozed, problems


def _planned_verdicts(tree: Tree, when: datetime) -> tuple[object, ...]:
    found = survey(tree, when)
    due = sorted(
        (d.record.dir, d.reason, d.due_at, d.moved_at, d.moved_from, d.nudge) for d in found.due
    )
    assert found.count == len(due)
    return due, found.snoozed, sorted(p.render() for p in found.problems)


def _first_shown(tree: Tree, when: datetime, skip: set[str]) -> tuple[object, ...]:
    """The pack's due list from plans: the 3 still longest, and how many in all."""
    shown, total = survey(tree, when).first(3, skip)
    return [(d.record.dir, d.reason, d.due_at) for d in shown], total


def _first_fresh(tree: Tree, when: datetime, skip: set[str]) -> tuple[object, ...]:
    wanted = [d for d in clock.due(tree, when) if d.record.dir not in skip]
    shown = heapq.nsmallest(3, wanted, key=lambda d: (clock.still_since(d), d.record.dir))
    return [(d.record.dir, d.reason, d.due_at) for d in shown], len(wanted)


def _mutate(rng: random.Random, root: Path, when: datetime) -> None:
    """One edit, move or delete of a random record (its file's mtime past the racy window)."""
    records = sorted(walk(root).records.values(), key=lambda r: r.dir)
    if not records:
        return
    record = rng.choice(records)
    action = rng.choice(["edit", "edit", "move", "delete"])
    path = root / record.rel
    if action == "edit":
        path.write_text(_text(_fields(rng, record.type)))
        set_mtime(path, when)
    elif action == "delete":
        shutil.rmtree(root / record.dir)
    else:
        targets = [r for r in records if r.type in ("intention", "goal") and r is not record]
        targets = [t for t in targets if not t.dir.startswith(record.dir + "/")]
        if not targets or record.type == "intention":
            return
        target = rng.choice(targets)
        destination = root / target.dir / f"m{rng.randint(0, 10**6)}"
        os.rename(root / record.dir, destination)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1))
def test_plans_from_the_cache_decide_as_the_clock(seed: int) -> None:
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory(prefix="rouse-planned-") as scratch:
        root = write_tree(Path(scratch) / "memory", _random_tree(rng))
        settled = datetime(2021, 1, 1)
        _settle(root, settled)
        planned_at = NOW - timedelta(hours=rng.randint(0, 48))
        cached_walk(root, None, planned_at)  # plans made and kept
        for round_ in range(4):
            tree = cached_walk(root, None, planned_at)  # plans read back
            fresh = walk(root)
            assert sorted(tree.records) == sorted(fresh.records)
            for _ in range(12):
                when = planned_at + timedelta(minutes=rng.randint(0, 60 * 24 * 8))
                assert _planned_verdicts(tree, when) == _verdicts(fresh, when), (seed, when)
                skip = {r for r in fresh.records if rng.random() < 0.2}  # (as woken)
                assert _first_shown(tree, when, skip) == _first_fresh(fresh, when, skip)
            _mutate(rng, root, settled + timedelta(days=round_ + 1))
            _settle(root, settled + timedelta(days=round_ + 1))
            if rng.random() < 0.5:
                cached_walk(root, None)  # the sweeper's walk: no plans made


def _simple(make_tree) -> Path:  # type: ignore[no-untyped-def]
    files = {
        f"{INTENTIONS}/ship/intention.md": _text({"status": "open", "last-moved": stamp(NOW)}),
        f"{INTENTIONS}/ship/t1/task.md": _text(
            {"status": "pending", "last-moved": stamp(NOW - timedelta(days=3))}
        ),
        f"{INTENTIONS}/idle/intention.md": _text(
            {"status": "open", "last-moved": stamp(NOW - timedelta(days=3))}
        ),
        f"{REMINDERS}/call/reminder.md": _text({"status": "pending", "due": stamp(NOW)}),
    }
    root: Path = make_tree(files)
    _settle(root, datetime(2021, 1, 1))
    return root


def test_a_warm_walk_asks_the_clock_nothing(make_tree) -> None:  # type: ignore[no-untyped-def]
    root = _simple(make_tree)
    first = cached_walk(root, None, NOW)
    assert survey(first, NOW).evaluated == 0  # the plans just made
    warm = cached_walk(root, None, NOW + timedelta(hours=1))
    assert all(r.plan is not None for r in warm.records.values())
    found = survey(warm, NOW + timedelta(hours=5))
    assert found.evaluated == 0
    assert sorted(d.record.dir for d in found.due) == [
        f"{INTENTIONS}/idle",
        f"{INTENTIONS}/ship/t1",
        "inventory/reminders/call",
    ]


def test_a_child_closing_replans_its_parents_only(make_tree) -> None:  # type: ignore[no-untyped-def]
    root = _simple(make_tree)
    cached_walk(root, None, NOW)
    task = root / INTENTIONS / "ship/t1/task.md"
    task.write_text(_text({"status": "done", "last-moved": stamp(NOW - timedelta(days=3))}))
    set_mtime(task, datetime(2021, 2, 1))
    later = NOW + timedelta(hours=1)
    tree = cached_walk(root, None, later)
    since = {d: r.plan[0] for d, r in tree.records.items() if r.plan}
    assert (
        since[f"{INTENTIONS}/ship"] == since[f"{INTENTIONS}/ship/t1"] != since[f"{INTENTIONS}/idle"]
    )
    # the task no longer silences the intention: due 2h after its last move
    found = survey(tree, NOW + timedelta(hours=3))
    assert f"{INTENTIONS}/ship" in {d.record.dir for d in found.due}


def test_the_sweepers_walk_drops_a_parents_stale_plan(make_tree) -> None:  # type: ignore[no-untyped-def]
    root = _simple(make_tree)
    cached_walk(root, None, NOW)
    task = root / INTENTIONS / "ship/t1/task.md"
    task.write_text(_text({"status": "done", "last-moved": stamp(NOW)}))
    set_mtime(task, datetime(2021, 2, 1))
    cached_walk(root, None)  # sees the task change, makes no plans
    tree = cached_walk(root, None, NOW)  # nothing changed since: the parent must be replanned
    when = NOW + timedelta(hours=3)
    assert _planned_verdicts(tree, when) == _verdicts(walk(root), when)


def test_a_hostile_plan_is_only_a_miss(make_tree) -> None:  # type: ignore[no-untyped-def]
    root = _simple(make_tree)
    cached_walk(root, None, NOW)
    path = root / ".rouse/cache/walk.json"
    magic, _, body = path.read_bytes().partition(b"\n")
    state = json.loads(body)
    # malformed, each one: a plan that cannot be read is a miss (the clock decides);
    # a well-formed one that lies does no more than editing the record would
    junk = iter(
        [
            "x",
            [1],
            ["a"] * 12,
            [0, 1, 0, 0, None, 10**30, None, 0, None, 1, 0, 0],
            [0, 2, "x", 0, None, None, None, 0, None, 1, 0, 0],
            [0, 1, 0, 9, None, None, None, 0, None, "7", 0, 5],
            {"a": 1},
            -1,
            True,
        ]
    )
    for bad in junk:
        for entry in state["dirs"].values():
            for cached in entry[4].values():
                cached[5] = bad
        path.write_bytes(magic + b"\n" + json.dumps(state).encode())
        tree = HeaderCache(root).walk()  # (no plan_at: what was kept is used as it is)
        for hours in (0, 3, 30, 300):
            when = NOW + timedelta(hours=hours)
            assert _planned_verdicts(tree, when) == _verdicts(walk(root), when), bad


def test_plans_made_under_another_zone_are_not_used(make_tree, local_tz) -> None:  # type: ignore[no-untyped-def]
    root = _simple(make_tree)
    local_tz("UTC")
    cached_walk(root, None, NOW)
    local_tz("America/New_York")
    tree = cached_walk(root, None, NOW)
    assert survey(tree, NOW).evaluated == 0  # made again, here
    assert json.loads((root / ".rouse/cache/walk.json").read_bytes().partition(b"\n")[2])[
        "zone"
    ].startswith("America/New_York")
