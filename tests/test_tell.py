"""Outreach reaches the human (issue 18, item 4): channels, ``rouse tell``, their failures."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from conftest import INTENTIONS, NOW, REMINDERS, MakeTree, ago, stamp
from rouse.agents.mcp_tools import Tools
from rouse.cli.main import main
from rouse.core.errors import UsageError
from rouse.pack.build import build_pack
from rouse.sweep import telling
from rouse.sweep.build import Parts
from rouse.sweep.channels import Channels
from rouse.sweep.ledger import Ledger
from rouse.sweep.runner import prompt
from rouse.sweep.sinks import ExecSink, FileSink
from rouse.sweep.sinks.webhook import WebhookSink, parse_secret, signature
from rouse.sweep.tick import Sweeper

CALL = f"{REMINDERS}/call-mum"
SHIP = f"{INTENTIONS}/ship"
SECRET = "whsec_MDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAw"


@pytest.fixture
def tree(make_tree: MakeTree) -> Path:
    return make_tree(
        {
            f"{CALL}/reminder.md": f"""
            ---
            status: pending
            opened: {stamp(ago(days=1))}
            due: 2099-01-01 09:00
            channel: phone
            ---
            Call mum about Sunday.
            """,
            f"{SHIP}/intention.md": f"""
            ---
            status: open
            opened: {stamp(ago(hours=1))}
            last-moved: {stamp(ago(minutes=30))}
            closes-when: the release is tagged
            ---
            Ship the release.
            """,
        }
    )


class Inbox(BaseHTTPRequestHandler):
    """A loopback channel: keeps each POST (headers and JSON), answers from ``answers``."""

    answers: ClassVar[list[int]] = []
    seen: ClassVar[list[tuple[dict[str, str], bytes]]] = []

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        headers = {key.lower(): value for key, value in self.headers.items()}
        type(self).seen.append((headers, body))
        self.send_response(type(self).answers.pop(0) if type(self).answers else 200)
        self.end_headers()


@pytest.fixture
def hook() -> Iterator[str]:
    Inbox.answers, Inbox.seen = [], []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Inbox)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/phone"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def mail(tmp_path: Path) -> tuple[Path, Path]:
    """A real command standing in for "mail the owner": it keeps each message and its env."""
    inbox = tmp_path / "mailbox"
    inbox.mkdir()
    script = tmp_path / "mail-owner"
    script.write_text(
        "#!/usr/bin/env python3\n"
        "import json, os, sys\n"
        f"name = os.path.join({str(inbox)!r}, os.environ['ROUSE_TELL_ID'])\n"
        "keys = ('ROUSE_TELL_ID', 'ROUSE_RECORD', 'ROUSE_PATH', 'ROUSE_CHANNEL')\n"
        "env = {k: os.environ.get(k) for k in keys}\n"
        "json.dump({'text': sys.stdin.read(), 'env': env}, open(name, 'w'))\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script, inbox


def tells(root: Path) -> list[dict[str, Any]]:
    with Ledger(root) as db:
        return db.messages("tell")


def quiet(line: str) -> None:
    pass


def rouse(
    root: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``rouse`` as a user runs it: a real process."""
    return subprocess.run(
        [sys.executable, "-m", "rouse", "--memory", str(root), *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **(env or {})},
    )


# -- the field ----------------------------------------------------------------


def test_channel_is_a_known_field_on_a_reminder(
    tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    due = "due=2099-01-01 09:00"
    code = main(
        [
            "--memory",
            str(tree),
            "new",
            "reminder",
            "pay-rent",
            "--set",
            due,
            "--set",
            "channel=phone",
        ]
    )
    assert code == 0, capsys.readouterr().err
    assert "channel: phone" in (tree / REMINDERS / "pay-rent/reminder.md").read_text()
    capsys.readouterr()
    main(["--memory", str(tree), "check", "--json"])
    findings = json.loads(capsys.readouterr().out)
    assert not [f for f in findings if "channel" in f["message"] and "reminder" in f["path"]]


def test_channel_on_an_intention_is_a_warning(
    tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tree / SHIP / "intention.md"
    path.write_text(path.read_text().replace("status: open", "status: open\nchannel: phone"))
    main(["--memory", str(tree), "check", "--json"])
    findings = json.loads(capsys.readouterr().out)
    assert [f["level"] for f in findings if "channel" in f["message"]] == ["warn"]


# -- rouse tell ---------------------------------------------------------------


def test_a_tell_is_durable_at_once_without_a_sweeper(tree: Path) -> None:
    done = rouse(tree, "tell", "call-mum", "Your mother called: ring her back before 6pm.")
    assert done.returncode == 0, done.stderr
    assert "waits for a sweeper" in done.stdout
    rows = tells(tree)
    assert len(rows) == 1
    row = rows[0]
    assert row["state"] == "pending" and row["channel"] == "phone" and row["path"] == CALL
    assert row["text"] == "Your mother called: ring her back before 6pm."
    assert telling.ID_RE.match(row["id"])
    body = (tree / CALL / "reminder.md").read_text()
    assert "told the owner" in body and row["id"] in body  # the record's log notes it
    log = rouse(tree, "log")
    assert log.returncode == 0 and row["id"] in log.stdout and "tell" in log.stdout
    status = json.loads(rouse(tree, "status", "--json").stdout)
    assert status["tells"]["pending"] == 1
    warnings = build_pack(tree, NOW, probes_enabled=False).data["warnings"]
    assert any("1 message(s) to the owner (rouse tell) not delivered yet" in w for w in warnings)


def test_tell_json_says_where_it_goes(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--memory", str(tree), "tell", "ship", "The release slips a day.", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["record"] == "intention/ship" and data["path"] == SHIP
    assert data["channel"] is None and data["state"] == "pending"
    assert data["id"] == tells(tree)[0]["id"]
    assert "waits for a sweeper" in data["goes"]


@pytest.mark.parametrize(
    ("ref", "message", "says"),
    [
        ("call-mum", "", "empty"),
        ("call-mum", "   \n ", "empty"),
        ("call-mum", "x" * (telling.MAX_MESSAGE + 1), f"{telling.MAX_MESSAGE:,}"),
        ("call-mum", "ring\x07 her", "control character"),
        ("nobody", "hello", "nobody"),
        ("../etc", "hello", "../etc"),
    ],
)
def test_tell_refuses_bad_input_and_writes_nothing(
    tree: Path, capsys: pytest.CaptureFixture[str], ref: str, message: str, says: str
) -> None:
    before = (tree / CALL / "reminder.md").read_bytes()
    assert main(["--memory", str(tree), "tell", ref, message]) == 2
    err = capsys.readouterr().err
    assert says in err and err.count("\n") == 1
    assert (tree / CALL / "reminder.md").read_bytes() == before
    assert not (tree / ".rouse/ledger.sqlite3").exists() or tells(tree) == []


def test_tell_refuses_an_ambiguous_slug(
    tree: Path, make_tree: MakeTree, capsys: pytest.CaptureFixture[str]
) -> None:
    make_tree({f"{SHIP}/call-mum/task.md": "---\nstatus: pending\n---\n"})
    assert main(["--memory", str(tree), "tell", "call-mum", "hello"]) == 2
    assert "ambiguous" in capsys.readouterr().err


def test_a_multiline_message_keeps_its_lines(tree: Path) -> None:
    telling.tell(tree, "ship", "line one\nline two", NOW)
    assert tells(tree)[0]["text"] == "line one\nline two"


def test_the_mcp_tool_tells_through_the_same_function(tree: Path) -> None:
    tools = Tools(tree, lambda: NOW)
    said = tools.tell("call-mum", "Mum rang.")
    assert "told the owner" in said
    assert [row["text"] for row in tells(tree)] == ["Mum rang."]
    with pytest.raises(UsageError):
        tools.tell("call-mum", "")
    assert len(tells(tree)) == 1


# -- the sweeper delivers -----------------------------------------------------


def test_the_record_channel_gets_it_signed_once(
    tree: Path, hook: str, mail: tuple[Path, Path]
) -> None:
    script, inbox = mail
    told = telling.tell(tree, "call-mum", "Ring mum back.", NOW)
    channels = Channels(
        {"phone": WebhookSink(hook, 5.0, parse_secret(SECRET))},
        default=ExecSink([str(script)], 10, tree, {}),
    )
    with Sweeper(tree, Parts(FileSink(tree), channels=channels), log=quiet) as sw:
        sw.tick(NOW)
        sw.tick(NOW + timedelta(minutes=5))  # delivered: never sent again
    assert len(Inbox.seen) == 1 and list(inbox.iterdir()) == []
    headers, body = Inbox.seen[0]
    payload = json.loads(body)
    assert payload["id"] == told.id == headers["webhook-id"]
    assert payload["kind"] == "tell" and payload["channel"] == "phone"
    assert payload["record"] == "reminder/call-mum" and payload["path"] == CALL
    assert payload["text"].startswith("Ring mum back.\n\n— about reminder/call-mum")
    stamp_ = int(headers["webhook-timestamp"])
    assert headers["webhook-signature"] == signature(parse_secret(SECRET), told.id, stamp_, body)
    assert [row["state"] for row in tells(tree)] == ["delivered"]


def test_an_unknown_channel_goes_to_the_default_with_a_warning(
    tree: Path, mail: tuple[Path, Path]
) -> None:
    script, inbox = mail
    told = telling.tell(tree, "call-mum", "Ring mum back.", NOW)
    channels = Channels({}, default=ExecSink([str(script)], 10, tree, {}))
    with Sweeper(tree, Parts(FileSink(tree), channels=channels), log=quiet) as sw:
        sw.tick(NOW)
    got = json.loads((inbox / told.id).read_text())
    assert "Ring mum back.\n\n— about reminder/call-mum" in got["text"]
    assert "'phone'" in got["text"] and "default" in got["text"]
    assert got["env"] == {
        "ROUSE_TELL_ID": told.id,
        "ROUSE_RECORD": "reminder/call-mum",
        "ROUSE_PATH": CALL,
        "ROUSE_CHANNEL": "phone",
    }


def test_with_no_default_a_tell_waits_and_status_and_the_pack_say_so(
    tree: Path, mail: tuple[Path, Path]
) -> None:
    script, inbox = mail
    telling.tell(tree, "ship", "The release slips.", NOW)
    with Sweeper(tree, Parts(FileSink(tree), channels=Channels({})), log=quiet) as sw:
        sw.tick(NOW)
    assert [row["state"] for row in tells(tree)] == ["waiting"]
    warnings = build_pack(tree, NOW, probes_enabled=False).data["warnings"]
    assert any("message(s) to the owner wait" in w for w in warnings)
    check = rouse(tree, "--now", stamp(NOW), "status", "--check")
    assert check.returncode == 1 and "wait" in check.stderr
    status = rouse(tree, "--now", stamp(NOW), "status")
    assert "wait" in status.stdout
    # a sweeper with a default takes it at its next tick
    with Sweeper(
        tree,
        Parts(FileSink(tree), channels=Channels({}, ExecSink([str(script)], 10, tree, {}))),
        log=quiet,
    ) as sw:
        sw.tick(NOW + timedelta(minutes=1))
    assert [row["state"] for row in tells(tree)] == ["delivered"]
    assert len(list(inbox.iterdir())) == 1


def test_a_failing_channel_is_retried_with_backoff_then_given_up_after_24h(
    tree: Path, hook: str
) -> None:
    Inbox.answers = [500] * 100
    told = telling.tell(tree, "call-mum", "Ring mum back.", NOW)
    channels = Channels({"phone": WebhookSink(hook, 5.0)})
    with Sweeper(tree, Parts(FileSink(tree), channels=channels), log=quiet) as sw:
        sw.tick(NOW)  # attempt 1 fails: next at +1m
        sw.tick(NOW + timedelta(seconds=30))  # too soon
        assert len(Inbox.seen) == 1
        sw.tick(NOW + timedelta(minutes=1))  # attempt 2: next at +2m after it
        sw.tick(NOW + timedelta(minutes=2))  # too soon
        assert len(Inbox.seen) == 2
        sw.tick(NOW + timedelta(minutes=3))
        assert len(Inbox.seen) == 3
        assert {json.loads(body)["id"] for _, body in Inbox.seen} == {told.id}
        sw.tick(NOW + timedelta(hours=24))  # 24h after the first failure: given up
    sent = len(Inbox.seen)
    row = tells(tree)[0]
    assert row["state"] == "given_up" and "HTTP 500" in (row["error"] or "")
    nudge = tree / row["receipt"]
    assert nudge.is_file() and "Ring mum back." in nudge.read_text()
    woken = build_pack(tree, NOW + timedelta(hours=24), probes_enabled=False).data["woken"]
    assert CALL in [w["path"] for w in woken]  # (the stale intention woke too)
    check = rouse(tree, "--now", stamp(NOW + timedelta(hours=24)), "status", "--check")
    assert check.returncode == 1 and "given up" in check.stderr
    with Sweeper(tree, Parts(FileSink(tree), channels=channels), log=quiet) as sw:
        sw.tick(NOW + timedelta(hours=25))
    assert len(Inbox.seen) == sent  # given up is final


def test_a_due_reminder_with_a_channel_reaches_it_and_the_pack(tree: Path, hook: str) -> None:
    path = tree / CALL / "reminder.md"
    path.write_text(path.read_text().replace("2099-01-01 09:00", stamp(ago(minutes=5))))
    with Sweeper(
        tree, Parts(FileSink(tree), channels=Channels({"phone": WebhookSink(hook, 5.0)})), log=quiet
    ) as sw:
        sw.tick(NOW)
        sw.tick(NOW + timedelta(minutes=5))
    assert len(list((tree / ".rouse/nudges").glob("*.md"))) == 1  # the tick's own sink
    assert len(Inbox.seen) == 1
    payload = json.loads(Inbox.seen[0][1])
    assert payload["kind"] == "tell" and payload["channel"] == "phone"
    # written for a person (issue 34 item 3): what, when, from which record; no prompt
    text = payload["text"]
    assert text.startswith("Reminder: Call mum about Sunday.")
    assert f"due {stamp(ago(minutes=5))}" in text and f"reminder/call-mum ({CALL})" in text
    for prompt_words in ("Deliver this as you", "\nat: ", "origin:", "in your own voice"):
        assert prompt_words not in text


def test_a_due_reminder_without_a_channel_reaches_no_channel(tree: Path, hook: str) -> None:
    path = tree / CALL / "reminder.md"
    text = path.read_text().replace("2099-01-01 09:00", stamp(ago(minutes=5)))
    path.write_text(text.replace("channel: phone\n", ""))
    with Sweeper(
        tree, Parts(FileSink(tree), channels=Channels({}, WebhookSink(hook, 5.0))), log=quiet
    ) as sw:
        sw.tick(NOW)
    assert Inbox.seen == [] and tells(tree) == []


# -- the command line ---------------------------------------------------------


def test_sweep_once_delivers_a_tell_through_a_named_channel(tree: Path, hook: str) -> None:
    assert rouse(tree, "tell", "call-mum", "Ring mum back.").returncode == 0
    done = rouse(
        tree,
        "--now",
        stamp(NOW),
        "sweep",
        "--once",
        "--channel",
        "phone=webhook",
        hook,
        "--notify",
        "phone",
    )
    assert done.returncode == 0, done.stderr
    assert len(Inbox.seen) == 1 and json.loads(Inbox.seen[0][1])["channel"] == "phone"
    after = rouse(tree, "--now", stamp(NOW + timedelta(minutes=1)), "tell", "call-mum", "Again.")
    assert "phone" in after.stdout and "webhook" in after.stdout  # it says where it will go


def test_sweep_takes_an_exec_channel_command_after_dashes(
    tree: Path, mail: tuple[Path, Path]
) -> None:
    script, inbox = mail
    telling.tell(tree, "ship", "The release slips.", NOW)
    done = rouse(
        tree, "--now", stamp(NOW), "sweep", "--once", "--notify", "exec", "--", str(script)
    )
    assert done.returncode == 0, done.stderr
    (got,) = [json.loads(p.read_text()) for p in inbox.iterdir()]
    # the agent's words, then what the message is about and when it was told
    assert (
        got["text"] == f"The release slips.\n\n— about intention/ship ({SHIP}), told {stamp(NOW)}"
    )
    assert got["env"]["ROUSE_CHANNEL"] == "default"  # a tell to the default says so


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--channel", "phone"], "NAME=KIND"),
        (["--channel", "Phone!=webhook", "http://127.0.0.1:9/"], "Phone!"),
        (["--channel", "phone=file"], "would not reach a human"),
        (["--channel", "phone=carrier-pigeon"], "carrier-pigeon"),
        (["--channel", "phone=webhook"], "URL"),
        (
            [
                "--channel",
                "phone=webhook",
                "http://127.0.0.1:9/",
                "--channel",
                "phone=webhook",
                "http://127.0.0.1:9/",
            ],
            "twice",
        ),
        (["--notify", "pager"], "pager"),
        (["--notify", "stdout"], "would not reach a human"),
        (["--channel", "a=exec", "--channel", "b=exec", "--", "true"], "cannot all own"),
    ],
)
def test_bad_channel_options_are_refused_at_start(
    tree: Path, capsys: pytest.CaptureFixture[str], args: list[str], says: str
) -> None:
    code = main(["--memory", str(tree), "sweep", "--once", *args])
    assert code == 2
    err = capsys.readouterr().err
    assert says in err and err.count("\n") == 1


def test_the_run_prompt_teaches_tell(tree: Path) -> None:
    from rouse.sweep.wake import Digest

    made = Digest(
        id="d1",
        record="",
        type="",
        slug="",
        path="",
        file="",
        reason="digest",
        nudge=0,
        last_moved="",
        at=f"{NOW:%Y-%m-%d %H:%M:%S}",
        text="(wakes)",
    )
    text = prompt(tree, made)
    assert "rouse --memory" in text and " tell " in text
    guide = (
        Path(__file__).parents[1] / "src/rouse/records/skeleton/entrypoint/rouse.md"
    ).read_text()
    assert "rouse tell REF" in guide


def test_a_tell_no_known_sweeper_can_deliver_waits_at_once(tree: Path) -> None:
    """Issue 34, item 7: after a ``sweep --once`` with no channel, no sweeper runs; a tell
    says it waits (not "the running sweeper"), and ``status --check`` fails at once."""
    swept = rouse(tree, "sweep", "--once", "-q")
    assert swept.returncode == 0, swept.stderr
    done = rouse(tree, "tell", "ship", "The release slips.")
    assert done.returncode == 0, done.stderr
    assert "waits" in done.stdout and "running sweeper" not in done.stdout
    assert "--notify" in done.stdout
    assert [row["state"] for row in tells(tree)] == ["waiting"]
    check = rouse(tree, "status", "--check")
    assert check.returncode == 1 and "wait" in check.stderr
