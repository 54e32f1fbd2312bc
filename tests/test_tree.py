"""One walk of the tree (SPEC §1): records and parents, context, notes, problems, refs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from conftest import (
    BACKLOG,
    BELIEFS,
    INTENTIONS,
    MOTIVATIONS,
    NOTES,
    OLD,
    PLUGINS,
    REMINDERS,
    MakeTree,
)
from rouse.core.errors import HeaderError, UsageError
from rouse.core.header import Header
from rouse.core.tree import Tree, walk

OPEN = "---\nstatus: open\n---\n"
PENDING = "---\nstatus: pending\n---\n"
I = INTENTIONS  # noqa: E741 - short alias keeps the tree literals readable


def paths_of(problems: list[object]) -> list[str]:
    return sorted(p.path for p in problems)  # type: ignore[attr-defined]


@pytest.fixture
def full(make_tree: MakeTree) -> Tree:
    root = make_tree(
        {
            "persona.md": "---\n---\nTerse and kind.\n",
            "entrypoint/rouse.md": "How to use this memory.\n",
            f"{BELIEFS}/belief-build-is-slow.md": "The build takes 20 minutes.\n",
            f"{BELIEFS}/belief-staging-ok.md": "---\norigin: owner\n---\nStaging is fine.\n",
            f"{MOTIVATIONS}/motivation-ship-it.md": "---\nkeywords: ship\n---\nShip.\n",
            f"{I}/ship/intention.md": OPEN,
            f"{I}/ship/migrate/goal.md": OPEN,
            f"{I}/ship/migrate/run-once/action.md": OPEN,
            f"{I}/ship/migrate/run-once/output.log": "not markdown\n",
            f"{I}/ship/migrate/run-once/notes.md": "a record's own thing\n",
            f"{I}/ship/migrate/run-once/check/task.md": PENDING,
            f"{I}/ship/docs/task.md": PENDING,
            f"{I}/ship/call-ops/reminder.md": "---\ndue: 2026-03-20\n---\n",
            f"{PLUGINS}/mcp.md": "---\n---\n",
            f"{NOTES}/deploy-steps.md": "---\nkeywords: deploy\n---\nSteps.\n",
            f"{NOTES}/diagram/note.md": "A diagram.\n",
            f"{NOTES}/diagram/diagram.png": b"\x89PNG\r\n\x1a\n\x00",
            f"{NOTES}/ops/oncall.md": "Grouped freely.\n",
            "inventory/probes.md": "Probes.\n",
            f"{REMINDERS}/dentist/reminder.md": "---\ndue: 2099-01-01 09:00\n---\n",
            f"{BACKLOG}/faster-ci/backlog.md": OPEN,
        }
    )
    return walk(root)


def test_records_types_ids_and_paths(full: Tree) -> None:
    assert sorted(full.records) == sorted(
        [
            f"{I}/ship",
            f"{I}/ship/migrate",
            f"{I}/ship/migrate/run-once",
            f"{I}/ship/migrate/run-once/check",
            f"{I}/ship/docs",
            f"{I}/ship/call-ops",
            f"{REMINDERS}/dentist",
            f"{BACKLOG}/faster-ci",
        ]
    )
    action = full.records[f"{I}/ship/migrate/run-once"]
    assert action.type == "action"
    assert action.slug == "run-once"
    assert action.id == "action/run-once"
    assert action.dir == f"{I}/ship/migrate/run-once"
    assert action.rel == f"{I}/ship/migrate/run-once/action.md"
    assert action.get("status") == "open"
    assert action.mtime == OLD
    assert action.size == len(OPEN)
    assert full.records[f"{REMINDERS}/dentist"].id == "reminder/dentist"


def test_parents_are_the_nearest_enclosing_record(full: Tree) -> None:
    r = full.records
    assert r[f"{I}/ship"].parent is None
    assert r[f"{I}/ship/migrate"].parent == f"{I}/ship"
    assert r[f"{I}/ship/migrate/run-once"].parent == f"{I}/ship/migrate"
    assert r[f"{I}/ship/migrate/run-once/check"].parent == f"{I}/ship/migrate/run-once"
    assert r[f"{I}/ship/docs"].parent == f"{I}/ship"  # a task directly under an intention
    assert r[f"{I}/ship/call-ops"].parent == f"{I}/ship"  # a reminder inside a record
    assert r[f"{REMINDERS}/dentist"].parent is None
    assert r[f"{BACKLOG}/faster-ci"].parent is None
    assert sorted(r[f"{I}/ship"].children) == [
        f"{I}/ship/call-ops",
        f"{I}/ship/docs",
        f"{I}/ship/migrate",
    ]
    assert sorted(d.dir for d in full.descendants(r[f"{I}/ship"])) == sorted(
        d for d in r if d.startswith(f"{I}/ship/")
    )
    assert sorted(x.dir for x in full.roots()) == [
        f"{I}/ship",
        f"{BACKLOG}/faster-ci",
        f"{REMINDERS}/dentist",
    ]


def test_context_files(full: Tree) -> None:
    context = sorted((c.kind, c.slug, c.rel) for c in full.context)
    assert context == [
        ("belief", "build-is-slow", f"{BELIEFS}/belief-build-is-slow.md"),
        ("belief", "staging-ok", f"{BELIEFS}/belief-staging-ok.md"),
        ("motivation", "ship-it", f"{MOTIVATIONS}/motivation-ship-it.md"),
        ("persona", "persona", "persona.md"),
    ]
    fenceless = next(c for c in full.context if c.slug == "build-is-slow")
    assert not fenceless.header.fenced  # a context file without a fence is still valid
    assert next(c for c in full.context if c.slug == "ship-it").get("keywords") == "ship"


def test_notes_plugins_probes_and_instructions(full: Tree) -> None:
    notes = sorted((n.slug, n.rel) for n in full.notes)
    assert notes == [
        ("deploy-steps", f"{NOTES}/deploy-steps.md"),
        ("diagram", f"{NOTES}/diagram/note.md"),
        ("oncall", f"{NOTES}/ops/oncall.md"),
    ]
    assert [p.rel for p in full.plugins] == [f"{PLUGINS}/mcp.md"]
    assert full.probes is not None and full.probes.rel == "inventory/probes.md"
    assert full.instructions == "entrypoint/rouse.md"


def test_a_healthy_tree_has_no_problems(full: Tree) -> None:
    assert full.untrackable == []
    assert full.symlinks == []
    assert full.strays == []
    assert full.conflicts == []


def test_top_level_intention_has_no_parent_however_deep(make_tree: MakeTree) -> None:
    tree = walk(
        make_tree(
            {
                f"{I}/work/2026/q1/ship/intention.md": OPEN,
                f"{I}/work/2026/q1/ship/a/b/c/task.md": PENDING,
            }
        )
    )
    assert tree.records[f"{I}/work/2026/q1/ship"].parent is None
    # non-record directories in between are skipped over: the nearest record wins
    assert tree.records[f"{I}/work/2026/q1/ship/a/b/c"].parent == f"{I}/work/2026/q1/ship"


def test_any_level_may_be_skipped(make_tree: MakeTree) -> None:
    tree = walk(
        make_tree(
            {
                f"{I}/x/intention.md": OPEN,
                f"{I}/x/act/action.md": OPEN,
                f"{I}/x/act/sub/reminder.md": PENDING,
                f"{I}/lonely-goal/goal.md": OPEN,  # a goal at the top: no parent
            }
        )
    )
    assert tree.records[f"{I}/x/act"].parent == f"{I}/x"
    assert tree.records[f"{I}/x/act/sub"].parent == f"{I}/x/act"
    assert tree.records[f"{I}/lonely-goal"].parent is None


@pytest.mark.parametrize("where", [INTENTIONS, MOTIVATIONS, BELIEFS, "entrypoint"])
def test_the_layer_directories_are_never_records(make_tree: MakeTree, where: str) -> None:
    tree = walk(
        make_tree(
            {
                f"{where}/task.md": PENDING,
                f"{I}/x/intention.md": OPEN,
            }
        )
    )
    assert where not in tree.records
    assert tree.records[f"{I}/x"].parent is None
    assert f"{where}/task.md" in paths_of(tree.strays)


def test_the_tree_root_is_never_a_record(make_tree: MakeTree) -> None:
    tree = walk(make_tree({"intention.md": OPEN, f"{I}/x/intention.md": OPEN}))
    assert list(tree.records) == [f"{I}/x"]
    assert tree.records[f"{I}/x"].parent is None


def test_record_files_under_notes_are_notes(make_tree: MakeTree) -> None:
    tree = walk(make_tree({f"{NOTES}/howto/task.md": "How tasks work.\n"}))
    assert tree.records == {}
    assert [n.rel for n in tree.notes] == [f"{NOTES}/howto/task.md"]


def test_a_records_own_things_are_not_notes_or_strays(make_tree: MakeTree) -> None:
    tree = walk(
        make_tree(
            {
                f"{I}/x/intention.md": OPEN,
                f"{I}/x/plan.md": "a plan\n",
                f"{I}/x/run.sh": "echo\n",
                f"{I}/x/out/screenshot.md": "nested thing\n",
            }
        )
    )
    assert list(tree.records) == [f"{I}/x"]
    assert tree.notes == []
    assert tree.strays == []


def test_untrackable_files_are_listed_and_skipped(make_tree: MakeTree) -> None:
    tree = walk(
        make_tree(
            {
                f"{I}/x/intention.md": OPEN,
                f"{I}/x/broken/goal.md": "---\nstatus: open\nno closing fence\n",
                f"{I}/x/broken/deeper/task.md": PENDING,
                f"{I}/latin/intention.md": b"---\nstatus: \xe9\n---\n",
                f"{BELIEFS}/belief-binary.md": b"\x00\x01\x02",
                f"{NOTES}/bad.md": b"\xff\xfe\x00n\x00",
                f"{PLUGINS}/p.md": "---\nx: y\n",
            }
        )
    )
    assert paths_of(tree.untrackable) == sorted(
        [
            f"{I}/x/broken/goal.md",
            f"{I}/latin/intention.md",
            f"{BELIEFS}/belief-binary.md",
            f"{NOTES}/bad.md",
            f"{PLUGINS}/p.md",
        ]
    )
    problem = next(p for p in tree.untrackable if p.path.endswith("goal.md"))
    assert "unterminated" in problem.message
    assert problem.render().startswith(f"{I}/x/broken/goal.md")
    assert sorted(tree.records) == [f"{I}/x", f"{I}/x/broken/deeper"]
    # the child of an untrackable record hangs from the nearest trackable one
    assert tree.records[f"{I}/x/broken/deeper"].parent == f"{I}/x"
    assert tree.context == [] and tree.notes == [] and tree.plugins == []


def test_the_walk_never_reads_a_body(make_tree: MakeTree) -> None:
    tree = walk(
        make_tree(
            {
                f"{I}/x/intention.md": b"---\nstatus: open\n---\n\xff\x00 binary body\n",
                f"{NOTES}/n.md": b"---\n---\n\xff\xfe",
            }
        )
    )
    assert list(tree.records) == [f"{I}/x"]
    assert tree.untrackable == []


def test_walk_uses_the_given_reader(make_tree: MakeTree) -> None:
    root = make_tree({f"{I}/x/intention.md": OPEN, f"{I}/y/intention.md": OPEN})
    seen: list[str] = []

    def reader(path: Path, rel: str, info: os.stat_result) -> Header:
        seen.append(rel)
        if rel.startswith(f"{I}/y/"):
            raise HeaderError("cached as broken", path=rel)
        return Header(fenced=True, fields={"status": "done"})

    tree = walk(root, read=reader)
    assert sorted(seen) == [f"{I}/x/intention.md", f"{I}/y/intention.md"]
    assert tree.records[f"{I}/x"].get("status") == "done"
    assert paths_of(tree.untrackable) == [f"{I}/y/intention.md"]


def test_symlinks_are_listed_and_never_followed(make_tree: MakeTree, tmp_path: Path) -> None:
    root = make_tree({f"{I}/real/intention.md": OPEN})
    outside = tmp_path / "outside"
    (outside / "evil").mkdir(parents=True)
    (outside / "evil" / "intention.md").write_text(OPEN)
    (outside / "belief-x.md").write_text("x\n")
    (root / I / "linked-dir").symlink_to(outside)
    (root / I / "linked-rec").mkdir()
    (root / I / "linked-rec" / "intention.md").symlink_to(outside / "evil" / "intention.md")
    (root / BELIEFS / "belief-linked.md").symlink_to(outside / "belief-x.md")
    (root / I / "loop").symlink_to(root / I)  # a loop must not hang the walk
    (root / NOTES).mkdir(parents=True)
    (root / NOTES / "dangling.md").symlink_to(root / "nowhere.md")

    tree = walk(root)
    assert sorted(tree.symlinks) == sorted(
        [
            f"{I}/linked-dir",
            f"{I}/linked-rec/intention.md",
            f"{BELIEFS}/belief-linked.md",
            f"{I}/loop",
            f"{NOTES}/dangling.md",
        ]
    )
    assert list(tree.records) == [f"{I}/real"]
    assert tree.context == []
    assert tree.notes == []


def test_state_and_git_directories_and_hidden_root_entries_are_skipped(
    make_tree: MakeTree,
) -> None:
    tree = walk(
        make_tree(
            {
                ".rouse/nudges/x/task.md": PENDING,
                ".git/x/intention.md": OPEN,
                ".hidden/y/intention.md": OPEN,
                f"{I}/.rouse/task.md": PENDING,
                f"{I}/z/intention.md": OPEN,
            }
        )
    )
    assert list(tree.records) == [f"{I}/z"]
    assert tree.untrackable == [] and tree.strays == []


def test_strays_in_the_context_layers(make_tree: MakeTree) -> None:
    tree = walk(
        make_tree(
            {
                f"{BELIEFS}/notes.md": "not a belief\n",
                f"{BELIEFS}/belief-Bad_Slug.md": "bad slug\n",
                f"{BELIEFS}/motivation-wrong-layer.md": "x\n",
                f"{BELIEFS}/drafts/belief-x.md": "x\n",
                f"{MOTIVATIONS}/belief-wrong-layer.md": "x\n",
                f"{MOTIVATIONS}/archive/old.md": "x\n",
                f"{MOTIVATIONS}/motivation-ok.md": "ok\n",
                f"{BELIEFS}/belief-ok.md": "ok\n",
                "entrypoint/loose.md": "x\n",
                f"{I}/readme.md": "x\n",
                f"{I}/x/persona.md": "wrong place\n",
                f"{I}/x/intention.md": OPEN,
            }
        )
    )
    assert sorted(c.slug for c in tree.context) == ["ok", "ok"]
    assert paths_of(tree.strays) == sorted(
        [
            f"{BELIEFS}/notes.md",
            f"{BELIEFS}/belief-Bad_Slug.md",
            f"{BELIEFS}/motivation-wrong-layer.md",
            f"{BELIEFS}/drafts",  # only motivations/ belongs in beliefs/
            f"{BELIEFS}/drafts/belief-x.md",  # and what is in it is loose
            f"{MOTIVATIONS}/belief-wrong-layer.md",
            f"{MOTIVATIONS}/archive",
            f"{MOTIVATIONS}/archive/old.md",
            "entrypoint/loose.md",
            f"{I}/readme.md",
            f"{I}/x/persona.md",
        ]
    )


def test_the_next_layer_directory_is_not_a_stray(make_tree: MakeTree) -> None:
    tree = walk(make_tree({f"{I}/": "", f"{BELIEFS}/belief-a.md": "a\n"}))
    assert tree.strays == []


def test_two_record_files_in_one_directory(make_tree: MakeTree) -> None:
    tree = walk(make_tree({f"{I}/x/task.md": PENDING, f"{I}/x/intention.md": OPEN}))
    assert paths_of(tree.conflicts) == [f"{I}/x"]
    assert "intention.md" in tree.conflicts[0].message
    assert "task.md" in tree.conflicts[0].message
    assert list(tree.records) == [f"{I}/x"]
    assert tree.records[f"{I}/x"].type == "intention"


def test_an_empty_or_missing_tree(make_tree: MakeTree, tmp_path: Path) -> None:
    tree = walk(make_tree({}))
    assert tree.records == {} and tree.context == [] and tree.untrackable == []
    missing = walk(tmp_path / "nope")
    assert missing.records == {}


# -- resolve ------------------------------------------------------------------------


@pytest.fixture
def refs(make_tree: MakeTree) -> Tree:
    return walk(
        make_tree(
            {
                f"{I}/ship/intention.md": OPEN,
                f"{I}/ship/deploy/task.md": PENDING,
                f"{I}/other/intention.md": OPEN,
                f"{I}/other/deploy/action.md": OPEN,
                f"{I}/other/twin/goal.md": OPEN,
                f"{I}/ship/twin/goal.md": OPEN,
                f"{REMINDERS}/dentist/reminder.md": PENDING,
            }
        )
    )


@pytest.mark.parametrize(
    ("ref", "expected"),
    [
        ("ship", f"{I}/ship"),
        ("dentist", f"{REMINDERS}/dentist"),
        (" dentist ", f"{REMINDERS}/dentist"),
        ("reminder/dentist", f"{REMINDERS}/dentist"),
        ("intention/ship", f"{I}/ship"),
        (f"{I}/ship", f"{I}/ship"),
        (f"{I}/ship/", f"{I}/ship"),
        (f"{I}/ship/intention.md", f"{I}/ship"),
        (f"{I}/ship/deploy", f"{I}/ship/deploy"),
        ("task/deploy", f"{I}/ship/deploy"),  # the id disambiguates by type
        ("action/deploy", f"{I}/other/deploy"),
        (f"{I}/other/twin/goal.md", f"{I}/other/twin"),  # the path disambiguates
    ],
)
def test_resolve_by_slug_id_or_path(refs: Tree, ref: str, expected: str) -> None:
    assert refs.resolve(ref).dir == expected


@pytest.mark.parametrize(
    ("ref", "paths"),
    [
        ("deploy", [f"{I}/other/deploy", f"{I}/ship/deploy"]),
        ("twin", [f"{I}/other/twin", f"{I}/ship/twin"]),
        ("goal/twin", [f"{I}/other/twin", f"{I}/ship/twin"]),
    ],
)
def test_resolve_says_ambiguous_and_lists_the_paths(refs: Tree, ref: str, paths: list[str]) -> None:
    with pytest.raises(UsageError, match="ambiguous") as info:
        refs.resolve(ref)
    for path in paths:
        assert path in info.value.message
    assert info.value.exit_code == 2


@pytest.mark.parametrize(
    "ref",
    [
        "nope",
        "task/ship",  # right slug, wrong type
        f"{I}/nope",
        f"{I}/ship/deploy/x",
        "inventory",
    ],
)
def test_resolve_unknown(refs: Tree, ref: str) -> None:
    with pytest.raises(UsageError, match="no record"):
        refs.resolve(ref)


@pytest.mark.parametrize(
    "ref",
    [
        "",
        "   ",
        "/",
        "..",
        "../x",
        "../memory/" + I + "/ship",
        "/etc",
        "/etc/passwd",
        "a/../b",
        f"{I}/ship/../other",
        f"{I}/../../../../etc",
        "Bad Slug",
        "-dash",
    ],
)
def test_resolve_refuses_hostile_or_malformed_refs(refs: Tree, ref: str) -> None:
    with pytest.raises(UsageError) as info:
        refs.resolve(ref)
    assert info.value.exit_code == 2
