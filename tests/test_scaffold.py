"""Making things (`init`, `new`, `remind`): inputs are checked before anything is written.

Real `rouse` processes on trees laid by `rouse init`, as a user types them.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest

from conftest import NOW
from rouse.core import layout
from rouse.core.errors import UsageError
from rouse.lint import fields as lint_fields
from rouse.records import inputs

INTENTION = "entrypoint/beliefs/motivations/intentions/example-stabilise-nightly-build"
REMINDER = "inventory/reminders/example-renew-the-tls-certificate"
BACKLOG = "inventory/backlog/example-try-a-build-cache"
ISO_RE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d$")


def run(
    *args: str, tmp: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("ROUSE_")}
    base["ROUSE_STAMP_KEY"] = str(tmp / "no-key")  # hermetic: never the user's key
    return subprocess.run(
        [sys.executable, "-m", "rouse", *args],
        env={**base, **(env or {})},
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A fresh example tree laid by `rouse init`, at tmp_path/memory."""
    done = run("init", "--no-key", str(tmp_path), "--now", "2026-03-14 12:00", tmp=tmp_path)
    assert done.returncode == 0, done.stderr
    return tmp_path / "memory"


def rouse(
    home: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return run("--memory", str(home), "--now", "2026-03-14 12:00", *args, tmp=home.parent, env=env)


def files_under(root: Path) -> dict[str, bytes]:
    found = {p.relative_to(root).as_posix(): p for p in root.rglob("*") if p.is_file()}
    return {
        rel: p.read_bytes() for rel, p in found.items() if not rel.startswith((".rouse/", ".git/"))
    }


# -- unknown keys -------------------------------------------------------------


def test_set_with_misspelt_keys_is_refused_with_a_suggestion(home: Path) -> None:
    before = files_under(home)
    done = rouse(home, "new", "intention", "t", "--set", "close-when=x", "--set", "stale-afterr=1d")
    assert done.returncode == 2, done.stdout
    assert "did you mean 'closes-when'?" in done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.splitlines()) == 1
    assert files_under(home) == before
    second = rouse(home, "new", "intention", "t", "--set", "stale-afterr=1d")
    assert second.returncode == 2 and "did you mean 'stale-after'?" in second.stderr
    assert files_under(home) == before


def test_an_unknown_key_with_nothing_close_says_there_is_no_free_form_metadata() -> None:
    with pytest.raises(UsageError) as refused:
        inputs.validate_fields({"colour": "blue"}, NOW)
    message = refused.value.render()
    assert "unknown field 'colour'" in message and "did you mean" not in message
    assert "body" in message  # where free text goes instead


def test_the_one_validator_refuses_unknown_keys_for_every_writer() -> None:
    """MCP `fields` and `remember` go through validate_fields / check_key: the same refusal."""
    with pytest.raises(UsageError, match=r"did you mean 'keywords'\?"):
        inputs.validate_fields({"keyword": "a, b"}, NOW)
    with pytest.raises(UsageError, match=r"did you mean 'success-when'\?"):
        inputs.check_key("sucess-when")


#: The keys docs/header.md lists as read by rouse, less the machine fields.
READ_KEYS = (
    *("status", "opened", "last-moved", "stale-after", "review-every", "closes-when"),
    *("success-when", "outcome", "cancel", "due", "nag", "backoff", "max-fires", "expires"),
    "channel",
    *("snoozed-until", "waiting-on", "falsifiers", "model", "reasoning", "repo", "category"),
    *("every", "until"),
    *("keywords", "probes", "updated", "supersedes"),
)


@pytest.mark.parametrize("key", READ_KEYS)
def test_every_key_rouse_reads_and_a_writer_may_write_passes(key: str) -> None:
    assert inputs.check_key(key) == key


def test_the_writable_keys_are_the_documented_ones() -> None:
    assert frozenset(READ_KEYS) == inputs.WRITABLE_KEYS


def test_writers_and_check_know_the_same_keys() -> None:
    assert inputs.KNOWN_KEYS == lint_fields.KNOWN_KEYS == layout.KNOWN_KEYS
    assert lint_fields.RULED_KEYS == layout.KNOWN_KEYS  # a rule for every key, and no more
    assert inputs.WRITABLE_KEYS == inputs.KNOWN_KEYS - layout.MACHINE_FIELDS


# -- what a new file must be ----------------------------------------------------


def test_new_reminder_without_a_due_is_refused_as_remind_refuses_it(home: Path) -> None:
    before = files_under(home)
    done = rouse(home, "new", "reminder", "x")
    assert done.returncode == 2, done.stdout
    assert "due" in done.stderr and "rouse remind" in done.stderr
    assert files_under(home) == before
    given = rouse(home, "new", "reminder", "x", "--set", "due=+2h")
    assert given.returncode == 0, given.stderr
    assert rouse(home, "check").returncode == 0


@pytest.mark.parametrize("kind", ["belief", "motivation", "note", "persona"])
def test_under_on_a_file_that_does_not_nest_is_refused(home: Path, kind: str) -> None:
    before = files_under(home)
    slug = [] if kind == "persona" else ["x"]
    done = rouse(home, "new", kind, *slug, "--under", "example-stabilise-nightly-build")
    assert done.returncode == 2, done.stdout
    assert "--under" in done.stderr and "Traceback" not in done.stderr
    assert files_under(home) == before


def test_a_goal_under_a_reminder_is_refused_naming_the_legal_parents(home: Path) -> None:
    before = files_under(home)
    done = rouse(home, "new", "goal", "g", "--under", "example-renew-the-tls-certificate")
    assert done.returncode == 2, done.stdout
    assert "nothing nests under a reminder" in done.stderr
    assert "a goal nests under an intention or a goal" in done.stderr
    assert files_under(home) == before


@pytest.mark.parametrize(
    ("kind", "under", "legal"),
    [
        ("intention", "example-bisect-the-flaky-test", "an intention"),
        ("goal", "example-bisect-the-flaky-test", "an intention or a goal"),
        ("backlog", "example-stabilise-nightly-build", "inventory/backlog"),
    ],
)
def test_nesting_against_the_ladder_is_refused(
    home: Path, kind: str, under: str, legal: str
) -> None:
    before = files_under(home)
    done = rouse(home, "new", kind, "x", "--under", under)
    assert done.returncode == 2, done.stdout
    assert legal in done.stderr
    assert files_under(home) == before


@pytest.mark.parametrize(
    ("kind", "under"),
    [
        ("goal", "example-stabilise-nightly-build"),
        ("action", "example-stabilise-nightly-build"),
        ("task", "example-stabilise-nightly-build"),
        ("reminder", "example-bisect-the-flaky-test"),
        ("intention", "example-stabilise-nightly-build"),
    ],
)
def test_nesting_down_the_ladder_is_fine(home: Path, kind: str, under: str) -> None:
    extra = ["--set", "due=+1d"] if kind == "reminder" else []
    done = rouse(home, "new", kind, f"new-{kind}", "--under", under, *extra)
    assert done.returncode == 0, done.stderr


def test_a_second_record_with_an_existing_slug_warns_and_says_how_to_refer_to_each(
    home: Path,
) -> None:
    first = rouse(home, "new", "backlog", "twin")
    assert first.returncode == 0 and not first.stderr
    done = rouse(home, "new", "task", "twin", "--under", "example-stabilise-nightly-build")
    assert done.returncode == 0, done.stderr
    task_dir = f"{INTENTION}/twin"
    assert (home / task_dir / "task.md").is_file()
    warning = done.stderr
    assert warning.startswith("rouse: warning:") and len(warning.splitlines()) == 1
    assert "inventory/backlog/twin" in warning and task_dir in warning
    assert "ambiguous" in warning and "by its path" in warning
    assert "backlog/twin" in warning and "task/twin" in warning  # type/slug tells them apart
    assert rouse(home, "move", "inventory/backlog/twin").returncode == 0
    assert rouse(home, "move", "task/twin").returncode == 0


# -- words ----------------------------------------------------------------------


def test_an_action_without_a_parent_is_an_action(home: Path) -> None:
    done = rouse(home, "new", "action", "lonely")
    assert done.returncode == 2
    assert "an action lives under a record" in done.stderr


def test_an_intention_cannot_end_abandoned_says_an(home: Path) -> None:
    done = rouse(home, "close", "example-stabilise-nightly-build", "--abandoned", "meh")
    assert done.returncode == 2
    assert "an intention cannot end 'abandoned'" in done.stderr


def test_new_persona_writes_a_template_that_packs_as_a_persona(home: Path) -> None:
    done = rouse(home, "new", "persona")
    assert done.returncode == 0, done.stderr
    text = (home / "persona.md").read_text()
    assert text.startswith("---\n")
    body = text.split("---\n", 2)[2]
    assert len(body.strip().splitlines()) >= 3  # something to keep or edit, not an empty file
    assert "edit" in done.stdout  # the output says what to do with it
    pack = rouse(home, "pack")
    # (no key: nobody signed it, so its words come quoted as data, under its title)
    block = pack.stdout.split("persona [unknown] — not standing truth", 1)[1].splitlines()
    assert "not signed" in block[0] and block[1].strip() == "```text", pack.stdout
    assert block[2].strip(), pack.stdout  # the persona has words under its title
    assert rouse(home, "check").returncode == 0
    given = rouse(home, "new", "belief", "b", "--body", "x")
    assert given.returncode == 0


def test_new_persona_with_a_body_keeps_the_body(home: Path) -> None:
    done = rouse(home, "new", "persona", "--body", "terse")
    assert done.returncode == 0, done.stderr
    assert (home / "persona.md").read_text().endswith("---\nterse\n")


def test_init_without_examples_does_not_mention_signing(tmp_path: Path) -> None:
    key = tmp_path / "stamp.key"
    made = run("stamp", "--init-key", tmp=tmp_path, env={"ROUSE_STAMP_KEY": str(key)})
    assert made.returncode == 0, made.stderr
    bare = run("init", "--no-key", str(tmp_path / "a"), "--no-examples", tmp=tmp_path,
               env={"ROUSE_STAMP_KEY": str(key)})  # fmt: skip
    assert bare.returncode == 0, bare.stderr
    said = bare.stdout.replace(str(tmp_path), "TMP")  # (the test's own name says "signing")
    assert "signed" not in said and "example file" not in said and "stamp key" not in said
    full = run("init", str(tmp_path / "b"), tmp=tmp_path, env={"ROUSE_STAMP_KEY": str(key)})
    assert full.returncode == 0, full.stderr
    assert re.search(r"signed the origin of [1-9]\d* example file", full.stdout)


# -- --json -----------------------------------------------------------------------


def _iso_is(value: str, local: str) -> None:
    assert ISO_RE.match(value), value
    here = datetime.fromisoformat(value).astimezone().replace(tzinfo=None)
    assert here == datetime.fromisoformat(local)


def test_new_json_is_one_object(home: Path) -> None:
    done = rouse(home, "new", "intention", "ship-it", "--json", env={"TZ": "Europe/Berlin"})
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    rel = "entrypoint/beliefs/motivations/intentions/ship-it"
    assert data["record"] == "intention/ship-it" and data["type"] == "intention"
    assert data["path"] == rel and data["file"] == f"{rel}/intention.md"
    assert data["fill_in"] == ["closes-when"] and data["warnings"] == []
    assert data["fields"]["opened"] == "2026-03-14T12:00:00+01:00"
    assert data["fields"]["last_moved"] == "2026-03-14T12:00:00+01:00"
    assert data["fields"]["status"] == "open" and data["fields"]["closes_when"] == ""
    for keys in (data, data["fields"]):
        assert all(key == key.lower() and "-" not in key for key in keys)


def test_new_json_for_a_context_file_has_no_record(home: Path) -> None:
    data = json.loads(rouse(home, "new", "belief", "plain", "--body", "x", "--json").stdout)
    assert data["record"] is None and data["type"] == "belief"
    assert data["file"] == "entrypoint/beliefs/belief-plain.md"


def test_new_json_carries_the_duplicate_slug_warning(home: Path) -> None:
    rouse(home, "new", "backlog", "twin")
    done = rouse(home, "new", "intention", "twin", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert len(data["warnings"]) == 1 and "inventory/backlog/twin" in data["warnings"][0]


def test_remind_json_gives_the_due_with_its_offset(home: Path) -> None:
    done = rouse(home, "remind", "call-bob", "--due", "+2h", "--nag", "30m", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["record"] == "reminder/call-bob"
    assert data["path"] == "inventory/reminders/call-bob"
    _iso_is(data["fields"]["due"], "2026-03-14 14:00")
    assert data["fields"]["nag"] == 1800  # seconds


def test_json_gives_every_time_in_the_header_with_its_offset(home: Path) -> None:
    # --json says "times are ISO 8601 with their offset": a series' end is a time too
    done = rouse(
        home, "remind", "pills", "--due", "+2h", "--every", "daily 09:00",
        "--until", "2026-03-31 09:00", "--json",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    fields = json.loads(done.stdout)["fields"]
    _iso_is(fields["until"], "2026-03-31 09:00")
    _iso_is(fields["opened"], "2026-03-14 12:00")


def test_a_snooze_given_to_new_in_peoples_words_is_written_as_a_stamp(home: Path) -> None:
    done = rouse(home, "new", "intention", "later", "--set", "snoozed-until=+2d", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    _iso_is(data["fields"]["snoozed_until"], "2026-03-16 12:00")
    assert "snoozed-until: 2026-03-16 12:00\n" in (home / data["file"]).read_text()
