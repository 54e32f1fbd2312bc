"""Recall (SPEC §10): the FTS5 index, its upkeep, ranking, and `rouse recall`."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest

from conftest import BACKLOG, BELIEFS, INTENTIONS, MOTIVATIONS, NOTES, NOW, MakeTree, ago, set_mtime
from rouse.cache.walk import HeaderCache
from rouse.core.errors import UsageError
from rouse.core.timefmt import human_age
from rouse.core.tree import walk
from rouse.pack import index, indexdoc, search
from rouse.pack import indexdoc as schema
from rouse.pack.hits import Hit
from rouse.pack.index import Index
from rouse.pack.recall import recall, render
from rouse.trust import stamp as stamping
from rouse.trust import stampkey
from rouse.trust.fence import LABELS, SHORT

pytestmark = pytest.mark.usefixtures("no_stamp_key")

NOT_SIGNED = SHORT["unknown"]

FILLER = "Nothing of note happened in this paragraph, which only pads the body. " * 3


def note(keywords: str = "", body: str = "", **fields: str) -> str:
    lines = [f"keywords: {keywords}"] if keywords else []
    lines += [f"{key.replace('_', '-')}: {value}" for key, value in fields.items()]
    return "---\n" + "".join(f"{line}\n" for line in lines) + f"---\n{body}\n"


@pytest.fixture
def tree(make_tree: MakeTree) -> Path:
    return make_tree(
        {
            f"{NOTES}/pg-keyword.md": note("postgres, backup", FILLER, origin="owner"),
            f"{NOTES}/pg-body.md": note("weather", f"{FILLER} We restored postgres once. {FILLER}"),
            f"{NOTES}/kubernetes-upgrade.md": note("cluster", "Steps for the control plane."),
            f"{NOTES}/runbook/note.md": note("deploy", "Deploy with the staging script first."),
            f"{BACKLOG}/cache-idea/backlog.md": "---\nstatus: open\nkeywords: cache\n---\nIdea.\n",
            f"{INTENTIONS}/ship/intention.md": (
                "---\nstatus: open\ncloses-when: the release is tagged\n---\nShip it.\n"
            ),
            f"{INTENTIONS}/ship/old-try/action.md": "---\nstatus: done\n---\nTried a canary.\n",
            f"{BELIEFS}/belief-tests.md": "Tests come first, always (no fence at all).\n",
            f"{MOTIVATIONS}/motivation-cost.md": note("budget", "The cloud bill doubled."),
            "persona.md": "---\n---\nTerse and kind.\n",
        }
    )


def paths(hits: list[Hit]) -> list[str]:
    return [hit.path for hit in hits]


# -- what is searched, and how it ranks ------------------------------------------


def test_keyword_hit_outranks_a_body_only_hit(tree: Path) -> None:
    hits = recall(tree, "postgres", NOW)
    assert paths(hits) == [f"{NOTES}/pg-keyword.md", f"{NOTES}/pg-body.md"]


def test_path_matches_and_outranks_a_body_match(tree: Path, make_tree: MakeTree) -> None:
    make_tree({f"{NOTES}/misc.md": note("", f"{FILLER} the kubernetes thing. {FILLER}")})
    hits = recall(tree, "kubernetes", NOW, mode="words")  # by meaning, more may follow
    assert paths(hits) == [f"{NOTES}/kubernetes-upgrade.md", f"{NOTES}/misc.md"]
    assert paths(recall(tree, "runbook", NOW, mode="words")) == [f"{NOTES}/runbook/note.md"]


def test_matching_more_words_ranks_first(make_tree: MakeTree) -> None:
    root = make_tree(
        {
            f"{NOTES}/one.md": note("alpha", "Short."),
            f"{NOTES}/two.md": note("", f"{FILLER} alpha and beta. {FILLER}"),
        }
    )
    # the words engine's rule (by meaning, or fused, ranks may differ: tests/test_semantic.py)
    got = recall(root, "alpha beta", NOW, mode="words")
    assert paths(got) == [f"{NOTES}/two.md", f"{NOTES}/one.md"]


def test_every_kind_is_searched_open_and_closed(tree: Path) -> None:
    found = recall(tree, "tagged canary cache tests kind bill", NOW, mode="words")
    kinds = {hit.path: hit.kind for hit in found}
    assert kinds == {
        f"{INTENTIONS}/ship/intention.md": "intention",  # via its closes-when
        f"{INTENTIONS}/ship/old-try/action.md": "action",  # closed, still found
        f"{BACKLOG}/cache-idea/backlog.md": "backlog",
        f"{BELIEFS}/belief-tests.md": "belief",
        "persona.md": "persona",
        f"{MOTIVATIONS}/motivation-cost.md": "motivation",
    }


def test_words_are_stemmed(tree: Path) -> None:
    assert paths(recall(tree, "restoring", NOW, mode="words")) == [f"{NOTES}/pg-body.md"]


def test_kind_filter_and_limit(tree: Path) -> None:
    assert paths(recall(tree, "postgres cache", NOW, kind="backlog")) == [
        f"{BACKLOG}/cache-idea/backlog.md"
    ]
    assert recall(tree, "postgres", NOW, kind="belief") == []
    assert len(recall(tree, "postgres cache", NOW, limit=1)) == 1
    with pytest.raises(UsageError, match="unknown kind"):
        recall(tree, "postgres", NOW, kind="notes")
    with pytest.raises(UsageError, match="at least 1"):
        recall(tree, "postgres", NOW, limit=0)


def test_hit_fields(tree: Path) -> None:
    set_mtime(tree / NOTES / "pg-keyword.md", ago(hours=3))
    (hit,) = recall(tree, "postgres", NOW, limit=1)
    assert hit.age == human_age(ago(hours=3), NOW)  # the text's age
    assert hit.to_json() == {
        "path": f"{NOTES}/pg-keyword.md",
        "kind": "note",
        "origin": "owner",
        "age": ago(hours=3).astimezone().isoformat(),  # JSON: the mtime, ISO with offset
        "keywords": "postgres, backup",
        "snippet": hit.snippet,
        "probes": {},
        "updated": None,
        "matched": hit.matched,
        "only_log": False,
        "superseded_by": None,
        "superseded_on": None,
        "newer": None,
        "chunk": None,
        "drifted": [],
    }
    assert hit.matched in ("words", "both")
    assert hit.snippet.startswith("Nothing of note happened")
    assert "\n" not in hit.snippet and len(hit.snippet) <= 160


def test_hit_json_times_are_iso_and_the_text_keeps_ages(make_tree: MakeTree) -> None:
    root = make_tree(
        {
            f"{NOTES}/dated.md": note("zebra", "Stripes.", updated="2026-03-11 09:30"),
            f"{NOTES}/free.md": note("zebra", "Stripes too.", updated="last spring"),
        },
        mtime=ago(days=2),
    )
    hits = {hit.path: hit for hit in recall(root, "zebra", NOW)}
    dated = hits[f"{NOTES}/dated.md"].to_json()
    assert dated["age"] == ago(days=2).astimezone().isoformat()
    assert dated["updated"] == datetime(2026, 3, 11, 9, 30).astimezone().isoformat()
    # not a time: as written, quoted as data (no key: nobody signed the note)
    assert hits[f"{NOTES}/free.md"].to_json()["updated"] == f"{NOT_SIGNED} `last spring`"
    text = "\n".join(render(list(hits.values())))
    assert f"({human_age(ago(days=2), NOW)} — {NOT_SIGNED} `zebra`)" in text
    assert "updated: 2026-03-11 09:30" in text


def test_snippet_is_one_line_around_the_match(make_tree: MakeTree) -> None:
    body = ("Line one is filler.\n" * 40) + "The zebra crossing\nis here.\n" + ("More.\n" * 40)
    root = make_tree({f"{NOTES}/long.md": note("", body)})
    (hit,) = recall(root, "zebra", NOW)
    assert "zebra crossing is here" in hit.snippet
    assert "\n" not in hit.snippet and len(hit.snippet) <= 160


def test_plain_rendering(make_tree: MakeTree) -> None:
    root = make_tree(
        {
            f"{NOTES}/deploys.md": note("deploy", "How we deploy.", updated="2026-03-10"),
            f"{NOTES}/bare.md": "---\n---\nWe deploy on Fridays.\n",
        },
        mtime=ago(days=6),
    )
    lines = render(recall(root, "deploy", NOW))
    # nobody signed them (no key): their words are quoted as data, labelled so
    assert lines == [
        f"{NOTES}/deploys.md [unknown] (6d ago — {NOT_SIGNED} `deploy`)",
        f"  snippet: {LABELS['unknown']}",
        "    ```text",
        "    How we deploy.",
        "    ```",
        "  updated: 2026-03-10",
        f"{NOTES}/bare.md [unknown] (6d ago)",
        f"  snippet: {LABELS['unknown']}",
        "    ```text",
        "    We deploy on Fridays.",
        "    ```",
    ]


# -- hostile queries -------------------------------------------------------------


@pytest.mark.parametrize(
    "query",
    [
        '"postgres',
        "-x postgres",
        "a:b",
        "postgres*",
        "NEAR(postgres",
        "AND OR",
        "keywords:x",
        "postgres)",
        "^postgres",
        "'; DROP TABLE files; --",
        "NOT postgres",
        "{postgres}",
        "ü é 中文",
    ],
)
def test_hostile_queries_are_plain_words(tree: Path, query: str) -> None:
    hits = recall(tree, query, NOW)  # never raises
    if "postgres" in query:
        assert f"{NOTES}/pg-keyword.md" in paths(hits)
    with Index(tree) as idx:
        assert idx.conn.execute("SELECT count(*) FROM files").fetchone()[0] == 10


@pytest.mark.parametrize("query", ['"', "*", "-", ":", "  ", "()", "___"])
def test_a_query_without_words_is_a_usage_error(tree: Path, query: str) -> None:
    with pytest.raises(UsageError, match="nothing to search for"):
        recall(tree, query, NOW)


def test_query_words() -> None:
    assert search.query_words('Deploy "staging" -x a:b deploy*') == [
        "deploy",
        "staging",
        "x",
        "a",
        "b",
    ]


# -- keeping the index fresh -----------------------------------------------------


def test_incremental_refresh_rereads_only_what_changed(tree: Path) -> None:
    def refresh() -> indexdoc.Stats:
        cache = HeaderCache(tree)
        found = walk(tree, cache)
        cache.save()
        with Index(tree) as idx:
            stats = idx.refresh(found)
        refresh.header_reads = cache.misses  # type: ignore[attr-defined]
        return stats

    first = refresh()
    assert (first.read, first.unchanged, first.rebuilt) == (10, 0, True)
    second = refresh()
    assert (second.read, second.unchanged, second.removed, second.rebuilt) == (0, 10, 0, False)
    assert refresh.header_reads == 0  # type: ignore[attr-defined]

    changed = tree / NOTES / "pg-body.md"
    changed.write_text(note("weather", "Now it talks about sqlite instead."))
    set_mtime(changed, ago(days=1))
    third = refresh()
    assert (third.read, third.unchanged, third.removed) == (1, 9, 0)
    assert refresh.header_reads == 1  # type: ignore[attr-defined]
    assert paths(recall(tree, "sqlite", NOW, mode="words")) == [f"{NOTES}/pg-body.md"]
    assert paths(recall(tree, "postgres", NOW, mode="words")) == [f"{NOTES}/pg-keyword.md"]


def test_deleted_and_added_files(tree: Path, make_tree: MakeTree) -> None:
    assert f"{NOTES}/pg-body.md" in paths(recall(tree, "postgres", NOW))
    (tree / NOTES / "pg-body.md").unlink()
    make_tree({f"{NOTES}/new.md": note("postgres", "fresh")})
    with Index(tree) as idx:
        stats = idx.refresh(walk(tree))
    assert (stats.read, stats.removed) == (1, 1)
    assert paths(recall(tree, "postgres", NOW)) == [f"{NOTES}/new.md", f"{NOTES}/pg-keyword.md"]


def test_a_file_written_just_now_is_read_again_next_time(tree: Path) -> None:
    recall(tree, "postgres", NOW)
    (tree / NOTES / "pg-body.md").write_text(note("", "same size? no matter"))  # mtime: now
    with Index(tree) as idx:
        assert idx.refresh(walk(tree)).read == 1
    with Index(tree) as idx:
        assert idx.refresh(walk(tree)).read == 1  # still inside its mtime tick: trusted later


def test_rebuilt_when_of_an_old_schema(tree: Path) -> None:
    recall(tree, "postgres", NOW)
    db = tree / ".rouse" / index.FILE
    with sqlite3.connect(db) as conn:
        conn.execute(f"PRAGMA user_version = {schema.SCHEMA - 1}")
    conn.close()
    with Index(tree) as idx:
        stats = idx.refresh(walk(tree))
    assert (stats.rebuilt, stats.read, stats.in_memory) == (True, 10, False)
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == schema.SCHEMA
    conn.close()


@pytest.mark.parametrize("garbage", [b"not a database at all " * 200, b"", b"SQLite format 3\x00"])
def test_rebuilt_when_corrupt(tree: Path, garbage: bytes) -> None:
    (tree / ".rouse").mkdir()
    (tree / ".rouse" / index.FILE).write_bytes(garbage)
    assert paths(recall(tree, "postgres", NOW))[0] == f"{NOTES}/pg-keyword.md"
    with Index(tree) as idx:
        stats = idx.refresh(walk(tree))
    assert (stats.rebuilt, stats.read, stats.in_memory) == (False, 0, False)


def test_rebuilt_when_missing(tree: Path) -> None:
    recall(tree, "postgres", NOW)
    (tree / ".rouse" / index.FILE).unlink()
    with Index(tree) as idx:
        assert idx.refresh(walk(tree)).rebuilt
    assert paths(recall(tree, "runbook", NOW)) == [f"{NOTES}/runbook/note.md"]


def test_recall_works_when_dot_rouse_is_a_file(tree: Path) -> None:
    (tree / ".rouse").write_text("not a directory\n")
    assert paths(recall(tree, "postgres", NOW))[0] == f"{NOTES}/pg-keyword.md"
    with Index(tree) as idx:
        assert idx.stats.in_memory
    assert (tree / ".rouse").read_text() == "not a directory\n"


def test_a_read_only_index_falls_back_to_memory(tree: Path) -> None:
    recall(tree, "postgres", NOW)
    changed = tree / NOTES / "pg-body.md"
    changed.write_text(note("", "sqlite now"))
    set_mtime(changed, ago(days=1))
    idx = Index(tree)
    idx.conn.close()
    idx.conn = sqlite3.connect(f"file:{idx.path}?mode=ro", uri=True, isolation_level=None)
    stats = idx.refresh(walk(tree))  # the write fails: rebuilt in memory instead
    assert (stats.in_memory, stats.read) == (True, 10)
    assert [m.rel for m in idx.search(["sqlite"])] == [f"{NOTES}/pg-body.md"]
    idx.close()


def test_like_fallback_ranks_the_same_way(tree: Path) -> None:
    with Index(tree, fts=False) as idx:
        idx.refresh(walk(tree))
        found = idx.search(["postgres"])
        assert [m.rel for m in found] == [f"{NOTES}/pg-keyword.md", f"{NOTES}/pg-body.md"]
        assert "postgres" in found[1].snippet
        assert idx.search(["kubernetes"])[0].rel == f"{NOTES}/kubernetes-upgrade.md"
        assert [m.rel for m in idx.search(["cache"], kind="backlog")] == [
            f"{BACKLOG}/cache-idea/backlog.md"
        ]
    with Index(tree) as idx:  # FTS5 is back: the LIKE-built file is rebuilt
        assert idx.fts and idx.stats.rebuilt


# -- demand probes beside hits ---------------------------------------------------

PROBES = """\
Probes.

```probe
name: v
cmd: echo ran >> ran.txt; cat v.txt
```
"""


@pytest.fixture
def probed(make_tree: MakeTree) -> Path:
    root = make_tree(
        {
            "inventory/probes.md": PROBES,
            f"{NOTES}/disk.md": note("disk", "How full the disk is.", probes="v, missing"),
            f"{NOTES}/other.md": note("weather", "Sunny."),
        }
    )
    (root / "v.txt").write_text("42\n")
    return root


def test_probe_readings_beside_a_hit(probed: Path) -> None:
    (hit,) = recall(probed, "disk", NOW)
    assert hit.probes == {"v": "42", "missing": "<unknown>"}
    # the names are the note's words (not signed): quoted; the readings are the probes'
    assert render([hit])[-1] == f"  probes: {NOT_SIGNED} `v`=42, {NOT_SIGNED} `missing`=<unknown>"


def test_only_probes_named_by_returned_hits_run(probed: Path) -> None:
    recall(probed, "weather", NOW)
    assert not (probed / "ran.txt").exists()


def test_probes_off_reads_unknown_and_runs_nothing(probed: Path) -> None:
    (hit,) = recall(probed, "disk", NOW, run_probes=False)
    assert hit.probes == {"v": "<unknown>", "missing": "<unknown>"}
    assert not (probed / "ran.txt").exists()


# -- the verb, as a user runs it -------------------------------------------------


def run(
    root: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("ROUSE_")}
    full_env["ROUSE_STAMP_KEY"] = str(root.parent / "no-such-key")
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "rouse", "--memory", str(root), "recall", *args],
        env=full_env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_cli_plain_and_exit_codes(tree: Path) -> None:
    set_mtime(tree / NOTES / "pg-keyword.md", ago(hours=3))
    done = run(tree, "postgres", "--now", "2026-03-14 12:00")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"{NOTES}/pg-keyword.md [owner] (3h ago — postgres, backup)"
    assert lines[1].startswith("  Nothing of note")
    missing = run(tree, "xylophone")
    assert (missing.returncode, missing.stdout) == (1, "")
    assert missing.stderr.count("\n") == 1 and "nothing recalled" in missing.stderr
    assert run(tree, "--", '"').returncode == 2
    assert run(tree, "postgres", "--kind", "nope").returncode == 2


def test_cli_json(tree: Path) -> None:
    done = run(tree, "postgres", "cache", "--json", "--limit", "2")
    assert done.returncode == 0, done.stderr
    hits = json.loads(done.stdout)
    assert {h["path"] for h in hits} == {
        f"{NOTES}/pg-keyword.md",
        f"{BACKLOG}/cache-idea/backlog.md",
    }
    for hit in hits:
        assert {"path", "kind", "origin", "age", "keywords", "snippet", "probes"} <= set(hit)
        assert isinstance(hit["probes"], dict)
    done = run(tree, "postgres", "--kind", "backlog", "--json")
    assert (done.returncode, json.loads(done.stdout)) == (1, [])


def test_cli_probes_off(probed: Path) -> None:
    done = run(probed, "disk", "--json", env={"ROUSE_PROBES": "off"})
    probes = {f"{NOT_SIGNED} `v`": "<unknown>", f"{NOT_SIGNED} `missing`": "<unknown>"}
    assert json.loads(done.stdout)[0]["probes"] == probes
    assert not (probed / "ran.txt").exists()


def test_with_a_stamp_key_unsigned_origins_and_probes_read_unknown(
    probed: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key_path = stampkey.init_key(tmp_path / "keys" / "stamp.key")
    monkeypatch.setenv("ROUSE_STAMP_KEY", str(key_path))
    (hit,) = recall(probed, "disk", NOW)
    assert hit.origin == "unknown"
    assert hit.probes == {"v": "<unknown>", "missing": "<unknown>"}
    assert not (probed / "ran.txt").exists()
    key = stampkey.load_key(key_path)
    stamping.stamp(probed, ["inventory/probes.md", f"{NOTES}/disk.md"], "owner", None, probed, key)
    (hit,) = recall(probed, "disk", NOW)
    assert (hit.origin, hit.probes["v"]) == ("owner", "42")


def test_concurrent_first_recalls_all_answer(tree: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROUSE_")}
    env["ROUSE_STAMP_KEY"] = str(tree.parent / "no-such-key")
    command = [sys.executable, "-m", "rouse", "--memory", str(tree), "recall", "postgres"]
    running = [
        subprocess.Popen(
            command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for _ in range(4)
    ]
    results = [(p.wait(timeout=60), *p.communicate()) for p in running]
    assert {r[0] for r in results} == {0}, [r[2] for r in results]
    assert len({r[1] for r in results}) == 1
    assert results[0][1].startswith(f"{NOTES}/pg-keyword.md")
