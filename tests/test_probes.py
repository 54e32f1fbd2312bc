"""Parsing inventory/probes.md (SPEC §6)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from rouse.core.tree import Problem, walk
from rouse.probes.definitions import DEFAULT_TIMEOUT, Probe, load_probes, parse_probes

PATH = "inventory/probes.md"


def parse(text: str) -> tuple[list[Probe], list[Problem]]:
    return parse_probes(text, PATH)


def one_problem(text: str, fragment: str) -> Problem:
    problems = parse(text)[1]
    assert len(problems) == 1, [p.render() for p in problems]
    assert fragment in problems[0].message
    assert problems[0].path == PATH
    return problems[0]


def test_every_key():
    text = (
        "Probes for this project.\n"
        "\n"
        "```probe\n"
        "name: disk\n"
        "cmd: df -h / | tail -1\n"
        "tier: pack\n"
        "ttl: 90\n"
        "timeout: 2m\n"
        "unknown-ok: yes\n"
        "```\n"
    )
    probes, problems = parse(text)
    assert problems == []
    assert probes == [
        Probe(
            name="disk",
            cmd="df -h / | tail -1",
            tier="pack",
            ttl=timedelta(seconds=90),
            timeout=timedelta(minutes=2),
            unknown_ok=True,
            line=3,
        )
    ]


def test_defaults():
    probes, problems = parse("```probe\nname: branch\ncmd: git branch --show-current\n```\n")
    assert problems == []
    (probe,) = probes
    assert (probe.tier, probe.ttl, probe.timeout, probe.unknown_ok) == (
        "demand",
        None,
        DEFAULT_TIMEOUT,
        False,
    )
    assert timedelta(seconds=10) == DEFAULT_TIMEOUT


def test_several_blocks_among_prose_in_order():
    text = (
        "# Probes\n\nSome prose: key: value here is not a probe.\n\n"
        "```probe\nname: a\ncmd: echo a\n```\n\nMore prose.\n\n"
        "```probe\nname: b\ncmd: echo b\n```\n"
    )
    probes, problems = parse(text)
    assert problems == []
    assert [(p.name, p.line) for p in probes] == [("a", 5), ("b", 12)]


def test_blank_and_comment_lines_ignored_and_keys_case_insensitive():
    text = "```probe\n\n# what time is it\nName: now\nCMD:  date  \n```\n"
    probes, problems = parse(text)
    assert problems == []
    assert (probes[0].name, probes[0].cmd) == ("now", "date")


def test_value_keeps_colons():
    probes, _ = parse("```probe\nname: url\ncmd: curl -s http://localhost:8080/health\n```\n")
    assert probes[0].cmd == "curl -s http://localhost:8080/health"


def test_opening_fence_must_be_at_column_zero_but_may_have_trailing_spaces():
    indented = "  ```probe\nname: a\ncmd: x\n  ```\n"
    assert parse(indented) == ([], [])
    trailing = "```probe   \nname: a\ncmd: x\n```  \n"
    assert [p.name for p in parse(trailing)[0]] == ["a"]


def test_crlf_and_bom():
    probes, problems = parse("\ufeff```probe\r\nname: a\r\ncmd: x\r\n```\r\n")
    assert problems == []
    assert (probes[0].name, probes[0].cmd) == ("a", "x")


def test_other_fences_are_skipped_whole():
    text = (
        "An example, not a live probe:\n\n"
        "````markdown\n```probe\nname: example\ncmd: rm -rf /\n```\n````\n\n"
        "```sh\necho hi\n```\n\n"
        "```probe\nname: real\ncmd: true\n```\n"
    )
    probes, problems = parse(text)
    assert problems == []
    assert [p.name for p in probes] == ["real"]


def test_unterminated_other_fence_hiding_probes_is_a_problem():
    problem = one_problem("```sh\necho\n\n```probe\nname: a\ncmd: x\n", "hides the probe")
    assert problem.line == 1


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ("cmd: date\n", "without 'name'"),
        ("name: now\n", "without 'cmd'"),
        ("name: now\ncmd:\n", "without 'cmd'"),
        ("tier: pack\n", "without 'name' and 'cmd'"),
    ],
)
def test_block_missing_name_or_cmd_is_a_problem_and_dropped(body, fragment):
    text = f"prose\n```probe\n{body}```\n```probe\nname: ok\ncmd: true\n```\n"
    probes, problems = parse(text)
    assert [p.name for p in probes] == ["ok"]
    assert len(problems) == 1
    assert fragment in problems[0].message
    assert problems[0].line == 2


def test_unterminated_block_is_a_problem():
    text = "```probe\nname: a\ncmd: x\n```\n\n```probe\nname: b\ncmd: y\n"
    probes, problems = parse(text)
    assert [p.name for p in probes] == ["a"]
    assert len(problems) == 1
    assert "unterminated probe block" in problems[0].message
    assert problems[0].line == 6


def test_duplicate_names_keep_the_first():
    text = "```probe\nname: a\ncmd: first\n```\n```probe\nname: a\ncmd: second\n```\n"
    probes, problems = parse(text)
    assert [(p.name, p.cmd) for p in probes] == [("a", "first")]
    assert len(problems) == 1
    assert "duplicate probe name 'a' (first on line 1)" in problems[0].message
    assert problems[0].line == 5


def test_bad_tier_is_a_problem_and_falls_back_to_demand():
    text = "```probe\nname: a\ncmd: x\ntier: always\n```\n"
    problem = one_problem(text, "'tier' must be pack or demand")
    assert problem.line == 4
    assert parse(text)[0][0].tier == "demand"


def test_tier_is_case_insensitive():
    assert parse("```probe\nname: a\ncmd: x\ntier: PACK\n```\n")[0][0].tier == "pack"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("0", timedelta(0)),
        ("300", timedelta(minutes=5)),
        ("45m", timedelta(minutes=45)),
        ("1h30m", timedelta(minutes=90)),
        ("30s", timedelta(seconds=30)),
    ],
)
def test_ttl_is_seconds_or_an_interval(value, expected):
    probes, problems = parse(f"```probe\nname: a\ncmd: x\nttl: {value}\n```\n")
    assert problems == []
    assert probes[0].ttl == expected


@pytest.mark.parametrize("value", ["soon", "-5", "1.5", "5 minutes"])
def test_bad_ttl_is_a_problem(value):
    text = f"```probe\nname: a\ncmd: x\nttl: {value}\n```\n"
    problem = one_problem(text, "'ttl' must be seconds")
    assert problem.line == 4
    assert parse(text)[0][0].ttl is None


def test_timeout_is_seconds_or_an_interval():
    assert parse("```probe\nname: a\ncmd: x\ntimeout: 3\n```\n")[0][0].timeout == timedelta(
        seconds=3
    )
    assert parse("```probe\nname: a\ncmd: x\ntimeout: 1m\n```\n")[0][0].timeout == timedelta(
        minutes=1
    )


@pytest.mark.parametrize(
    ("value", "fragment"), [("forever", "'timeout' must be seconds"), ("0", "more than zero")]
)
def test_bad_timeout_is_a_problem_and_keeps_the_default(value, fragment):
    text = f"```probe\nname: a\ncmd: x\ntimeout: {value}\n```\n"
    one_problem(text, fragment)
    assert parse(text)[0][0].timeout == DEFAULT_TIMEOUT


@pytest.mark.parametrize(("value", "expected"), [("yes", True), ("no", False), ("YES", True)])
def test_unknown_ok(value, expected):
    probes, problems = parse(f"```probe\nname: a\ncmd: x\nunknown-ok: {value}\n```\n")
    assert problems == []
    assert probes[0].unknown_ok is expected


def test_bad_unknown_ok_is_a_problem():
    text = "```probe\nname: a\ncmd: x\nunknown-ok: maybe\n```\n"
    one_problem(text, "'unknown-ok' must be yes or no")
    assert parse(text)[0][0].unknown_ok is False


@pytest.mark.parametrize(
    ("line", "fragment"),
    [
        ("just some words", "not a 'key: value' line"),
        ("command: date", "unknown probe key 'command'"),
        ("cmd: again", "duplicate 'cmd'"),
    ],
)
def test_bad_lines_in_a_block_are_problems(line, fragment):
    text = f"```probe\nname: a\ncmd: x\n{line}\n```\n"
    problem = one_problem(text, fragment)
    assert problem.line == 4
    assert parse(text)[0][0].cmd == "x"


@pytest.mark.parametrize("name", ["two words", "a,b", "-x", ""])
def test_bad_name_is_a_problem(name):
    problems = parse(f"```probe\nname: {name}\ncmd: x\n```\n")[1]
    assert len(problems) == 1


# -- load_probes ---------------------------------------------------------------


def test_load_without_probes_file(make_tree):
    assert load_probes(walk(make_tree({"inventory/notes/": ""}))) == ([], [])


def test_load_reads_the_file_after_a_header(make_tree):
    root = make_tree(
        {
            PATH: """
                ---
                origin: owner
                ---
                Probes.

                ```probe
                name: now
                cmd: date
                ```
                """
        }
    )
    probes, problems = load_probes(walk(root))
    assert problems == []
    assert [(p.name, p.line) for p in probes] == [("now", 6)]


def test_load_refuses_a_file_over_one_mib(make_tree):
    text = "```probe\nname: a\ncmd: x\n```\n" + "prose\n" * 200_000
    probes, problems = load_probes(walk(make_tree({PATH: text})))
    assert probes == []
    assert len(problems) == 1
    assert "over 1 MiB" in problems[0].message
    assert problems[0].path == PATH


def test_load_reports_a_file_that_is_not_utf8(make_tree):
    data = b"```probe\nname: a\ncmd: echo \xff\n```\n"
    probes, problems = load_probes(walk(make_tree({PATH: data})))
    assert probes == []
    assert len(problems) == 1
    assert "not valid UTF-8" in problems[0].message
    assert problems[0].line == 3
