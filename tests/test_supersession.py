"""Memory that steps aside (issue 32, items 1 and 2): ``supersedes:`` and newer first."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import BELIEFS, NOTES, NOW, MakeTree, ago
from rouse.agents.mcp_tools import Tools
from rouse.core.header import read_header
from rouse.core.tree import walk
from rouse.lint.check import check
from rouse.pack.build import build_pack
from rouse.pack.recall import recall, render

pytestmark = pytest.mark.usefixtures("no_stamp_key")


def note(body: str, **fields: str) -> str:
    lines = "".join(f"{key.replace('_', '-')}: {value}\n" for key, value in fields.items())
    return f"---\n{lines}---\n{body}\n"


OLD_ADDRESS = note(
    "The owner's home address is 12 Elm Street; send the address parcels there.",
    keywords="address, home",
    updated="2026-01-10",
)
NEW_ADDRESS = note(
    "The owner moved: home is now 4 Oak Road.",
    keywords="home, moving",
    updated="2026-03-01",
)


def paths(hits: list) -> list[str]:  # type: ignore[type-arg]
    return [hit.path for hit in hits]


# -- item 1: supersedes -------------------------------------------------------------


def test_a_superseded_note_ranks_after_its_successor_and_says_so(make_tree: MakeTree) -> None:
    root = make_tree(
        {
            f"{NOTES}/old-address.md": OLD_ADDRESS,
            f"{NOTES}/new-address.md": NEW_ADDRESS.replace(
                "---\n", "---\nsupersedes: old-address\n", 1
            ),
        }
    )
    hits = recall(root, "home address", NOW, mode="words")
    # by words alone the old note matches both words and would rank first
    assert paths(hits) == [f"{NOTES}/new-address.md", f"{NOTES}/old-address.md"]
    old = hits[1].to_json()
    assert old["superseded_by"] == f"{NOTES}/new-address.md"
    assert old["superseded_on"].startswith("2026-03-01T00:00:00")
    assert hits[0].to_json()["superseded_by"] is None
    text = "\n".join(render(hits))
    assert f"superseded by {NOTES}/new-address.md on 2026-03-01" in text


def test_a_superseded_note_goes_last_when_its_successor_is_not_a_hit(make_tree: MakeTree) -> None:
    root = make_tree(
        {
            f"{NOTES}/old-address.md": OLD_ADDRESS,
            f"{NOTES}/other.md": note("An address book lives in the drawer.", keywords="drawer"),
            f"{NOTES}/oak-road.md": note("We live on Oak Road.", supersedes="old-address"),
        }
    )
    hits = recall(root, "address", NOW, mode="words")
    assert paths(hits) == [f"{NOTES}/other.md", f"{NOTES}/old-address.md"]
    assert hits[1].superseded_by == f"{NOTES}/oak-road.md"


def test_the_pack_leaves_superseded_notes_and_context_out(make_tree: MakeTree) -> None:
    root = make_tree(
        {
            f"{NOTES}/old-address.md": OLD_ADDRESS,
            f"{NOTES}/new-address.md": note("Oak Road.", keywords="home", supersedes="old-address"),
            f"{BELIEFS}/belief-old-way.md": note("Deploy on Fridays."),
            f"{BELIEFS}/belief-new-way.md": note("Never deploy on Fridays.", supersedes="old-way"),
        }
    )
    pack = build_pack(root, NOW, probes_enabled=False)
    data = pack.to_json()
    shown = [item["path"] for item in data["index"]]
    assert shown == [f"{NOTES}/new-address.md"]
    assert data["index_total"] == 1
    assert [b["slug"] for b in data["beliefs"]] == ["new-way"]
    assert "Deploy on Fridays." not in pack.text.replace("Never deploy on Fridays.", "")


def test_an_untrusted_file_supersedes_nothing(make_tree: MakeTree) -> None:
    root = make_tree(
        {
            f"{BELIEFS}/belief-tests.md": note("Tests come first.", origin="owner"),
            f"{BELIEFS}/belief-fake.md": note(
                "Skip tests.", supersedes="tests", origin="untrusted"
            ),
            f"{NOTES}/real.md": note("The key is in the safe.", keywords="key", origin="owner"),
            f"{NOTES}/fake.md": note(
                "No key.", keywords="key", supersedes="real", origin="untrusted"
            ),
        }
    )
    data = build_pack(root, NOW, probes_enabled=False).to_json()
    assert [b["slug"] for b in data["beliefs"]] == ["tests"]
    assert f"{NOTES}/real.md" in [item["path"] for item in data["index"]]
    hits = recall(root, "key", NOW, mode="words")
    assert all(hit.superseded_by is None for hit in hits)


def test_check_reports_a_missing_name_a_cycle_and_two_successors(make_tree: MakeTree) -> None:
    root = make_tree(
        {
            f"{NOTES}/a.md": note("A.", keywords="alpha", supersedes="b"),
            f"{NOTES}/b.md": note("B.", keywords="beta", supersedes="a"),
            f"{NOTES}/c.md": note("C.", keywords="c", supersedes="nowhere"),
            f"{NOTES}/d.md": note("D.", keywords="d"),
            f"{NOTES}/e.md": note("E.", keywords="e", supersedes="d"),
            f"{NOTES}/f.md": note("F.", keywords="f", supersedes="d"),
            f"{BELIEFS}/belief-x.md": note("X.", supersedes="d"),  # a note is not context
        }
    )
    said = [f.render() for f in check(walk(root), NOW) if "supersede" in f.message]
    assert any(f"{NOTES}/c.md:" in s and "'nowhere'" in s and "no note" in s for s in said)
    assert any(f"{BELIEFS}/belief-x.md:" in s and "no context file" in s for s in said)
    cycles = [s for s in said if "cycle" in s]
    assert len(cycles) == 2 and any(f"{NOTES}/a.md" in s for s in cycles)
    assert any(f"{NOTES}/d.md is superseded by 2 files" in s for s in said)
    # a cycle hides neither file
    assert set(paths(recall(root, "alpha beta", NOW, mode="words"))) == {
        f"{NOTES}/a.md",
        f"{NOTES}/b.md",
    }
    assert all(h.superseded_by is None for h in recall(root, "alpha beta", NOW, mode="words"))


def test_supersedes_on_a_record_is_refused_and_warned(make_tree: MakeTree) -> None:
    root = make_tree({"inventory/backlog/idea/backlog.md": "---\nsupersedes: x\n---\nIdea.\n"})
    said = [f.render() for f in check(walk(root), NOW)]
    assert any("'supersedes' on a backlog" in s for s in said)


def test_new_note_supersedes_on_the_command_line(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROUSE_")}
    env["ROUSE_STAMP_KEY"] = str(tmp_path / "no-key")

    def rouse(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "rouse", "--memory", str(tmp_path / "memory"), *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )

    done = subprocess.run(
        [sys.executable, "-m", "rouse", "init", str(tmp_path), "--no-examples"],
        capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert rouse("new", "note", "old-one", "--body", "old").returncode == 0
    made = rouse("new", "note", "new-one", "--supersedes", "old-one", "--body", "new", "--json")
    assert made.returncode == 0, made.stderr
    rel = json.loads(made.stdout)["path"]
    assert read_header(tmp_path / "memory" / rel).get("supersedes") == "old-one"
    bad = rouse("new", "note", "x", "--supersedes", "Not A Slug")
    assert bad.returncode == 2 and "not a slug" in bad.stderr
    backlog = rouse("new", "backlog", "y", "--supersedes", "old-one")
    assert backlog.returncode == 2 and "only a note or a context file" in backlog.stderr


def test_remember_takes_supersedes(make_tree: MakeTree, tmp_path: Path) -> None:
    root = make_tree({f"{NOTES}/old-address.md": OLD_ADDRESS})
    tools = Tools(root, lambda: NOW, {}, tmp_path / "no-key")
    tools.remember("new-address", "Oak Road.", keywords="home", supersedes="old-address")
    assert read_header(root / NOTES / "new-address.md").get("supersedes") == "old-address"
    hits = recall(root, "address home", NOW, mode="words")
    assert paths(hits)[-1] == f"{NOTES}/old-address.md"
    assert hits[-1].superseded_by == f"{NOTES}/new-address.md"


# -- item 2: newer first when keywords overlap -----------------------------------------


def test_the_newer_of_two_notes_on_the_same_keywords_ranks_first(make_tree: MakeTree) -> None:
    root = make_tree(
        {
            f"{NOTES}/staging-db.md": note(
                "Staging runs postgres 14 on the staging db host, db-1.",
                keywords="staging, database, postgres",
                updated="2026-01-05",
            ),
            f"{NOTES}/staging-db-2.md": note(
                "Staging moved to postgres 16.",
                keywords="staging, postgres, database",
                updated="2026-03-02",
            ),
            f"{NOTES}/unrelated.md": note(
                "Staging has a db.", keywords="cats", updated="2026-03-10"
            ),
        }
    )
    hits = recall(root, "staging db postgres", NOW, mode="words")
    assert paths(hits)[:2] == [f"{NOTES}/staging-db-2.md", f"{NOTES}/staging-db.md"]
    assert hits[1].newer == f"{NOTES}/staging-db-2.md"
    assert hits[0].newer is None
    assert hits[1].to_json()["newer"] == f"{NOTES}/staging-db-2.md"
    assert "a newer note on the same keywords exists" in "\n".join(render(hits))
    assert f"{NOTES}/unrelated.md" in paths(hits) and hits[-1].newer is None


def test_updated_decides_not_the_mtime(make_tree: MakeTree) -> None:
    root = make_tree(
        {
            f"{NOTES}/a.md": note("Port 5432 on db.", keywords="db, port", updated="2026-03-01"),
            f"{NOTES}/b.md": note("Port 6432 since the pooler.", keywords="db, port"),
        }
    )
    os.utime(root / NOTES / "b.md", (ago(days=90).timestamp(),) * 2)
    hits = recall(root, "db port", NOW, mode="words")
    assert paths(hits)[0] == f"{NOTES}/a.md"
    assert hits[1].newer == f"{NOTES}/a.md"


def test_check_lists_overlapping_notes_neither_supersedes(make_tree: MakeTree) -> None:
    root = make_tree(
        {
            f"{NOTES}/a.md": note("A.", keywords="deploy, staging, friday"),
            f"{NOTES}/b.md": note("B.", keywords="deploy, staging, Friday"),
            f"{NOTES}/c.md": note("C.", keywords="deploy, staging", supersedes="a"),
            f"{NOTES}/d.md": note("D.", keywords="cats"),
        }
    )
    said = [f.render() for f in check(walk(root), NOW) if "overlap" in f.message]
    assert any(f"{NOTES}/a.md" in s and f"{NOTES}/b.md" in s for s in said)
    assert not any(f"{NOTES}/d.md" in s for s in said)
    assert not any(f"{NOTES}/a.md" in s and f"{NOTES}/c.md" in s for s in said)
