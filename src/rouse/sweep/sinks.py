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
    import urllib.request

KINDS = ("file", "exec", "webhook", "stdout")
DEFAULT_TIMEOUT = {"exec": 60.0, "webhook": 10.0}
SECRET_PREFIX = "whsec_"
MAX_RESPONSE = 64 * 1024


class SinkError(Exception):
    """The wake was not delivered; the message says why, in one line."""


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
        self.timeout = timeout
        self.root = root
        self.base_env = dict(base_env)

    def describe(self) -> str:
        return f"exec {' '.join(self.argv)}"

    def environment(self, wake: Wake) -> dict[str, str]:
        return {
            **self.base_env,
            "ROUSE_WAKE_ID": wake.id,
            "ROUSE_RECORD": wake.record,
            "ROUSE_PATH": wake.path,
            "ROUSE_REASON": wake.reason,
            "ROUSE_NUDGE": str(wake.nudge),
            "ROUSE_MEMORY": str(self.root),
        }

    def send(self, wake: Wake, now: datetime) -> str:
        # Files, not pipes, for stdin and output: nothing can block on a pipe a
        # stray grandchild keeps open, and a command that ignores stdin is fine.
        with tempfile.TemporaryFile() as stdin, tempfile.TemporaryFile() as output:
            stdin.write(wake.text.encode("utf-8"))
            stdin.seek(0)
            try:
                proc = subprocess.Popen(
                    self.argv,
                    stdin=stdin,
                    stdout=output,
                    stderr=subprocess.STDOUT,
                    env=self.environment(wake),
                    start_new_session=True,  # its own process group, killed whole on timeout
                )
            except OSError as exc:
                raise SinkError(f"cannot run {self.argv[0]}: {exc.strerror or exc}") from None
            try:
                code = proc.wait(timeout=self.timeout)
            except subprocess.TimeoutExpired:
                _kill_group(proc)
                raise SinkError(
                    f"{self.argv[0]} did not finish within {self.timeout:g}s: "
                    "killed its process group"
                ) from None
            except BaseException:
                _kill_group(proc)
                raise
            if code != 0:
                raise SinkError(f"{self.argv[0]} exited {code}{_tail(output)}")
        return "exit 0"


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def _tail(output: IO[bytes]) -> str:
    output.seek(0, os.SEEK_END)
    size = output.tell()
    output.seek(max(0, size - 300))
    text = " ".join(output.read().decode("utf-8", errors="replace").split())
    return f": {text}" if text else ""


# -- webhook ------------------------------------------------------------------


def _opener() -> urllib.request.OpenerDirector:
    """An opener that never follows a redirect: a 3xx is a failed delivery."""
    import urllib.request  # here, not at the top: the pack's import path stays light

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: Any, **kwargs: Any) -> None:
            return None

    return urllib.request.build_opener(NoRedirect)


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


class WebhookSink:
    """HTTP POST of the wake as JSON; a 2xx within the timeout = delivered."""

    kind = "webhook"
    holdable = True

    def __init__(self, url: str, timeout: float, secret: bytes | None = None):
        import urllib.parse

        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise UsageError(f"bad webhook URL {url!r}: want http://… or https://…")
        self.url = url
        self.timeout = timeout
        self.secret = secret
        self.opener = _opener()

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
        import http.client
        import urllib.error

        try:
            with self.opener.open(self.request(wake), timeout=self.timeout) as response:
                response.read(MAX_RESPONSE)
                code = int(response.status)
        except urllib.error.HTTPError as exc:
            exc.close()
            kind = "redirect (not followed)" if 300 <= exc.code < 400 else "answer"
            raise SinkError(f"HTTP {exc.code} {kind} from {self.url}") from None
        except TimeoutError:
            raise SinkError(f"no answer from {self.url} within {self.timeout:g}s") from None
        except urllib.error.URLError as exc:
            raise SinkError(f"cannot reach {self.url}: {exc.reason}") from None
        except (OSError, http.client.HTTPException) as exc:
            raise SinkError(f"failed talking to {self.url}: {type(exc).__name__}: {exc}") from None
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
    if timeout is not None and timeout <= 0:
        raise UsageError("--timeout must be a positive number of seconds")
    wait = timeout if timeout is not None else DEFAULT_TIMEOUT.get(kind, 0.0)
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
