"""Escalation to a human (issue 13, item 3): a record woken N times without moving."""

from __future__ import annotations

import json
import stat
import threading
from collections.abc import Iterator
from datetime import datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

from conftest import INTENTIONS, NOW, MakeTree, ago, stamp
from rouse.cli.main import main
from rouse.pack.build import build_pack
from rouse.records import lifecycle
from rouse.sweep.build import Parts
from rouse.sweep.escalation import Escalation, Threshold
from rouse.sweep.ledger import Ledger
from rouse.sweep.sinks import ExecSink, FileSink, WebhookSink
from rouse.sweep.tick import Sweeper

SHIP = f"{INTENTIONS}/ship"
EVERY_WAKE = timedelta(hours=2)  # the stale fixture comes due again 2h after each wake


@pytest.fixture
def stale(make_tree: MakeTree) -> Path:
    return make_tree(
        {
            f"{SHIP}/intention.md": f"""
            ---
            status: open
            opened: {stamp(ago(days=2))}
            last-moved: {stamp(ago(hours=3))}
            closes-when: the release is tagged
            ---
            Ship the release.
            """
        }
    )


@pytest.fixture
def owner(tmp_path: Path) -> tuple[Path, Path]:
    """A real executable standing in for "page the owner": it keeps each message it gets."""
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    script = tmp_path / "page-owner"
    script.write_text(
        "#!/usr/bin/env python3\n"
        "import os, sys\n"
        f"name = os.path.join({str(inbox)!r}, os.environ['ROUSE_WAKE_ID'])\n"
        "open(name, 'w').write(sys.stdin.read())\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script, inbox


def escalations(root: Path) -> list[dict[str, object]]:
    with Ledger(root) as db:
        return db.messages("escalation")


def pack_warnings(root: Path, now: datetime) -> list[str]:
    warnings: list[str] = build_pack(root, now, probes_enabled=False).data["warnings"]
    return warnings


def sweep_ticks(root: Path, escalation: Escalation, ticks: int) -> None:
    with Sweeper(root, Parts(FileSink(root), escalation=escalation), log=lambda line: None) as sw:
        for n in range(ticks):
            sw.tick(NOW + n * EVERY_WAKE)


def test_third_nudge_escalates_once_per_level(stale: Path, owner: tuple[Path, Path]) -> None:
    script, inbox = owner
    escalation = Escalation(Threshold(nudges=3), ExecSink([str(script)], 10, stale, {}))
    sweep_ticks(stale, escalation, 2)
    assert list(inbox.iterdir()) == []  # two nudges: not yet
    sweep_ticks(stale, escalation, 0)
    with Sweeper(stale, Parts(FileSink(stale), escalation=escalation), log=lambda line: None) as sw:
        for n in range(2, 7):  # nudges 3 … 7
            sw.tick(NOW + n * EVERY_WAKE)
    rows = escalations(stale)
    assert [(row["level"], row["state"]) for row in rows] == [(1, "delivered"), (2, "delivered")]
    assert [row["made_at"] for row in rows] == [
        (NOW + 2 * EVERY_WAKE).strftime("%Y-%m-%d %H:%M:%S"),
        (NOW + 5 * EVERY_WAKE).strftime("%Y-%m-%d %H:%M:%S"),
    ]
    messages = sorted(inbox.iterdir())
    assert len(messages) == 2
    text = messages[0].read_text()
    assert text.startswith("To the owner of the memory at ")
    assert "intention/ship needs you" in text and "woken about it 3 time(s)" in text
    assert "escalation 1 (after 3 nudges)" in text and f"at: {SHIP}" in text


def test_moving_the_record_starts_a_new_count(stale: Path, owner: tuple[Path, Path]) -> None:
    script, _ = owner
    escalation = Escalation(Threshold(nudges=2), ExecSink([str(script)], 10, stale, {}))
    with Sweeper(stale, Parts(FileSink(stale), escalation=escalation), log=lambda line: None) as sw:
        sw.tick(NOW)
        sw.tick(NOW + EVERY_WAKE)  # nudge 2: escalated
        assert len(escalations(stale)) == 1
        lifecycle.move(stale, "ship", NOW + EVERY_WAKE + timedelta(minutes=5))
        moved = NOW + EVERY_WAKE + timedelta(minutes=5)
        # the record comes due 2h after its move, then every 2h
        sw.tick(moved + timedelta(hours=2))  # nudge 1 of the new streak
        assert len(escalations(stale)) == 1
        sw.tick(moved + timedelta(hours=4))  # nudge 2 of the new streak: level 1 again
    rows = escalations(stale)
    assert [row["level"] for row in rows] == [1, 1]
    assert rows[0]["last_moved"] != rows[1]["last_moved"]


def test_a_duration_threshold(stale: Path, owner: tuple[Path, Path]) -> None:
    script, _ = owner
    escalation = Escalation(Threshold.parse("5h"), ExecSink([str(script)], 10, stale, {}))
    sweep_ticks(stale, escalation, 3)  # wakes at 0h, 2h, 4h: not 5h since the first yet
    assert escalations(stale) == []
    sweep_ticks(stale, escalation, 0)
    with Sweeper(stale, Parts(FileSink(stale), escalation=escalation), log=lambda line: None) as sw:
        sw.tick(NOW + 3 * EVERY_WAKE)  # 6h after the first wake
    assert [row["level"] for row in escalations(stale)] == [1]


class Flaky(BaseHTTPRequestHandler):
    answers: ClassVar[list[int]] = []
    seen: ClassVar[list[dict[str, object]]] = []

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        type(self).seen.append(json.loads(body))
        self.send_response(type(self).answers.pop(0) if type(self).answers else 200)
        self.end_headers()


@pytest.fixture
def hook() -> Iterator[str]:
    Flaky.answers, Flaky.seen = [500], []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Flaky)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/owner"
    finally:
        server.shutdown()
        server.server_close()


def test_a_failed_escalation_is_retried_until_it_lands_then_the_pack_says_so(
    stale: Path, hook: str
) -> None:
    escalation = Escalation(Threshold(nudges=1), WebhookSink(hook, 5.0))
    with Sweeper(stale, Parts(FileSink(stale), escalation=escalation), log=lambda line: None) as sw:
        sw.tick(NOW)  # the wake lands; the escalation gets a 500
        assert [row["state"] for row in escalations(stale)] == ["pending"]
        warnings = pack_warnings(stale, NOW + timedelta(minutes=1))
        assert any("escalation(s) to the owner not delivered yet" in w for w in warnings)
        sw.tick(NOW + timedelta(minutes=1))  # nothing due: the escalation is retried
    assert [row["state"] for row in escalations(stale)] == ["delivered"]
    assert len(Flaky.seen) == 2 and Flaky.seen[0]["id"] == Flaky.seen[1]["id"]
    assert Flaky.seen[1]["reason"] == "escalate"
    warnings = pack_warnings(stale, NOW + timedelta(minutes=2))
    assert any("1 record(s) escalated to the owner in the last day" in w for w in warnings)


def test_the_cli_takes_the_escalation_command_after_dashes(
    stale: Path, owner: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    script, inbox = owner
    for n in range(2):
        code = main(
            [
                *("--memory", str(stale), "--now", stamp(NOW + n * EVERY_WAKE)),
                *("sweep", "--once", "-q", "--escalate-after", "2"),
                *("--escalate", "exec", "--", str(script)),
            ]
        )
        assert code == 0
    assert len(list(inbox.iterdir())) == 1
    assert len(list((stale / ".rouse/nudges").glob("*.md"))) == 2  # the sink is still file
    capsys.readouterr()
    assert main(["--memory", str(stale), "log"]) == 0
    assert "    escalated to the owner, level 1 via exec: delivered" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--escalate-after", "0", "--escalate", "webhook", "http://127.0.0.1:9/"], "0"),
        (["--escalate-after", "soon", "--escalate", "webhook", "http://127.0.0.1:9/"], "soon"),
        (["--escalate-after", "3"], "go together"),
        (["--escalate-after", "3", "--escalate", "file"], "would not reach a human"),
        (
            ["--sink", "exec", "--escalate-after", "3", "--escalate", "exec", "--", "true"],
            "cannot all own the command",
        ),
    ],
)
def test_bad_escalation_options_are_refused(
    stale: Path, capsys: pytest.CaptureFixture[str], args: list[str], says: str
) -> None:
    code = main(["--memory", str(stale), "sweep", "--once", *args])
    assert code == 2
    err = capsys.readouterr().err
    assert says in err and err.count("\n") == 1


def test_no_escalation_without_the_option(stale: Path) -> None:
    with Sweeper(stale, Parts(FileSink(stale)), log=lambda line: None) as sw:
        for n in range(5):
            sw.tick(NOW + n * EVERY_WAKE)
    assert escalations(stale) == []


@pytest.fixture
def once_due(make_tree: MakeTree) -> Path:
    """A one-shot reminder: delivered once, so only its first level ever escalates."""
    return make_tree(
        {
            "inventory/reminders/pay/reminder.md": f"""
            ---
            status: pending
            set: {stamp(ago(days=1))}
            due: {stamp(ago(minutes=30))}
            ---
            Pay the invoice.
            """
        }
    )


def test_a_failing_escalation_backs_off_like_a_wake_and_is_given_up_after_24h(
    once_due: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Retried by the ledger's one rule (1m, 2m, 4m … between tries), not at every tick;
    24h after its first failure it is given up, and never tried again."""
    tries = tmp_path / "tries"
    script = tmp_path / "owner-unreachable"
    script.write_text(f"#!/bin/sh\necho try >> {tries}\nexit 1\n")
    script.chmod(0o755)
    escalation = Escalation(Threshold(nudges=1), ExecSink([str(script)], 10, once_due, {}))
    logs: list[str] = []
    parts = Parts(FileSink(once_due), escalation=escalation)
    with Sweeper(once_due, parts, log=logs.append) as sw:
        for seconds in (0, 30, 60, 90, 120, 180):  # tries at 0, +1m, +3m (1m then 2m after)
            sw.tick(NOW + timedelta(seconds=seconds))
        assert tries.read_text().count("try") == 3
        (row,) = escalations(once_due)
        assert (row["state"], row["attempts"]) == ("pending", 3)
        sw.tick(NOW + timedelta(hours=24))  # 24h after the first failure: given up
        sw.tick(NOW + timedelta(hours=25))
    assert tries.read_text().count("try") == 3
    (row,) = escalations(once_due)
    assert row["state"] == "given_up" and row["finished"]
    assert any("gave up on escalation" in line for line in logs), logs
    warned = pack_warnings(once_due, NOW + timedelta(hours=25))
    assert not any("not delivered yet" in w for w in warned)
    assert any("1 escalation(s) to the owner given up" in w for w in warned), warned
    capsys.readouterr()
    assert main(["--memory", str(once_due), "log"]) == 0  # said as a wake's state is
    assert "escalated to the owner, level 1 via exec: given up" in capsys.readouterr().out


def test_escalations_to_a_silent_owner_hold_a_tick_one_slice_and_none_once_stopping(
    make_tree: MakeTree,
) -> None:
    """Ten records escalate at once to a webhook that never answers (1s timeout each):
    sends start only within the tells' slice, the rest wait in the ledger for the next
    tick (which comes at once); a sweeper asked to stop starts none."""
    from rouse.sweep.report import SLICE_SECONDS
    from test_hostile_round4_ledger import SilentServer

    tree = make_tree(
        {
            f"{INTENTIONS}/i{n}/intention.md": f"""
            ---
            status: open
            opened: {stamp(ago(days=2))}
            last-moved: {stamp(ago(hours=3))}
            closes-when: done
            ---
            Task {n}.
            """
            for n in range(10)
        }
    )
    silent = SilentServer()
    try:
        escalation = Escalation(Threshold(nudges=1), WebhookSink(silent.url, 1.0))
        with Sweeper(tree, Parts(FileSink(tree), escalation=escalation), log=print) as sw:
            report = sw.tick(NOW)
            assert len(report.delivered) == 10  # every wake landed
            assert len(silent.held) <= SLICE_SECONDS + 2  # one slice of sends, and the last
            rows = escalations(tree)
            assert len(rows) == 10 and {row["state"] for row in rows} == {"pending"}
            assert any(row["attempts"] == 0 for row in rows)  # left for the next tick
            assert report.next_at is not None and report.next_at <= NOW + timedelta(seconds=1)
            tried = len(silent.held)
            sw.stop.set()
            sw.tick(NOW + timedelta(seconds=1))
            assert len(silent.held) == tried  # stopping: no escalation started
    finally:
        silent.close()
