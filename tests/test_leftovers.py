"""No leftovers (issue 32, item 6): a writer killed mid-write leaves no copy behind for long."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import NOTES, NOW, MakeTree
from rouse.core.store import LEFTOVER_RE, STALE_LEFTOVER_SECONDS, Store, clear_leftovers
from rouse.core.tree import walk
from rouse.lint.check import check

BODY = "The deploy runs from the staging host. " * 200  # full-size, as a real note

#: A writer that dies (SIGKILL, from itself) after its copy is written and synced and
#: before it is renamed over the note: what a kill at the worst moment leaves.
KILLED_WRITER = """
import os, signal, sys
from pathlib import Path
from rouse.core import store
def die(*_a, **_k):
    os.kill(os.getpid(), signal.SIGKILL)
store._take_lease = die
store.Store(Path(sys.argv[1])).update(sys.argv[2], lambda data: data + b"more\\n")
"""


def env_without_rouse(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROUSE_")}
    env["ROUSE_STAMP_KEY"] = str(tmp_path / "no-key")
    return env


def kill_a_writer(root: Path, rel: str, env: dict[str, str]) -> list[Path]:
    done = subprocess.run(
        [sys.executable, "-c", KILLED_WRITER, str(root), rel],
        env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == -9, done.stderr
    return [p for p in (root / rel).parent.iterdir() if LEFTOVER_RE.match(p.name)]


def test_a_killed_writers_copy_is_reported_then_gone_at_the_next_write(
    make_tree: MakeTree, tmp_path: Path
) -> None:
    root = make_tree({f"{NOTES}/deploys.md": f"---\nkeywords: deploy\n---\n{BODY}\n"})
    env = env_without_rouse(tmp_path)
    (left,) = kill_a_writer(root, f"{NOTES}/deploys.md", env)
    assert left.stat().st_size > len(BODY)  # a full copy of the note
    said = [f.render() for f in check(walk(root), NOW)]
    rel = left.relative_to(root).as_posix()
    assert any(rel in line and "writer left behind" in line for line in said), said
    # the very next verb that writes in that directory (here: a new note) removes it
    made = subprocess.run(
        [sys.executable, "-m", "rouse", "--memory", str(root), "new", "note", "another",
         "--set", "keywords=x", "--body", "x"],
        env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    assert not left.exists()
    assert not [f for f in check(walk(root), NOW) if "writer left behind" in f.message]
    assert (root / NOTES / "deploys.md").read_text().endswith(f"{BODY}\n")  # untouched


def test_a_copy_a_live_writer_may_still_need_stays_until_stale(make_tree: MakeTree) -> None:
    root = make_tree({f"{NOTES}/a.md": "---\nkeywords: a\n---\nA.\n"})
    notes = root / NOTES
    live = notes / f".a.md.{os.getppid()}.abcd1234.tmp"  # a running process's
    mine = notes / f".a.md.{os.getpid()}.abcd1234.tmp"  # this process's own (another thread)
    unknown = notes / ".a.md.abcd1234.tmp"  # an older writer's: no pid in the name
    other = notes / ".notes-of-mine.tmp"  # not a writer's pattern: never touched
    for path in (live, mine, unknown, other):
        path.write_text("copy")
    assert clear_leftovers(notes) == []
    later = time.time() + STALE_LEFTOVER_SECONDS + 1
    assert sorted(clear_leftovers(notes, now=later)) == sorted([live, mine, unknown])
    assert other.exists()


def test_a_link_named_like_a_copy_is_left_alone(make_tree: MakeTree, tmp_path: Path) -> None:
    root = make_tree({f"{NOTES}/a.md": "---\nkeywords: a\n---\nA.\n"})
    outside = tmp_path / "outside.txt"
    outside.write_text("keep me")
    link = root / NOTES / ".a.md.99999999.abcd1234.tmp"
    link.symlink_to(outside)
    Store(root).set_fields(f"{NOTES}/a.md", {"keywords": "b"})
    assert link.is_symlink() and outside.read_text() == "keep me"


@pytest.mark.skipif(shutil.which("git") is None, reason="the tree's own git needs git")
def test_init_keeps_writers_copies_out_of_the_trees_git(tmp_path: Path) -> None:
    env = env_without_rouse(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "rouse", "init", str(tmp_path)],
        env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    root = tmp_path / "memory"
    note = next((root / "inventory" / "notes").glob("*.md")).relative_to(root).as_posix()
    kill_a_writer(root, note, env)
    status = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=root, capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert ".tmp" not in status.stdout
    assert ".*.md.*.tmp" in (root / ".gitignore").read_text().splitlines()
