"""The one-way mirror (issue 14, deliverable 5): a tree's files as rows, on a real PostgreSQL.

Every test compares the rows with the files themselves (read here, apart from
the mirror's code), and counts what a sync rewrote by the rows' own
``mirrored_at`` (each sync is one transaction: its ``now()``), not only by
what the mirror says it did.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import BACKLOG, INTENTIONS, NOTES, NOW, OLD, REMINDERS, MakeTree, set_mtime, stamp
from rouse.core import clock
from rouse.core.body import split_log
from rouse.core.header import split
from rouse.core.identity import ensure_tree_id
from rouse.core.tree import display_ids, walk
from rouse.fleet import due
from rouse.fleet.mirror import Mirror
from rouse.fleet.mirror_rows import BODY_CAP, mirrored_files
from rouse.fleet.pg import PgDatabase
from rouse.fleet.pg_schema import migrate
from rouse.trust.origins import origin_reader
from rouse.trust.stamp import stamp as stamp_files
from rouse.trust.stampkey import load_key

GOAL = f"{INTENTIONS}/ship/goal-a"

TREE = {
    "persona.md": "---\norigin: owner\n---\nI keep the lights on.\n",
    "entrypoint/beliefs/belief-uptime.md": "---\nkeywords: uptime, pager\n---\nUptime matters.\n",
    f"{INTENTIONS}/ship/intention.md": f"""
        ---
        status: open
        last-moved: {stamp(NOW - timedelta(hours=5))}
        closes-when: the release is tagged
        origin: agent
        ---
        Ship the release.

        ## Log <!-- rouse:log -->
        - 2026-03-13 10:00: cut the branch
        """,
    f"{GOAL}/goal.md": f"""
        ---
        status: open
        last-moved: {stamp(NOW - timedelta(hours=3))}
        ---
        A goal with a child.
        """,
    f"{GOAL}/task-a/task.md": f"""
        ---
        status: pending
        last-moved: {stamp(NOW - timedelta(hours=30))}
        ---
        The child task.
        """,
    f"{REMINDERS}/renew/reminder.md": f"""
        ---
        status: pending
        due: {stamp(NOW + timedelta(hours=1))}
        ---
        Renew the certificate.
        """,
    f"{REMINDERS}/nagger/reminder.md": f"""
        ---
        status: pending
        due: {stamp(NOW - timedelta(hours=2))}
        nag: 30m
        fires: 9
        ---
        Nag me.
        """,
    f"{BACKLOG}/idea/backlog.md": "---\nstatus: open\n---\nSomeday.\n",
    f"{NOTES}/postgres-tips.md": "---\nkeywords: postgres, vacuum\n---\nVacuum nightly.\n",
    "entrypoint/plugins/weather.md": "---\norigin: owner\n---\nA plugin.\n",
}


@pytest.fixture
def db(pg_dsn: str) -> Iterator[PgDatabase]:
    database = PgDatabase(pg_dsn)
    migrate(database, database.where)
    yield database
    database.close()


def make_mirror(root: Path, db: PgDatabase, key: Path | None = None) -> Mirror:
    tree, _ = ensure_tree_id(root)
    reader = origin_reader(root, key if key is not None else root.parent / "no-key")
    return Mirror(root, db, tree, reader)


def rows(db: PgDatabase, tree: str) -> dict[str, Any]:
    found = db.execute("SELECT * FROM mirror_files WHERE tree = ?", (tree,)).fetchall()
    return {row["path"]: row for row in found}


def written_at(db: PgDatabase, tree: str) -> dict[str, datetime]:
    return {path: row["mirrored_at"] for path, row in rows(db, tree).items()}


def assert_mirror_equals_files(db: PgDatabase, mirror: Mirror) -> None:
    """The rows are the files: the same paths, headers, bodies, logs, sizes and mtimes."""
    tree = walk(mirror.root)
    files = mirrored_files(tree)
    ids = display_ids(tree)
    found = rows(db, mirror.tree)
    assert sorted(found) == sorted(files)
    for rel, (file, kind) in files.items():
        row = found[rel]
        data = (mirror.root / rel).read_bytes()
        head, body = split(data, rel)
        authored, log = split_log(body)
        info = os.lstat(mirror.root / rel)
        assert row["kind"] == kind, rel
        assert row["header"] == head.fields, rel
        assert row["body"] == authored.decode(), rel
        assert row["log"] == log.decode(), rel
        assert (row["size"], row["mtime_ns"]) == (info.st_size, info.st_mtime_ns), rel
        assert row["body_note"] is None, rel
        record = getattr(file, "dir", None)
        assert row["record"] == record, rel
        assert row["record_id"] == (ids[record] if record is not None else None), rel


def due_set(items: list[due.DueItem]) -> set[tuple[str, str, datetime]]:
    return {(d.path, d.reason, d.due_at) for d in items}


def clock_due_set(root: Path, when: datetime) -> set[tuple[str, str, datetime]]:
    found = clock.due(walk(root), when)
    return {(d.record.dir, d.reason or "", d.due_at or when) for d in found}


# -- a sync -------------------------------------------------------------------------


def test_the_rows_equal_the_files_after_a_sync(make_tree: MakeTree, db: PgDatabase) -> None:
    root = make_tree(TREE)
    mirror = make_mirror(root, db)
    written = mirror.sync(walk(root), NOW)
    assert written == len(TREE)
    assert mirror.stats.full and mirror.stats.skipped == 0
    assert_mirror_equals_files(db, mirror)
    found = rows(db, mirror.tree)
    ship = found[f"{INTENTIONS}/ship/intention.md"]
    assert ship["body"].strip() == "Ship the release."
    assert ship["log"].strip() == "- 2026-03-13 10:00: cut the branch"
    assert ship["status"] == "open" and ship["open"] is True
    assert ship["origin"] == "agent" and ship["verified"] == "as-written"
    assert found[f"{NOTES}/postgres-tips.md"]["keywords"] == "postgres, vacuum"
    assert found["entrypoint/plugins/weather.md"]["kind"] == "plugin"
    state = db.execute("SELECT * FROM mirror_state WHERE tree = ?", (mirror.tree,)).fetchone()
    assert (state["files"], state["root"]) == (len(TREE), str(root))


def test_only_changed_files_are_read_and_written(make_tree: MakeTree, db: PgDatabase) -> None:
    root = make_tree(TREE)
    mirror = make_mirror(root, db)
    mirror.sync(walk(root), NOW)
    before = written_at(db, mirror.tree)

    assert mirror.sync(walk(root), NOW) == 0  # nothing changed: nothing written
    assert mirror.stats.unchanged == len(TREE)
    assert written_at(db, mirror.tree) == before

    note = root / NOTES / "postgres-tips.md"
    note.write_text("---\nkeywords: postgres\n---\nVacuum weekly now.\n")
    set_mtime(note, OLD + timedelta(hours=1))
    (root / NOTES / "new.md").write_text("---\nkeywords: fresh\n---\nA new note.\n")
    set_mtime(root / NOTES / "new.md", OLD)
    shutil.rmtree(root / BACKLOG / "idea")
    assert mirror.sync(walk(root), NOW) == 2
    assert (mirror.stats.written, mirror.stats.deleted) == (2, 1)
    after = written_at(db, mirror.tree)
    rewritten = {path for path in after if after[path] != before.get(path)}
    assert rewritten == {f"{NOTES}/postgres-tips.md", f"{NOTES}/new.md"}
    assert f"{BACKLOG}/idea/backlog.md" not in after
    assert_mirror_equals_files(db, mirror)


def test_a_file_written_just_now_is_read_again_next_sync(
    make_tree: MakeTree, db: PgDatabase
) -> None:
    root = make_tree(TREE)
    mirror = make_mirror(root, db)
    mirror.sync(walk(root), NOW)
    note = root / NOTES / "postgres-tips.md"
    note.write_text("---\nkeywords: postgres\n---\nWritten this instant.\n")  # mtime: now
    mirror.sync(walk(root), NOW)
    assert rows(db, mirror.tree)[f"{NOTES}/postgres-tips.md"]["settled"] is False
    # same size, same mtime tick: only a re-read can catch a second write in that tick
    assert mirror.sync(walk(root), NOW) == 1
    set_mtime(note, OLD)
    mirror.sync(walk(root), NOW)
    assert rows(db, mirror.tree)[f"{NOTES}/postgres-tips.md"]["settled"] is True
    assert mirror.sync(walk(root), NOW) == 0


def test_a_parents_clock_follows_its_child_without_rereading_it(
    make_tree: MakeTree, db: PgDatabase
) -> None:
    root = make_tree(TREE)
    mirror = make_mirror(root, db)
    mirror.sync(walk(root), NOW)
    goal = rows(db, mirror.tree)[f"{GOAL}/goal.md"]
    assert goal["silenced"] is True and goal["wake_at"] is None  # the open task silences it
    task = root / GOAL / "task-a" / "task.md"
    task.write_text(task.read_text().replace("status: pending", "status: done"))
    set_mtime(task, OLD + timedelta(hours=2))
    before = written_at(db, mirror.tree)

    mirror.sync(walk(root), NOW)
    assert (mirror.stats.written, mirror.stats.clock) == (1, 1)  # the task read, the goal's plan
    goal = rows(db, mirror.tree)[f"{GOAL}/goal.md"]
    assert goal["silenced"] is False and goal["wake_at"] is not None
    assert written_at(db, mirror.tree)[f"{GOAL}/goal.md"] != before[f"{GOAL}/goal.md"]
    assert due_set(due.due(db, NOW)) == clock_due_set(root, NOW)


@pytest.mark.parametrize("hours", [0, 1, 2, 6, 30, 24 * 3, 24 * 30])
def test_due_read_later_agrees_with_the_clock_at_that_instant(
    make_tree: MakeTree, db: PgDatabase, hours: int
) -> None:
    """The plan stores instants: a record that comes due after the sync reads due, unsynced."""
    files = dict(TREE)
    files[f"{INTENTIONS}/reviewed/intention.md"] = f"""
        ---
        status: open
        last-moved: {stamp(NOW - timedelta(minutes=20))}
        review-every: 4h
        reviewed: {stamp(NOW - timedelta(hours=1))}
        ---
        Reviewed often.
        """
    files[f"{REMINDERS}/expiring/reminder.md"] = f"""
        ---
        status: pending
        due: {stamp(NOW + timedelta(hours=1, minutes=30))}
        expires: {stamp(NOW + timedelta(hours=5))}
        nag: 1h
        ---
        Until five.
        """
    root = make_tree(files)
    mirror = make_mirror(root, db)
    mirror.sync(walk(root), NOW)
    later = NOW + timedelta(hours=hours, minutes=1)
    assert due_set(due.due(db, later)) == clock_due_set(root, later)


def test_a_fresh_mirror_reads_back_what_the_rows_hold(make_tree: MakeTree, db: PgDatabase) -> None:
    root = make_tree(TREE)
    make_mirror(root, db).sync(walk(root), NOW)
    again = make_mirror(root, db)  # a new sweeper process: it remembers nothing
    assert again.sync(walk(root), NOW) == 0
    assert again.stats.reloaded and not again.stats.full


# -- a lost database ---------------------------------------------------------------


def test_rows_deleted_behind_the_mirrors_back_are_written_again(
    make_tree: MakeTree, db: PgDatabase
) -> None:
    root = make_tree(TREE)
    mirror = make_mirror(root, db)
    mirror.sync(walk(root), NOW)
    db.execute("DELETE FROM mirror_files WHERE path LIKE ?", ("inventory/%",))
    mirror.sync(walk(root), NOW)
    assert mirror.stats.reloaded
    assert mirror.stats.written == sum(path.startswith("inventory/") for path in TREE)
    assert_mirror_equals_files(db, mirror)


def test_emptied_tables_cost_one_full_resync(make_tree: MakeTree, db: PgDatabase) -> None:
    root = make_tree(TREE)
    mirror = make_mirror(root, db)
    mirror.sync(walk(root), NOW)
    db.execute("TRUNCATE mirror_files, mirror_state")
    assert mirror.sync(walk(root), NOW) == len(TREE)
    assert mirror.stats.full
    assert_mirror_equals_files(db, mirror)
    assert mirror.sync(walk(root), NOW) == 0


@pytest.mark.parametrize(
    "loss",
    [
        "DROP TABLE mirror_files, mirror_state",
        "DROP SCHEMA public CASCADE; CREATE SCHEMA public",
    ],
)
def test_a_dropped_schema_is_made_again_and_resynced(
    make_tree: MakeTree, db: PgDatabase, loss: str
) -> None:
    root = make_tree(TREE)
    mirror = make_mirror(root, db)
    mirror.sync(walk(root), NOW)
    for statement in loss.split(";"):
        db.execute(statement)
    assert mirror.sync(walk(root), NOW) == len(TREE)
    assert_mirror_equals_files(db, mirror)


def test_state_from_another_mirror_forces_a_reload(make_tree: MakeTree, db: PgDatabase) -> None:
    """Two clones leading in turn: each notices the other's writes by the epoch."""
    root = make_tree(TREE)
    first, second = make_mirror(root, db), make_mirror(root, db)
    first.sync(walk(root), NOW)
    second.sync(walk(root), NOW)
    note = root / NOTES / "postgres-tips.md"
    note.write_text("---\nkeywords: postgres\n---\nChanged while the other led.\n")
    set_mtime(note, OLD + timedelta(hours=3))
    assert second.sync(walk(root), NOW) == 1
    assert first.sync(walk(root), NOW) == 0  # it reloads, and finds the rows already right
    assert first.stats.reloaded
    assert_mirror_equals_files(db, first)


# -- bad files -------------------------------------------------------------------------


def test_bad_files_are_skipped_and_counted_never_raised(
    make_tree: MakeTree, db: PgDatabase
) -> None:
    huge = "---\nkeywords: huge\n---\n" + ("lorem ipsum dolor " * 80_000)
    root = make_tree(
        {
            **TREE,
            f"{NOTES}/binary-header.md": b"\x00\x01\x02 not text\n",
            f"{NOTES}/latin1.md": "---\nkeywords: caf\xe9\n---\n".encode("latin-1"),
            f"{NOTES}/unterminated.md": "---\nkeywords: x\nno closing fence\n",
            f"{NOTES}/nul-body.md": b"---\nkeywords: blob\n---\nbefore\x00after\n",
            f"{NOTES}/not-utf8-body.md": b"---\nkeywords: bytes\n---\ncaf\xe9 au lait\n",
            f"{NOTES}/huge.md": huge,
            f"{NOTES}/noise.md": "---\n---\n" + " ".join(f"w{i}x" for i in range(200_000)),
        }
    )
    odd = os.path.join(os.fsencode(root / NOTES), b"caf\xe9.md")
    with open(odd, "wb") as handle:
        handle.write(b"---\nkeywords: odd\n---\nA name that is not UTF-8.\n")
    mirror = make_mirror(root, db)
    mirror.sync(walk(root), NOW)
    assert mirror.stats.skipped == 4  # three bad headers, one name PostgreSQL cannot hold
    found = rows(db, mirror.tree)
    assert f"{NOTES}/latin1.md" not in found and f"{NOTES}/binary-header.md" not in found
    blob = found[f"{NOTES}/nul-body.md"]
    assert blob["body"] == "" and "NUL" in blob["body_note"]
    assert found[f"{NOTES}/not-utf8-body.md"]["body"] == "caf\ufffd au lait\n"
    big = found[f"{NOTES}/huge.md"]
    assert len(big["body"].encode()) == BODY_CAP
    assert big["body_bytes"] == len(huge) - len("---\nkeywords: huge\n---\n")
    assert "cut" in big["body_note"] and f"{big['body_bytes']:,}" in big["body_note"]
    assert found[f"{NOTES}/noise.md"]["search"]  # a tsvector, though PostgreSQL caps them
    state = db.execute("SELECT skipped FROM mirror_state WHERE tree = ?", (mirror.tree,))
    assert state.fetchone()["skipped"] == 4


# -- provenance --------------------------------------------------------------------------


def test_each_row_says_whether_its_origin_verified_here(
    make_tree: MakeTree, db: PgDatabase, key_path: Path
) -> None:
    root = make_tree(TREE)
    stamp_files(root, ["persona.md"], "owner", None, cwd=root, key=load_key(key_path))
    set_mtime(root / "persona.md", OLD)
    mirror = make_mirror(root, db, key_path)
    mirror.sync(walk(root), NOW)
    found = rows(db, mirror.tree)
    persona = found["persona.md"]
    assert (persona["origin"], persona["origin_written"], persona["verified"]) == (
        "owner",
        "owner",
        "verified",
    )
    typed = found[f"{INTENTIONS}/ship/intention.md"]  # `origin: agent` typed, never signed
    assert (typed["origin"], typed["origin_written"], typed["verified"]) == (
        "unknown",
        "agent",
        "unsigned",
    )

    unkeyed = make_mirror(root, db)  # the same tree judged without a key: another verdict
    unkeyed.sync(walk(root), NOW)
    assert unkeyed.stats.full
    persona = rows(db, mirror.tree)["persona.md"]
    assert (persona["origin"], persona["verified"]) == ("owner", "as-written")


# -- the property --------------------------------------------------------------------------

_NAMES = [f"n{i}" for i in range(6)]
_counter = iter(range(1, 10**9))

step = st.one_of(
    st.tuples(st.just("write"), st.sampled_from(_NAMES), st.text("abc xyz\n", max_size=40)),
    st.tuples(st.just("log"), st.sampled_from(_NAMES), st.text("abc", min_size=1, max_size=9)),
    st.tuples(st.just("move"), st.sampled_from(_NAMES), st.sampled_from(_NAMES)),
    st.tuples(st.just("delete"), st.sampled_from(_NAMES), st.just("")),
    st.tuples(st.just("task"), st.sampled_from(_NAMES), st.sampled_from(["pending", "done"])),
    st.tuples(st.just("sync"), st.just(""), st.just("")),
    st.tuples(st.just("forget"), st.just(""), st.just("")),
)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(steps=st.lists(step, max_size=14))
def test_the_mirror_equals_the_files_after_random_edits_moves_and_deletes(
    tmp_path: Path, db: PgDatabase, steps: list[tuple[str, str, str]]
) -> None:
    root = tmp_path / f"tree{next(_counter)}"
    notes = root / NOTES
    notes.mkdir(parents=True)
    goal = root / INTENTIONS / "g" / "goal-g"
    goal.mkdir(parents=True)
    (goal / "goal.md").write_text(f"---\nstatus: open\nlast-moved: {stamp(NOW)}\n---\nG.\n")
    set_mtime(goal / "goal.md", OLD)
    mirror = make_mirror(root, db)
    mirror.sync(walk(root), NOW)

    def touch(path: Path) -> None:
        set_mtime(path, OLD + timedelta(seconds=next(_counter)))  # a new, settled mtime

    for action, name, value in steps:
        path = notes / f"{name}.md"
        if action == "write":
            path.write_text(f"---\nkeywords: {name}\n---\n{value}")
            touch(path)
        elif action == "log" and path.exists():
            with path.open("a") as handle:
                handle.write(f"\n## Log <!-- rouse:log -->\n- {value}\n")
            touch(path)
        elif action == "move" and path.exists():
            path.rename(notes / f"{value}.md")
        elif action == "delete":
            path.unlink(missing_ok=True)
        elif action == "task":
            task = goal / name / "task.md"
            task.parent.mkdir(exist_ok=True)
            task.write_text(f"---\nstatus: {value}\nlast-moved: {stamp(NOW)}\n---\nT.\n")
            touch(task)
        elif action == "sync":
            mirror.sync(walk(root), NOW)
        elif action == "forget":
            mirror = make_mirror(root, db)
    mirror.sync(walk(root), NOW)
    assert_mirror_equals_files(db, mirror)
    assert due_set(due.due(db, NOW + timedelta(days=2), [mirror.tree])) == clock_due_set(
        root, NOW + timedelta(days=2)
    )
