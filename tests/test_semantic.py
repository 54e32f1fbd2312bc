"""Recall by meaning (issue 23, item 1): the semantic extra's model, offline; its
vectors in the index; --mode words|meaning|both; words never lose to stopwords."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import NOTES, NOW, MakeTree
from rouse.core.errors import UsageError
from rouse.core.tree import walk
from rouse.pack import recall as recall_module
from rouse.pack import semantic
from rouse.pack.index import FILE, Index
from rouse.pack.recall import recall, render

pytestmark = [
    pytest.mark.skipif(
        not semantic.available(),
        reason="needs the semantic extra (pip install '.[semantic]'; make test installs it)",
    ),
    pytest.mark.usefixtures("no_stamp_key"),
]

RESTORE = f"{NOTES}/restore.md"
STOPWORDY = f"{NOTES}/meeting.md"


@pytest.fixture
def notes(make_tree: MakeTree) -> Path:
    return make_tree(
        {
            RESTORE: "---\nkeywords: postgres\n---\nRecover postgres from a backup: pg_restore "
            "last night's dump onto a fresh instance.\n",
            STOPWORDY: "---\nkeywords: team\n---\nHow do we do what we do? We do it the way we "
            "did it before, and then we do it again.\n",
            f"{NOTES}/garden.md": "---\nkeywords: garden\n---\nWater the tomatoes twice a week "
            "in summer.\n",
        }
    )


def paths(hits: list[recall_module.Hit]) -> list[str]:
    return [hit.path for hit in hits]


def test_a_paraphrase_is_found_by_meaning_not_by_words(notes: Path) -> None:
    query = "how do we bring the database back"
    assert paths(recall(notes, query, NOW, mode="words")) == []  # stopwords aside, no word shared
    hits = recall(notes, query, NOW)  # the default with the extra: both
    assert hits[0].path == RESTORE and hits[0].matched == "meaning"
    assert paths(recall(notes, query, NOW, mode="meaning"))[0] == RESTORE


def test_a_stopwords_only_hit_never_outranks_a_match_by_meaning(notes: Path) -> None:
    hits = recall(notes, "how do we restore the database", NOW)
    assert hits[0].path == RESTORE
    assert STOPWORDY not in paths(hits)[:1]
    words_only = recall(notes, "how do we restore the database", NOW, mode="words")
    assert STOPWORDY not in paths(words_only)  # it matched the stopwords alone: no match


def test_a_query_of_stopwords_alone_still_searches_them(notes: Path) -> None:
    assert paths(recall(notes, "how do we", NOW, mode="words")) == [STOPWORDY]


def test_a_match_by_meaning_quotes_its_nearest_sentence(make_tree: MakeTree) -> None:
    body = "Lunch is at noon. The office plants need water. Recover postgres from a backup."
    root = make_tree({f"{NOTES}/mixed.md": f"---\n---\n{body}\n"})
    (hit,) = recall(root, "bring the database back", NOW, mode="meaning", limit=1)
    assert hit.snippet == "…Recover postgres from a backup."
    # (no key: not signed, so the sentence is quoted as data)
    assert render([hit])[1].startswith("  near in meaning, snippet: (not signed")
    assert render([hit])[3] == "    …Recover postgres from a backup."


def test_words_still_come_first_on_an_exact_query(notes: Path) -> None:
    hits = recall(notes, "pg_restore", NOW)
    assert hits[0].path == RESTORE and hits[0].matched in ("words", "both")


def vectors(root: Path) -> dict[str, bytes]:
    with sqlite3.connect(root / ".rouse" / FILE) as conn:
        rows = conn.execute("SELECT f.rel, v.vec FROM vectors v JOIN files f ON f.id = v.id")
        return {rel: bytes(vec) for rel, vec in rows}


def refresh(root: Path, model: semantic.Model | None) -> Index:
    index = Index(root, model=model)
    index.refresh(walk(root))
    index.close()
    return index


def test_vectors_are_kept_with_the_rows_incrementally(notes: Path) -> None:
    model = semantic.load()
    first = refresh(notes, model)
    assert (first.stats.read, first.stats.embedded) == (3, 3)
    assert set(vectors(notes)) == {RESTORE, STOPWORDY, f"{NOTES}/garden.md"}
    again = refresh(notes, model)
    assert (again.stats.read, again.stats.embedded) == (0, 0)
    path = notes / f"{NOTES}/garden.md"
    path.write_text("---\nkeywords: garden\n---\nPrune the roses in March.\n")
    os.utime(path, (1_600_000_000, 1_600_000_000))
    changed = refresh(notes, model)
    assert (changed.stats.read, changed.stats.embedded) == (1, 1)
    (notes / STOPWORDY).unlink()
    refresh(notes, model)
    assert set(vectors(notes)) == {RESTORE, f"{NOTES}/garden.md"}


def test_an_index_built_without_the_model_gains_vectors_later(notes: Path) -> None:
    refresh(notes, None)
    assert vectors(notes) == {}
    later = refresh(notes, semantic.load())
    assert (later.stats.read, later.stats.embedded) == (0, 3)  # words kept, vectors made
    assert len(vectors(notes)) == 3


def test_another_model_s_vectors_are_made_again(notes: Path) -> None:
    refresh(notes, semantic.load())
    with sqlite3.connect(notes / ".rouse" / FILE) as conn:
        conn.execute("UPDATE meta SET value = 'some-other-model' WHERE key = 'model'")
    again = refresh(notes, semantic.load())
    assert (again.stats.read, again.stats.embedded) == (0, 3)


def test_vectors_are_unit_length_and_deterministic() -> None:
    model = semantic.load()
    one, two, empty = model.embed(["recover postgres", "recover postgres", ""])
    assert one == two
    assert model.cosines(one, [two])[0] == pytest.approx(1.0, abs=1e-5)
    assert model.cosines(one, [empty]) == [0.0]
    assert len(one) == semantic.DIMENSIONS * 4


def test_without_the_extra_meaning_is_a_usage_error(
    notes: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(semantic, "DISTRIBUTION", "no-such-distribution")
    monkeypatch.setattr(semantic, "_loaded", {})
    assert not semantic.available()
    assert recall_module.default_mode() == "words"
    assert paths(recall(notes, "pg_restore", NOW)) == [RESTORE]  # words alone
    for mode in ("meaning", "both"):
        with pytest.raises(UsageError, match=r"pipx inject rouse-memory 'wordllama"):
            recall(notes, "pg_restore", NOW, mode=mode)


def test_the_model_loads_offline_from_the_installed_package(notes: Path, tmp_path: Path) -> None:
    """No network, an empty home (no model cache anywhere): the CLI still recalls by meaning."""
    home = tmp_path / "empty-home"
    home.mkdir()
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home),
        "ROUSE_STAMP_KEY": str(tmp_path / "no-such-key"),
        "HF_HUB_OFFLINE": "0",  # nothing asks a hub: this would not stop it if it did
        "HTTPS_PROXY": "http://127.0.0.1:9",  # a closed port: any HTTP(S) request fails
        "HTTP_PROXY": "http://127.0.0.1:9",
    }
    command = [sys.executable, "-m", "rouse", "--memory", str(notes), "recall"]
    command += ["bring the database back", "--json", "--mode", "meaning"]
    unshare = shutil.which("unshare")
    if unshare and subprocess.run([unshare, "-rn", "true"], capture_output=True).returncode == 0:
        command = [unshare, "-rn", *command]  # a network namespace with no interface but lo
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    hits = json.loads(done.stdout)
    assert hits[0]["path"] == RESTORE and hits[0]["matched"] == "meaning"
    assert list(home.iterdir()) == []  # nothing cached or downloaded into the home


def test_cli_help_says_the_default(notes: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "rouse", "recall", "--help"], capture_output=True, text=True
    )
    assert "both when the semantic extra is installed, words" in " ".join(done.stdout.split())
