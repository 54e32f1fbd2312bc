"""``rouse sweep --heartbeat URL``: a dead-man's switch pinged after every tick.

The healthchecks convention, which most uptime monitors accept: a GET of the
URL after a tick that went well, a GET of ``URL/fail`` after a tick that did
not (it raised, or a wake in it failed or was given up). A monitor that stops
hearing pings raises the alarm, so a sweeper that dies or hangs is noticed by
someone other than itself.

A ping never holds the sweeper for long and never stops it: the whole request
(connecting, sending, reading the answer) has one deadline, on a worker
thread, and a ping that fails is one line on stderr.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from datetime import datetime
from urllib.parse import urlsplit, urlunsplit

from rouse import __version__
from rouse.core.errors import UsageError
from rouse.sweep.report import TickReport, moment
from rouse.sweep.sinks.request import check_url, within

#: Seconds a ping may take in all (as ``curl -m 10`` in monitors' own examples).
DEADLINE = 10.0


def failed(report: TickReport | None) -> bool:
    """A tick that raised (None), or in which a wake failed or was given up."""
    return report is None or bool(report.failed or report.given_up)


class Heartbeat:
    """Ping ``url`` (success) or ``url/fail`` after each tick; log, never raise."""

    def __init__(
        self,
        url: str,
        *,
        deadline: float = DEADLINE,
        log: Callable[[str], None] | None = None,
    ):
        try:
            self.url = check_url(url)
        except UsageError as exc:
            raise UsageError(
                str(exc).replace("bad webhook URL", "bad --heartbeat URL", 1)
            ) from None
        self.deadline = deadline
        self.log = log or _stderr

    def target(self, ok: bool) -> str:
        """The URL to ping: ``/fail`` goes on the path, before any query or fragment
        (``http://h/ping?rid=1`` fails to ``http://h/ping/fail?rid=1``)."""
        if ok:
            return self.url
        parts = urlsplit(self.url)
        return urlunsplit(parts._replace(path=parts.path.rstrip("/") + "/fail"))

    def __call__(self, at: datetime, report: TickReport | None) -> None:
        """The callback ``rouse.sweep.loop.run`` calls after every tick."""
        url = self.target(not failed(report))
        problem = self.ping(url)
        if problem:
            self.log(f"{moment(at)} heartbeat not sent: {problem}")

    def ping(self, url: str) -> str | None:
        """GET ``url`` within the deadline; None when it answered 2xx, else why not."""
        import urllib.error
        import urllib.request

        request = urllib.request.Request(
            url, headers={"User-Agent": f"rouse/{__version__}"}, method="GET"
        )
        # the deadline cuts the socket off; the socket's own timeout is only a
        # backstop, longer, so that the deadline always speaks first
        delivery = within(request, self.deadline, self.deadline + 5, "rouse-heartbeat")
        if delivery is None:
            return f"no answer from {url} within {self.deadline:g}s"
        exc = delivery.error
        if isinstance(exc, urllib.error.HTTPError):
            exc.close()
            return f"HTTP {exc.code} from {url}"
        if isinstance(exc, urllib.error.URLError):
            return f"cannot reach {url}: {exc.reason}"
        if exc is not None:
            return f"failed talking to {url}: {type(exc).__name__}: {exc}"
        if not 200 <= delivery.status < 300:
            return f"HTTP {delivery.status} from {url}"
        return None


def _stderr(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()
