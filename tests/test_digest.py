"""``rouse sweep --digest``: all wakes of a tick as one message per sink (issue 13, item 1)."""

from __future__ import annotations

import json
import os
import sqlite3
import stat
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from conftest import INTENTIONS, NOW, MakeTree, ago, stamp
from rouse.cli.main import main
from rouse.core.header import parse_header
from rouse.records import lifecycle
from rouse.sweep import ledger
from rouse.sweep.build import Parts
from rouse.sweep.sinks import SinkError
from rouse.sweep.tick import Sweeper
from rouse.sweep.wake import Digest, Wake

SLUGS = ("alpha", "beta", "gamma")


class Recorder:
    """A sink that records what it was handed; fails ``failing`` times (-1: always)."""

    kind = "exec"
    holdable = True

    def __init__(self, failing: int = 0):
        self.failing = failing
        self.sent: list[Wake] = []

    def describe(self) -> str:
        return "recorder"

    def send(self, wake: Wake, now: datetime) -> str:
        self.sent.append(wake)
        if self.failing:
            self.failing -= 1
            raise SinkError("the receiver is down")
        return "ok"


def intention(moved: datetime) -> str:
    return f"""
    ---
    status: open
    opened: {stamp(moved)}
    last-moved: {stamp(moved)}
    closes-when: it is done
    ---
    Body.
    """


@pytest.fixture
def three(make_tree: MakeTree) -> Path:
    return make_tree(
        {f"{INTENTIONS}/{slug}/intention.md": intention(ago(hours=3)) for slug in SLUGS}
    )


def fields(root: Path, slug: str) -> dict[str, str]:
    return parse_header((root / f"{INTENTIONS}/{slug}/intention.md").read_bytes()).fields


def digests(root: Path) -> list[tuple[str, list[str], str]]:
    with sqlite3.connect(root / ".rouse/ledger.sqlite3") as db:
        rows = db.execute(
            "SELECT id, wakes, state FROM outbox WHERE kind = 'digest' ORDER BY made_at, id"
        ).fetchall()
    return [(row[0], json.loads(row[1]), row[2]) for row in rows]


def test_one_tick_one_message_each_wake_keeps_its_row(three: Path) -> None:
    sink = Recorder()
    with Sweeper(three, Parts(sink, digest=True), log=lambda line: None) as sw:  # type: ignore[arg-type]
        report = sw.tick(NOW)
    assert len(sink.sent) == 1
    (sent,) = sink.sent
    assert isinstance(sent, Digest)
    entries = ledger.recent(three)
    assert len(entries) == 3 and {e.state for e in entries} == {"delivered"}
    wake_ids = sorted(e.id for e in entries)
    assert sorted(w.id for w in sent.wakes) == wake_ids
    assert sent.id not in wake_ids and {e.digest for e in entries} == {sent.id}
    assert digests(three) == [(sent.id, [w.id for w in sent.wakes], "delivered")]
    for wake_id in wake_ids:  # the digest lists the wake ids, and carries each wake's text
        assert wake_id in sent.text.split("\n", 1)[0] or wake_id in sent.text
    assert sent.payload()["wakes"] == [w.payload() for w in sent.wakes]
    assert sorted(report.delivered) == wake_ids and report.stamped == 3
    for slug in SLUGS:  # stamped per record after the digest landed
        assert fields(three, slug)["nudges"] == "1"


def test_a_failed_digest_is_retried_as_a_unit_without_a_withdrawn_wake(three: Path) -> None:
    sink = Recorder(failing=1)
    with Sweeper(three, Parts(sink, digest=True), log=lambda line: None) as sw:  # type: ignore[arg-type]
        sw.tick(NOW)
        for slug in SLUGS:
            assert "nudges" not in fields(three, slug)  # never stamped without delivery
        first = sink.sent[0]
        assert isinstance(first, Digest) and len(first.wakes) == 3
        # the agent moves one record before the retry
        lifecycle.move(three, "beta", NOW + timedelta(seconds=20))
        sw.tick(NOW + timedelta(seconds=30))  # not yet: backoff is 1 minute
        assert len(sink.sent) == 1
        sw.tick(NOW + timedelta(minutes=1))
    assert len(sink.sent) == 2
    retry = sink.sent[1]
    assert isinstance(retry, Digest) and retry.id == first.id
    assert sorted(w.id for w in retry.wakes) == sorted(
        w.id for w in first.wakes if w.slug != "beta"
    )
    states = {e.wake.slug: e.state for e in ledger.recent(three)}
    assert states == {"alpha": "delivered", "beta": "withdrawn", "gamma": "delivered"}
    assert "nudges" not in fields(three, "beta")
    assert fields(three, "alpha")["nudges"] == "1"


def test_catch_up_after_downtime_is_one_digest(make_tree: MakeTree, tmp_path: Path) -> None:
    # twenty records that came due at different times during a week the sweeper was down
    files = {
        f"{INTENTIONS}/r{n}/intention.md": intention(ago(days=7, hours=-n * 6)) for n in range(20)
    }
    root = make_tree(files)
    calls = tmp_path / "calls"
    script = tmp_path / "receiver.py"
    script.write_text(
        "#!/usr/bin/env python3\n"
        "import os, sys\n"
        f"with open({str(calls)!r}, 'a') as out:\n"
        "    out.write(os.environ['ROUSE_WAKE_ID'] + ' ' + os.environ['ROUSE_WAKE_IDS'] + '\\n')\n"
        "    sys.stdin.read()\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    code = main(
        [
            *("--memory", str(root), "--now", stamp(NOW), "sweep", "--once", "--digest", "-q"),
            *("--sink", "exec", "--", str(script)),
        ]
    )
    assert code == 0
    (line,) = calls.read_text().splitlines()  # one delivery, not twenty
    digest_id, *wake_ids = line.split()
    assert len(wake_ids) == 20
    assert sorted(wake_ids) == sorted(e.id for e in ledger.recent(root, 50))
    assert all(e.digest == digest_id for e in ledger.recent(root, 50))


def test_a_digest_reaches_a_webhook_as_one_post(three: Path) -> None:
    from rouse.sweep.sinks import WebhookSink

    seen: list[dict[str, object]] = []
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    from threading import Thread

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            seen.append(json.loads(body))
            self.send_response(204)
            self.end_headers()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/hook"
        with Sweeper(three, Parts(WebhookSink(url, 5.0), digest=True), log=lambda line: None) as sw:
            sw.tick(NOW)
    finally:
        server.shutdown()
        server.server_close()
    (posted,) = seen
    assert posted["digest"] is True and len(posted["wakes"]) == 3  # type: ignore[arg-type]
    assert posted["id"] == ledger.recent(three)[0].digest


def test_digest_with_the_file_sink_is_refused(
    three: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["--memory", str(three), "sweep", "--once", "--digest"])
    assert code == 2
    err = capsys.readouterr().err
    assert "--digest" in err and "file" in err
    assert not (three / ".rouse/ledger.sqlite3").exists() or not ledger.recent(three)
    assert os.environ.get("ROUSE_WAKE_IDS") is None
