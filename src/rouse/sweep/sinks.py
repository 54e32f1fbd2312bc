"""Where wakes go: a nudge file, a command, a webhook, or stdout.

A sink's ``send`` returns a short receipt when the wake landed and raises
``SinkError`` when it did not; it never raises anything else for a failed
delivery. Only real-world timers (timeouts, the Standard Webhooks timestamp)
use the wall clock; everything else takes the tick's ``now``.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import hmac
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Protocol

from rouse import __version__
from rouse.core import layout, nudges
from rouse.core.errors import UsageError
from rouse.sweep.wake import Wake

if TYPE_CHECKING:
    import http.client
    import urllib.request

KINDS = ("file", "exec", "webhook", "stdout")
DEFAULT_TIMEOUT = {"exec": 60.0, "webhook": 10.0}
MAX_TIMEOUT = 24 * 3600.0  # as the CLI's --timeout; a wake failing that long is given up
SECRET_PREFIX = "whsec_"
MAX_RESPONSE = 64 * 1024  # of a webhook's answer, read then dropped
MAX_OUTPUT = 64 * 1024  # of an exec command's output, kept for the error message
TAIL = 300  # bytes of that output the error message quotes
POLL = 0.05  # seconds between looks at whether an exec command has exited
DRAIN = 1024 * 1024  # bytes read from the pipe after the command exited, at most


class SinkError(Exception):
    """The wake was not delivered; the message says why, in one line."""


def check_timeout(timeout: float) -> float:
    """``timeout`` if it is a usable deadline in seconds, else a UsageError."""
    if not 0 < timeout <= MAX_TIMEOUT:  # False for nan too
        raise UsageError(
            f"--timeout must be a number of seconds above 0 and at most {MAX_TIMEOUT:g} "
            f"(one day), got {timeout:g}"
        )
    return float(timeout)


class Sink(Protocol):
    kind: str
    holdable: bool  # quiet hours hold it (exec, webhook)

    def describe(self) -> str: ...

    def send(self, wake: Wake, now: datetime) -> str: ...


# -- file ---------------------------------------------------------------------


NUDGES_REL = f"{layout.STATE_DIR}/{nudges.DIR}"


def write_nudge(root: Path, wake: Wake, now: datetime, trailer: str = "") -> str:
    """Write the wake text to a new ``.rouse/nudges/`` file; never overwrite one.

    The name is ``<YYYYmmdd-HHMMSS>-<type>-<slug>[-N].md`` with the tick's
    ``now``; a taken name gets ``-2``, ``-3``… Returns the tree-relative path.
    """
    directory = nudges.nudge_dir(root)
    directory.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(prefix=".wake.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write((wake.text + trailer).encode("utf-8"))
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp, 0o644)
        number = 1
        while True:
            name = nudges.file_name(now, wake.type, wake.slug, number)
            try:
                os.link(temp, directory / name)  # atomic, and fails if the name is taken
            except FileExistsError:
                number += 1
                continue
            return f"{NUDGES_REL}/{name}"
    finally:
        os.unlink(temp)


class FileSink:
    kind = "file"
    holdable = False

    def __init__(self, root: Path):
        self.root = root

    def describe(self) -> str:
        return f"file ({NUDGES_REL}/)"

    def send(self, wake: Wake, now: datetime) -> str:
        try:
            return write_nudge(self.root, wake, now)
        except OSError as exc:
            raise SinkError(f"cannot write the nudge file: {exc.strerror or exc}") from None


# -- exec ---------------------------------------------------------------------


class ExecSink:
    """Run a command (no shell) with the wake text on stdin; exit 0 = delivered."""

    kind = "exec"
    holdable = True

    def __init__(
        self, argv: Sequence[str], timeout: float, root: Path, base_env: Mapping[str, str]
    ):
        self.argv = list(argv)
        self.timeout = check_timeout(timeout)
        self.root = root
        self.base_env = dict(base_env)

    def describe(self) -> str:
        return f"exec {' '.join(self.argv)}"

    def environment(self, wake: Wake) -> dict[str, str]:
        return {
            **self.base_env,
            "ROUSE_WAKE_ID": wake.id,
            # the wakes it carries: a digest's, or this wake's own id
            "ROUSE_WAKE_IDS": " ".join(getattr(wake, "wake_ids", None) or [wake.id]),
            "ROUSE_RECORD": wake.record,
            "ROUSE_PATH": wake.path,
            "ROUSE_REASON": wake.reason,
            "ROUSE_NUDGE": str(wake.nudge),
            "ROUSE_MEMORY": str(self.root),
        }

    def send(self, wake: Wake, now: datetime) -> str:
        deadline = time.monotonic() + self.timeout
        # stdin is a file, so a command that ignores it never blocks us; the
        # output is a pipe we drain, keeping its last MAX_OUTPUT bytes in memory
        with tempfile.TemporaryFile() as stdin:
            stdin.write(wake.text.encode("utf-8"))
            stdin.seek(0)
            try:
                proc = subprocess.Popen(
                    self.argv,
                    stdin=stdin,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    env=self.environment(wake),
                    start_new_session=True,  # its own process group, killed whole on timeout
                )
            except OSError as exc:
                raise SinkError(f"cannot run {self.argv[0]}: {exc.strerror or exc}") from None
        output = Output()
        try:
            code = _run(proc, output, deadline)
        except BaseException:
            _kill_group(proc)
            raise
        finally:
            if proc.stdout is not None:
                proc.stdout.close()
        if code is None:
            _kill_group(proc)
            raise SinkError(
                f"{self.argv[0]} did not finish within {self.timeout:g}s: "
                f"killed its process group{output.tail()}"
            )
        if code != 0:
            raise SinkError(f"{self.argv[0]} exited {code}{output.tail()}")
        return "exit 0"


class Output:
    """The last MAX_OUTPUT bytes of a command's output, and how many came before."""

    def __init__(self) -> None:
        self.kept = bytearray()
        self.discarded = 0

    def add(self, chunk: bytes) -> None:
        self.kept += chunk
        extra = len(self.kept) - MAX_OUTPUT
        if extra > 0:
            del self.kept[:extra]
            self.discarded += extra

    def tail(self) -> str:
        """``: <the last few hundred bytes, on one line>`` and what was discarded."""
        text = " ".join(self.kept[-TAIL:].decode("utf-8", errors="replace").split())
        note = f" ({self.discarded} bytes of output discarded)" if self.discarded else ""
        return f"{note}: {text}" if text else note


def _run(proc: subprocess.Popen[bytes], output: Output, deadline: float) -> int | None:
    """Drain ``proc``'s output until it exits; its exit code, or None at the deadline.

    The command counts as finished when it exits, even while a helper it
    started still holds the pipe open: what is already in the pipe is read,
    the rest is not waited for.
    """
    import selectors

    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    os.set_blocking(fd, False)
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        open_pipe = True
        while True:
            code = proc.poll()
            if code is not None:
                if open_pipe:
                    _drain(fd, output, deadline)
                return code
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            if not open_pipe:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    return proc.wait(timeout=min(left, POLL))
                continue
            if selector.select(min(left, POLL)) and not _read(fd, output):
                selector.unregister(fd)
                open_pipe = False


def _read(fd: int, output: Output) -> bool:
    """One read into ``output``; False at the end of the pipe."""
    try:
        chunk = os.read(fd, 65536)
    except BlockingIOError:
        return True
    output.add(chunk)
    return bool(chunk)


def _drain(fd: int, output: Output, deadline: float) -> None:
    """Read what the pipe holds now, not what a helper goes on writing.

    A pipe holds at most 1 MiB (Linux's default ``pipe-max-size``), so this
    stops after that much, or at the deadline, whichever comes first.
    """
    budget = DRAIN
    while budget > 0 and time.monotonic() < deadline:
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            return
        if not chunk:
            return
        output.add(chunk)
        budget -= len(chunk)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


# -- webhook ------------------------------------------------------------------


class _Delivery:
    """One POST, made on a worker thread, and the connections it opened.

    ``send`` waits for it until the deadline; then it cuts the connections
    off (shuts their sockets down) so the worker stops at once instead of
    reading a trickle for as long as the server likes.
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.connections: list[http.client.HTTPConnection] = []
        self.cut = False
        self.done = threading.Event()
        self.status = 0
        self.error: BaseException | None = None

    def connected(self, connection: http.client.HTTPConnection) -> None:
        with self.lock:
            self.connections.append(connection)
            if not self.cut:
                return
        _shut(connection)  # it connected after the deadline: end it now

    def cut_off(self) -> None:
        with self.lock:
            self.cut = True
            connections = list(self.connections)
        for connection in connections:
            _shut(connection)


def _shut(connection: http.client.HTTPConnection) -> None:
    """Shut the socket down (not close it: the worker owns it), waking any blocked read."""
    import socket

    sock = connection.sock
    if sock is not None:
        with contextlib.suppress(OSError):
            # the plain socket's shutdown, also under TLS: it acts on the descriptor
            socket.socket.shutdown(sock, socket.SHUT_RDWR)


def _opener(delivery: _Delivery) -> urllib.request.OpenerDirector:
    """An opener that tells ``delivery`` of each connection and never follows a redirect."""
    import http.client
    import urllib.request  # here, not at the top: the pack's import path stays light

    class Plain(http.client.HTTPConnection):
        def connect(self) -> None:
            super().connect()
            delivery.connected(self)

    class Secure(http.client.HTTPSConnection):
        def connect(self) -> None:
            super().connect()
            delivery.connected(self)

    class PlainHandler(urllib.request.HTTPHandler):
        def do_open(self, http_class: Any, req: Any, **kwargs: Any) -> Any:
            return super().do_open(Plain, req, **kwargs)

    class SecureHandler(urllib.request.HTTPSHandler):
        def do_open(self, http_class: Any, req: Any, **kwargs: Any) -> Any:
            return super().do_open(Secure, req, **kwargs)

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: Any, **kwargs: Any) -> None:
            return None

    return urllib.request.build_opener(PlainHandler, SecureHandler, NoRedirect)


def parse_secret(text: str) -> bytes:
    """A Standard Webhooks secret (``whsec_`` + base64) as key bytes."""
    raw = text.strip()
    if raw.startswith(SECRET_PREFIX):
        raw = raw[len(SECRET_PREFIX) :]
    try:
        key = base64.b64decode(raw + "=" * (-len(raw) % 4), validate=True)
    except (binascii.Error, ValueError):
        key = b""
    if not key:
        raise UsageError(
            "ROUSE_WEBHOOK_SECRET is not a Standard Webhooks secret: "
            "want 'whsec_' followed by base64 (e.g. whsec_"
            + base64.b64encode(b"0" * 24).decode()
            + ")"
        )
    return key


def signature(key: bytes, wake_id: str, timestamp: int, body: bytes) -> str:
    """``v1,<base64 HMAC-SHA256 of "id.timestamp.body">`` (Standard Webhooks)."""
    signed = f"{wake_id}.{timestamp}.".encode() + body
    digest = hmac.new(key, signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode("ascii")


URL_FIX = "want http://HOST[:PORT]/PATH or https://… (an IPv6 host in brackets: http://[::1]:8080/)"


def check_url(url: str) -> str:
    """``url`` if the webhook sink can POST to it, else a one-line UsageError."""
    import urllib.parse

    problem = ""
    if any(ch.isspace() or not ch.isprintable() for ch in url):
        problem = "it holds a space or a control character"
    else:
        try:
            parts = urllib.parse.urlsplit(url)
            parts.port  # noqa: B018 -- raises ValueError for a bad port
        except ValueError as exc:
            problem = str(exc)
        else:
            if parts.scheme not in ("http", "https"):
                problem = "not http or https"
            elif not parts.hostname:
                problem = "no host"
    if problem:
        raise UsageError(f"bad webhook URL {url!r}: {problem}; {URL_FIX}")
    return url


class WebhookSink:
    """HTTP POST of the wake as JSON; a whole 2xx answer within the timeout = delivered.

    The timeout is one deadline for the delivery: connecting, sending and
    reading the answer (its first MAX_RESPONSE bytes) all fit in it.
    """

    kind = "webhook"
    holdable = True

    def __init__(self, url: str, timeout: float, secret: bytes | None = None):
        self.url = check_url(url)
        self.timeout = check_timeout(timeout)
        self.secret = secret

    def describe(self) -> str:
        signed = ", signed" if self.secret else ""
        return f"webhook {self.url}{signed}"

    def request(self, wake: Wake) -> urllib.request.Request:
        import urllib.request

        body = json.dumps(wake.payload(), ensure_ascii=False, separators=(",", ":")).encode()
        headers = {
            "Content-Type": "application/json",
            "User-Agent": f"rouse/{__version__}",
        }
        if self.secret is not None:
            timestamp = int(time.time())  # wall clock: receivers check it against theirs
            headers["webhook-id"] = wake.id
            headers["webhook-timestamp"] = str(timestamp)
            headers["webhook-signature"] = signature(self.secret, wake.id, timestamp, body)
        return urllib.request.Request(self.url, data=body, headers=headers, method="POST")

    def send(self, wake: Wake, now: datetime) -> str:
        delivery = _Delivery()
        request = self.request(wake)
        worker = threading.Thread(
            target=self._post, args=(request, delivery), name="rouse-webhook", daemon=True
        )
        worker.start()
        try:
            finished = delivery.done.wait(self.timeout)
        finally:
            if not delivery.done.is_set():
                delivery.cut_off()
        if not finished:
            raise SinkError(
                f"no answer from {self.url} within {self.timeout:g}s "
                "(the deadline for the whole delivery)"
            )
        return self._receipt(delivery)

    def _post(self, request: urllib.request.Request, delivery: _Delivery) -> None:
        """The worker: POST, read the answer, and leave the outcome in ``delivery``."""
        try:
            # the per-operation timeout only bounds a worker that outlives the deadline
            with _opener(delivery).open(request, timeout=self.timeout) as response:
                response.read(MAX_RESPONSE)
                delivery.status = int(response.status)
        except BaseException as exc:  # handed to send(): nothing escapes a thread
            delivery.error = exc
        finally:
            delivery.done.set()

    def _receipt(self, delivery: _Delivery) -> str:
        import http.client
        import urllib.error

        exc = delivery.error
        if isinstance(exc, urllib.error.HTTPError):
            exc.close()
            kind = "redirect (not followed)" if 300 <= exc.code < 400 else "answer"
            raise SinkError(f"HTTP {exc.code} {kind} from {self.url}")
        if isinstance(exc, TimeoutError):
            raise SinkError(f"no answer from {self.url} within {self.timeout:g}s")
        if isinstance(exc, urllib.error.URLError):
            raise SinkError(f"cannot reach {self.url}: {exc.reason}")
        if isinstance(exc, OSError | http.client.HTTPException | ValueError):
            raise SinkError(f"failed talking to {self.url}: {type(exc).__name__}: {exc}")
        if exc is not None:
            raise exc
        code = delivery.status
        if not 200 <= code < 300:
            raise SinkError(f"HTTP {code} from {self.url}")
        return f"HTTP {code}"


# -- stdout -------------------------------------------------------------------


class StdoutSink:
    kind = "stdout"
    holdable = False

    def __init__(self, stream: IO[str] | None = None):
        self.stream = stream

    def describe(self) -> str:
        return "stdout"

    def send(self, wake: Wake, now: datetime) -> str:
        stream = self.stream or sys.stdout
        try:
            stream.write(f"=== wake {wake.id}\n{wake.text}\n")
            stream.flush()
        except (OSError, ValueError) as exc:
            raise SinkError(f"cannot write to stdout: {exc}") from None
        return "printed"


# -- choosing one -------------------------------------------------------------


def make_sink(
    spec: Sequence[str] | None,
    command: Sequence[str],
    *,
    root: Path,
    timeout: float | None,
    secret: str | None,
    base_env: Mapping[str, str],
) -> Sink:
    """Build the sink named by ``--sink KIND [URL]`` (and the command after ``--``)."""
    kind, *rest = list(spec or ["file"])
    if kind not in KINDS:
        raise UsageError(f"unknown sink {kind!r}: use one of {', '.join(KINDS)}")
    wait = check_timeout(timeout) if timeout is not None else DEFAULT_TIMEOUT.get(kind, 0.0)
    if kind == "webhook":
        if len(rest) != 1:
            raise UsageError("--sink webhook needs exactly one URL: --sink webhook https://…")
        if command:
            raise UsageError("the webhook sink takes no command after --")
        return WebhookSink(rest[0], wait, parse_secret(secret) if secret else None)
    if rest:
        raise UsageError(f"--sink {kind} takes no argument (got {' '.join(rest)!r})")
    if kind == "exec":
        if not command:
            raise UsageError("--sink exec needs a command after --: --sink exec -- CMD ARG…")
        return ExecSink(command, wait, root, base_env)
    if command:
        raise UsageError(f"a command after -- is only for --sink exec, not {kind}")
    return FileSink(root) if kind == "file" else StdoutSink()
