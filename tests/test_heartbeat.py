"""``rouse sweep --heartbeat URL`` (issue 13, item 6): a dead-man's switch after every tick.

Real ``rouse`` processes against a real loopback HTTP server that records
what it was asked: GET URL after a tick that went well, GET URL/fail after
one that did not; a monitor that fails or hangs never stops the sweeper.
"""

from __future__ import annotations

import http.server
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path

import pytest

from rouse.core.errors import UsageError
from rouse.sweep.heartbeat import Heartbeat, failed
from rouse.sweep.report import TickReport

INIT = "2026-03-14 12:00"  # the tree is laid then: nothing is due at that instant
LATER = "2099-01-02 09:00"  # both example records are due by then


def environment() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("ROUSE_")}


def rouse(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rouse", *args],
        env=environment(),
        capture_output=True,
        text=True,
        timeout=60,
    )


class Monitor:
    """A loopback HTTP server that records each request's method and path."""

    def __init__(self, status: int = 200) -> None:
        self.status = status
        self.seen: list[tuple[str, str]] = []
        monitor = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                monitor.seen.append(("GET", self.path))
                self.send_response(monitor.status)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"OK")

            def do_POST(self) -> None:
                monitor.seen.append(("POST", self.path))
                self.send_response(405)
                self.end_headers()

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def monitor() -> Iterator[Monitor]:
    server = Monitor()
    yield server
    server.close()


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    done = rouse("init", "--no-key", str(tmp_path), "--now", INIT)
    assert done.returncode == 0, done.stderr
    return tmp_path / "memory"


def wait_for(check: Callable[[], bool], timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            pytest.fail("timed out waiting")
        time.sleep(0.02)


def test_a_tick_that_went_well_gets_the_url(tree: Path, monitor: Monitor) -> None:
    done = rouse("--memory", str(tree), "sweep", "--once", "--heartbeat", f"{monitor.url}/ping/abc")
    assert done.returncode == 0, done.stderr
    assert monitor.seen == [("GET", "/ping/abc")]


def test_a_tick_that_delivers_also_pings_success(tree: Path, monitor: Monitor) -> None:
    done = rouse(
        "--memory", str(tree), "sweep", "--once", "--now", LATER, "--heartbeat", monitor.url
    )
    assert done.returncode == 0, done.stderr
    assert len(list((tree / ".rouse/nudges").glob("*.md"))) == 2
    assert monitor.seen == [("GET", "/")]


def test_a_tick_whose_wakes_fail_gets_url_fail(tree: Path, monitor: Monitor) -> None:
    done = rouse(
        "--memory", str(tree), "sweep", "--once", "--now", LATER,
        "--heartbeat", f"{monitor.url}/ping/abc/", "--sink", "exec", "--", "false",
    )  # fmt: skip
    assert done.returncode == 1
    assert monitor.seen == [("GET", "/ping/abc/fail")]


def test_a_failed_ping_is_logged_never_fatal(tree: Path, monitor: Monitor) -> None:
    monitor.status = 500
    done = rouse("--memory", str(tree), "sweep", "--once", "--heartbeat", f"{monitor.url}/hc")
    assert done.returncode == 0
    assert monitor.seen == [("GET", "/hc")]
    assert f"heartbeat not sent: HTTP 500 from {monitor.url}/hc" in done.stderr


def test_no_monitor_listening_is_logged_never_fatal(tree: Path) -> None:
    with socket.socket() as sock:  # a port nobody listens on once it is closed
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    done = rouse(
        "--memory", str(tree), "sweep", "--once", "--heartbeat", f"http://127.0.0.1:{port}/"
    )
    assert done.returncode == 0
    assert "heartbeat not sent: cannot reach" in done.stderr


def test_a_bad_heartbeat_url_is_a_usage_error(tree: Path) -> None:
    done = rouse("--memory", str(tree), "sweep", "--once", "--heartbeat", "ftp://example.org/x")
    assert done.returncode == 2
    assert "bad --heartbeat URL 'ftp://example.org/x'" in done.stderr
    assert not (tree / ".rouse/sweep.json").exists()  # refused before any tick


def test_the_loop_pings_after_every_tick(tree: Path, monitor: Monitor, tmp_path: Path) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "rouse", "--memory", str(tree), "sweep", "--every", "0.05",
         "--heartbeat", f"{monitor.url}/loop"],
        env=environment(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        wait_for(lambda: len(monitor.seen) >= 3)
    finally:
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=30)
    assert process.returncode == 0, err
    assert set(monitor.seen) == {("GET", "/loop")}


def test_a_hung_monitor_never_holds_the_sweeper() -> None:
    """A monitor that accepts and never answers: the ping gives up at its deadline."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(1)
        said: list[str] = []
        beat = Heartbeat(
            f"http://127.0.0.1:{sock.getsockname()[1]}/", deadline=0.2, log=said.append
        )
        beat(datetime(2026, 3, 14, 12, 0), TickReport(now=datetime(2026, 3, 14, 12, 0)))
    assert said == [
        f"2026-03-14 12:00:00 heartbeat not sent: no answer from {beat.url} within 0.2s"
    ]


@pytest.mark.parametrize(
    ("url", "fail"),
    [
        ("http://h/ping", "http://h/ping/fail"),
        ("http://h/ping/", "http://h/ping/fail"),
        ("http://h/ping?rid=1", "http://h/ping/fail?rid=1"),
        ("http://h/ping#frag", "http://h/ping/fail#frag"),
        ("http://h/ping?a=1&b=2#x", "http://h/ping/fail?a=1&b=2#x"),
        ("http://h", "http://h/fail"),
    ],
)
def test_the_fail_url_is_built_on_the_path(url: str, fail: str) -> None:
    """Issue 22, item 9: a query or a fragment never swallows /fail."""
    beat = Heartbeat(url)
    assert beat.target(True) == url and beat.target(False) == fail


def test_what_counts_as_a_failed_tick() -> None:
    at = datetime(2026, 3, 14, 12, 0)
    assert failed(None)  # the tick raised
    assert failed(TickReport(now=at, failed=["w1"]))
    assert failed(TickReport(now=at, given_up=["w1"]))
    assert not failed(TickReport(now=at, delivered=["w1"], held=["w2"]))
    assert not failed(TickReport(now=at))


def test_the_fail_url_keeps_one_slash() -> None:
    assert Heartbeat("https://hc-ping.com/uuid").target(ok=False) == "https://hc-ping.com/uuid/fail"
    assert (
        Heartbeat("https://hc-ping.com/uuid/").target(ok=False) == "https://hc-ping.com/uuid/fail"
    )
    assert Heartbeat("https://hc-ping.com/uuid").target(ok=True) == "https://hc-ping.com/uuid"
    with pytest.raises(UsageError, match="bad --heartbeat URL"):
        Heartbeat("not a url")
