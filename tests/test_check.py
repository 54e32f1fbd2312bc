"""check (SPEC §9): one test per rule, each asserting level, path and message."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest

from conftest import (
    BACKLOG,
    BELIEFS,
    INTENTIONS,
    MOTIVATIONS,
    NOTES,
    NOW,
    PLUGINS,
    REMINDERS,
    MakeTree,
)
from rouse.core.tree import walk
from rouse.lint.check import Finding, check

SHIP = f"{INTENTIONS}/example-ship"

#: A small tree with every kind of file, written correctly: no findings.
CLEAN: dict[str, str | bytes] = {
    "persona.md": """
        ---
        ---
        I speak plainly and briefly.
        """,
    "entrypoint/rouse.md": "How to use this memory.\n",
    f"{BELIEFS}/belief-example-staging.md": "The staging database is shared with QA.\n",
    f"{MOTIVATIONS}/motivation-example-calm.md": """
        ---
        keywords: deploys, on-call
        ---
        Deploys on Fridays have hurt before.
        """,
    f"{SHIP}/intention.md": """
        ---
        status: open
        opened: 2026-03-14 09:00
        last-moved: 2026-03-14 11:00
        closes-when: the migration has run once with me watching
        stale-after: 4h
        ---
        Body text.
        """,
    f"{SHIP}/example-try/goal.md": """
        ---
        status: open
        opened: 2026-03-14 09:00
        success-when: staging is green
        review-every: 1d
        swept: 2026-03-14 10:00
        nudges: 2
        ---
        """,
    f"{SHIP}/example-try/example-run/action.md": """
        ---
        status: done
        opened: 2026-03-14 09:00
        outcome: as-expected
        ---
        """,
    f"{SHIP}/example-check/task.md": """
        ---
        status: pending
        opened: 2026-03-14 09:00
        ---
        """,
    f"{REMINDERS}/example-call/reminder.md": """
        ---
        status: pending
        due: 2099-01-01 09:00
        nag: 1h
        backoff: fixed
        max-fires: 5
        fires: 0
        expires: 2099-02-01
        ---
        Call the dentist.
        """,
    f"{BACKLOG}/example-idea/backlog.md": """
        ---
        status: open
        opened: 2026-03-01 09:00
        keywords: idea, later
        ---
        """,
    f"{NOTES}/example-host.md": """
        ---
        keywords: staging, host
        probes: example-date
        updated: 2026-03-10
        ---
        The staging host is called blue.
        """,
    "inventory/probes.md": """
        Probes for this tree.

        ```probe
        name: example-date
        cmd: date +%F
        tier: pack
        ```
        """,
    f"{PLUGINS}/quiet.md": """
        ---
        hours: 22:00-07:00
        ---
        """,
}


@pytest.fixture
def lint(make_tree):
    """Write ``CLEAN`` plus (or minus, with None) the given files, and check it."""

    def run(files: Mapping[str, str | bytes | None] | None = None) -> list[Finding]:
        merged: dict[str, str | bytes | None] = {**CLEAN, **(files or {})}
        kept = {k: v for k, v in merged.items() if v is not None}
        return check(walk(make_tree(kept)), NOW)

    return run


def find(findings: list[Finding], level: str, path: str, text: str) -> Finding:
    matches = [f for f in findings if f.level == level and f.path == path and text in f.message]
    assert matches, f"no {level} at {path} with {text!r} in:\n" + "\n".join(
        f.render() for f in findings
    )
    return matches[0]


def absent(findings: list[Finding], path: str) -> None:
    assert not [f for f in findings if f.path == path], [f.render() for f in findings]


# -- the whole -----------------------------------------------------------------


def test_clean_tree_has_no_findings(lint):
    assert [f.render() for f in lint()] == []


def test_render_is_one_line_with_path_line_and_what_to_do(lint):
    findings = lint({f"{SHIP}/intention.md": "---\nstatus: open\nstatus: done\n---\n"})
    finding = find(findings, "error", f"{SHIP}/intention.md", "duplicate key")
    rendered = finding.render()
    assert rendered.startswith(f"error: {SHIP}/intention.md:3: duplicate key 'status'")
    assert " — " in rendered
    assert "\n" not in rendered


def test_findings_sorted_errors_first_then_by_path(lint):
    findings = lint(
        {
            f"{INTENTIONS}/b/intention.md": "---\nstatus: open\n---\n",  # warn: no closes-when
            f"{INTENTIONS}/a/intention.md": "---\nstatus: wip\ncloses-when: x\n---\n",
            f"{INTENTIONS}/c/intention.md": "---\nstatus: what\ncloses-when: x\n---\n",
        }
    )
    levels = [f.level for f in findings]
    assert levels == sorted(levels, key=lambda level: level != "error")
    errors = [f.path for f in findings if f.level == "error"]
    assert errors == sorted(errors)
    assert errors[0] == f"{INTENTIONS}/a/intention.md"


# -- errors --------------------------------------------------------------------


def test_unparseable_header_line_is_an_error(lint):
    findings = lint({f"{SHIP}/intention.md": "---\nstatus: open\nthis is not a field\n---\n"})
    finding = find(findings, "error", f"{SHIP}/intention.md", "unparseable header line")
    assert finding.line == 3


@pytest.mark.parametrize(
    ("content", "text"),
    [
        ("---\nstatus: open\n" + "x: y\n" * 600, "unterminated"),
        (b"---\nstatus: op\xffen\n---\n", "UTF-8"),
        (b"---\nstatus: open\x00\n---\n", "binary"),
    ],
    ids=["unterminated", "not-utf8", "binary"],
)
def test_untrackable_file_is_an_error(lint, content, text):
    findings = lint({f"{SHIP}/intention.md": content})
    find(findings, "error", f"{SHIP}/intention.md", text)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes (POSIX)")
def test_not_a_regular_file_is_an_error(make_tree):
    root = make_tree(CLEAN)
    os.mkfifo(root / NOTES / "pipe.md")
    findings = check(walk(root), NOW)
    find(findings, "error", f"{NOTES}/pipe.md", "not a regular file")


def test_two_record_files_in_one_directory_is_an_error(lint):
    findings = lint({f"{SHIP}/goal.md": "---\nsuccess-when: x\n---\n"})
    find(findings, "error", SHIP, "two record files")


def test_unparseable_stamp_read_by_the_clock_is_an_error(lint):
    findings = lint(
        {f"{SHIP}/intention.md": "---\nstatus: open\nlast-moved: yesterday\ncloses-when: x\n---\n"}
    )
    finding = find(findings, "error", f"{SHIP}/intention.md", "'last-moved' must look like")
    assert finding.line == 3
    assert len([f for f in findings if "'last-moved'" in f.message]) == 1  # reported once


@pytest.mark.parametrize(
    ("rel", "content", "key"),
    [
        (
            f"{REMINDERS}/example-call/reminder.md",
            "---\nstatus: done\ndue: next week\n---\n",
            "due",
        ),
        (
            f"{SHIP}/intention.md",
            "---\nstatus: done\ncloses-when: x\nswept: noon\n---\n",
            "swept",
        ),
        (
            f"{SHIP}/intention.md",
            "---\nstatus: open\ncloses-when: x\nreviewed: 2026-13-01\n---\n",
            "reviewed",
        ),
        (
            f"{SHIP}/intention.md",
            "---\nstatus: open\ncloses-when: x\npromoted: soon\n---\n",
            "promoted",
        ),
        (
            f"{REMINDERS}/example-call/reminder.md",
            "---\nstatus: fired\ndue: 2026-01-01\nfired: later\nset: x\nexpires: never\n---\n",
            "expires",
        ),
        (f"{NOTES}/example-host.md", "---\nkeywords: a\nupdated: last week\n---\n", "updated"),
    ],
    ids=["due", "swept", "reviewed", "promoted", "expires", "note-updated"],
)
def test_unparseable_stamp_the_clock_does_not_read_is_an_error(lint, rel, content, key):
    findings = lint({rel: content})
    find(findings, "error", rel, f"'{key}' must look like 2026-03-14 15:40")


@pytest.mark.parametrize(
    ("rel", "content", "key"),
    [
        (f"{SHIP}/intention.md", "---\ncloses-when: x\nstale-after: soon\n---\n", "stale-after"),
        (
            f"{SHIP}/intention.md",
            "---\nstatus: done\ncloses-when: x\nstale-after: 2 days\n---\n",
            "stale-after",
        ),
        (
            f"{SHIP}/intention.md",
            "---\ncloses-when: x\nreview-every: weekly\n---\n",
            "review-every",
        ),
        (
            f"{REMINDERS}/example-call/reminder.md",
            "---\ndue: 2099-01-01\nnag: often\n---\n",
            "nag",
        ),
    ],
    ids=["stale-after", "stale-after-closed", "review-every", "nag"],
)
def test_unparseable_interval_is_an_error(lint, rel, content, key):
    findings = lint({rel: content})
    find(findings, "error", rel, f"'{key}' must look like 45m, 2h or 1d")


@pytest.mark.parametrize(
    ("rel", "content", "text"),
    [
        (
            f"{REMINDERS}/example-call/reminder.md",
            "---\ndue: 2099-01-01\nfires: two\n---\n",
            "'fires' must be a whole number",
        ),
        (
            f"{SHIP}/intention.md",
            "---\ncloses-when: x\nnudges: -1\n---\n",
            "'nudges' must be a whole number",
        ),
        (
            f"{REMINDERS}/example-call/reminder.md",
            "---\ndue: 2099-01-01\nnag: 1h\nmax-fires: lots\n---\n",
            "'max-fires' must be a whole number",
        ),
        (
            f"{REMINDERS}/example-call/reminder.md",
            "---\nstatus: done\ndue: 2099-01-01\nmax-fires: ²\n---\n",
            "'max-fires' must be a whole number",
        ),
        (
            f"{REMINDERS}/example-call/reminder.md",
            "---\ndue: 2099-01-01\nnag: 1h\nbackoff: double\n---\n",
            "'backoff' must be a number >= 1 or 'fixed'",
        ),
        (
            f"{REMINDERS}/example-call/reminder.md",
            "---\ndue: 2099-01-01\nbackoff: 0.5\n---\n",
            "'backoff' must be a number >= 1 or 'fixed'",
        ),
    ],
    ids=["fires", "nudges", "max-fires", "max-fires-unicode-digit", "backoff", "backoff-low"],
)
def test_unparseable_number_is_an_error(lint, rel, content, text):
    findings = lint({rel: content})
    find(findings, "error", rel, text)


def test_duplicate_key_is_an_error(lint):
    rel = f"{NOTES}/example-host.md"
    findings = lint({rel: "---\nkeywords: a\nKeywords: b\n---\n"})
    finding = find(findings, "error", rel, "duplicate key 'keywords' (first on line 2")
    assert finding.line == 3


@pytest.mark.parametrize(
    ("rel", "status"),
    [
        (f"{SHIP}/intention.md", "wip"),
        (f"{SHIP}/example-try/goal.md", "dropped"),  # a goal is abandoned, not dropped
        (f"{SHIP}/example-check/task.md", "open"),
        (f"{REMINDERS}/example-call/reminder.md", "snoozed"),
        (f"{BACKLOG}/example-idea/backlog.md", "done"),
    ],
    ids=["intention", "goal", "task", "reminder", "backlog"],
)
def test_unknown_status_is_an_error(lint, rel, status):
    extra = {
        "intention": "closes-when: x\n",
        "goal": "success-when: x\n",
        "reminder": "due: 2099-01-01\n",
    }.get(Path(rel).stem, "")
    findings = lint({rel: f"---\nstatus: {status}\n{extra}---\n"})
    finding = find(findings, "error", rel, f"unknown status {status!r}")
    assert finding.line == 2


def test_unknown_outcome_is_an_error(lint):
    rel = f"{SHIP}/example-try/example-run/action.md"
    findings = lint({rel: "---\nstatus: done\noutcome: great\n---\n"})
    find(findings, "error", rel, "unknown outcome 'great'")


def test_reminder_without_due_is_an_error(lint):
    rel = f"{REMINDERS}/example-call/reminder.md"
    findings = lint({rel: "---\nstatus: pending\n---\n"})
    find(findings, "error", rel, "reminder with no due")


def test_probe_block_without_cmd_is_an_error(lint):
    findings = lint({"inventory/probes.md": "```probe\nname: example-date\n```\n"})
    finding = find(findings, "error", "inventory/probes.md", "without 'cmd'")
    assert finding.line == 1


def test_unterminated_probe_block_is_an_error(lint):
    text = "```probe\nname: example-date\ncmd: date\n"
    findings = lint({"inventory/probes.md": text})
    find(findings, "error", "inventory/probes.md", "unterminated probe block")


def test_body_that_is_not_utf8_is_an_error(lint):
    rel = f"{NOTES}/example-host.md"
    findings = lint({rel: b"---\nkeywords: a\n---\nfine\nbad \xff byte\n"})
    finding = find(findings, "error", rel, "not valid UTF-8")
    assert finding.line == 5


def test_file_too_large_to_check_is_a_warning(lint):
    rel = f"{NOTES}/big.md"
    findings = lint({rel: b"---\nkeywords: a\n---\n" + b"a" * (8 * 1024 * 1024 + 10)})
    find(findings, "warn", rel, "too large to check")


# -- warnings ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rel", "path", "text"),
    [
        (f"{BELIEFS}/staging.md", f"{BELIEFS}/staging.md", "not a belief file"),
        (
            f"{MOTIVATIONS}/belief-x.md",
            f"{MOTIVATIONS}/belief-x.md",
            "not a motivation file",
        ),
        (f"{BELIEFS}/old/belief-x.md", f"{BELIEFS}/old", "only motivations/ belongs"),
        (f"{MOTIVATIONS}/misc/x.md", f"{MOTIVATIONS}/misc", "only intentions/ belongs"),
        (f"{NOTES}/persona.md", f"{NOTES}/persona.md", "belongs at the tree root"),
        ("entrypoint/todo.md", "entrypoint/todo.md", "loose file"),
    ],
    ids=["belief-unprefixed", "motivation-misprefixed", "dir-in-beliefs", "dir-in-motivations",
         "persona-elsewhere", "loose-md"],
)  # fmt: skip
def test_stray_is_a_warning(lint, rel, path, text):
    findings = lint({rel: "---\nkeywords: x\n---\n"})
    find(findings, "warn", path, text)


@pytest.mark.parametrize(
    ("rel", "key"),
    [
        ("persona.md", "status"),
        (f"{BELIEFS}/belief-example-staging.md", "last-moved"),
        (f"{MOTIVATIONS}/motivation-example-calm.md", "stale-after"),
        (f"{BELIEFS}/belief-example-staging.md", "due"),
        (f"{MOTIVATIONS}/motivation-example-calm.md", "review-every"),
        ("persona.md", "swept"),
    ],
)
def test_context_file_with_clock_or_status_field_is_a_warning(lint, rel, key):
    findings = lint({rel: f"---\n{key}: 2h\n---\nA truth.\n"})
    finding = find(findings, "warn", rel, f"'{key}' on ")
    assert "context has no clock" in finding.message
    assert not [f for f in findings if f.level == "error"], "a misplaced field is not parsed"


@pytest.mark.parametrize(
    ("rel", "warned"),
    [
        (f"{BELIEFS}/belief-example-staging.md", True),
        ("persona.md", True),
        (f"{MOTIVATIONS}/motivation-example-calm.md", False),  # pack --query reads them
    ],
    ids=["belief", "persona", "motivation"],
)
def test_keywords_on_belief_or_persona_is_a_warning(lint, rel, warned):
    findings = lint({rel: "---\nkeywords: a, b\n---\nA truth.\n"})
    if warned:
        find(findings, "warn", rel, "'keywords' on a")
    else:
        absent(findings, rel)


def test_intention_without_closes_when_is_a_warning(lint):
    rel = f"{SHIP}/intention.md"
    findings = lint({rel: "---\nstatus: open\ncloses-when:\n---\n"})
    find(findings, "warn", rel, "intention with no closes-when")


def test_goal_without_success_when_is_a_warning(lint):
    rel = f"{SHIP}/example-try/goal.md"
    findings = lint({rel: "---\nstatus: open\n---\n"})
    find(findings, "warn", rel, "goal with no success-when")


def test_action_as_expected_still_open_is_a_warning(lint):
    rel = f"{SHIP}/example-try/example-run/action.md"
    findings = lint({rel: "---\nstatus: open\noutcome: as-expected\n---\n"})
    find(findings, "warn", rel, "as-expected but status still open")


@pytest.mark.parametrize("key", ["last-moved", "stale-after", "due", "nag", "swept", "nudges"])
def test_backlog_item_with_clock_field_is_a_warning(lint, key):
    rel = f"{BACKLOG}/example-idea/backlog.md"
    value = {"last-moved": "2026-03-01", "due": "2026-03-01", "swept": "2026-03-01"}.get(key, "2")
    findings = lint({rel: f"---\nstatus: open\nopened: 2026-03-01\n{key}: {value}\n---\n"})
    find(findings, "warn", rel, f"clock field '{key}'")
    assert not [f for f in findings if "'opened'" in f.message]


def test_backlog_item_with_nested_record_is_a_warning(lint):
    rel = f"{BACKLOG}/example-idea/backlog.md"
    findings = lint({f"{BACKLOG}/example-idea/first/task.md": "---\nstatus: pending\n---\n"})
    finding = find(findings, "warn", rel, "records nested under a backlog item")
    assert f"{BACKLOG}/example-idea/first" in finding.message


@pytest.mark.parametrize(
    ("rel", "line"),
    [
        (f"{SHIP}/intention.md", "stale-after: 10m"),
        (f"{SHIP}/intention.md", "review-every: 5m"),
        (f"{REMINDERS}/example-call/reminder.md", "nag: 10m"),
    ],
)
def test_interval_below_floor_is_a_warning(lint, rel, line):
    findings = lint({rel: f"---\ncloses-when: x\ndue: 2099-01-01\n{line}\n---\n"})
    find(findings, "warn", rel, "floored to 15m")


def test_long_stale_after_on_intention_is_a_warning(lint):
    rel = f"{SHIP}/intention.md"
    findings = lint({rel: "---\ncloses-when: x\nstale-after: 8d\n---\n"})
    find(findings, "warn", rel, "wanted to be a backlog item")
    # a goal may wait longer
    goal = f"{SHIP}/example-try/goal.md"
    findings = lint({goal: "---\nsuccess-when: x\nstale-after: 8d\n---\n"})
    absent(findings, goal)


def test_indented_continuation_is_a_warning(lint):
    rel = f"{SHIP}/intention.md"
    findings = lint({rel: "---\ncloses-when: the migration\n  has run\n---\n"})
    finding = find(findings, "warn", rel, "continues the previous value")
    assert finding.line == 3


def test_duplicate_slugs_are_a_warning(lint):
    findings = lint({f"{REMINDERS}/example-ship/reminder.md": "---\ndue: 2099-01-01\n---\n"})
    finding = find(findings, "warn", f"{SHIP}/intention.md", "duplicate slug 'example-ship'")
    assert f"{REMINDERS}/example-ship" in finding.message
    find(findings, "warn", f"{REMINDERS}/example-ship/reminder.md", SHIP)


def test_note_without_header_is_a_warning(lint):
    rel = f"{NOTES}/plain.md"
    findings = lint({rel: "Just text.\n"})
    find(findings, "warn", rel, "note with no header")


def test_note_without_keywords_is_a_warning(lint):
    rel = f"{NOTES}/grouped/thing/note.md"
    findings = lint({rel: "---\nupdated: 2026-03-01\n---\nText.\n"})
    find(findings, "warn", rel, "note with no keywords")


def test_note_naming_a_missing_probe_is_a_warning(lint):
    rel = f"{NOTES}/example-host.md"
    findings = lint({rel: "---\nkeywords: a\nprobes: example-date, nope\n---\n"})
    finding = find(findings, "warn", rel, "names probe 'nope'")
    assert finding.line == 3
    assert not [f for f in findings if "'example-date'" in f.message]


def test_note_naming_a_probe_without_probes_file_is_a_warning(lint):
    findings = lint({"inventory/probes.md": None})
    find(findings, "warn", f"{NOTES}/example-host.md", "names probe 'example-date'")


def test_context_file_over_budget_is_a_warning(lint):
    rel = f"{BELIEFS}/belief-example-staging.md"
    findings = lint({rel: "x" * 8_001})
    find(findings, "warn", rel, "over the 8,000-character budget")


def test_context_layers_over_budget_is_a_warning(lint):
    findings = lint(
        {
            f"{BELIEFS}/belief-example-staging.md": "x" * 4_500,
            f"{MOTIVATIONS}/motivation-example-calm.md": "y" * 4_500,
        }
    )
    find(findings, "warn", BELIEFS, "context layers total")
    assert not [f for f in findings if f.path.endswith(".md") and "budget" in f.message]


@pytest.mark.parametrize("content", ["", "---\n---\n", "---\n---\n\n  \n"])
def test_plugin_with_empty_settings_is_a_warning(lint, content):
    rel = f"{PLUGINS}/quiet.md"
    findings = lint({rel: content})
    find(findings, "warn", rel, "empty settings")


def test_plugin_with_body_settings_is_fine(lint):
    rel = f"{PLUGINS}/quiet.md"
    absent(lint({rel: "Stay quiet at night.\n"}), rel)


@pytest.mark.skipif(sys.platform == "win32", reason="symlinks need privileges on Windows")
def test_symlink_is_a_warning(make_tree):
    root = make_tree(CLEAN)
    (root / NOTES / "link.md").symlink_to(root / NOTES / "example-host.md")
    findings = check(walk(root), NOW)
    find(findings, "warn", f"{NOTES}/link.md", "never follows")


@pytest.mark.parametrize(
    ("rel", "key", "value"),
    [
        (f"{SHIP}/example-try/goal.md", "closes-when", "x"),
        (f"{SHIP}/intention.md", "success-when", "x"),
        (f"{SHIP}/example-check/task.md", "outcome", "surprising"),
        (f"{SHIP}/intention.md", "nag", "1h"),
        (f"{SHIP}/intention.md", "due", "2026-03-01"),
        (f"{SHIP}/example-try/goal.md", "expires", "2026-03-01"),
        (f"{SHIP}/example-check/task.md", "backoff", "2"),
        (f"{SHIP}/example-check/task.md", "max-fires", "3"),
        (f"{REMINDERS}/example-call/reminder.md", "stale-after", "2h"),
        (f"{NOTES}/example-host.md", "closes-when", "x"),
        (f"{BELIEFS}/belief-example-staging.md", "success-when", "x"),
    ],
)
def test_field_nothing_reads_is_a_warning(lint, rel, key, value):
    base = {
        "intention": "closes-when: c\n",
        "goal": "success-when: s\n",
        "reminder": "due: 2099-01-01\n",
        "example-host": "keywords: k\n",
    }.get(Path(rel).stem, "")
    findings = lint({rel: f"---\n{base}{key}: {value}\n---\n"})
    finding = find(findings, "warn", rel, f"'{key}' on ")
    assert "nothing reads it" in finding.message or "no clock" in finding.message


def test_misplaced_unparseable_field_is_only_a_warning(lint):
    rel = f"{SHIP}/intention.md"
    findings = lint({rel: "---\ncloses-when: x\ndue: whenever\n---\n"})
    find(findings, "warn", rel, "'due' on an intention")
    assert not [f for f in findings if f.level == "error"]


def test_machine_fields_are_not_findings(lint):
    rel = f"{SHIP}/intention.md"
    findings = lint(
        {
            rel: """
                ---
                status: open
                closes-when: x
                swept: 2026-03-14 10:00
                nudges: 3
                reviewed: 2026-03-14 10:00
                origin: owner
                origin-turn: abc
                origin-sig: deadbeef
                promoted: 2026-03-01 10:00
                was: inventory/backlog/example-ship
                ---
                """
        }
    )
    absent(findings, rel)


def test_record_without_header_is_a_warning(lint):
    rel = f"{SHIP}/example-check/task.md"
    findings = lint({rel: "Run the migration on staging.\n"})
    finding = find(findings, "warn", rel, "no header")
    assert finding.line == 1


# -- pack-tier probe readings ----------------------------------------------------


def _probe_tree(make_tree: MakeTree, *blocks: str) -> Path:
    body = "".join(f"```probe\n{b}\n```\n\n" for b in blocks)
    return make_tree({"inventory/probes.md": f"Probes.\n\n{body}"})


def test_a_failing_pack_probe_is_warned(make_tree: MakeTree) -> None:
    root = _probe_tree(
        make_tree,
        "name: broken\ncmd: exit 3\ntier: pack",
        "name: quiet\ncmd: exit 3\ntier: pack\nunknown-ok: yes",
        "name: fine\ncmd: echo ok\ntier: pack",
    )
    findings = check(walk(root), NOW, probe_budget_ms=2000)
    warned = [f.message for f in findings if "pack probe" in f.message]
    assert len(warned) == 1 and "'broken' reads <unknown>" in warned[0]


def test_a_slow_pack_probe_is_warned(make_tree: MakeTree) -> None:
    root = _probe_tree(make_tree, "name: slowish\ncmd: sleep 0.3; echo ok\ntier: pack")
    findings = check(walk(root), NOW, probe_budget_ms=400)
    assert any("'slowish' took" in f.message and f.level == "warn" for f in findings)
    killed = check(walk(root), NOW, probe_budget_ms=100)
    assert any("'slowish' reads <unknown>" in f.message for f in killed)


def test_probes_are_not_run_without_a_budget(make_tree: MakeTree, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    root = _probe_tree(make_tree, f"name: touch\ncmd: touch {marker}\ntier: pack")
    check(walk(root), NOW)
    assert not marker.exists()


# -- unknown keys ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("rel", "key", "suggestion"),
    [
        (f"{SHIP}/intention.md", "close-when", "closes-when"),
        (f"{SHIP}/intention.md", "stale-afterr", "stale-after"),
        (f"{SHIP}/example-try/goal.md", "sucess-when", "success-when"),
        (f"{NOTES}/example-host.md", "keyword", "keywords"),
        (f"{MOTIVATIONS}/motivation-example-calm.md", "keyword", "keywords"),
        ("persona.md", "orgin", "origin"),
    ],
)
def test_unknown_key_is_a_warning_with_a_suggestion(lint, rel, key, suggestion):
    base = {
        "intention": "closes-when: c\n",
        "goal": "success-when: s\n",
        "example-host": "keywords: k\n",
    }.get(Path(rel).stem, "")
    findings = lint({rel: f"---\n{base}{key}: x\n---\nBody.\n"})
    finding = find(findings, "warn", rel, f"unknown key '{key}'")
    assert f"did you mean '{suggestion}'?" in finding.message
    assert finding.line == 2 + base.count("\n")


def test_unknown_key_with_nothing_close_is_a_warning_without_a_guess(lint):
    rel = f"{SHIP}/intention.md"
    findings = lint({rel: "---\ncloses-when: c\ncolour: blue\n---\n"})
    finding = find(findings, "warn", rel, "unknown key 'colour'")
    assert "did you mean" not in finding.message and "body" in finding.message


def test_a_plugins_settings_are_not_unknown_keys(lint):
    findings = lint({f"{PLUGINS}/quiet.md": "---\nhours: 22:00-07:00\nchannel: ops\n---\n"})
    absent(findings, f"{PLUGINS}/quiet.md")
