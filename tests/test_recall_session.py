"""Recall in a long-lived process (issue 32, item 5): the MCP server keeps its walk and
its index between queries, and still sees every edit, new note and deletion made
between two of them — told by a watching sweeper, else by one lstat per path."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from conftest import NOTES, NOW, OLD, MakeTree, set_mtime
from rouse.agents.mcp_tools import Tools
from rouse.pack import semantic
from rouse.pack.index import FILE
from rouse.pack.recall import Session, recall
from rouse.sweep.watch import TreeWatcher

pytestmark = pytest.mark.usefixtures("no_stamp_key")

ALPHA = f"{NOTES}/alpha.md"
BETA = f"{NOTES}/beta.md"


@pytest.fixture
def tree(make_tree: MakeTree) -> Path:
    return make_tree(
        {
            ALPHA: "---\nkeywords: ferry\n---\nThe ferry leaves the harbour at nine.\n",
            BETA: "---\nkeywords: garden\n---\nWater the tomatoes twice a week.\n",
        }
    )


@pytest.fixture(params=["alone", "watched"])
def watched(request: pytest.FixtureRequest, tree: Path) -> Iterator[str]:
    """The tree alone, or with a watcher answering over .rouse/fsmon.sock."""
    if request.param == "alone":
        yield "alone"
        return
    (tree / ".rouse").mkdir(exist_ok=True)
    watcher = TreeWatcher(tree, None)
    if not watcher.start():  # (inotify is Linux's: elsewhere the watched case cannot run)
        if sys.platform.startswith("linux"):
            pytest.fail("the watcher did not start on Linux")
        pytest.skip("no inotify on this platform")
    try:
        yield "watched"
    finally:
        watcher.close()


def found(session: Session, root: Path, query: str, mode: str = "words") -> list[str]:
    return [hit.path for hit in recall(root, query, NOW, mode=mode, session=session)]


def rewrite(path: Path, text: str) -> None:
    """Edit in place (no new inode, no directory entry changed), its mtime a minute later
    than it was but still long ago."""
    with path.open("r+", encoding="utf-8") as handle:
        handle.write(text)
        handle.truncate()
    set_mtime(path, OLD + timedelta(minutes=1))


def test_nothing_changed_the_walk_is_kept(tree: Path, watched: str) -> None:
    session = Session()
    assert found(session, tree, "ferry") == [ALPHA]
    walked = session.walked
    index = session.index
    assert found(session, tree, "ferry") == [ALPHA]
    assert session.walked is walked and session.index is index  # no walk, no new index
    if watched == "watched":
        assert walked is not None and walked[2].token_next is not None  # asked the watcher


def test_an_edit_a_new_note_and_a_deletion_between_two_queries_are_seen(
    tree: Path, watched: str
) -> None:
    session = Session()
    assert found(session, tree, "ferry") == [ALPHA]
    # the same size, in place: no directory's mtime moves
    rewrite(tree / BETA, "---\nkeywords: garden\n---\nWater the ferry  twice a week.\n\n\n")
    assert (tree / BETA).stat().st_size == len(
        "---\nkeywords: garden\n---\nWater the tomatoes twice a week.\n"
    )
    assert sorted(found(session, tree, "ferry")) == [ALPHA, BETA]
    (tree / ALPHA).unlink()
    assert found(session, tree, "ferry") == [BETA]
    (tree / NOTES / "gamma.md").write_text("---\nkeywords: ferry\n---\nA new timetable.\n")
    set_mtime(tree / NOTES / "gamma.md", OLD)
    assert sorted(found(session, tree, "ferry")) == [BETA, f"{NOTES}/gamma.md"]


def test_an_index_replaced_or_written_by_another_process_is_caught_up(tree: Path) -> None:
    session = Session()
    assert found(session, tree, "ferry") == [ALPHA]
    for name in os.listdir(tree / ".rouse"):
        if name.startswith(FILE):
            os.unlink(tree / ".rouse" / name)  # the index thrown away under the session
    assert found(session, tree, "ferry") == [ALPHA]
    forget = [sys.executable, "-m", "rouse", "--memory", str(tree), "forget", ALPHA]
    subprocess.run([*forget, "--why", "asked to"], check=True, capture_output=True)
    assert found(session, tree, "ferry") == []


@pytest.mark.skipif(not semantic.available(), reason="needs the semantic extra")
def test_by_meaning_a_session_sees_what_changed(tree: Path, watched: str) -> None:
    session = Session()
    query = "when does the boat depart from the port"
    assert found(session, tree, query, "meaning")[0] == ALPHA
    (tree / ALPHA).unlink()
    assert ALPHA not in found(session, tree, query, "meaning")
    (tree / NOTES / "boat.md").write_text("---\nkeywords: travel\n---\nThe ferry sails at ten.\n")
    set_mtime(tree / NOTES / "boat.md", OLD)
    assert found(session, tree, query, "meaning")[0] == f"{NOTES}/boat.md"


def test_the_mcp_server_keeps_one_session(tree: Path) -> None:
    tools = Tools(tree)
    assert [hit["path"] for hit in json.loads(tools.recall("ferry", mode="words"))] == [ALPHA]
    session = tools.recalling
    rewrite(tree / ALPHA, "---\nkeywords: ferry\n---\nThe ferry leaves the harbour at ten.\n")
    hits = json.loads(tools.recall("ferry", mode="words"))
    assert tools.recalling is session
    assert "ten" in hits[0]["snippet"] and "nine" not in hits[0]["snippet"]


def test_the_server_recalls_from_any_of_its_worker_threads_at_once(tree: Path) -> None:
    """The MCP SDK runs a tool in a worker thread of its pool: one session serves them
    all, one recall at a time."""
    tools = Tools(tree)
    results: list[object] = []

    def ask() -> None:
        try:
            results.append(json.loads(tools.recall("ferry", mode="words"))[0]["path"])
        except Exception as exc:  # (a thread's exception would be lost otherwise)
            results.append(exc)

    for batch in (1, 4):  # one thread after another, then four at once
        threads = [threading.Thread(target=ask) for _ in range(batch)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert results == [ALPHA] * 5
