"""A record found by its path without a walk answers as the walk does (issue 20, the worker's
throughput): the same record, or the same error, for every reference."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from conftest import INTENTIONS, NOTES, MakeTree
from rouse.core.errors import RouseError
from rouse.core.tree import walk
from rouse.records.locate import _by_path, find

TASK = "---\nstatus: pending\n---\nDo it.\n"


@pytest.fixture
def tree(make_tree: MakeTree, tmp_path: Path) -> Path:
    root = make_tree(
        {
            f"{INTENTIONS}/ship/intention.md": "---\nstatus: open\n---\nShip.\n",
            f"{INTENTIONS}/ship/notes/task.md": TASK,
            f"{INTENTIONS}/ship/twice/task.md": TASK,
            f"{INTENTIONS}/ship/twice/action.md": "---\nstatus: open\n---\nAct.\n",
            f"{INTENTIONS}/ship/broken/task.md": "---\nstatus: pending\nno end of the header\n",
            f"{INTENTIONS}/ship/.hidden/task.md": TASK,
            f"{INTENTIONS}/ship/.rouse/task.md": TASK,
            f"{INTENTIONS}/ship/empty/": "",
            f"{INTENTIONS}/ship/notes/sub/readme.md": "not a record\n",
            ".secret/task.md": TASK,
            "task/notes/task.md": TASK,
            f"{NOTES}/idea/task.md": TASK,
            f"{INTENTIONS}/task.md": TASK,
        }
    )
    outside = tmp_path / "outside"
    (outside / "linked").mkdir(parents=True)
    (outside / "linked/task.md").write_text(TASK)
    os.symlink(outside, root / f"{INTENTIONS}/ship/via")
    os.symlink(root / f"{INTENTIONS}/ship/notes/task.md", root / f"{INTENTIONS}/ship/empty/task.md")
    return root


REFS = [
    f"{INTENTIONS}/ship/notes",
    f"{INTENTIONS}/ship/notes/",
    f"{INTENTIONS}/ship/notes/task.md",
    f" {INTENTIONS}/ship/notes ",
    f"{INTENTIONS}/ship",
    f"{INTENTIONS}/ship/twice",  # two record files: the walk takes the action
    f"{INTENTIONS}/ship/twice/task.md",
    f"{INTENTIONS}/ship/broken",  # a header that cannot be read
    f"{INTENTIONS}/ship/.hidden",  # hidden below the top: the walk takes it
    f"{INTENTIONS}/ship/.rouse",  # state, never records
    f"{INTENTIONS}/ship/empty",  # its task.md is a symlink
    f"{INTENTIONS}/ship/via/linked",  # through a symlinked directory
    f"{INTENTIONS}/ship/notes/sub",
    f"{INTENTIONS}/ship/missing",
    f"{INTENTIONS}//ship/notes",
    f"{INTENTIONS}/./ship/notes",
    f"{INTENTIONS}/ship/notes/../notes",
    ".secret",  # hidden at the top: never walked
    ".secret/task.md",
    "task/notes",  # a path, and a type/slug
    "notes",
    "task/notes/task.md",
    f"{NOTES}/idea",
    INTENTIONS,
    "/etc",
    "",
]


def answer(call: object) -> tuple[str, str]:
    try:
        found = call()  # type: ignore[operator]
    except RouseError as exc:
        return "error", str(exc)
    return "record", f"{found.rel} {found.type} {found.dir} {found.header.fields} {found.size}"


@pytest.mark.parametrize("ref", REFS)
def test_a_path_finds_what_the_walk_finds_or_fails_as_it_fails(tree: Path, ref: str) -> None:
    assert answer(lambda: find(tree, ref)) == answer(lambda: walk(tree).resolve(ref))


def test_a_record_s_own_path_is_read_without_the_walk(tree: Path) -> None:
    # (what makes the worker's claims cheap: the record read on its own)
    found = _by_path(tree, f"{INTENTIONS}/ship/notes")
    assert found is not None and found.rel == f"{INTENTIONS}/ship/notes/task.md"
    assert found.parent is None and found.children == []
    for ref in ("notes", "task/ship", f"{INTENTIONS}/ship/via/linked", ".secret"):
        assert _by_path(tree, ref) is None  # the walk decides these
