"""Finding the tree like git finds .git (issue 21, item 1; SPEC §1, 0.3).

``--memory``, then ``$ROUSE_HOME``, then the nearest ``memory/`` that is a
rouse tree (``entrypoint/rouse.md`` or ``.rouse-tree``) in the working
directory or a parent, then ``~/.rouse``. A ``memory/`` that is not a rouse
tree (a source package, say) is passed over and never written into. Real
``rouse`` processes with a temporary HOME.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import NOW
from rouse.core.home import find_tree
from rouse.records.scaffold import init


def rouse(cwd: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROUSE_")}
    env.update(HOME=str(home), ROUSE_STAMP_KEY=str(home / "no-key"))
    return subprocess.run(
        [sys.executable, "-m", "rouse", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """``proj/`` with a rouse tree at ``proj/memory`` and source in ``proj/src/app``."""
    proj = tmp_path / "proj"
    init(proj / "memory", NOW, examples=False)
    (proj / "src" / "app").mkdir(parents=True)
    return proj


@pytest.fixture
def home(tmp_path: Path) -> Path:
    folder = tmp_path / "home"
    folder.mkdir()
    return folder


def test_a_subdirectory_finds_the_projects_tree(project: Path, home: Path) -> None:
    init(home / ".rouse", NOW, examples=False)  # a global tree must not win
    done = rouse(project / "src" / "app", home, "remind", "oops", "--due", "+1h", "--body", "x")
    assert done.returncode == 0, done.stderr
    assert (project / "memory/inventory/reminders/oops/reminder.md").is_file()
    assert not (home / ".rouse/inventory/reminders/oops").exists()
    assert done.stderr == ""


def test_a_memory_package_that_is_not_a_tree_is_passed_over(tmp_path: Path, home: Path) -> None:
    repo = tmp_path / "repo"
    package = repo / "memory"  # the project's own source: a Python package named memory
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    before = sorted(p.name for p in package.iterdir())
    done = rouse(repo, home, "new", "belief", "x", "--body", "y")
    assert done.returncode == 2 and "no memory tree found" in done.stderr
    assert "is not a rouse tree" in done.stderr
    assert sorted(p.name for p in package.iterdir()) == before  # nothing written into it
    init(home / ".rouse", NOW, examples=False)
    done = rouse(repo, home, "new", "belief", "x", "--body", "y")
    assert done.returncode == 0, done.stderr
    assert f"{package} is not a rouse tree" in done.stderr and str(home / ".rouse") in done.stderr
    assert (home / ".rouse/entrypoint/beliefs/belief-x.md").is_file()
    assert sorted(p.name for p in package.iterdir()) == before


def test_init_refuses_a_memory_directory_that_is_not_a_tree(tmp_path: Path, home: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "memory").mkdir(parents=True)
    (repo / "memory" / "store.py").write_text("")
    done = rouse(repo, home, "init", "--no-key")
    assert done.returncode == 2 and "is not a rouse tree" in done.stderr
    assert sorted(p.name for p in (repo / "memory").iterdir()) == ["store.py"]


def test_the_nearest_tree_wins_and_a_tree_id_alone_marks_one(tmp_path: Path) -> None:
    outer = tmp_path / "outer"
    init(outer / "memory", NOW, examples=False)
    inner = outer / "sub" / "inner"
    (inner / "memory").mkdir(parents=True)
    (inner / "memory" / ".rouse-tree").write_text("abc\n")  # a clone, say, before init's files
    deep = inner / "a" / "b"
    deep.mkdir(parents=True)
    assert find_tree(None, {}, deep) == inner / "memory"
    assert find_tree(None, {}, outer / "sub") == outer / "memory"


def test_a_symlinked_working_directory_finds_the_tree_of_where_it_leads(
    project: Path, tmp_path: Path, home: Path
) -> None:
    link = tmp_path / "elsewhere" / "app-link"
    link.parent.mkdir()
    link.symlink_to(project / "src" / "app", target_is_directory=True)
    done = rouse(link, home, "tree")
    assert done.returncode == 0, done.stderr
    done = rouse(link, home, "remind", "via-link", "--due", "+1h", "--body", "x")
    assert done.returncode == 0, done.stderr
    assert (project / "memory/inventory/reminders/via-link/reminder.md").is_file()


def test_explicit_rungs_are_taken_as_given(project: Path, home: Path, tmp_path: Path) -> None:
    done = rouse(project / "src", home, "--memory", str(tmp_path / "nope"), "tree")
    assert done.returncode == 2 and "not a directory" in done.stderr
    assert find_tree(None, {"ROUSE_HOME": str(project / "memory")}, tmp_path) == project / "memory"
