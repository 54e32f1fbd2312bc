"""Hostile input to the writers: nothing smuggles a header line, and whatever is written reads back.

Library calls for the many spellings, real `rouse` processes for what a user types.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import NOTES, NOW
from rouse.core import layout
from rouse.core.errors import UsageError
from rouse.core.header import MAX_HEADER_BYTES, MAX_VALUE_CHARS, read_header
from rouse.records import inputs, notes, scaffold

#: Machine fields spelled every way the hostile run tried, and a few more.
SMUGGLED_KEYS = [
    "ORIGIN",
    "origin ",
    " origin",
    "x\norigin",
    "Swept",
    "FIRES",
    "a\nnudges",
    "origin\n",
    "Origin-Sig",
    "was\t",
]
BAD_KEYS = ["Closes-When", "closes_when", "1st", "-x", "", "a b", "key:", "closes-when\n", "é"]
BAD_VALUES = {
    "a NUL": "a\x00b",
    "a newline": "one\ntwo",
    "a carriage return": "one\rtwo",
    "a final newline": "one\n",
    "a tab": "a\tb",
    "an escape": "a\x1b[31mred",
    "a DEL": "a\x7f",
    "a C1 control": "a\x85b",
    "a line separator": "a\u2028b",
    "a paragraph separator": "a\u2029b",
    "a lone surrogate": "a\udcffb",
}


def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROUSE_")}
    return subprocess.run(
        [sys.executable, "-m", "rouse", *args],
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.fixture
def home(tmp_path: Path) -> Path:
    root = tmp_path / "memory"
    scaffold.init(root, NOW, examples=False)
    return root


def files_under(root: Path) -> dict[str, bytes]:
    """Every file in the tree but rouse's own state (the walk cache may change on a read)."""
    found = {p.relative_to(root).as_posix(): p for p in root.rglob("*") if p.is_file()}
    return {rel: p.read_bytes() for rel, p in found.items() if not rel.startswith(".rouse/")}


def rouse(home: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return run("--memory", str(home), "--now", "2026-03-14 12:00", *args, stdin=stdin)


# -- slugs --------------------------------------------------------------------


@pytest.mark.parametrize("slug", ["nl\n", "a\n", "ok-slug\n"])
def test_a_slug_with_a_final_newline_is_refused(slug: str) -> None:
    with pytest.raises(UsageError, match="bad slug"):
        layout.validate_slug(slug)
    assert not layout.SLUG_RE.match(slug)


def test_new_note_with_a_newline_in_its_slug_is_refused_by_the_cli(home: Path) -> None:
    before = files_under(home)
    done = rouse(home, "new", "note", "nl\n")
    assert done.returncode == 2, done.stdout
    assert "bad slug" in done.stderr and "Traceback" not in done.stderr
    assert files_under(home) == before


# -- keys ---------------------------------------------------------------------


@pytest.mark.parametrize("key", SMUGGLED_KEYS)
def test_machine_fields_are_refused_whatever_their_case_or_spacing(home: Path, key: str) -> None:
    before = files_under(home)
    with pytest.raises(UsageError) as refused:
        inputs.validate_fields({key: "2099-01-01 00:00"}, NOW)
    message = refused.value.render()
    assert "machine field" in message or "bad field key" in message
    assert "\n" not in message  # one line, even when the key held a newline
    with pytest.raises(UsageError):
        scaffold.new(home, "intention", "forged", NOW, fields={key: "2099-01-01 00:00"})
    with pytest.raises(UsageError):
        notes.remember(home, "forged", "x", NOW, {key: "1"})
    assert files_under(home) == before


@pytest.mark.parametrize("key", ["ORIGIN", "origin ", "Swept", "FIRES"])
def test_a_machine_field_in_any_case_is_named_as_one(key: str) -> None:
    with pytest.raises(UsageError, match=f"'{key.strip().lower()}' is a machine field"):
        inputs.check_key(key)


@pytest.mark.parametrize("key", BAD_KEYS)
def test_keys_must_be_lowercase_kebab_case(key: str) -> None:
    with pytest.raises(UsageError, match="bad field key"):
        inputs.check_key(key)


def test_a_good_key_passes_the_one_validator() -> None:
    for key in ("closes-when", "success-when", "keywords", "stale-after", "due"):
        assert inputs.check_key(key) == key


@pytest.mark.parametrize("key", ["x", "a1-b2", "title", "close-when", "stale-afterr"])
def test_a_well_formed_key_rouse_does_not_read_is_refused(home: Path, key: str) -> None:
    before = files_under(home)
    with pytest.raises(UsageError, match=f"unknown field '{key}'"):
        inputs.check_key(key)
    with pytest.raises(UsageError, match=f"unknown field '{key}'"):
        scaffold.new(home, "intention", "free-form", NOW, fields={key: "x"})
    with pytest.raises(UsageError, match=f"unknown field '{key}'"):
        notes.remember(home, "free-form", "x", NOW, {key: "x"})
    assert files_under(home) == before


def test_set_with_a_machine_field_in_capitals_is_refused_by_the_cli(home: Path) -> None:
    before = files_under(home)
    for pair in ("SWEPT=2099-01-01 00:00", " Origin =owner", "Fires=0"):
        done = rouse(home, "new", "intention", "sneaky", "--set", pair)
        assert done.returncode == 2, (pair, done.stdout)
        assert "machine field" in done.stderr and "Traceback" not in done.stderr
    assert files_under(home) == before


# -- values -------------------------------------------------------------------


@pytest.mark.parametrize("what", sorted(BAD_VALUES))
def test_values_must_be_one_line_without_control_characters(home: Path, what: str) -> None:
    before = files_under(home)
    value = BAD_VALUES[what]
    with pytest.raises(UsageError, match="'closes-when'") as refused:
        inputs.validate_fields({"closes-when": value}, NOW)
    assert "\n" not in refused.value.render()
    with pytest.raises(UsageError):
        scaffold.new(home, "intention", "smuggle", NOW, fields={"closes-when": value})
    with pytest.raises(UsageError):
        notes.remember(home, "smuggle", "x", NOW, {"keywords": value})
    assert files_under(home) == before


def test_a_value_at_the_limit_is_written_and_reads_back(home: Path) -> None:
    wide = "\U0001f600" * MAX_VALUE_CHARS  # four UTF-8 bytes each: 16,000 bytes on one line
    created = scaffold.new(home, "intention", "wide", NOW, fields={"closes-when": wide})
    assert read_header(created.path).get("closes-when") == wide


def test_a_value_over_the_limit_is_refused_naming_the_limit(home: Path) -> None:
    before = files_under(home)
    with pytest.raises(UsageError, match=f"at most {MAX_VALUE_CHARS:,}"):
        scaffold.new(home, "intention", "big", NOW, fields={"closes-when": "x" * 100_000})
    with pytest.raises(UsageError, match=f"at most {MAX_VALUE_CHARS:,}"):
        inputs.validate_fields({"keywords": "x" * (MAX_VALUE_CHARS + 1)}, NOW)
    assert files_under(home) == before


def test_new_intention_with_a_huge_closes_when_is_refused_by_the_cli(home: Path) -> None:
    before = files_under(home)
    done = rouse(home, "new", "intention", "big", "--set", "closes-when=" + "x" * 100_000)
    assert done.returncode == 2, done.stdout
    assert f"at most {MAX_VALUE_CHARS:,}" in done.stderr and "'closes-when'" in done.stderr
    assert "Traceback" not in done.stderr
    assert files_under(home) == before


def test_remind_with_a_huge_nag_is_refused(home: Path) -> None:
    before = files_under(home)
    done = rouse(home, "remind", "call-bob", "--due", "+2h", "--nag", "1" * 100_000 + "h")
    assert done.returncode == 2, done.stdout
    assert "Traceback" not in done.stderr
    assert files_under(home) == before


def test_a_header_too_big_to_read_back_is_refused(home: Path) -> None:
    before = files_under(home)
    wide = "\U0001f600" * MAX_VALUE_CHARS  # 16,000 bytes a line: five make more than 64 KiB
    many = {key: wide for key in ("closes-when", "success-when", "outcome", "keywords", "probes")}
    limit = f"{MAX_HEADER_BYTES // 1024} KiB"
    with pytest.raises(UsageError, match=limit):
        scaffold.new(home, "intention", "too-many", NOW, fields=many)
    with pytest.raises(UsageError, match=limit):
        notes.remember(home, "too-many", "x", NOW, many)
    assert files_under(home) == before


def test_a_header_of_too_many_lines_cannot_be_given(home: Path) -> None:
    """Only known keys are written, so no writer can reach the 500-line limit: refused at once."""
    before = files_under(home)
    many = {f"field-{n}": "x" for n in range(600)}
    with pytest.raises(UsageError, match="unknown field 'field-0'"):
        scaffold.new(home, "intention", "too-many", NOW, fields=many)
    assert files_under(home) == before


def test_what_a_writer_accepts_the_reader_reads(home: Path) -> None:
    given = {
        "closes-when": "the rollout is at 100 % — «done» ✓",
        "keywords": "#not-a-comment",
        "success-when": "",
        "probes": "---",
        "outcome": "a: b: c",
    }
    created = scaffold.new(home, "intention", "round-trip", NOW, fields=given)
    fields = read_header(created.path).fields
    assert {key: fields[key] for key in given} == given


# -- bodies -------------------------------------------------------------------


def test_a_body_with_a_nul_is_refused(home: Path) -> None:
    before = files_under(home)
    with pytest.raises(UsageError, match="NUL"):
        scaffold.new(home, "note", "nul", NOW, body="a\x00b")
    done = rouse(home, "new", "note", "nul", "--body", "-", stdin="a\x00b\n")
    assert done.returncode == 2, done.stdout
    assert "NUL" in done.stderr and "Traceback" not in done.stderr
    assert files_under(home) == before


def test_a_body_that_is_not_utf8_is_refused_not_a_crash(home: Path) -> None:
    before = files_under(home)
    done = rouse(home, "new", "note", "latin", "--body", "caf\udce9")  # argv byte 0xE9
    assert done.returncode == 2, done.stdout
    assert "UTF-8" in done.stderr and "internal error" not in done.stderr
    assert files_under(home) == before


def test_a_long_body_is_fine(home: Path) -> None:
    body = "line\twith a tab\r\n" * 20_000
    created = scaffold.new(home, "note", "long", NOW, body=body)
    assert created.path.read_bytes().endswith(body.encode())
    assert read_header(created.path).get("keywords") == ""
    assert created.rel == f"{NOTES}/long.md"


@pytest.mark.parametrize("closes_when", ["a\rb", "x" * 100_000])
def test_promote_refuses_a_closes_when_the_reader_could_not_read(
    tmp_path: Path, closes_when: str
) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "rouse", "init", "--no-key", str(tmp_path)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    memory = tmp_path / "memory"
    before = sorted(p.relative_to(memory).as_posix() for p in memory.rglob("*.md"))
    promoted = subprocess.run(
        [sys.executable, "-m", "rouse", "--memory", str(memory), "promote",
         "example-try-a-build-cache", "--closes-when", closes_when],
        capture_output=True,
        text=True,
    )  # fmt: skip
    assert promoted.returncode == 2, promoted.stderr
    assert "internal error" not in promoted.stderr
    assert sorted(p.relative_to(memory).as_posix() for p in memory.rglob("*.md")) == before
