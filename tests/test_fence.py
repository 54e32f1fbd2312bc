"""The one fence rule (rouse.trust.fence): who is quoted, what the fence holds, and
what the agent is told the labels mean."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from rouse.agents import instructions as skills
from rouse.agents.wiring import Wiring
from rouse.trust import fence

SKELETON = Path(fence.__file__).parents[1] / "records" / "skeleton" / "entrypoint" / "rouse.md"


def test_who_is_quoted_and_who_is_held_back() -> None:
    assert [o for o in ("owner", "system", "agent") if fence.quoted(o)] == []
    assert fence.quoted("unknown") and fence.quoted("untrusted") and fence.quoted("Owner ")
    # context: untrusted always held back; unknown only with a key (without one, quoted)
    assert fence.held_back("untrusted", keyed=False) and fence.held_back("untrusted", keyed=True)
    assert fence.held_back("unknown", keyed=True) and not fence.held_back("unknown", keyed=False)
    assert not fence.held_back("owner", keyed=True)


def test_unknown_is_labelled_not_signed_never_untrusted() -> None:
    said = fence.block("call the bank", "unknown")
    assert "not signed" in said[0] and "untrusted" not in said[0]
    assert "untrusted" in fence.block("x", "untrusted")[0]
    assert fence.inline("a, b", "unknown") == "(not signed, quoted) `a, b`"
    assert fence.block(["plain", ""], "owner") == ["plain", ""]
    assert fence.inline("a\nb", "owner") == "a b"


@given(st.text())
def test_no_line_inside_a_block_can_close_its_fence(text: str) -> None:
    lines = fence.block(text, "untrusted")
    opening, body, closing = lines[1], lines[2:-1], lines[-1]
    assert opening == closing + "text"
    assert closing not in [line.strip() for line in body]
    assert all(not line.strip().startswith(closing) for line in body)
    assert body == text.splitlines()  # (every line break Python knows cuts a line)


@given(st.text())
def test_an_inline_value_stays_one_line_inside_its_span(value: str) -> None:
    shown = fence.inline(value, "unknown")
    assert "\n" not in shown and "\r" not in shown
    if shown:
        span = shown.removeprefix(fence.SHORT["unknown"] + " ")
        ticks = len(span) - len(span.lstrip("`"))
        inner = span[ticks:-ticks]
        assert span.endswith("`" * ticks) and "`" * ticks not in inner


def test_the_entrypoint_and_the_skill_say_what_each_label_asks(tmp_path: Path) -> None:
    assert fence.GUIDE in SKELETON.read_text()
    wiring = Wiring(tree=tmp_path / "memory", project=tmp_path, home=tmp_path)
    assert fence.GUIDE in skills.skill_text(wiring)
    for label in ("[owner]", "[system]", "[agent]", "[unknown]", "[untrusted]", "Quarantined"):
        assert label in fence.GUIDE


def test_fleet_recall_shows_a_hit_by_the_same_rule() -> None:
    from datetime import datetime

    from rouse.fleet.recall import FleetHit, recall_lines

    def hit(kind: str, origin: str) -> FleetHit:
        return FleetHit(
            *("t", "/r", "h", f"x/{kind}.md", kind, origin, "mismatch", "kw-mark"),
            snippet="body-mark",
            mtime=datetime(2026, 3, 14),
            updated="up-mark",
        )

    now = datetime(2026, 3, 15)
    plain = "\n".join(recall_lines([hit("note", "owner")], now))
    assert "— kw-mark)" in plain and "  body-mark" in plain and "updated: up-mark" in plain
    quoted = recall_lines([hit("note", "unknown")], now)
    assert "(not signed, quoted) `kw-mark`" in quoted[0]
    assert quoted[1:4] == [f"  snippet: {fence.LABELS['unknown']}", "    ```text", "    body-mark"]
    held = hit("belief", "untrusted")
    text = "\n".join(recall_lines([held], now))
    assert "mark" not in text and "quarantined" in text
    assert "mark" not in str(held.to_json())
    assert hit("note", "untrusted").to_json()["snippet"].startswith(fence.LABELS["untrusted"])
