"""The webhook sink: an HTTP POST of the wake as JSON, signed as Standard Webhooks.

The one bounded request it makes and the URL check are
:mod:`rouse.sweep.sinks.request`'s (the heartbeat's too). Only the Standard
Webhooks timestamp and the deadline use the wall clock.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import time
from datetime import datetime
from typing import TYPE_CHECKING

from rouse import __version__
from rouse.core.errors import UsageError
from rouse.sweep.sinks.base import SinkError, check_timeout
from rouse.sweep.sinks.request import Delivery, check_url, within
from rouse.sweep.wake import Wake

if TYPE_CHECKING:
    import urllib.request

SECRET_PREFIX = "whsec_"


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
        delivery = within(self.request(wake), self.timeout, self.timeout, "rouse-webhook")
        if delivery is None:
            raise SinkError(
                f"no answer from {self.url} within {self.timeout:g}s "
                "(the deadline for the whole delivery)"
            )
        return self._receipt(delivery)

    def _receipt(self, delivery: Delivery) -> str:
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
