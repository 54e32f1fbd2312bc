"""Recall by meaning under damage (issue 31, item 12): a vector row that is not a
vector is skipped, and a damaged semantic model makes the default ``recall``
answer by words with a one-line note instead of failing. Real processes, a
real index file, a really damaged copy of the model's package.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import NOTES, MakeTree
from rouse.pack import semantic
from rouse.pack.index import FILE

pytestmark = pytest.mark.skipif(not semantic.available(), reason="the semantic extra is missing")

RESTORE = f"{NOTES}/restore.md"


@pytest.fixture
def notes(make_tree: MakeTree) -> Path:
    return make_tree(
        {
            RESTORE: "---\nkeywords: postgres\n---\nRecover postgres from a backup: pg_restore "
            "last night's dump onto a fresh instance.\n",
            f"{NOTES}/garden.md": "---\nkeywords: garden\n---\nWater the tomatoes twice a week.\n",
        }
    )


def recall(
    root: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("ROUSE_")}
    base["ROUSE_STAMP_KEY"] = str(root.parent / "no-key")
    return subprocess.run(
        [sys.executable, "-m", "rouse", "--memory", str(root), "recall", *args],
        capture_output=True,
        text=True,
        env={**base, **(env or {})},
        timeout=120,
    )


def test_a_vector_stored_as_text_is_skipped(notes: Path) -> None:
    first = recall(notes, "bring the database back", "--json")
    assert first.returncode == 0, first.stderr
    with sqlite3.connect(notes / ".rouse" / FILE) as db:
        (garden,) = db.execute("SELECT id FROM files WHERE rel LIKE '%garden%'").fetchone()
        db.execute("UPDATE vectors SET vec = 'not a vector' WHERE id = ?", (garden,))
    done = recall(notes, "bring the database back", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)[0]["path"] == RESTORE
    assert "internal error" not in done.stderr


@pytest.fixture
def damaged_model(tmp_path: Path) -> Path:
    """A copy of the model's package whose weights file is cut short, first on the path."""
    site = tmp_path / "site"
    folder = semantic.package_dir()
    assert folder is not None
    copy = site / semantic.DISTRIBUTION
    shutil.copytree(folder, copy, ignore=shutil.ignore_patterns("*.safetensors"))
    weights = copy / semantic.WEIGHTS
    weights.parent.mkdir(parents=True, exist_ok=True)
    weights.write_bytes((folder / semantic.WEIGHTS).read_bytes()[:4096])
    return site


def test_a_damaged_model_makes_the_default_recall_answer_by_words(
    notes: Path, damaged_model: Path
) -> None:
    env = {"PYTHONPATH": str(damaged_model)}
    done = recall(notes, "pg_restore", env=env)
    assert done.returncode == 0, done.stderr
    assert RESTORE in done.stdout
    note = [line for line in done.stderr.splitlines() if line]
    assert len(note) == 1 and "by words" in note[0] and "cannot be read" in note[0]
    # asked for by meaning, it is still a clear refusal
    meaning = recall(notes, "pg_restore", "--mode", "meaning", env=env)
    assert meaning.returncode == 2 and "cannot be read" in meaning.stderr
