"""The header subset (SPEC §2): parse rules, header-only reads, and the stamper."""

from __future__ import annotations

import os
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rouse.core.errors import HeaderError
from rouse.core.header import (
    BOM,
    MAX_HEADER_BYTES,
    MAX_HEADER_LINES,
    Header,
    format_header,
    parse_header,
    read_header,
    set_fields,
    split,
)

EXAMPLE = (
    b"---\n"
    b"status: open\n"
    b"opened: 2026-03-14 15:40\n"
    b"closes-when: the staging migration has run once with me watching\n"
    b"---\n"
    b"Body: for the model. No code reads a body to decide anything.\n"
)


def write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


# -- the fence --------------------------------------------------------------------


def test_spec_example() -> None:
    header, body = split(EXAMPLE)
    assert header.fenced
    assert header.fields == {
        "status": "open",
        "opened": "2026-03-14 15:40",
        "closes-when": "the staging migration has run once with me watching",
    }
    assert body == b"Body: for the model. No code reads a body to decide anything.\n"
    assert header.end_line == 5
    assert header.line_of("opened") == 3
    assert header.get("status") == "open"
    assert header.get("missing") is None


@pytest.mark.parametrize(
    "data",
    [
        b"\xef\xbb\xbf---\nstatus: open\n---\nbody\n",  # BOM
        b"---   \nstatus: open\n---\nbody\n",  # trailing spaces on the fence
        b"---\t\nstatus: open\n--- \nbody\n",
        b"---\r\nstatus: open\r\n---\r\nbody\n",  # CRLF
        b"\xef\xbb\xbf---  \r\nstatus: open\r\n---\r\nbody\n",
    ],
)
def test_fence_tolerates_bom_trailing_spaces_and_crlf(data: bytes) -> None:
    header, body = split(data)
    assert header.fenced
    assert header.fields == {"status": "open"}
    assert body == b"body\n"


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"Just a belief, no fence.\n",
        b"----\nstatus: open\n---\n",
        b" ---\nstatus: open\n---\n",
        b"\n---\nstatus: open\n---\n",  # the fence must be the first line
        b"# title\n---\nstatus: open\n---\n",
    ],
)
def test_no_fence_means_no_header_and_the_whole_text_is_body(data: bytes) -> None:
    header, body = split(data)
    assert not header.fenced
    assert header.fields == {}
    assert body == data


def test_header_ends_at_the_first_fence_line() -> None:
    data = b"---\na: 1\n---\nb: 2\n---\n"
    header, body = split(data)
    assert header.fields == {"a": "1"}
    assert body == b"b: 2\n---\n"


def test_empty_header_and_fence_at_eof() -> None:
    assert parse_header(b"---\n---\n").fields == {}
    header, body = split(b"---\nstatus: done\n---")
    assert header.fields == {"status": "done"}
    assert body == b""


# -- lines ----------------------------------------------------------------------


def test_keys_are_read_case_insensitively_and_values_literally() -> None:
    header = parse_header(
        "---\nStatus: Open\nCLOSES-When:  it ships: really  \nTitle: \"quoted\" 'x' [a, b]\n---\n"
    )
    assert header.fields == {
        "status": "Open",
        "closes-when": "it ships: really",
        "title": "\"quoted\" 'x' [a, b]",
    }


def test_empty_value_is_allowed() -> None:
    header = parse_header(b"---\noutcome:\nnote:    \nstatus: open\n---\n")
    assert header.fields == {"outcome": "", "note": "", "status": "open"}
    assert header.get("outcome") == ""


def test_blank_and_comment_lines_are_ignored() -> None:
    header = parse_header(b"---\n\n# status: done\nstatus: open\n   \n#due: never\n---\n")
    assert header.fields == {"status": "open"}
    assert header.bad_lines == ()


def test_indented_lines_continue_the_previous_value_with_one_space() -> None:
    data = (
        b"---\n"
        b"closes-when: the staging migration\n"
        b"    has run once\n"
        b"\t  with me watching   \n"
        b"status: open\n"
        b"---\n"
    )
    header = parse_header(data)
    assert header.fields == {
        "closes-when": "the staging migration has run once with me watching",
        "status": "open",
    }
    assert header.continued == (3, 4)  # check warns about these lines


def test_continuation_of_an_empty_value() -> None:
    header = parse_header(b"---\ncloses-when:\n  later\n---\n")
    assert header.fields == {"closes-when": "later"}


def test_continuation_without_a_previous_key_is_a_bad_line() -> None:
    header = parse_header(b"---\n  orphan text\nstatus: open\n---\n")
    assert header.fields == {"status": "open"}
    assert header.bad_lines == ((2, "  orphan text"),)


@pytest.mark.parametrize(
    "line",
    [
        "no colon here",
        "9lives: x",
        "-dash: x",
        "under_score: x",
        "two words: x",
        ": empty key",
        "- list item",
        "ключ: x",
    ],
)
def test_lines_that_are_not_key_value_are_bad_lines_not_fields(line: str) -> None:
    header = parse_header(f"---\n{line}\nstatus: open\n---\n")
    assert header.fields == {"status": "open"}
    assert header.bad_lines == ((2, line),)


def test_first_occurrence_wins_and_duplicates_are_recorded() -> None:
    header = parse_header(b"---\nstatus: open\ndue: 2026-03-14\nSTATUS: done\nstatus: x\n---\n")
    assert header.fields == {"status": "open", "due": "2026-03-14"}
    assert [(d.key, d.value, d.line) for d in header.duplicates] == [
        ("status", "done", 4),
        ("status", "x", 5),
    ]
    assert header.line_of("status") == 2


def test_continuation_of_a_duplicate_does_not_change_the_first() -> None:
    header = parse_header(b"---\na: one\na: two\n  more\n---\n")
    assert header.fields == {"a": "one"}
    assert header.duplicates[0].value == "two more"


# -- limits and refusals ------------------------------------------------------------


def test_unterminated_header_is_an_error() -> None:
    with pytest.raises(HeaderError, match="unterminated"):
        parse_header(b"---\nstatus: open\nno closing fence\n")
    with pytest.raises(HeaderError, match="unterminated"):
        parse_header(b"---")


def _header_with_lines(total: int) -> bytes:
    """A header whose closing fence is on line ``total`` of the file."""
    return b"---\n" + b"k: v\n" * (total - 2) + b"---\nbody\n"


def test_500_line_limit_at_the_boundary(tmp_path: Path) -> None:
    assert MAX_HEADER_LINES == 500
    ok = _header_with_lines(500)
    assert parse_header(ok).fenced
    assert read_header(write(tmp_path / "ok.md", ok)).fields == {"k": "v"}
    over = _header_with_lines(501)
    with pytest.raises(HeaderError, match="unterminated"):
        parse_header(over)
    with pytest.raises(HeaderError, match="unterminated"):
        read_header(write(tmp_path / "over.md", over))


def _header_of_size(size: int, newline: bytes = b"\n") -> bytes:
    """A header (both fences included) of exactly ``size`` bytes in 3 lines + body."""
    fixed = len(b"---" + newline) * 2 + len(b"k: " + newline)
    return (
        b"---" + newline + b"k: " + b"x" * (size - fixed) + newline + b"---" + newline + b"b" * 9999
    )


def test_64_kib_limit_at_the_boundary(tmp_path: Path) -> None:
    assert MAX_HEADER_BYTES == 64 * 1024
    ok = _header_of_size(MAX_HEADER_BYTES)
    assert parse_header(ok).fields["k"] == "x" * (MAX_HEADER_BYTES - 12)
    assert read_header(write(tmp_path / "ok.md", ok)).fenced
    over = _header_of_size(MAX_HEADER_BYTES + 1)
    with pytest.raises(HeaderError, match="unterminated"):
        parse_header(over)
    with pytest.raises(HeaderError, match="unterminated"):
        read_header(write(tmp_path / "over.md", over))


def test_bom_does_not_count_against_the_limit(tmp_path: Path) -> None:
    data = b"\xef\xbb\xbf" + _header_of_size(MAX_HEADER_BYTES)
    assert read_header(write(tmp_path / "bom.md", data)).fenced


@pytest.mark.parametrize(
    "data",
    [
        b"---\nstatus: \xe9t\xe9\n---\n",  # Latin-1 in the header
        b"---\nstatus: open\n\xff\xfe\n---\n",
        b"\xff\xfeJust text in UTF-16\n",  # not UTF-8 from the first byte, no fence
        b"caf\xe9 latin-1 belief\n",
    ],
)
def test_non_utf8_is_refused(tmp_path: Path, data: bytes) -> None:
    with pytest.raises(HeaderError, match="UTF-8"):
        parse_header(data)
    with pytest.raises(HeaderError, match="UTF-8"):
        read_header(write(tmp_path / "bad.md", data))


def test_non_utf8_body_is_not_read(tmp_path: Path) -> None:
    data = b"---\nstatus: open\n---\n\xff\xfe\x00 binary body is fine\n"
    assert read_header(write(tmp_path / "ok.md", data)).fields == {"status": "open"}


@pytest.mark.parametrize(
    "data",
    [
        b"---\nstatus: open\x00\n---\n",
        b"\x00\x00\x00\x00binary",
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00",
        b"---\x00\n---\n",
    ],
)
def test_binary_is_refused(tmp_path: Path, data: bytes) -> None:
    with pytest.raises(HeaderError):
        read_header(write(tmp_path / "bin.md", data))


def test_read_header_never_follows_a_symlink(tmp_path: Path) -> None:
    target = write(tmp_path / "real.md", b"---\nstatus: open\n---\n")
    link = tmp_path / "link.md"
    link.symlink_to(target)
    with pytest.raises(HeaderError, match="regular file"):
        read_header(link)
    dangling = tmp_path / "dangling.md"
    dangling.symlink_to(tmp_path / "nowhere.md")
    with pytest.raises(HeaderError):
        read_header(dangling)


def test_read_header_refuses_a_directory_a_fifo_and_a_missing_file(tmp_path: Path) -> None:
    (tmp_path / "dir.md").mkdir()
    with pytest.raises(HeaderError, match="regular file"):
        read_header(tmp_path / "dir.md")
    fifo = tmp_path / "fifo.md"
    os.mkfifo(fifo)  # would block forever if opened for reading without a writer
    with pytest.raises(HeaderError, match="regular file"):
        read_header(fifo)
    with pytest.raises(HeaderError):
        read_header(tmp_path / "missing.md")


def test_read_header_error_names_the_given_relative_path(tmp_path: Path) -> None:
    path = write(tmp_path / "x.md", b"---\nstatus: open\n")
    with pytest.raises(HeaderError) as info:
        read_header(path, "inventory/x.md")
    assert info.value.path == "inventory/x.md"
    assert str(info.value).startswith("inventory/x.md")


def _peak_bytes_while(path: Path, with_header: bool) -> int:
    tracemalloc.start()
    try:
        header = read_header(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert header.fenced is with_header
    return peak


FIFTY_MB = 50 * 1024 * 1024


def test_a_50_mb_file_without_header_is_not_read_whole(tmp_path: Path) -> None:
    path = tmp_path / "huge.md"
    with path.open("wb") as handle:
        chunk = b"a line of a very long note with no header at all\n" * 20000
        while handle.tell() < FIFTY_MB:
            handle.write(chunk)
    assert path.stat().st_size >= FIFTY_MB
    # Reading it whole would allocate at least 50 MB; a header-only read a few 64 KiB.
    assert _peak_bytes_while(path, with_header=False) < 2 * 1024 * 1024


def test_a_50_mb_file_with_a_header_reads_only_the_header(tmp_path: Path) -> None:
    path = tmp_path / "huge.md"
    with path.open("wb") as handle:
        handle.write(b"---\nstatus: open\n---\n")
        handle.truncate(FIFTY_MB)  # a sparse body of NUL bytes: never looked at
    assert _peak_bytes_while(path, with_header=True) < 2 * 1024 * 1024
    assert read_header(path).fields == {"status": "open"}


def test_a_single_line_longer_than_the_limit_is_not_a_header(tmp_path: Path) -> None:
    path = write(tmp_path / "long.md", b"x" * (MAX_HEADER_BYTES * 3) + b"\n")
    assert read_header(path).fields == {}


# -- set_fields ---------------------------------------------------------------------


def test_set_replaces_the_first_occurrence_in_place() -> None:
    data = b"---\nstatus: open\nswept: 2026-03-01 09:00\nnudges: 1\n---\nbody\n"
    out = set_fields(data, {"swept": "2026-03-14 12:00", "nudges": "2"})
    assert out == b"---\nstatus: open\nswept: 2026-03-14 12:00\nnudges: 2\n---\nbody\n"


def test_set_removes_later_copies_and_their_continuations() -> None:
    data = (
        b"---\nnudges: 1\nstatus: open\nnudges: 7\n  continued\n"
        b"# kept comment\nNUDGES: 9\nclose: x\n---\nbody\n"
    )
    out = set_fields(data, {"nudges": "2"})
    assert out == b"---\nnudges: 2\nstatus: open\n# kept comment\nclose: x\n---\nbody\n"
    header = parse_header(out)
    assert header.duplicates == ()
    assert header.fields == {"nudges": "2", "status": "open", "close": "x"}


def test_set_drops_the_continuation_of_the_value_it_replaces() -> None:
    data = b"---\ndue: 2026-03-14\n  09:00\nstatus: pending\n---\n"
    out = set_fields(data, {"due": "2026-03-15 10:00"})
    assert out == b"---\ndue: 2026-03-15 10:00\nstatus: pending\n---\n"


def test_set_keeps_continuation_semantics_across_blank_and_comment_lines() -> None:
    """A continuation after a blank or comment line still belongs to the value above."""
    data = b"---\ndue: 2026-03-14\n\n# a comment\n  09:00\nstatus: pending\n---\n"
    assert parse_header(data).fields["due"] == "2026-03-14 09:00"
    out = set_fields(data, {"due": "2026-03-15 10:00"})
    assert parse_header(out).fields == {"due": "2026-03-15 10:00", "status": "pending"}
    assert b"\n\n# a comment\n" in out


def test_set_writes_keys_lowercase_over_any_case() -> None:
    out = set_fields(b"---\nStatus: open\n---\n", {"status": "done"})
    assert out == b"---\nstatus: done\n---\n"


def test_new_keys_go_just_before_the_closing_fence_in_order() -> None:
    data = b"---\nstatus: pending\n# note\n---\nbody\n---\nnot: header\n"
    out = set_fields(data, {"fired": "2026-03-14 12:00", "status": "fired", "b-2": "x"})
    assert out == (
        b"---\nstatus: fired\n# note\nfired: 2026-03-14 12:00\nb-2: x\n---\nbody\n---\nnot: header\n"
    )


def test_none_removes_every_copy() -> None:
    data = b"---\ncancel: yes\nstatus: running\ncancel: again\n---\n"
    out = set_fields(data, {"cancel": None, "absent": None})
    assert out == b"---\nstatus: running\n---\n"


def test_empty_value_round_trips() -> None:
    out = set_fields(b"---\nstatus: open\n---\n", {"outcome": ""})
    assert parse_header(out).fields == {"status": "open", "outcome": ""}


def test_a_fenceless_file_gets_a_fence_and_keeps_all_its_text_as_body() -> None:
    data = b"I believe the build is slow.\n\n---\nnot: a header\n"
    out = set_fields(data, {"origin": "owner"})
    assert out == b"---\norigin: owner\n---\n" + data
    header, body = split(out)
    assert header.fields == {"origin": "owner"}
    assert body == data


def test_an_empty_file_gets_a_fence() -> None:
    assert set_fields(b"", {"origin": "owner"}) == b"---\norigin: owner\n---\n"


def test_crlf_files_stay_crlf() -> None:
    data = b"---\r\nstatus: pending\r\nfires: 1\r\n---\r\nbody\r\nline two\r\n"
    out = set_fields(data, {"fires": "2", "set": "2026-03-14 09:00", "status": "pending"})
    assert out == (
        b"---\r\nstatus: pending\r\nfires: 2\r\nset: 2026-03-14 09:00\r\n---\r\nbody\r\nline two\r\n"
    )
    fenceless = set_fields(b"text\r\n", {"origin": "owner"})
    assert fenceless == b"---\r\norigin: owner\r\n---\r\ntext\r\n"


def test_bom_and_fence_spacing_are_kept() -> None:
    data = b"\xef\xbb\xbf---  \nstatus: open\n---\t\nbody"
    out = set_fields(data, {"swept": "2026-03-14 12:00"})
    assert out == b"\xef\xbb\xbf---  \nstatus: open\nswept: 2026-03-14 12:00\n---\t\nbody"


@pytest.mark.parametrize(
    "updates",
    [{"Status": "x"}, {"bad key": "x"}, {"9a": "x"}, {"a": "two\nlines"}, {"a": "cr\rhere"}],
)
def test_set_refuses_bad_keys_and_multiline_values(updates: dict[str, str | None]) -> None:
    with pytest.raises(ValueError):
        set_fields(b"---\nstatus: open\n---\n", updates)


def test_set_refuses_an_unreadable_header() -> None:
    with pytest.raises(HeaderError):
        set_fields(b"---\nstatus: open\n", {"swept": "2026-03-14 12:00"})
    with pytest.raises(HeaderError):
        set_fields(b"---\nstatus: \xe9\n---\n", {"swept": "2026-03-14 12:00"})


def test_format_header() -> None:
    assert format_header({"status": "open", "opened": "2026-03-14 15:40"}) == (
        "---\nstatus: open\nopened: 2026-03-14 15:40\n---\n"
    )
    assert format_header({}, "\r\n") == "---\r\n---\r\n"


# -- properties ---------------------------------------------------------------------

KEYS = ["status", "due", "last-moved", "swept", "nudges", "closes-when", "x-1", "fires"]
VALUE = st.text(
    alphabet=st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp")), max_size=24
).map(str.strip)


@st.composite
def header_lines(draw: st.DrawFn) -> str:
    kind = draw(st.sampled_from(["entry", "entry", "entry", "blank", "comment", "cont", "bad"]))
    if kind == "entry":
        key = draw(st.sampled_from(KEYS))
        key = draw(st.sampled_from([key, key.upper(), key.capitalize()]))
        space = draw(st.sampled_from(["", " ", "  "]))
        return f"{key}:{space}{draw(VALUE)}"
    if kind == "blank":
        return draw(st.sampled_from(["", " ", "\t"]))
    if kind == "comment":
        return draw(st.sampled_from(["#", "# a comment", "  # indented comment", "#due: x"]))
    if kind == "cont":
        return draw(st.sampled_from([" ", "\t", "    "])) + (draw(VALUE) or "more")
    return draw(st.sampled_from(["not a field", "- item", "under_score: 1"]))


@st.composite
def files(draw: st.DrawFn) -> bytes:
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    bom = draw(st.sampled_from(["", "\ufeff"]))
    lines = draw(st.lists(header_lines(), max_size=12))
    fence = draw(st.sampled_from(["---", "--- "]))
    text = bom + fence + newline + "".join(line + newline for line in lines) + "---" + newline
    body = draw(st.binary(max_size=200) | st.sampled_from([b"", b"---\nk: v\n---\n"]))
    return text.encode("utf-8") + body


UPDATES = st.dictionaries(st.sampled_from([*KEYS, "new-key", "fired"]), st.none() | VALUE)


@settings(max_examples=200)
@given(files(), UPDATES)
def test_set_fields_keeps_every_body_byte_and_every_other_field(
    data: bytes, updates: dict[str, str | None]
) -> None:
    before, body_before = split(data)
    out = set_fields(data, updates)
    after, body_after = split(out)
    assert body_after == body_before
    assert out.endswith(body_before)
    expected = {k: v for k, v in before.fields.items() if k not in updates}
    expected.update({k: v for k, v in updates.items() if v is not None})
    assert after.fields == expected
    assert not any(d.key in updates for d in after.duplicates)
    # duplicates of keys nobody wrote are left alone
    assert [(d.key, d.value) for d in after.duplicates] == [
        (d.key, d.value) for d in before.duplicates if d.key not in updates
    ]
    assert out.startswith(b"\xef\xbb\xbf") == data.startswith(b"\xef\xbb\xbf")
    # writing the same thing twice changes nothing more
    assert set_fields(out, updates) == out


@given(
    st.sampled_from([b"", BOM]),
    st.binary(max_size=300),
    st.dictionaries(st.sampled_from(KEYS), VALUE, min_size=1),
)
def test_set_fields_on_any_fenceless_text_keeps_it_as_body(
    bom: bytes, text: bytes, updates: dict[str, str]
) -> None:
    data = bom + text
    try:
        header, body = split(data)
    except HeaderError:
        return  # not text: the stamper refuses it, which is also fine
    if header.fenced:
        return
    out = set_fields(data, updates)
    new_header, new_body = split(out)
    assert new_body == body
    assert new_header.fields == updates
    # the BOM stays the file's first bytes; everything after the new fence is the old text
    assert out.startswith(BOM) == data.startswith(BOM)
    assert out.endswith(data.removeprefix(BOM))


# -- the compact fast path: read_header reads a compact header as the parser does --

HEADER_LINE = st.one_of(
    st.builds(
        lambda key, sep, value: key + sep + value,
        st.sampled_from([b"status", b"due", b"Due", b"closes-when", b"a", b"x-1", b"-x", b"k"]),
        st.sampled_from([b": ", b":", b" : ", b":\t"]),
        st.sampled_from(
            [
                b"open",
                b"",
                b"  padded  ",
                b"a: b",
                b"\xc3\xa9t\xc3\xa9",
                b"\xe2\x80\xa8x",
                b"\xff",
                b"\x00",
                b"x\ry",
                b"\xc2\x85",
                b"#",
            ]
        ),
    ),
    st.sampled_from([b"", b"# comment", b"  continued", b"\tcontinued", b"no colon", b"---"]),
)


def _seen(h: Header) -> tuple[object, ...]:
    """Everything a reader of a Header can observe."""
    return (
        h.fenced,
        list(h.fields.items()),
        h.end_line,
        [(e.key, e.value, e.line) for e in h.entries],
        [(e.key, e.value, e.line) for e in h.duplicates],
        h.continued,
        h.bad_lines,
    )


@settings(max_examples=400, deadline=None)
@given(
    st.sampled_from([b"---\n", b"---\r\n", b"--- \n", BOM + b"---\n", b"x\n"]),
    st.lists(HEADER_LINE, max_size=6),
    st.sampled_from([b"\n", b"\r\n"]),
    st.sampled_from([b"---\n", b"---", b"--- \n", b"---\r\n", b"", b"----\n"]),
    st.binary(max_size=20),
)
def test_read_header_reads_what_the_parser_reads(
    tmp_path_factory: pytest.TempPathFactory,
    opening: bytes,
    lines: list[bytes],
    newline: bytes,
    closing: bytes,
    body: bytes,
) -> None:
    data = opening + b"".join(line + newline for line in lines) + closing + body
    path = tmp_path_factory.mktemp("h") / "f.md"
    path.write_bytes(data)
    expected: tuple[object, ...]
    try:
        expected = _seen(parse_header(data))
    except HeaderError as exc:
        expected = (exc.message, exc.line)
    try:
        got = _seen(read_header(path))
    except HeaderError as exc:
        got = (exc.message, exc.line)
    assert got == expected


def test_the_compact_path_keeps_the_line_and_byte_limits(tmp_path: Path) -> None:
    # (the fast path's own edges: a duplicate key, and headers at each limit)
    dup = read_header(write(tmp_path / "dup.md", b"---\na: 1\na: 2\n---\n"))
    assert dup.fields == {"a": "1"} and [d.line for d in dup.duplicates] == [3]
    keys = b"".join(b"k%d: v\n" % n for n in range(498))
    assert len(read_header(write(tmp_path / "ok.md", b"---\n" + keys + b"---\n")).fields) == 498
    with pytest.raises(HeaderError, match="unterminated"):
        read_header(write(tmp_path / "over.md", b"---\n" + keys + b"k498: v\n---\n"))
