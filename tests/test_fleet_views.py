"""``rouse fleet status|due|recall`` across mirrored trees, on a real PostgreSQL (issue 14)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from conftest import INTENTIONS, NOTES, NOW, OLD, REMINDERS, MakeTree, set_mtime, stamp
from rouse.cli.main import main
from rouse.core.identity import ensure_tree_id
from rouse.core.timefmt import format_stamp
from rouse.core.tree import walk
from rouse.fleet.mirror import Mirror
from rouse.fleet.pg import PgDatabase
from rouse.fleet.pg_schema import migrate
from rouse.trust.origins import origin_reader
from rouse.trust.stamp import stamp as stamp_files
from rouse.trust.stampkey import load_key

AT = format_stamp(NOW)


def tree_files(n: int) -> dict[str, str]:
    """A tree whose due records differ by ``n``: stale intentions, reminders, a silenced goal."""
    files = {
        f"{INTENTIONS}/stale-{n}/intention.md": f"""
            ---
            status: open
            last-moved: {stamp(NOW - timedelta(hours=3 + n))}
            ---
            Stale work {n}.
            """,
        f"{INTENTIONS}/fresh-{n}/intention.md": f"""
            ---
            status: open
            last-moved: {stamp(NOW - timedelta(minutes=10))}
            ---
            Fresh work.
            """,
        f"{REMINDERS}/call-{n}/reminder.md": f"""
            ---
            status: pending
            due: {stamp(NOW - timedelta(minutes=30 * (n + 1)))}
            nag: 1h
            fires: {n}
            ---
            Call back.
            """,
        f"{REMINDERS}/later-{n}/reminder.md": f"""
            ---
            status: pending
            due: {stamp(NOW + timedelta(hours=2))}
            ---
            Later.
            """,
    }
    if n == 1:  # one slug in two places: `rouse due` names both by their paths
        for parent in ("stale-1", "fresh-1"):
            files[f"{INTENTIONS}/{parent}/twin/task.md"] = (
                f"---\nstatus: pending\nlast-moved: {stamp(NOW - timedelta(days=2))}\n---\nT.\n"
            )
    return files


@pytest.fixture
def fleet(pg_dsn: str, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.delenv("ROUSE_LEDGER", raising=False)
    monkeypatch.delenv("ROUSE_NOW", raising=False)
    monkeypatch.setenv("ROUSE_STAMP_KEY", "/nonexistent/rouse-test-key")
    db = PgDatabase(pg_dsn)
    migrate(db, db.where)
    db.close()
    return pg_dsn


def mirror_tree(root: Path, dsn: str, key: Path | None = None) -> str:
    tree, _ = ensure_tree_id(root)
    db = PgDatabase(dsn)
    reader = origin_reader(root, key if key is not None else root.parent / "no-key")
    Mirror(root, db, tree, reader).sync(walk(root), NOW)
    db.close()
    return tree


def rouse(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def three_trees(make_tree: MakeTree, dsn: str) -> list[tuple[Path, str]]:
    made = []
    for n in range(3):
        root = make_tree(tree_files(n), name=f"tree{n}")
        made.append((root, mirror_tree(root, dsn)))
    return made


# -- due ----------------------------------------------------------------------------


def test_fleet_due_shows_every_trees_due_rows_as_rouse_due_does(
    make_tree: MakeTree, fleet: str, capsys: pytest.CaptureFixture[str]
) -> None:
    trees = three_trees(make_tree, fleet)
    code, out, _ = rouse(capsys, "--now", AT, "fleet", "due", "--ledger", fleet)
    assert code == 0
    expected = []
    for root, tree in trees:
        local_code, local, _ = rouse(capsys, "--memory", str(root), "--now", AT, "due")
        assert local_code == 0
        expected += [f"{tree[:8]}\t{line}" for line in local.splitlines()]
    assert len(expected) == 7  # 2 stale intentions, 2 stale twin tasks, 3 nagging reminders
    assert sorted(out.splitlines()) == sorted(expected)
    assert "intention/stale-0\tstale\twent stale" in out
    assert f"{INTENTIONS}/fresh-1/twin\tstale" in out  # a shared slug: shown by its path
    assert "nag #2 due" in out  # fires: 1 → the next wake is the second


def test_fleet_due_json_names_the_tree_and_carries_iso_times(
    make_tree: MakeTree, fleet: str, capsys: pytest.CaptureFixture[str]
) -> None:
    trees = three_trees(make_tree, fleet)
    code, out, _ = rouse(capsys, "--now", AT, "fleet", "due", "--ledger", fleet, "--json")
    assert code == 0
    items = json.loads(out)
    expected: list[dict[str, Any]] = []
    for root, tree in trees:
        _, local, _ = rouse(capsys, "--memory", str(root), "--now", AT, "due", "--json")
        expected += [{**item, "tree": tree, "root": str(root)} for item in json.loads(local)]
    key = ("tree", "record", "type", "slug", "path", "reason", "due_at", "moved_at", "nudge")
    assert sorted(tuple(i[k] for k in key) for i in items) == sorted(
        tuple(i[k] for k in key) for i in expected
    )
    assert [datetime.fromisoformat(i["due_at"]) for i in items] == sorted(
        datetime.fromisoformat(i["due_at"]) for i in items
    )
    assert all(datetime.fromisoformat(i["due_at"]).tzinfo is not None for i in items)
    assert {(i["origin"], i["verified"]) for i in items} == {("unknown", "unstamped")}


def test_fleet_due_reads_the_time_passing_since_the_sync(
    make_tree: MakeTree, fleet: str, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_tree(tree_files(0))
    mirror_tree(root, fleet)
    later = format_stamp(NOW + timedelta(hours=3))
    _, out, _ = rouse(capsys, "--now", later, "fleet", "due", "--ledger", fleet)
    _, local, _ = rouse(capsys, "--memory", str(root), "--now", later, "due")
    assert "reminder/later-0\tdue" in out  # due an hour after the sync ran, never re-synced
    assert [line.split("\t", 1)[1] for line in out.splitlines()] == local.splitlines()


def test_fleet_due_with_nothing_due_says_so(
    make_tree: MakeTree, fleet: str, capsys: pytest.CaptureFixture[str]
) -> None:
    mirror_tree(make_tree({f"{NOTES}/n.md": "---\n---\nA note.\n"}), fleet)
    code, out, err = rouse(capsys, "--now", AT, "fleet", "due", "--ledger", fleet)
    assert (code, out) == (0, "")
    assert f"nothing is due at {AT} in 1 mirrored tree(s)" in err


def test_tree_picks_by_id_or_a_unique_start(
    make_tree: MakeTree, fleet: str, capsys: pytest.CaptureFixture[str]
) -> None:
    ids = []
    for n in range(3):
        root = make_tree(tree_files(n), name=f"t{n}")
        (root / ".rouse-tree").write_text(f"tree: a{n}{'0' * 30}\n")
        ids.append(mirror_tree(root, fleet))
    assert ids == [f"a{n}{'0' * 30}" for n in range(3)]
    code, out, _ = rouse(
        capsys, "--now", AT, "fleet", "due", "--ledger", fleet, "--tree", ids[0], "A1"
    )
    assert code == 0
    assert {line.split("\t")[0] for line in out.splitlines()} == {ids[0][:8], ids[1][:8]}
    code, _, err = rouse(capsys, "fleet", "due", "--ledger", fleet, "--tree", "a")
    assert code == 2 and "is the start of 3 trees" in err
    code, _, err = rouse(capsys, "fleet", "due", "--ledger", fleet, "--tree", "ffff")
    assert code == 2 and "no tree 'ffff' in the fleet" in err


# -- status ----------------------------------------------------------------------------


def test_fleet_status_one_line_per_tree_with_leader_wakes_and_mirror(
    make_tree: MakeTree, fleet: str, capsys: pytest.CaptureFixture[str]
) -> None:
    (a_root, a), (b_root, b), (_, c) = three_trees(make_tree, fleet)
    db = PgDatabase(fleet)
    db.execute(
        "INSERT INTO trees (tree, root, host, last_tick, last_tick_by) "
        "VALUES (?, ?, 'laptop', now() - interval '2 minutes', 'laptop:41:x')",
        (a, str(a_root)),
    )
    db.execute(
        "INSERT INTO leaders (tree, holder, host, pid, token, since, expires) VALUES "
        "(?, 'laptop:41:x', 'laptop', 41, 3, now() - interval '1 hour', now() + interval '630 seconds'),"
        "(?, 'ci:7:y', 'ci', 7, 1, now() - interval '2 hours', now() - interval '5 minutes')",
        (a, c),
    )
    for n, state in enumerate(("pending", "pending", "held", "delivered", "given_up")):
        db.execute(
            "INSERT INTO outbox (kind, tree, id, record, path, file, reason, nudge, made_at, wake, sink, "
            "state) VALUES ('wake', ?, ?, 'x', 'p', 'f', 'stale', 1, '2026-03-14 12:00:00', 'w', 'file', ?)",
            (b, f"w{n}", state),
        )
    db.close()

    code, out, _ = rouse(capsys, "fleet", "status", "--ledger", fleet)
    assert code == 0
    lines = {line.split("  ")[0]: line for line in out.splitlines()}
    assert set(lines) == {a[:8], b[:8], c[:8]}
    assert f"{a_root} on laptop" in lines[a[:8]]
    assert "ticked 2m ago" in lines[a[:8]] and "by laptop:41:x" in lines[a[:8]]
    assert "led by laptop:41:x until in 10m" in lines[a[:8]]
    assert "wakes 2 pending, 1 held, 1 delivered, 1 given up" in lines[b[:8]]
    assert "no tick reported" in lines[b[:8]] and f"{b_root} on " in lines[b[:8]]
    assert "no leader (the lease of ci:7:y ran out 5m ago" in lines[c[:8]]
    assert "mirror 4 files, synced just now" in lines[c[:8]]

    code, out, _ = rouse(capsys, "fleet", "status", "--ledger", fleet, "--json", "--tree", a)
    (item,) = json.loads(out)
    assert (item["tree"], item["root"], item["host"]) == (a, str(a_root), "laptop")
    assert item["leader"]["holder"] == "laptop:41:x" and item["leader"]["live"] is True
    assert item["leader"]["token"] == 3
    assert datetime.fromisoformat(item["leader"]["expires"]).tzinfo is not None
    assert datetime.fromisoformat(item["last_tick"]).tzinfo is not None
    assert item["wakes"] == {
        "pending": 0,
        "held": 0,
        "delivered": 0,
        "given_up": 0,
        "withdrawn": 0,
    }
    assert item["mirror"]["files"] == 4


# -- recall ------------------------------------------------------------------------------


def test_fleet_recall_ranks_keywords_over_path_over_body_with_provenance(
    make_tree: MakeTree, fleet: str, capsys: pytest.CaptureFixture[str], key_path: Path
) -> None:
    signed = make_tree({f"{NOTES}/alpha.md": "---\nkeywords: zebra\n---\nStripes.\n"}, name="a")
    stamp_files(signed, [f"{NOTES}/alpha.md"], "owner", None, cwd=signed, key=load_key(key_path))
    set_mtime(signed / NOTES / "alpha.md", OLD)
    by_path = make_tree({f"{NOTES}/zebra.md": "---\norigin: agent\n---\nStripes.\n"}, name="b")
    in_body = make_tree({f"{NOTES}/gamma.md": "---\n---\nA zebra crossed.\n"}, name="c")
    both = make_tree({f"{NOTES}/delta.md": "---\n---\nThe zebra and the okapi.\n"}, name="d")
    a = mirror_tree(signed, fleet, key_path)
    b, c, d = (mirror_tree(root, fleet) for root in (by_path, in_body, both))

    code, out, _ = rouse(capsys, "--now", AT, "fleet", "recall", "zebra", "--ledger", fleet)
    assert code == 0
    heads = [line for line in out.splitlines() if not line.startswith("  ")]
    assert heads[0].startswith(f"{a[:8]} {NOTES}/alpha.md [owner: verified]")
    assert heads[1].startswith(f"{b[:8]} {NOTES}/zebra.md [agent: as-written]")
    assert f"{c[:8]} {NOTES}/gamma.md [unknown: unstamped] (" in "\n".join(heads[2:4])
    assert "    A zebra crossed." in out.splitlines()  # (unknown: quoted as data)

    code, out, _ = rouse(
        capsys, "--now", AT, "fleet", "recall", "zebra", "okapi", "--ledger", fleet, "--json"
    )
    hits = json.loads(out)
    assert [(h["tree"], h["path"]) for h in hits][:2] == [
        (d, f"{NOTES}/delta.md"),  # both words, in the body, beats one word in keywords
        (a, f"{NOTES}/alpha.md"),
    ]
    assert hits[1]["origin_verified"] is True and hits[1]["verified"] == "verified"
    assert all(h["origin_verified"] is False for h in hits if h["tree"] != a)
    assert datetime.fromisoformat(hits[1]["age"]) == OLD.astimezone()

    code, out, _ = rouse(capsys, "fleet", "recall", "zebra", "--ledger", fleet, "--limit", "1")
    assert len([line for line in out.splitlines() if not line.startswith("  ")]) == 1


def test_fleet_recall_finds_chinese_and_japanese_by_words(
    make_tree: MakeTree, fleet: str, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_tree(
        {
            f"{NOTES}/tokyo.md": "---\nkeywords: 天気\n---\n東京の会議は来週の火曜日に決まりました。\n",
            f"{NOTES}/beijing.md": "---\n---\n北京的服务器明天迁移到新机房。\n",
            f"{NOTES}/other.md": "---\n---\nNothing written without spaces here.\n",
        }
    )
    tree = mirror_tree(root, fleet)
    for query, path in (("会議", "tokyo"), ("服务器迁移", "beijing"), ("天気", "tokyo")):
        code, out, _ = rouse(capsys, "fleet", "recall", query, "--ledger", fleet, "--json")
        assert code == 0, query
        assert [(h["tree"], h["path"]) for h in json.loads(out)] == [(tree, f"{NOTES}/{path}.md")]


def test_fleet_recall_finds_nothing_exits_1(
    make_tree: MakeTree, fleet: str, capsys: pytest.CaptureFixture[str]
) -> None:
    mirror_tree(make_tree({f"{NOTES}/n.md": "---\n---\nA note.\n"}), fleet)
    code, out, err = rouse(capsys, "fleet", "recall", "quagga", "--ledger", fleet)
    assert (code, out) == (1, "")
    assert "nothing recalled for 'quagga'" in err


# -- usage -----------------------------------------------------------------------------------


def test_fleet_without_a_database_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ROUSE_LEDGER", raising=False)
    code, _, err = rouse(capsys, "fleet", "status")
    assert code == 2 and "--ledger postgresql://" in err and "ROUSE_LEDGER" in err
    code, _, err = rouse(capsys, "fleet", "due", "--ledger", "sqlite:///x")
    assert code == 2 and "must be a postgresql:// URL" in err


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["fleet", "recall", "x", "--limit", "0"], "--limit must be"),
        (["fleet", "recall", "-", "--limit", "1"], "nothing to search for"),
    ],
)
def test_fleet_usage_errors(
    fleet: str, capsys: pytest.CaptureFixture[str], argv: list[str], says: str
) -> None:
    code, _, err = rouse(capsys, *argv, "--ledger", fleet)
    assert code == 2 and says in err


@pytest.mark.parametrize("argv", [["fleet", "recall"], ["fleet", "due", "tls"], ["fleet"]])
def test_fleet_argument_errors_exit_2(
    fleet: str, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main([*argv, "--ledger", fleet])
    assert exited.value.code == 2


def test_options_go_before_or_after_the_view_and_its_words(
    make_tree: MakeTree, fleet: str, capsys: pytest.CaptureFixture[str]
) -> None:
    mirror_tree(make_tree({f"{NOTES}/n.md": "---\nkeywords: okapi\n---\nA note.\n"}), fleet)
    for argv in (
        ["fleet", "--json", "--ledger", fleet, "recall", "okapi"],
        ["fleet", "recall", "--json", "--ledger", fleet, "okapi"],
        ["fleet", "recall", "okapi", "--ledger", fleet, "--json", "--limit", "3"],
    ):
        code, out, _ = rouse(capsys, *argv)
        assert code == 0 and [h["path"] for h in json.loads(out)] == [f"{NOTES}/n.md"], argv


def test_rouse_ledger_names_the_database(
    make_tree: MakeTree, fleet: str, capsys: pytest.CaptureFixture[str], monkeypatch: Any
) -> None:
    mirror_tree(make_tree(tree_files(0)), fleet)
    monkeypatch.setenv("ROUSE_LEDGER", fleet)
    code, out, _ = rouse(capsys, "--now", AT, "fleet", "due")
    assert code == 0 and "intention/stale-0" in out


# -- recall: stopwords, cut snippets, modes (issue 23, item 5) ---------------------------


def test_fleet_recall_of_stopwords_alone_falls_back_to_the_simple_configuration(
    make_tree: MakeTree, fleet: str, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_tree(
        {
            f"{NOTES}/who.md": "---\nkeywords: team\n---\nWho we are and what we do.\n",
            f"{NOTES}/other.md": "---\n---\nTomatoes need water.\n",
        }
    )
    tree = mirror_tree(root, fleet)
    local, _, _ = rouse(capsys, "--memory", str(root), "recall", "who", "we", "--mode", "words")
    assert local == 0  # local FTS5 finds it
    code, out, err = rouse(capsys, "fleet", "recall", "who", "we", "--ledger", fleet, "--json")
    assert code == 0, err
    assert [(h["tree"], h["path"]) for h in json.loads(out)] == [(tree, f"{NOTES}/who.md")]
    # a query with a word of substance still ignores its stopwords
    code, out, _ = rouse(capsys, "fleet", "recall", "we", "tomatoes", "--ledger", fleet, "--json")
    assert [h["path"] for h in json.loads(out)] == [f"{NOTES}/other.md"]


def test_fleet_recall_marks_a_cut_snippet_with_an_ellipsis(
    make_tree: MakeTree, fleet: str, capsys: pytest.CaptureFixture[str]
) -> None:
    lead = " ".join(f"filler{i}" for i in range(60))
    body = f"{lead} the zebra crossed the road at noon. {lead}"
    root = make_tree(
        {f"{NOTES}/long.md": f"---\n---\n{body}\n", f"{NOTES}/short.md": "---\n---\nA zebra.\n"}
    )
    mirror_tree(root, fleet)
    code, out, _ = rouse(capsys, "fleet", "recall", "zebra", "--ledger", fleet, "--json")
    assert code == 0
    snippets = {h["path"]: h["snippet"] for h in json.loads(out)}
    # (no origin: the snippets are quoted as data, not signed)
    cut = snippets[f"{NOTES}/long.md"].splitlines()[2]
    assert cut.startswith("…") and cut.endswith("…") and "zebra" in cut
    assert snippets[f"{NOTES}/short.md"].splitlines()[2] == "A zebra."  # whole: no ellipsis


def test_fleet_recall_snippets_show_no_log_markup(
    make_tree: MakeTree, fleet: str, capsys: pytest.CaptureFixture[str]
) -> None:
    body = "Ship it.\n\n## Log <!-- rouse:log -->\n- 2026-03-14 12:00: okapi sighted\n"
    root = make_tree({f"{INTENTIONS}/ship/intention.md": f"---\nstatus: open\n---\n{body}"})
    mirror_tree(root, fleet)
    code, out, _ = rouse(capsys, "fleet", "recall", "okapi", "--ledger", fleet, "--json")
    assert code == 0
    (hit,) = json.loads(out)
    assert "okapi sighted" in hit["snippet"]
    assert not [m for m in ("##", "<!--", "-->") if m in hit["snippet"]]


@pytest.mark.parametrize("mode", ["meaning", "both"])
def test_fleet_recall_says_its_mirror_holds_no_vectors(
    make_tree: MakeTree, fleet: str, capsys: pytest.CaptureFixture[str], mode: str
) -> None:
    mirror_tree(make_tree({f"{NOTES}/n.md": "---\n---\nA zebra.\n"}), fleet)
    code, _, err = rouse(capsys, "fleet", "recall", "zebra", "--ledger", fleet, "--mode", mode)
    assert code == 2
    assert "holds no vectors" in err and "--mode words" in err
    code, out, _ = rouse(capsys, "fleet", "recall", "zebra", "--ledger", fleet, "--mode", "words")
    assert code == 0 and f"{NOTES}/n.md" in out
