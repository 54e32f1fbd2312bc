"""Only what was written is searched (issue 23, item 3): no log marker, no rouse
log prefixes, no markup in the index or in a snippet; a hit on the log alone says so."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import INTENTIONS, NOTES, NOW, MakeTree
from rouse.core.errors import RouseError
from rouse.pack import written
from rouse.pack.recall import recall, render
from rouse.records import lifecycle
from rouse.trust.fence import LABELS

pytestmark = pytest.mark.usefixtures("no_stamp_key")

MARKUP = ("#", "**", "`", "<!--", "-->", "](", "rouse:log", "|", "> ")


def intention(body: str) -> str:
    return f"---\nstatus: open\nopened: 2026-03-01 09:00\ncloses-when: it ships\n---\n{body}\n"


@pytest.fixture
def worked(make_tree: MakeTree) -> Path:
    """Six records rouse's verbs wrote logs into, and one note about nginx logs."""
    files = {
        f"{INTENTIONS}/{slug}/intention.md": intention(f"Ship the {slug} feature.")
        for slug in ("alpha", "bravo", "charlie", "delta", "echo")
    }
    files[f"{INTENTIONS}/foxtrot/intention.md"] = intention("Tidy the web server.")
    files[f"{NOTES}/nginx.md"] = (
        "---\nkeywords: nginx\n---\nWhere nginx keeps its logs: /var/log.\n"
    )
    root = make_tree(files)
    for slug in ("alpha", "bravo", "charlie"):
        lifecycle.move(root, slug, NOW, note="made progress")
    lifecycle.snooze(root, "delta", NOW, duration="2h", note="waiting on review")
    lifecycle.close(root, "echo", NOW, "dropped", why="superseded by bravo")
    lifecycle.move(root, "foxtrot", NOW, note="rotated the access logs of nginx")
    return root


def paths(root: Path, query: str, **kw: object) -> list[str]:
    return [hit.path for hit in recall(root, query, NOW, mode="words", **kw)]  # type: ignore[arg-type]


def test_the_log_marker_is_not_searched(worked: Path) -> None:
    text = (worked / INTENTIONS / "alpha" / "intention.md").read_text()
    assert "## Log <!-- rouse:log -->" in text  # the verbs did write a log
    assert paths(worked, "rouse") == []
    # the note says log, foxtrot's agent wrote "logs"; no other record matches on its marker
    assert paths(worked, "log") == [f"{NOTES}/nginx.md", f"{INTENTIONS}/foxtrot/intention.md"]


def test_nginx_logs_finds_what_was_written_about_it(worked: Path) -> None:
    found = paths(worked, "nginx logs")
    assert found == [f"{NOTES}/nginx.md", f"{INTENTIONS}/foxtrot/intention.md"]


@pytest.mark.parametrize("query", ["dropped", "snoozed", "2026", "03", "14", "was", "until"])
def test_rouse_log_prefixes_and_stamps_are_not_searched(worked: Path, query: str) -> None:
    assert paths(worked, query) == []


def test_the_agent_s_words_in_the_log_are_found_and_say_so(worked: Path) -> None:
    hits = recall(worked, "superseded review", NOW, mode="words")
    by_path = {hit.path: hit for hit in hits}
    assert set(by_path) == {f"{INTENTIONS}/echo/intention.md", f"{INTENTIONS}/delta/intention.md"}
    echo = by_path[f"{INTENTIONS}/echo/intention.md"]
    assert echo.only_log and echo.to_json()["only_log"] is True
    assert echo.snippet == "superseded by bravo"
    assert by_path[f"{INTENTIONS}/delta/intention.md"].snippet == "waiting on review"
    lines = render([echo])  # (no key: not signed, so quoted as data)
    assert lines[1:] == [
        f"  only its log matched, snippet: {LABELS['unknown']}",
        "    ```text",
        "    superseded by bravo",
        "    ```",
    ]


def test_a_hit_in_the_authored_body_is_not_only_log(worked: Path) -> None:
    (hit,) = recall(worked, "feature bravo", NOW, mode="words", limit=1)
    assert hit.path == f"{INTENTIONS}/bravo/intention.md"
    assert not hit.only_log and hit.snippet == "Ship the bravo feature. it ships"


def test_header_syntax_is_not_searched(worked: Path) -> None:
    # closes-when's value is searched with the body; its key is header syntax
    assert paths(worked, "closes") == []
    assert f"{INTENTIONS}/alpha/intention.md" in paths(worked, "ships")
    assert paths(worked, "opened status") == []


BODY = """\
# Restoring the database

Some **bold** words, `inline code` and a [runbook link](https://example.org/run).
<!-- a comment nobody sees: zanzibar -->
> quoted advice about backups

| step | what |
| ---- | ---- |
| one  | pg_restore the dump |

```sh
pg_restore --clean nightly.dump
```
- a bullet about restoring
"""


def test_snippets_never_show_markup(make_tree: MakeTree) -> None:
    root = make_tree({f"{NOTES}/restore.md": f"---\nkeywords: db\n---\n{BODY}"})
    for query in ("restoring", "bold", "runbook", "backups", "pg_restore", "bullet"):
        (hit,) = recall(root, query, NOW, mode="words")
        assert not [m for m in MARKUP if m in hit.snippet], (query, hit.snippet)
    assert paths(root, "zanzibar") == []  # an HTML comment is markup, not text


def test_plain_keeps_words_and_drops_markup() -> None:
    assert written.plain("Edit `__init__.py` and **my_var**") == "Edit __init__.py and my_var"
    text = written.plain(BODY)
    assert "Restoring the database" in text
    assert "Some bold words, inline code and a runbook link (https://example.org/run)." in text
    assert "pg_restore --clean nightly.dump" in text  # code keeps its words
    assert "zanzibar" not in text
    assert not [m for m in ("# ", "**", "`", "<!--", "| ") if m in text]


@pytest.mark.parametrize(
    ("line", "words"),
    [
        ("- 2026-03-14 12:00: bisected it to the retry test", "bisected it to the retry test"),
        ("- 2026-03-14 12:00: snoozed until 2026-03-14 14:00: waiting", "waiting"),
        ("- 2026-03-14 12:00: snoozed until 2026-03-14 14:00", ""),
        ("- 2026-03-14 12:00: snooze cleared", ""),
        ("- 2026-03-14 12:00: dropped (was done): no longer needed", "no longer needed"),
        ("- 2026-03-14 12:00: done", ""),
        (
            "- 2026-03-14 12:00: told the owner via channel ops (tell w-1a2b): disk full",
            "disk full",
        ),
        ("- 2026-03-14 12:00: moved: rebased the branch", "rebased the branch"),
        ("a line written by hand, **kept**", "a line written by hand, kept"),
    ],
)
def test_log_note_keeps_only_the_agent_s_words(line: str, words: str) -> None:
    assert written.log_note(line) == words


def test_cli_nothing_recalled_for_the_marker(worked: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "rouse",
            "--memory",
            str(worked),
            "recall",
            "rouse",
            "--mode",
            "words",
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 1, done.stdout
    assert "nothing recalled for 'rouse'" in done.stderr
    done = subprocess.run(
        [sys.executable, "-m", "rouse", "--memory", str(worked), "recall", "superseded", "--json"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    (hit,) = json.loads(done.stdout)
    assert hit["only_log"] is True
    assert hit["snippet"] == f"{LABELS['unknown']}\n```text\nsuperseded by bravo\n```"


def test_recall_never_raises_on_a_log_of_markup_only(make_tree: MakeTree) -> None:
    root = make_tree({f"{NOTES}/empty.md": "---\nkeywords: husk\n---\n## Log <!-- rouse:log -->\n"})
    (hit,) = recall(root, "husk", NOW, mode="words")
    assert hit.snippet == "" and not hit.only_log
    with pytest.raises(RouseError):
        recall(root, "", NOW)
