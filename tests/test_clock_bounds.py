"""Every clock field's parse is bounded (issue 31 item 3).

A value longer than any real one is unreadable at once, before any pattern
runs over it; below that length the interval parser moves forward through
the text and never goes back over it. Both are pinned by counting, never by
timing.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable
from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import INTENTIONS, NOW, REMINDERS, MakeTree
from rouse.core import clockfields, timefmt
from rouse.core.clock import decisions
from rouse.core.recurrence import parse_every
from rouse.core.timefmt import MOST_CHARS, OutOfRange, parse_interval, parse_stamp
from rouse.core.tree import walk
from rouse.lint.check import check

RUN = "1" * 4000

PARSERS: dict[str, Callable[[str], object]] = {
    "interval": parse_interval,
    "stamp": parse_stamp,
    "every": parse_every,
    "count": clockfields.parse_count,
}


class CountingPattern:
    """A compiled pattern that counts the calls made to it."""

    def __init__(self, pattern: re.Pattern[str]):
        self.pattern = pattern
        self.calls = 0

    def __getattr__(self, name: str) -> Callable[..., object]:
        method = getattr(self.pattern, name)

        def counted(*args: object, **kwargs: object) -> object:
            self.calls += 1
            return method(*args, **kwargs)

        return counted


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> dict[str, CountingPattern]:
    patterns = {
        "interval": CountingPattern(timefmt._INTERVAL_RE),
        "stamp": CountingPattern(timefmt._STAMP_RE),
    }
    monkeypatch.setattr(timefmt, "_INTERVAL_RE", patterns["interval"])
    monkeypatch.setattr(timefmt, "_STAMP_RE", patterns["stamp"])
    return patterns


@pytest.mark.parametrize("kind", sorted(PARSERS))
def test_a_value_over_the_length_is_refused_before_any_pattern_runs(
    kind: str, counted: dict[str, CountingPattern]
) -> None:
    with pytest.raises(OutOfRange, match=f"at most {MOST_CHARS} characters"):
        PARSERS[kind](RUN)
    assert sum(p.calls for p in counted.values()) == 0
    # the error names the value shortened, not 4,000 characters of it
    with pytest.raises(OutOfRange) as caught:
        PARSERS[kind](RUN)
    assert len(str(caught.value)) < 200


def test_the_length_counts_what_is_written_not_the_padding() -> None:
    assert parse_interval(" " * 500 + "2h" + " " * 500) == timedelta(hours=2)


@given(
    st.lists(st.tuples(st.integers(0, 99), st.sampled_from("smhdw")), min_size=1, max_size=12),
    st.text(alphabet="0123456789 .", max_size=20),
)
def test_the_interval_parser_is_linear(parts: list[tuple[int, str]], tail: str) -> None:
    """One pattern match per written part (plus one that fails): never one per character."""
    pattern = CountingPattern(timefmt._INTERVAL_RE)
    original = timefmt._INTERVAL_RE
    timefmt._INTERVAL_RE = pattern  # type: ignore[assignment]
    try:
        text = "".join(f"{n}{unit}" for n, unit in parts) + tail
        with contextlib.suppress(ValueError):
            parse_interval(text)
    finally:
        timefmt._INTERVAL_RE = original
    assert pattern.calls <= len(parts) + 1


def test_a_long_digit_run_in_every_clock_field_is_reported_and_read_as_absent(
    make_tree: MakeTree,
) -> None:
    intention = f"{INTENTIONS}/long/intention.md"
    reminder = f"{REMINDERS}/long/reminder.md"
    root = make_tree(
        {
            intention: f"---\ncloses-when: x\nstale-after: {RUN}\nreview-every: {RUN}\n"
            f"snoozed-until: {RUN}\nlast-moved: {RUN}\nnudges: {RUN}\n---\n",
            reminder: f"---\ndue: {RUN}\nnag: {RUN}\nevery: {RUN}\nfires: {RUN}\n---\n",
        }
    )
    tree = walk(root)
    found = decisions(tree, NOW)
    keys = {(p.path, p.key) for d in found for p in d.problems}
    for key in ("stale-after", "review-every", "snoozed-until", "last-moved", "nudges"):
        assert (intention, key) in keys
    for key in ("due", "nag", "every", "fires"):
        assert (reminder, key) in keys
    errors = [f for f in check(tree, NOW) if f.level == "error" and f.path in (intention, reminder)]
    assert len(errors) >= 9
    assert all(f"at most {MOST_CHARS} characters" in f.message for f in errors)
    assert all(len(f.message) < 300 for f in errors)
