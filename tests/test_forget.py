"""Forgetting is a verb (issue 32, item 4): ``rouse forget REF --why TEXT``."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import BELIEFS, NOTES, NOW, MakeTree
from rouse.agents.mcp_tools import Tools
from rouse.core.errors import UsageError
from rouse.core.header import read_header
from rouse.pack.build import build_pack
from rouse.pack.recall import recall
from rouse.records.notes import forget

pytestmark = pytest.mark.usefixtures("no_stamp_key")

SECRET = "zanzibarquokka"  # a word no other file holds


def old_note() -> str:
    return (
        f"---\nkeywords: address, {SECRET}\nupdated: 2026-01-01\n---\n"
        f"The owner lives at 12 {SECRET.title()} Lane.\n\n"
        f"## Log <!-- rouse:log -->\n- 2026-01-02 10:00: moved: {SECRET} confirmed\n"
    )


def state_holding(root: Path, word: str) -> list[str]:
    """Every file under .rouse/ whose bytes hold ``word``."""
    state = root / ".rouse"
    return sorted(
        p.relative_to(state).as_posix()
        for p in state.rglob("*")
        if p.is_file() and word.encode() in p.read_bytes()
    )


def index_rows(root: Path, word: str) -> list[str]:
    with sqlite3.connect(root / ".rouse" / "index.sqlite3") as conn:
        rows = conn.execute("SELECT rowid FROM docs WHERE docs MATCH ?", (f'"{word}"',))
        ids = [row[0] for row in rows]
        return [conn.execute("SELECT rel FROM files WHERE id = ?", (i,)).fetchone()[0] for i in ids]


def test_forget_leaves_a_tombstone_and_empties_the_index_at_once(make_tree: MakeTree) -> None:
    root = make_tree(
        {
            f"{NOTES}/old-address.md": old_note(),
            f"{NOTES}/other.md": "---\nkeywords: address\n---\nThe drawer has stamps.\n",
        }
    )
    assert [h.path for h in recall(root, SECRET, NOW, mode="words")] == [f"{NOTES}/old-address.md"]
    build_pack(root, NOW, probes_enabled=False)  # the read verbs' own state, too
    assert index_rows(root, SECRET) == [f"{NOTES}/old-address.md"]
    assert "index.sqlite3" in state_holding(root, SECRET)

    done = forget(root, "old-address", "the owner asked me to forget the old address", NOW)
    from rouse.pack import index

    index.forget(root)

    assert done.rel == f"{NOTES}/old-address.md"
    text = (root / done.rel).read_text()
    assert SECRET not in text.lower()
    assert "the owner asked me to forget the old address" in text
    assert read_header(root / done.rel).get("forgotten") == "2026-03-14 12:00"
    # read straight from the index, before any recall brings it up to date
    assert index_rows(root, SECRET) == []
    assert state_holding(root, SECRET) == []
    hits = recall(root, "forget old address", NOW, mode="words")
    assert f"{NOTES}/old-address.md" in [h.path for h in hits]
    tomb = next(h for h in hits if h.path == f"{NOTES}/old-address.md")
    assert SECRET not in json.dumps(tomb.to_json()).lower()
    assert recall(root, SECRET, NOW, mode="words") == []
    pack = build_pack(root, NOW, probes_enabled=False)
    assert SECRET not in pack.text.lower()


def test_forget_a_belief_and_refusals(make_tree: MakeTree) -> None:
    root = make_tree(
        {
            f"{BELIEFS}/belief-old.md": f"---\n---\nWe trust {SECRET}.\n",
            "inventory/backlog/idea/backlog.md": "---\nstatus: open\n---\nIdea.\n",
            f"{NOTES}/old.md": "---\nkeywords: x\n---\nA note also called old.\n",
        }
    )
    before = (root / NOTES / "old.md").read_bytes()
    with pytest.raises(UsageError, match="ambiguous"):
        forget(root, "old", "wrong", NOW)
    with pytest.raises(UsageError, match="close"):
        forget(root, "idea", "no", NOW)
    with pytest.raises(UsageError, match="--why"):
        forget(root, f"{NOTES}/old.md", "  ", NOW)
    assert (root / NOTES / "old.md").read_bytes() == before
    forget(root, f"{BELIEFS}/belief-old", "it was wrong", NOW)
    assert SECRET not in (root / BELIEFS / "belief-old.md").read_text()
    data = build_pack(root, NOW, probes_enabled=False).to_json()
    (belief,) = data["beliefs"]
    assert "it was wrong" in belief["body"] and SECRET not in belief["body"]


def test_forget_as_a_process_and_as_a_tool(make_tree: MakeTree, tmp_path: Path) -> None:
    root = make_tree(
        {
            f"{NOTES}/old-address.md": old_note(),
            f"{NOTES}/other.md": f"---\nkeywords: {SECRET}, b\n---\nBody.\n",
        }
    )
    recall(root, SECRET, NOW, mode="words")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROUSE_")}
    env["ROUSE_STAMP_KEY"] = str(tmp_path / "no-such-key")
    done = subprocess.run(
        [sys.executable, "-m", "rouse", "--memory", str(root), "--now", "2026-03-14 12:00",
         "forget", "old-address", "--why", "asked to", "--json"],
        capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "path": f"{NOTES}/old-address.md",
        "kind": "note",
        "forgotten": "2026-03-14 12:00",
    }
    assert index_rows(root, SECRET) == [f"{NOTES}/other.md"]
    said = Tools(root, lambda: NOW, {}, tmp_path / "no-key").forget("other", "no longer true")
    assert said.startswith(f"forgot {NOTES}/other.md")
    assert index_rows(root, SECRET) == []
    assert state_holding(root, SECRET) == []
