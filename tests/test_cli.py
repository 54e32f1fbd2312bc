"""The CLI as a user runs it: real processes on real trees."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from rouse.core.timefmt import human_age
from rouse.pack.warnings import UNVERIFIED

LATER = "2099-01-02 09:00"
REMINDER = "inventory/reminders/example-renew-the-tls-certificate"
INTENTION = "entrypoint/beliefs/motivations/intentions/example-stabilise-nightly-build"
TASK = f"{INTENTION}/example-bisect-the-flaky-test"


def run(
    *args: str,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    stdin: str | None = None,
) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("ROUSE_")}
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "rouse", *args],
        cwd=cwd,
        env=full_env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A fresh example tree laid by `rouse init`, at tmp_path/memory."""
    done = run("init", "--no-key", str(tmp_path), "--now", "2026-03-14 12:00")
    assert done.returncode == 0, done.stderr
    return tmp_path / "memory"


def rouse(home: Path, *args: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
    return run("--memory", str(home), *args, **kwargs)  # type: ignore[arg-type]


def iso(value: datetime) -> str:
    """A naive local time as every --json writes it: ISO 8601 with the local offset."""
    return value.astimezone().isoformat()


def header_of(path: Path) -> dict[str, str]:
    lines = path.read_text().split("---\n")[1].splitlines()
    return dict(line.split(": ", 1) if ": " in line else (line.rstrip(":"), "") for line in lines)


# -- init ---------------------------------------------------------------------


def test_init_then_check_is_clean(home: Path) -> None:
    done = rouse(home, "check")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "error:" not in done.stdout
    assert "0 error(s)" in done.stderr


def test_init_lays_examples_and_prints_the_agent_line(tmp_path: Path) -> None:
    done = run("init", "--no-key", str(tmp_path))
    assert done.returncode == 0
    assert "rouse pack" in done.stdout and "persona.md is optional" in done.stdout
    root = tmp_path / "memory"
    instructions = (root / "entrypoint/rouse.md").read_text()
    assert len(instructions.encode()) >= 2048
    # rouse's state, and the copies a writer killed mid-write leaves (issue 32, item 6)
    assert (root / ".gitignore").read_text().splitlines() == [".rouse/", ".*.md.*.tmp"]
    slugs = {p.parent.name if p.name.endswith("ion.md") else p.stem for p in root.rglob("*.md")}
    assert any(s.startswith("example-") or "example-" in s for s in slugs)
    # the line is committed with the project: relative to it, as docs/wiring.md words it
    (line,) = [ln for ln in done.stdout.splitlines() if "before writing memory" in ln]
    assert line.strip() == (
        "At the start of every session run `rouse pack` and treat its output as your memory; "
        "before writing memory, read `memory/entrypoint/rouse.md`."
    )
    wiring = (Path(__file__).parent.parent / "docs/wiring.md").read_text()
    assert " ".join(line.split()) in " ".join(wiring.replace('"', " ").split())


def test_init_makes_one_commit_in_its_own_repository(home: Path) -> None:
    log = subprocess.run(
        ["git", "log", "--oneline"], cwd=home, capture_output=True, text=True, check=True
    )
    assert len(log.stdout.strip().splitlines()) == 1
    top = subprocess.run(
        ["git", "rev-parse", "--show-toplevel"], cwd=home, capture_output=True, text=True
    )
    assert Path(top.stdout.strip()).resolve() == home.resolve()


def test_init_inside_a_work_tree_commits_nothing(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    done = run("init", "--no-key", str(tmp_path / "project"))
    assert done.returncode == 0
    assert "existing git work tree" in done.stdout
    assert not (tmp_path / "project/memory/.git").exists()


def test_init_refuses_an_existing_tree(home: Path) -> None:
    before = sorted(p.as_posix() for p in home.rglob("*"))
    done = run("init", "--no-key", str(home.parent))
    assert done.returncode == 2
    assert "already exists" in done.stderr
    assert sorted(p.as_posix() for p in home.rglob("*")) == before


def test_init_no_examples_lays_only_instructions(tmp_path: Path) -> None:
    done = run("init", "--no-key", str(tmp_path), "--no-examples")
    assert done.returncode == 0
    mds = sorted(p.relative_to(tmp_path / "memory").as_posix() for p in tmp_path.rglob("*.md"))
    assert mds == ["entrypoint/rouse.md"]


def test_init_global_uses_home(tmp_path: Path) -> None:
    done = run("init", "--no-key", "--global", env={"HOME": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    assert (tmp_path / ".rouse/entrypoint/rouse.md").is_file()
    found = run("tree", cwd=tmp_path, env={"HOME": str(tmp_path)})
    assert found.returncode == 0 and "example-" in found.stdout


# -- tree, due, explain ---------------------------------------------------------


def test_tree_shows_every_example(home: Path) -> None:
    done = rouse(home, "tree")
    assert done.returncode == 0
    for line in (
        "belief example-small-reversible-steps",
        "belief example-say-what-you-dont-know",
        "motivation example-flaky-nightly-build",
        "intention example-stabilise-nightly-build [open]",
        "    task example-bisect-the-flaky-test [pending]",
        "reminder example-renew-the-tls-certificate [pending]",
        "backlog example-try-a-build-cache [open]",
        "note example-how-the-nightly-build-runs",
        "probes inventory/probes.md",
    ):
        assert line in done.stdout


def test_fresh_tree_is_quiet_on_day_one(home: Path) -> None:
    done = rouse(home, "due", "--now", "2026-03-14 18:00")
    assert done.returncode == 0
    assert done.stdout == ""
    assert done.stderr == "nothing is due at 2026-03-14 18:00\n"


def test_due_later_lists_the_example_reminder(home: Path) -> None:
    done = rouse(home, "due", "--now", LATER)
    assert done.returncode == 0
    lines = [line.split("\t") for line in done.stdout.splitlines()]
    when = f"due {human_age(datetime(2099, 1, 1, 9), datetime(2099, 1, 2, 9))} (2099-01-01 09:00)"
    assert ["reminder/example-renew-the-tls-certificate", "due", when, REMINDER] in lines


def test_due_json_fields(home: Path) -> None:
    done = rouse(home, "due", "--json", "--now", LATER)
    items = {item["record"]: item for item in json.loads(done.stdout)}
    reminder = items["reminder/example-renew-the-tls-certificate"]
    assert reminder == {
        "record": "reminder/example-renew-the-tls-certificate",
        "type": "reminder",
        "slug": "example-renew-the-tls-certificate",
        "path": REMINDER,
        "reason": "due",
        "due_at": iso(datetime(2099, 1, 1, 9)),
        "moved_at": iso(datetime(2026, 3, 14, 12)),
        "nudge": 1,
    }
    task = items["task/example-bisect-the-flaky-test"]
    assert task["reason"] == "stale" and task["due_at"] == iso(datetime(2026, 3, 15, 12))


def test_due_until_forecasts(home: Path) -> None:
    quiet = rouse(home, "due", "--json", "--now", "2026-03-14 13:00")
    assert json.loads(quiet.stdout) == []
    ahead = rouse(home, "due", "--json", "--now", "2026-03-14 13:00", "--until", "+1d")
    assert [i["record"] for i in json.loads(ahead.stdout)] == ["task/example-bisect-the-flaky-test"]


def test_rouse_now_environment(home: Path) -> None:
    done = rouse(home, "due", env={"ROUSE_NOW": LATER})
    assert "reminder/example-renew-the-tls-certificate" in done.stdout


def test_global_options_after_the_verb(home: Path) -> None:
    done = run("due", "--now", LATER, "--memory", str(home))
    assert done.returncode == 0 and "example-renew" in done.stdout


def test_explain_names_the_silencing_task(home: Path) -> None:
    done = rouse(home, "explain", "example-stabilise-nightly-build", "--now", "2026-03-15 09:00")
    assert done.returncode == 0
    assert "kept quiet by open records under it" in done.stdout
    assert TASK in done.stdout
    data = json.loads(
        rouse(home, "explain", "example-bisect-the-flaky-test", "--json", "--now", LATER).stdout
    )
    assert data["reason"] == "stale" and data["stale_after"] == 86400


# -- forecasts say when, output a script can trust (issue 12, items 1 and 7) -----

#: ISO 8601 with seconds and an offset.
ISO = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:[+-]\d{2}:\d{2}|Z)$")
#: A human age or countdown, which belongs in text output only.
HUMAN_AGE = re.compile(
    r"\b(\d+(?:m|h|d|mo|y) ago|in \d+(?:m|h|d|mo|y)|just now|yesterday|tomorrow)\b"
)
#: Keys whose string values are instants.
TIME_KEYS = {"now", "at", "due_at", "moved_at", "swept", "own_clock", "stale_at", "review_at"}
TIME_KEYS |= {"last_tick", "since", "age", "mtime", "updated", "due", "expires", "set", "fired"}
#: Keys whose values are durations, in seconds.
DURATION_KEYS = {"stale_after", "review_every", "nag", "interval"}
#: Keys holding free text (bodies, messages, readings) that may mention any words.
FREE_TEXT = {"body", "snippet", "message", "warnings", "wake", "line", "notes", "problems"}
FREE_TEXT |= {"reading", "keywords", "tree"}


def json_leaves(value: Any, key: str = "") -> list[tuple[str, Any]]:
    """Every (key, leaf) pair of a JSON value; also checks that every key is snake_case."""
    if isinstance(value, dict):
        found = []
        for k, v in value.items():
            if key != "probes":  # (probe name → reading: the names are the user's)
                assert re.fullmatch(r"[a-z][a-z0-9_]*", k), f"not snake_case: {k!r}"
            found += json_leaves(v, k)
        return found
    if isinstance(value, list):
        return [pair for v in value for pair in json_leaves(v, key)]
    return [(key, value)]


def assert_script_safe(data: Any, what: str) -> None:
    for key, leaf in json_leaves(data):
        if key in TIME_KEYS and isinstance(leaf, str):
            assert ISO.match(leaf), f"{what}: {key} = {leaf!r} is not ISO 8601 with an offset"
        if key in DURATION_KEYS:
            assert leaf is None or isinstance(leaf, (int, float)), f"{what}: {key} = {leaf!r}"
        if isinstance(leaf, str) and key not in FREE_TEXT:
            assert not HUMAN_AGE.search(leaf), f"{what}: {key} = {leaf!r} is a human age"


def test_due_until_says_when_from_the_real_now(home: Path) -> None:
    # the example task is stale a day after init (2026-03-15 12:00)
    now, due_at = datetime(2026, 3, 14, 13), datetime(2026, 3, 15, 12)
    ahead = rouse(home, "due", "--now", "2026-03-14 13:00", "--until", "+1d")
    assert ahead.returncode == 0, ahead.stderr
    (row,) = [line.split("\t") for line in ahead.stdout.splitlines()]
    assert row == [
        "task/example-bisect-the-flaky-test",
        "stale",
        f"due {human_age(due_at, now)} (2026-03-15 12:00)",
        TASK,
    ]
    assert ahead.stderr.splitlines()[0] == (
        "1 record(s) due by 2026-03-15 13:00 if nothing moves (now 2026-03-14 13:00)"
    )
    later = datetime(2026, 3, 16, 12)
    stale = rouse(home, "due", "--now", "2026-03-16 12:00")
    forecast = rouse(home, "due", "--now", "2026-03-16 12:00", "--until", "+3d")
    went = f"went stale {human_age(due_at, later)} (2026-03-15 12:00)"
    assert f"task/example-bisect-the-flaky-test\tstale\t{went}\t{TASK}" in stale.stdout
    assert f"task/example-bisect-the-flaky-test\tstale\t{went}\t{TASK}" in forecast.stdout


def test_every_reporting_verb_prints_json_a_script_can_trust(home: Path) -> None:
    sweep = rouse(home, "sweep", "--once", "--now", LATER)
    assert sweep.returncode == 0, sweep.stderr
    at = ("--now", "2099-01-02 09:05")
    runs = {
        "pack": rouse(home, "pack", "--json", *at),
        "pack --query": rouse(home, "pack", "--json", "--query", "nothing", *at),
        "due": rouse(home, "due", "--json", *at),
        "due --until": rouse(home, "due", "--json", "--until", "2099-02-01 00:00", *at),
        "explain task": rouse(home, "explain", "example-bisect-the-flaky-test", "--json", *at),
        "explain reminder": rouse(
            home, "explain", "example-renew-the-tls-certificate", "--json", *at
        ),
        "status": rouse(home, "status", "--json", *at),
        "recall": rouse(home, "recall", "nightly", "--json", *at),
        "check": rouse(home, "check", "--json", *at),
        "probe": rouse(home, "probe", "--json", *at),
    }
    for what, done in runs.items():
        assert done.returncode == 0, f"{what}: {done.stderr}"
        assert_script_safe(json.loads(done.stdout), what)
    pack = json.loads(runs["pack"].stdout)
    assert pack["now"] == iso(datetime(2099, 1, 2, 9, 5))
    assert pack["woken"] and all(ISO.match(w["at"]) for w in pack["woken"])
    assert all(ISO.match(i["mtime"]) for i in pack["index"])
    status = json.loads(runs["status"].stdout)
    assert status["last_tick"] == iso(datetime(2099, 1, 2, 9))
    (hit, *_) = json.loads(runs["recall"].stdout)
    assert ISO.match(hit["age"])


def test_pack_json_drops_human_ages_but_the_text_keeps_them(home: Path) -> None:
    at = ("--now", LATER)
    text = rouse(home, "pack", *at).stdout
    assert "due: 2 record(s) want you" in text and "last moved" in text and " ago" in text
    data = json.loads(rouse(home, "pack", "--json", *at).stdout)
    reminder = next(d for d in data["due"] if d["record"].startswith("reminder/"))
    assert reminder["due_at"] == iso(datetime(2099, 1, 1, 9))
    assert reminder["moved_at"] == iso(datetime(2026, 3, 14, 12))
    assert "still" not in reminder and "since" not in reminder


def test_probe_json(home: Path) -> None:
    every = rouse(home, "probe", "--json")
    assert every.returncode == 0, every.stderr
    listed = json.loads(every.stdout)
    assert [(p["name"], p["tier"]) for p in listed] == [
        ("example-today", "pack"),
        ("example-memory-files", "demand"),
    ]
    one = rouse(home, "probe", "example-memory-files", "--json")
    assert one.returncode == 0, one.stderr
    assert json.loads(one.stdout) == {
        "name": "example-memory-files",
        "tier": "demand",
        "reading": listed[1]["reading"],
    }


def test_tree_json(home: Path) -> None:
    done = rouse(home, "tree", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert_script_safe(data, "tree")
    (intention,) = data["records"]
    assert intention["path"] == INTENTION and intention["status"] == "open"
    assert [c["path"] for c in intention["children"]] == [TASK]
    assert data["inventory"]["probes"] == "inventory/probes.md"


# -- finding the tree -------------------------------------------------------------


def test_missing_memory_dir_is_an_error(tmp_path: Path) -> None:
    done = run("--memory", str(tmp_path / "nope"), "tree")
    assert done.returncode == 2
    assert str(tmp_path / "nope") in done.stderr and "$ROUSE_HOME" in done.stderr


def test_missing_rouse_home_never_falls_through(home: Path) -> None:
    done = run("tree", cwd=home.parent, env={"ROUSE_HOME": str(home.parent / "gone")})
    assert done.returncode == 2 and "gone" in done.stderr


def test_local_memory_dir_is_found(home: Path) -> None:
    done = run("tree", cwd=home.parent, env={"HOME": str(home.parent / "nohome")})
    assert done.returncode == 0 and "example-" in done.stdout


def test_no_tree_says_how_to_make_one(tmp_path: Path) -> None:
    done = run("tree", cwd=tmp_path, env={"HOME": str(tmp_path)})
    assert done.returncode == 2
    assert "rouse init" in done.stderr and "--global" in done.stderr
    assert "Traceback" not in done.stderr


# -- writing ------------------------------------------------------------------


def test_new_intention_and_task_under_it(home: Path) -> None:
    done = rouse(home, "new", "intention", "ship-it", "--now", "2026-03-14 12:00")
    assert done.returncode == 0
    path = Path(done.stdout.splitlines()[0])
    assert path == home / "entrypoint/beliefs/motivations/intentions/ship-it/intention.md"
    assert "fill in: closes-when" in done.stdout
    fields = header_of(path)
    assert fields["status"] == "open"
    assert fields["opened"] == fields["last-moved"] == "2026-03-14 12:00"
    task = rouse(home, "new", "task", "write-tests", "--under", "ship-it", "--body", "do it")
    assert task.returncode == 0
    task_path = Path(task.stdout.splitlines()[0])
    assert task_path.parent.parent == path.parent
    assert task_path.read_text().endswith("---\ndo it\n")
    tree = rouse(home, "tree").stdout
    assert "intention ship-it [open]\n    task write-tests [pending]" in tree


def test_new_refuses_machine_fields_and_writes_nothing(home: Path) -> None:
    before = sorted(p.as_posix() for p in home.rglob("*"))
    done = rouse(home, "new", "intention", "sneaky", "--set", "swept=2026-01-01 00:00")
    assert done.returncode == 2
    assert "machine field" in done.stderr
    assert sorted(p.as_posix() for p in home.rglob("*")) == before


@pytest.mark.parametrize("slug", ["../x", "a/b", "", "x" * 81, "-x", "Caps", "..", "a b"])
def test_hostile_slugs_are_refused(home: Path, slug: str) -> None:
    before = sorted(p.as_posix() for p in home.parent.rglob("*"))
    done = rouse(home, "new", "backlog", "--", slug)
    assert done.returncode == 2, done.stdout
    assert "slug" in done.stderr and "Traceback" not in done.stderr
    assert sorted(p.as_posix() for p in home.parent.rglob("*")) == before


def test_goal_needs_a_parent(home: Path) -> None:
    done = rouse(home, "new", "goal", "lonely")
    assert done.returncode == 2 and "--under" in done.stderr


def test_new_context_files_and_note(home: Path) -> None:
    for args in (("belief", "tests-first"), ("motivation", "a-signal"), ("note", "tips")):
        done = rouse(home, "new", *args, "--body", "text")
        assert done.returncode == 0, done.stderr
    assert (home / "entrypoint/beliefs/belief-tests-first.md").is_file()
    assert (home / "entrypoint/beliefs/motivations/motivation-a-signal.md").is_file()
    note = home / "inventory/notes/tips.md"
    assert "keywords:" in note.read_text()
    persona = rouse(home, "new", "persona", "--body", "terse")
    assert persona.returncode == 0 and (home / "persona.md").is_file()


def test_new_body_from_stdin(home: Path) -> None:
    done = rouse(home, "new", "backlog", "idea", "--body", "-", stdin="line one\nline two\n")
    assert done.returncode == 0
    assert (home / "inventory/backlog/idea/backlog.md").read_text().endswith("line one\nline two\n")


def test_new_refuses_an_existing_slug_location(home: Path) -> None:
    assert rouse(home, "new", "backlog", "twice").returncode == 0
    again = rouse(home, "new", "backlog", "twice")
    assert again.returncode == 2 and "already exists" in again.stderr


def test_move_stamps_and_appends_note(home: Path) -> None:
    done = rouse(
        home,
        "move",
        "example-stabilise-nightly-build",
        "--note",
        "bisected half",
        "--now",
        "2026-03-15 10:30",
    )
    assert done.returncode == 0
    text = (home / INTENTION / "intention.md").read_text()
    assert "last-moved: 2026-03-15 10:30" in text
    assert text.endswith("- 2026-03-15 10:30: bisected half\n")


def test_snooze_for_pushes_the_next_due(home: Path) -> None:
    done = rouse(
        home,
        "snooze",
        "example-bisect-the-flaky-test",
        "--for",
        "3d",
        "--note",
        "waiting on CI",
        "--now",
        "2026-03-14 12:00",
    )
    assert done.returncode == 0, done.stderr
    assert "next due: 2026-03-17 12:00" in done.stdout
    quiet = rouse(home, "due", "--json", "--now", "2026-03-17 11:59")
    assert json.loads(quiet.stdout) == []
    loud = rouse(home, "due", "--json", "--now", "2026-03-17 12:00")
    assert [i["record"] for i in json.loads(loud.stdout)] == ["task/example-bisect-the-flaky-test"]
    assert "snoozed until 2026-03-17 12:00: waiting on CI" in (home / TASK / "task.md").read_text()


def test_snooze_reminder_sets_due(home: Path) -> None:
    done = rouse(home, "snooze", "example-renew-the-tls-certificate", "--until", "2030-01-01 08:00")
    assert done.returncode == 0
    assert header_of(home / REMINDER / "reminder.md")["due"] == "2030-01-01 08:00"


def test_close_done_and_dropped(home: Path) -> None:
    done = rouse(
        home, "close", "example-bisect-the-flaky-test", "--done", "--now", "2026-03-14 13:00"
    )
    assert done.returncode == 0
    fields = header_of(home / TASK / "task.md")
    assert fields["status"] == "done" and fields["last-moved"] == "2026-03-14 13:00"
    dropped = rouse(home, "close", "example-stabilise-nightly-build", "--dropped", "not ours")
    assert dropped.returncode == 0
    assert "dropped: not ours" in (home / INTENTION / "intention.md").read_text()


def test_close_refuses_empty_reason_and_wrong_ending(home: Path) -> None:
    empty = rouse(home, "close", "example-stabilise-nightly-build", "--dropped", " ")
    assert empty.returncode == 2 and "reason" in empty.stderr
    wrong = rouse(home, "close", "example-bisect-the-flaky-test", "--abandoned", "meh")
    assert wrong.returncode == 2 and "cannot end 'abandoned'" in wrong.stderr
    assert (
        rouse(home, "new", "goal", "g", "--under", "example-stabilise-nightly-build").returncode
        == 0
    )
    goal = rouse(home, "close", "g", "--dropped", "bored")
    assert goal.returncode == 2 and "--abandoned" in goal.stderr
    assert rouse(home, "close", "g", "--abandoned", "bored").returncode == 0


def test_close_action_with_outcome(home: Path) -> None:
    assert (
        rouse(home, "new", "action", "try", "--under", "example-stabilise-nightly-build").returncode
        == 0
    )
    done = rouse(home, "close", "try", "--done", "--outcome", "surprising")
    assert done.returncode == 0
    bad = rouse(home, "close", "example-stabilise-nightly-build", "--done", "--outcome", "meh")
    assert bad.returncode == 2


def test_promote_moves_the_whole_directory(home: Path) -> None:
    backlog = home / "inventory/backlog/example-try-a-build-cache"
    (backlog / "notes.txt").write_text("attachment\n")
    done = rouse(
        home,
        "promote",
        "example-try-a-build-cache",
        "--closes-when",
        "builds take under 5 minutes",
        "--now",
        "2026-03-20 10:00",
    )
    assert done.returncode == 0, done.stderr
    target = home / "entrypoint/beliefs/motivations/intentions/example-try-a-build-cache"
    assert not backlog.exists()
    assert (target / "notes.txt").read_text() == "attachment\n"
    fields = header_of(target / "intention.md")
    assert fields["status"] == "open"
    assert fields["promoted"] == fields["last-moved"] == "2026-03-20 10:00"
    assert fields["was"] == "inventory/backlog/example-try-a-build-cache"
    assert fields["closes-when"] == "builds take under 5 minutes"
    status = subprocess.run(
        ["git", "status", "--porcelain"], cwd=home, capture_output=True, text=True, check=True
    ).stdout
    renamed = "inventory/backlog/example-try-a-build-cache/backlog.md -> " + (
        "entrypoint/beliefs/motivations/intentions/example-try-a-build-cache/intention.md"
    )
    assert renamed in status  # git mv: the history follows the item


def test_promote_refuses_a_missing_item(home: Path) -> None:
    done = rouse(home, "promote", "nothing-here", "--closes-when", "x")
    assert done.returncode == 2 and "no backlog item" in done.stderr


def test_remind_relative_due_with_nag(home: Path) -> None:
    done = rouse(
        home,
        "remind",
        "call-bob",
        "--due",
        "+2h",
        "--nag",
        "30m",
        "--body",
        "Call Bob.",
        "--now",
        "2026-03-14 12:00",
    )
    assert done.returncode == 0
    fields = header_of(home / "inventory/reminders/call-bob/reminder.md")
    assert fields["due"] == "2026-03-14 14:00" and fields["nag"] == "30m"
    due = rouse(home, "due", "--json", "--now", "2026-03-14 14:00")
    assert [(i["record"], i["reason"]) for i in json.loads(due.stdout)] == [
        ("reminder/call-bob", "nag")
    ]


def test_ambiguous_slug_lists_paths(home: Path) -> None:
    rouse(home, "new", "backlog", "twin")
    rouse(home, "new", "task", "twin", "--under", "example-stabilise-nightly-build")
    done = rouse(home, "move", "twin")
    assert done.returncode == 2
    assert "ambiguous" in done.stderr and "inventory/backlog/twin" in done.stderr
    by_path = rouse(home, "move", "inventory/backlog/twin")
    assert by_path.returncode == 0


# -- stamp --------------------------------------------------------------------


def test_stamp_writes_origin_and_turn(home: Path) -> None:
    belief = home / "entrypoint/beliefs/belief-example-small-reversible-steps.md"
    done = rouse(home, "stamp", "--origin", "owner", "--turn", "t-1", str(belief))
    assert done.returncode == 0
    fields = header_of(belief)
    assert fields["origin"] == "owner" and fields["origin-turn"] == "t-1"
    again = rouse(home, "stamp", "--origin", "agent", str(belief))
    assert again.returncode == 0
    fields = header_of(belief)
    assert fields["origin"] == "agent" and "origin-turn" not in fields


def test_stamp_inserts_a_fence_into_a_fenceless_context_file(home: Path) -> None:
    belief = home / "entrypoint/beliefs/belief-bare.md"
    belief.write_text("Just a truth.\n")
    assert rouse(home, "stamp", "--origin", "owner", str(belief)).returncode == 0
    assert belief.read_text() == "---\norigin: owner\n---\nJust a truth.\n"


def test_stamp_missing_or_outside_is_exit_1(home: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.md"
    outside.write_text("x\n")
    done = rouse(home, "stamp", "--origin", "owner", str(home / "nope.md"), str(outside))
    assert done.returncode == 1
    assert "nope.md" in done.stderr and "outside.md" in done.stderr
    assert outside.read_text() == "x\n"


def test_stamp_unknown_origin_is_usage_error(home: Path) -> None:
    done = rouse(home, "stamp", "--origin", "god", str(home / "entrypoint/rouse.md"))
    assert done.returncode == 2


# -- bad input ----------------------------------------------------------------


def test_bad_files_never_crash_the_read_verbs(home: Path, tmp_path: Path) -> None:
    reminders = home / "inventory/reminders"
    cases = {
        "unterminated": b"---\nstatus: pending\n" + b"x: y\n" * 600,
        "nonutf8": b"---\nstatus: \xff\xfe\n---\n",
        "binary": b"\x00\x01\x02" * 1000,
        "dupkey": b"---\nstatus: pending\nstatus: done\ndue: 2026-01-01\n---\n",
        "malformed": b"---\nthis is not a header line\ndue: 2026-01-01\n---\n",
    }
    for slug, data in cases.items():
        (reminders / slug).mkdir()
        (reminders / slug / "reminder.md").write_bytes(data)
    (reminders / "huge").mkdir()
    with open(reminders / "huge/reminder.md", "wb") as handle:
        handle.write(b"---\nstatus: pending\ndue: 2026-01-01\n---\n")
        handle.truncate(50 * 1024 * 1024)
    target = tmp_path / "secret.md"
    target.write_text("---\nstatus: pending\ndue: 2000-01-01\n---\n")
    (reminders / "linked").mkdir()
    (reminders / "linked/reminder.md").symlink_to(target)
    for verb in ("tree", "due"):
        done = rouse(home, verb, "--now", LATER)
        assert done.returncode == 0, (verb, done.stderr)
        assert "Traceback" not in done.stderr
    due = rouse(home, "due", "--now", LATER)
    assert "inventory/reminders/unterminated/reminder.md" in due.stderr
    assert "reminder/dupkey" in due.stdout and "reminder/huge" in due.stdout
    assert "linked" not in due.stdout
    check = rouse(home, "check", "--now", LATER)
    assert check.returncode == 1
    for slug in ("unterminated", "nonutf8", "binary", "dupkey", "malformed"):
        assert f"inventory/reminders/{slug}/reminder.md" in check.stdout, slug
    assert "inventory/reminders/linked/reminder.md" in check.stdout


def test_no_traceback_without_debug(home: Path) -> None:
    done = rouse(home, "due", "--now", "not a time")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "bad --now" in done.stderr


def test_snooze_rearms_an_expired_nag_and_clears_its_history(home: Path) -> None:
    reminder = home / "inventory/reminders/late/reminder.md"
    reminder.parent.mkdir()
    reminder.write_text(
        "---\nstatus: expired\ndue: 2026-03-14 10:00\nnag: 1h\nfires: 10\n"
        "set: 2026-03-13 09:00\nended: max-fires\n---\nPay the bill.\n"
    )
    done = rouse(home, "snooze", "late", "--until", "2026-03-20 09:00", "--now", "2026-03-14 12:00")
    assert done.returncode == 0, done.stderr
    fields = header_of(reminder)
    assert fields["status"] == "pending" and fields["due"] == "2026-03-20 09:00"
    assert not {"fires", "set", "ended"} & set(fields)
    assert reminder.read_text().endswith("- 2026-03-14 12:00: snoozed until 2026-03-20 09:00\n")
    due = rouse(home, "due", "--json", "--now", "2026-03-20 09:00")
    assert [(i["record"], i["reason"], i["nudge"]) for i in json.loads(due.stdout)][-1] == (
        "reminder/late",
        "nag",
        1,
    )


def test_done_reminder_does_not_snooze(home: Path) -> None:
    assert rouse(home, "close", "example-renew-the-tls-certificate", "--done").returncode == 0
    done = rouse(home, "snooze", "example-renew-the-tls-certificate", "--for", "1d")
    assert done.returncode == 2 and "only open records snooze" in done.stderr


def test_pack_through_a_real_process_is_whole(home: Path) -> None:
    text = rouse(home, "pack", "--now", LATER)
    assert text.returncode == 0, text.stderr
    assert text.stdout.startswith("now: Friday 2099-01-02 09:00")
    # unkeyed (--no-key): the pack says once, last, that origins are unverified (issue 29)
    assert text.stdout.endswith(
        f"`rouse recall QUERY` or grep finds them\n\nwarnings:\n  {UNVERIFIED}\n"
    )
    data = json.loads(rouse(home, "pack", "--json", "--now", LATER).stdout)
    assert data["due_total"] == 2 and len(data["beliefs"]) == 2


# -- the quick parse of `rouse pack`, `status` and `due` ------------------------

QUICK_FORMS = [
    ["pack"],
    ["--memory", "/m", "pack"],
    ["--memory=/m", "--now", "2026-03-14 09:00", "pack"],
    ["pack", "--memory", "/a", "--now=2026-03-14 09:00"],
    ["--memory", "/a", "pack", "--memory", "/b"],  # the later one wins, as in argparse
    ["pack", "--json", "--json"],
    ["pack", "--query", "deploy cache", "--max-chars", "500"],
    ["pack", "--query=--odd", "--max-chars= 1_000", "--probe-budget", "+20"],
    ["pack", "--hook", "claude"],
    ["pack", "--hook=codex", "--max-chars=-5"],
    ["pack", "--memory="],
]
ARGPARSE_FORMS = [
    [],
    ["--json", "pack"],  # a pack option before the verb
    ["pack", "--help"],
    ["pack", "-h"],
    ["pack", "--jso"],  # an abbreviation
    ["pack", "--json=yes"],
    ["pack", "--query", "-x"],  # a value that looks like an option
    ["pack", "--max-chars", "-5"],  # argparse takes this one: left to it all the same
    ["pack", "--query"],
    ["pack", "--max-chars", "many"],
    ["pack", "--hook", "vim"],
    ["pack", "extra"],
    ["pack", "pack"],
    ["--version"],
    ["due"],
    ["pack", "--", "--json"],
]


@pytest.mark.parametrize("argv", QUICK_FORMS, ids=" ".join)
def test_quick_pack_reads_like_argparse(argv: list[str]) -> None:
    from rouse.cli.main import _quick
    from rouse.cli.parser import build_parser

    quick = _quick(argv, "pack")
    assert quick is not None
    assert vars(quick) == vars(build_parser().parse_args(argv))


@pytest.mark.parametrize("argv", ARGPARSE_FORMS, ids=" ".join)
def test_quick_pack_leaves_everything_else_to_argparse(argv: list[str]) -> None:
    from rouse.cli.main import _quick

    assert _quick(argv, "pack") is None


QUICK_STATUS = [
    ["status"],
    ["status", "--json"],
    ["--memory", "/tmp/m", "status"],
    ["--now", "2026-03-14 12:00", "--memory", "m", "status", "--json"],
    # read by the one quick parse as it reads `rouse pack` (argparse reads them alike)
    ["--memory=m", "status"],
    ["status", "--json", "--json"],
    ["--memory", "", "status"],
]
ARGPARSE_STATUS = [
    ["status", "--check"],
    ["status", "--until", "tomorrow"],
    ["status", "--ledger", "postgresql://x"],
    ["--memory", "--json", "status"],
    ["status", "--memory", "m"],
    ["status", "extra"],
    ["status", "status"],
    ["status", "--jso"],
    ["--json", "status"],
    ["--now=", "status", "--json=1"],
]


@pytest.mark.parametrize("verb", ["status", "due"])
@pytest.mark.parametrize("argv", QUICK_STATUS, ids=" ".join)
def test_quick_status_and_due_read_like_argparse(argv: list[str], verb: str) -> None:
    from rouse.cli.main import _quick
    from rouse.cli.parser import build_parser

    argv = [verb if token == "status" else token for token in argv]
    quick = _quick(argv, verb)
    assert quick is not None
    assert vars(quick) == vars(build_parser().parse_args(argv))


@pytest.mark.parametrize("verb", ["status", "due"])
@pytest.mark.parametrize("argv", ARGPARSE_STATUS, ids=" ".join)
def test_quick_status_and_due_leave_everything_else_to_argparse(argv: list[str], verb: str) -> None:
    from rouse.cli.main import _quick

    argv = [verb if token == "status" else token for token in argv]
    assert _quick(argv, verb) is None


def test_quick_pack_leaves_errors_to_argparse(home: Path) -> None:
    done = rouse(home, "pack", "--max-chars", "many")
    assert done.returncode == 2 and "invalid int value: 'many'" in done.stderr
    done = rouse(home, "pack", "--hook", "vim")  # not an agent rouse knows
    assert done.returncode == 2 and "invalid choice: 'vim'" in done.stderr


# -- help and mistyped verbs (issue 12, item 8) ---------------------------------


def test_help_alone_prints_the_top_help(tmp_path: Path) -> None:
    done = run("help", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == run("--help", cwd=tmp_path).stdout
    assert done.stdout.startswith("usage: rouse") and "status" in done.stdout


@pytest.mark.parametrize("verb", ["status", "sweep", "help", "pack"])
def test_help_verb_prints_that_verbs_help(tmp_path: Path, verb: str) -> None:
    done = run("help", verb, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == run(verb, "--help", cwd=tmp_path).stdout
    assert done.stdout.startswith(f"usage: rouse {verb}")


@pytest.mark.parametrize(
    ("argv", "meant"),
    [
        (["stauts"], "status"),
        (["--memory", "/nowhere", "stauts", "--json"], "status"),
        (["--now=2026-03-14 09:00", "sweeep", "--once"], "sweep"),
        (["reacll", "x"], "recall"),
        (["help", "stauts"], "status"),
    ],
)
def test_a_mistyped_verb_suggests_the_nearest(tmp_path: Path, argv: list[str], meant: str) -> None:
    done = run(*argv, cwd=tmp_path)
    assert done.returncode == 2
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("rouse: "), done.stderr
    assert f"did you mean {meant}?" in lines[0]
    assert done.stdout == ""


def test_an_unknown_verb_with_no_near_one_says_where_the_list_is(tmp_path: Path) -> None:
    done = run("zzqx", cwd=tmp_path)
    assert done.returncode == 2
    assert "did you mean" not in done.stderr and "rouse help" in done.stderr
    assert "'zzqx'" in done.stderr and len(done.stderr.splitlines()) == 1


@pytest.mark.parametrize(
    "args",
    [
        ["remind", "call-bob", "--due", "soon"],
        ["due", "--until", "someday"],
        ["new", "reminder", "call-bob", "--set", "due=next monday"],
    ],
)
def test_a_bad_time_names_every_accepted_form(home: Path, args: list[str]) -> None:
    done = rouse(home, *args)
    assert done.returncode == 2
    (line,) = done.stderr.splitlines()
    forms = ("+3d", "2026-03-14 09:00", "ISO 8601", "2026-03-14T09:00+01:00", "mon 9am")
    for form in forms:
        assert form in line, (form, line)
    assert not (home / "inventory/reminders/call-bob").exists()


def test_due_until_next_week_on_a_sunday_covers_the_coming_week(home: Path) -> None:
    """Issue 34, item 10: a forecast's "next week" is the whole coming week, not its
    Monday 09:00 (2026-03-15 is a Sunday)."""
    made = rouse(
        home, "remind", "standup", "--every", "weekdays 09:00", "--now", "2026-03-15 10:00"
    )
    assert made.returncode == 0, made.stderr
    ahead = rouse(home, "due", "--json", "--now", "2026-03-15 10:00", "--until", "next week")
    assert ahead.returncode == 0, ahead.stderr
    days = [i["due_at"][:10] for i in json.loads(ahead.stdout) if i["record"] == "reminder/standup"]
    assert days == [f"2026-03-{d}" for d in (16, 17, 18, 19, 20)]
