"""Sinks against real parts: a loopback HTTP server and real commands."""

from __future__ import annotations

import base64
import contextlib
import io
import json
import math
import os
import re
import signal
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from conftest import NOW, MakeTree
from rouse.cli.main import main
from rouse.core.errors import UsageError
from rouse.runs.child import MAX_OUTPUT
from rouse.sweep import sinks
from rouse.sweep.sinks import ExecSink, FileSink, SinkError, StdoutSink, WebhookSink
from rouse.sweep.wake import Wake

TRICKLE = 0.2  # seconds between the bytes of a trickled answer
SECRET = "whsec_" + base64.b64encode(b"rouse-test-secret-0123456789ab").decode()


def make_wake(wake_id: str = "20260314T120000-abc123") -> Wake:
    return Wake(
        id=wake_id,
        record="intention/ship",
        type="intention",
        slug="ship",
        path="entrypoint/beliefs/motivations/intentions/ship",
        file="entrypoint/beliefs/motivations/intentions/ship/intention.md",
        reason="stale",
        nudge=2,
        last_moved="2026-03-14 09:00",
        at="2026-03-14 12:00:00",
        text="intention/ship — nudge 2, last moved 3h ago\nat: …/ship\nbody ✓\n",
    )


# -- a real HTTP server on loopback -------------------------------------------


@dataclass
class Seen:
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Server:
    url: str
    seen: list[Seen] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)
    fail_first: int = 0  # /flaky answers 500 this many times, then 200

    def hits(self, path: str) -> list[Seen]:
        return [s for s in self.seen if s.path == path]


@pytest.fixture
def server() -> Iterator[Server]:
    with _serve() as state:
        yield state


@pytest.fixture
def tls_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Server]:
    """The same server over HTTPS, with a self-signed certificate the client trusts."""
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    make = "req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1"
    name = "-subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1"
    files = ["-keyout", str(key), "-out", str(cert)]
    subprocess.run(
        ["openssl", *make.split(), *name.split(), *files], check=True, capture_output=True
    )
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))  # read by every default TLS context
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    with _serve(context) as state:
        yield state


@contextlib.contextmanager
def _serve(tls: ssl.SSLContext | None = None) -> Iterator[Server]:
    state = Server(url="")

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            body = self.rfile.read(length)
            headers = {k.lower(): v for k, v in self.headers.items()}  # case-insensitive
            state.seen.append(Seen(self.path, headers, body))
            if self.path == "/hang":
                state.release.wait(10)
            if self.path.startswith("/trickle"):
                self._trickle()
                return
            if self.path == "/redirect":
                self.send_response(302)
                self.send_header("Location", "/ok")
                self.end_headers()
                return
            code = {"/ok": 200, "/created": 201, "/fail": 500, "/hang": 200}.get(self.path, 404)
            if self.path == "/flaky":
                code = 500 if len(state.hits("/flaky")) <= state.fail_first else 200
            self.send_response(code)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def _trickle(self) -> None:
            """A 200 answer one byte every 0.2 s (~9 s in all), or only its body so."""
            body = b"delivered, slowly " * 2
            head = f"HTTP/1.1 200 OK\r\nContent-Length: {len(body)}\r\n\r\n".encode()
            if self.path == "/trickle-body":
                self.wfile.write(head)
                head = b""
            for byte in head + body:
                if state.release.wait(TRICKLE):
                    return
                try:
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
                except OSError:
                    return  # the client gave up: what the tests want

    class Quiet(ThreadingHTTPServer):
        def handle_error(self, request: object, client_address: object) -> None:
            pass  # a client that timed out and left: expected here

    httpd = Quiet(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    if tls is not None:
        httpd.socket = tls.wrap_socket(httpd.socket, server_side=True)
    scheme = "https" if tls is not None else "http"
    state.url = f"{scheme}://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield state
    finally:
        state.release.set()
        httpd.shutdown()
        httpd.server_close()


def test_webhook_posts_the_wake_as_json(server: Server) -> None:
    receipt = WebhookSink(f"{server.url}/ok", 5).send(make_wake(), NOW)
    assert receipt == "HTTP 200"
    (seen,) = server.hits("/ok")
    assert seen.headers["content-type"] == "application/json"
    data = json.loads(seen.body)
    assert data == make_wake().payload()
    assert data["nudge"] == 2 and data["text"].endswith("body ✓\n")
    assert "webhook-signature" not in seen.headers


def test_any_2xx_is_delivered(server: Server) -> None:
    assert WebhookSink(f"{server.url}/created", 5).send(make_wake(), NOW) == "HTTP 201"


def test_webhook_500_is_a_failure(server: Server) -> None:
    with pytest.raises(SinkError, match="HTTP 500"):
        WebhookSink(f"{server.url}/fail", 5).send(make_wake(), NOW)


def test_webhook_that_hangs_times_out(server: Server) -> None:
    start = time.monotonic()
    with pytest.raises(SinkError, match=r"within 0\.3s"):
        WebhookSink(f"{server.url}/hang", 0.3).send(make_wake(), NOW)
    assert time.monotonic() - start < 5
    server.release.set()


@pytest.mark.parametrize("path", ["/trickle", "/trickle-body"])
def test_a_trickling_webhook_fails_at_the_deadline(server: Server, path: str) -> None:
    # each byte comes well within any per-read timeout, the whole answer takes ~9 s:
    # --timeout is one deadline for the delivery, so this is a failure after ~1 s
    start = time.monotonic()
    with pytest.raises(SinkError, match=r"within 1s"):
        WebhookSink(f"{server.url}{path}", 1.0).send(make_wake(), NOW)
    assert time.monotonic() - start < 5
    assert len(server.hits(path)) == 1


def test_a_trickling_webhook_over_tls_fails_at_the_deadline(tls_server: Server) -> None:
    assert WebhookSink(f"{tls_server.url}/ok", 5).send(make_wake(), NOW) == "HTTP 200"
    start = time.monotonic()
    with pytest.raises(SinkError, match=r"within 1s"):
        WebhookSink(f"{tls_server.url}/trickle", 1.0).send(make_wake(), NOW)
    assert time.monotonic() - start < 5


def test_redirects_are_never_followed(server: Server) -> None:
    with pytest.raises(SinkError, match="HTTP 302 redirect"):
        WebhookSink(f"{server.url}/redirect", 5).send(make_wake(), NOW)
    assert server.hits("/ok") == []


def test_unreachable_webhook_is_a_failure(tmp_path: Path) -> None:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(SinkError, match="cannot reach"):
        WebhookSink(f"http://127.0.0.1:{port}/", 2).send(make_wake(), NOW)


def test_signed_requests_verify_with_standardwebhooks(server: Server) -> None:
    from standardwebhooks.webhooks import Webhook

    sink = sinks.make_sink(
        ["webhook", f"{server.url}/ok"], [], root=Path("."), timeout=5, secret=SECRET, base_env={}
    )
    made = make_wake("20260314T120000-signed1")
    sink.send(made, NOW)
    (seen,) = server.hits("/ok")
    assert seen.headers["webhook-id"] == made.id
    assert abs(int(seen.headers["webhook-timestamp"]) - time.time()) < 60
    verified = Webhook(SECRET).verify(seen.body, seen.headers)
    assert verified["id"] == made.id and verified["text"] == made.text
    tampered = seen.body.replace(b"nudge 2", b"nudge 9")
    with pytest.raises(Exception, match="signature"):
        Webhook(SECRET).verify(tampered, seen.headers)


def test_retries_keep_the_same_webhook_id(server: Server) -> None:
    sink = WebhookSink(f"{server.url}/ok", 5, sinks.parse_secret(SECRET))
    made = make_wake()
    sink.send(made, NOW)
    sink.send(made, NOW)
    ids = {s.headers["webhook-id"] for s in server.hits("/ok")}
    assert ids == {made.id}


@pytest.mark.parametrize("bad", ["whsec_", "whsec_***", "not base64!"])
def test_a_bad_secret_is_a_usage_error(bad: str) -> None:
    with pytest.raises(UsageError, match="ROUSE_WEBHOOK_SECRET"):
        sinks.parse_secret(bad)


@pytest.mark.parametrize(
    "url",
    [
        "ftp://x/",
        "localhost:8080",
        "http://",
        "http://[::1",
        "http://[::1]:99999/",
        "http://127.0.0.1:port/",
        "http://:8080/",
        "http://exa mple.org/",
        "http://example.org/a\nb",
    ],
)
def test_a_bad_url_is_a_usage_error(url: str) -> None:
    with pytest.raises(UsageError, match="bad webhook URL") as caught:
        sinks.make_sink(["webhook", url], [], root=Path("."), timeout=1, secret=None, base_env={})
    message = str(caught.value)
    assert repr(url) in message and "http://HOST" in message and "\n" not in message


def test_a_bad_url_on_the_command_line_is_exit_2(
    make_tree: MakeTree, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_tree({"entrypoint/": ""})
    code = main(["--memory", str(root), "sweep", "--once", "--sink", "webhook", "http://[::1"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.count("\n") == 1 and "'http://[::1'" in err and "internal error" not in err


@pytest.mark.parametrize("kind", ["exec", "webhook"])
@pytest.mark.parametrize("timeout", [math.nan, math.inf, -math.inf, 0.0, -1.0])
def test_a_timeout_that_is_no_deadline_is_refused(kind: str, timeout: float) -> None:
    spec, command = (["exec"], ["true"]) if kind == "exec" else (["webhook", "http://h/"], [])
    with pytest.raises(UsageError, match="--timeout"):
        sinks.make_sink(spec, command, root=Path("."), timeout=timeout, secret=None, base_env={})
    with pytest.raises(UsageError, match="--timeout"):
        if kind == "exec":
            ExecSink(["true"], timeout, Path("."), {})
        else:
            WebhookSink("http://h/", timeout)


# -- exec ---------------------------------------------------------------------


def _exec(script: str, tmp_path: Path, timeout: float = 10) -> ExecSink:
    return ExecSink(
        [sys.executable, "-c", script], timeout, tmp_path / "memory", {"PATH": os.environ["PATH"]}
    )


def test_exec_gets_the_text_on_stdin_and_the_environment(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    script = (
        "import json, os, sys\n"
        f"json.dump({{'stdin': sys.stdin.read(), 'env': dict(os.environ)}}, open({str(out)!r}, 'w'))"
    )
    made = make_wake()
    assert _exec(script, tmp_path).send(made, NOW) == "exit 0"
    data = json.loads(out.read_text())
    assert data["stdin"] == made.text
    env = data["env"]
    assert env["ROUSE_WAKE_ID"] == made.id
    assert env["ROUSE_RECORD"] == "intention/ship"
    assert env["ROUSE_PATH"] == made.path
    assert env["ROUSE_REASON"] == "stale"
    assert env["ROUSE_NUDGE"] == "2"
    assert env["ROUSE_MEMORY"] == str(tmp_path / "memory")
    assert env["PATH"] == os.environ["PATH"]


def test_exec_never_hands_on_the_ledger_url_or_the_webhook_secret(tmp_path: Path) -> None:
    out = tmp_path / "env.json"
    script = f"import json, os; json.dump(dict(os.environ), open({str(out)!r}, 'w'))"
    secrets = {
        "ROUSE_LEDGER": "postgresql://rouse:hunter2@db/rouse",
        "ROUSE_WEBHOOK_SECRET": "whsec_c2VjcmV0",
        "KEEP_ME": "yes",
    }
    sink = ExecSink(
        [sys.executable, "-c", script], 10, tmp_path, {"PATH": os.environ["PATH"], **secrets}
    )
    assert sink.send(make_wake(), NOW) == "exit 0"
    env = json.loads(out.read_text())
    assert "ROUSE_LEDGER" not in env and "ROUSE_WEBHOOK_SECRET" not in env
    assert env["KEEP_ME"] == "yes"


def test_exec_nonzero_exit_is_a_failure_with_its_output(tmp_path: Path) -> None:
    script = "import sys; print('queue full'); sys.exit(3)"
    with pytest.raises(SinkError, match="exited 3: queue full"):
        _exec(script, tmp_path).send(make_wake(), NOW)


def test_exec_output_kept_is_capped_and_never_fills_a_disk(tmp_path: Path) -> None:
    # 8 MiB of output, then a last line, then exit 1: the error ends with that line
    # and counts what was discarded; the output never sat in a file while it ran
    seen = tmp_path / "seen"
    script = (
        "import os, stat, sys\n"
        "for _ in range(128):\n"
        "    sys.stdout.write('x' * 65535 + '\\n')\n"
        "sys.stdout.write('the last line\\n')\n"
        "sys.stdout.flush()\n"
        "st = os.fstat(1)\n"
        f"open({str(seen)!r}, 'w').write(str(st.st_size if stat.S_ISREG(st.st_mode) else 0))\n"
        "sys.exit(1)\n"
    )
    total = 128 * 65536 + len("the last line\n")
    with pytest.raises(SinkError) as caught:
        _exec(script, tmp_path).send(make_wake(), NOW)
    message = str(caught.value)
    assert f"exited 1 ({total - MAX_OUTPUT} bytes of output discarded): xxx" in message
    assert message.endswith("xxx the last line")
    assert int(seen.read_text()) <= MAX_OUTPUT


def test_exec_that_never_stops_writing_is_cut_at_the_deadline(tmp_path: Path) -> None:
    start = time.monotonic()
    with pytest.raises(SinkError, match="killed its process group") as caught:
        ExecSink(["yes"], 1.0, tmp_path, {"PATH": os.environ["PATH"]}).send(make_wake(), NOW)
    assert time.monotonic() - start < 5
    discarded = re.search(r"(\d+) bytes of output discarded", str(caught.value))
    assert discarded and int(discarded.group(1)) > MAX_OUTPUT
    assert str(caught.value).endswith("y y y")


def test_exec_done_while_a_grandchild_holds_its_output_is_delivered(tmp_path: Path) -> None:
    # the command exits 0 at once but leaves a helper with its stdout open:
    # delivered now, not at the deadline
    pidfile = tmp_path / "helper.pid"
    script = (
        "import subprocess, sys\n"
        "helper = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        f"open({str(pidfile)!r}, 'w').write(str(helper.pid))\n"
    )
    start = time.monotonic()
    try:
        assert _exec(script, tmp_path, timeout=30).send(make_wake(), NOW) == "exit 0"
        assert time.monotonic() - start < 15
    finally:
        if pidfile.exists():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pidfile.read_text()), signal.SIGKILL)


def test_exec_that_hangs_is_killed_with_its_whole_group(tmp_path: Path) -> None:
    pidfile = tmp_path / "grandchild.pid"
    script = (
        "import subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        f"open({str(pidfile)!r}, 'w').write(str(child.pid))\n"
        "time.sleep(60)\n"
    )
    start = time.monotonic()
    with pytest.raises(SinkError, match="killed its process group"):
        _exec(script, tmp_path, timeout=1.0).send(make_wake(), NOW)
    assert time.monotonic() - start < 10
    grandchild = int(pidfile.read_text())
    for _ in range(250):
        if not _running(grandchild):
            break
        time.sleep(0.02)
    else:
        pytest.fail("the grandchild survived the timeout")


def _running(pid: int) -> bool:
    """Alive and not a zombie (a killed orphan waits a moment for init to reap it)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state not in ("Z", "X")


def test_exec_of_a_missing_command_is_a_failure(tmp_path: Path) -> None:
    sink = ExecSink(["/nonexistent/rouse-notify"], 5, tmp_path, {})
    with pytest.raises(SinkError, match="cannot run"):
        sink.send(make_wake(), NOW)


# -- file and stdout ----------------------------------------------------------


def test_file_sink_never_overwrites(tmp_path: Path) -> None:
    sink = FileSink(tmp_path)
    names = [sink.send(make_wake(), NOW) for _ in range(3)]
    assert names == [
        ".rouse/nudges/20260314-120000-intention-ship.md",
        ".rouse/nudges/20260314-120000-intention-ship-2.md",
        ".rouse/nudges/20260314-120000-intention-ship-3.md",
    ]
    assert all((tmp_path / n).read_text() == make_wake().text for n in names)
    assert [p.name for p in (tmp_path / ".rouse/nudges").iterdir() if p.name.startswith(".")] == []


def test_stdout_sink_prints_the_text() -> None:
    stream = io.StringIO()
    StdoutSink(stream).send(make_wake(), NOW)
    assert make_wake().text in stream.getvalue()


@pytest.mark.parametrize(
    ("spec", "command", "message"),
    [
        (["carrier-pigeon"], [], "unknown sink"),
        (["webhook"], [], "exactly one URL"),
        (["exec"], [], "needs a command"),
        (["file", "x"], [], "takes no argument"),
        (["file"], ["echo"], "only for --sink exec"),
    ],
)
def test_make_sink_refuses_nonsense(spec: list[str], command: list[str], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        sinks.make_sink(spec, command, root=Path("."), timeout=None, secret=None, base_env={})


def test_make_sink_defaults(tmp_path: Path) -> None:
    made = sinks.make_sink(None, [], root=tmp_path, timeout=None, secret=None, base_env={})
    assert isinstance(made, FileSink)
    runner = sinks.make_sink(
        ["exec"], ["true"], root=tmp_path, timeout=None, secret=None, base_env={}
    )
    assert isinstance(runner, ExecSink) and runner.timeout == 60
    hook = sinks.make_sink(
        ["webhook", "http://127.0.0.1:9/"],
        [],
        root=tmp_path,
        timeout=None,
        secret=None,
        base_env={},
    )
    assert isinstance(hook, WebhookSink) and hook.timeout == 10
