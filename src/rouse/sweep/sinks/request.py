"""One bounded HTTP request, and the URL check: the webhook sink's and the heartbeat's.

The request runs on a worker thread with one deadline for all of it
(connecting, sending, reading the answer); when the deadline passes its
connections are cut off, so the worker stops at once. Used by
:class:`~rouse.sweep.sinks.webhook.WebhookSink` and :mod:`rouse.sweep.heartbeat`.
"""

from __future__ import annotations

import contextlib
import threading
from typing import TYPE_CHECKING, Any

from rouse.core.errors import UsageError

if TYPE_CHECKING:
    import http.client
    import urllib.request

MAX_RESPONSE = 64 * 1024  # of a webhook's answer, read then dropped


class Delivery:
    """One request, made on a worker thread, and the connections it opened.

    :func:`within` waits for it until the deadline; then it cuts the connections
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


def opener(delivery: Delivery) -> urllib.request.OpenerDirector:
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


def within(
    request: urllib.request.Request, deadline: float, backstop: float, name: str
) -> Delivery | None:
    """Make ``request`` on a worker thread (``name``) and read its answer's first
    MAX_RESPONSE bytes: how it went, or None when ``deadline`` seconds passed first (its
    connections are cut off then). ``backstop``: the socket's own timeout, which only
    bounds a worker that outlives the deadline."""
    delivery = Delivery()

    def work() -> None:
        try:
            with opener(delivery).open(request, timeout=backstop) as response:
                response.read(MAX_RESPONSE)
                delivery.status = int(response.status)
        except BaseException as exc:  # handed to the caller: nothing escapes a thread
            delivery.error = exc
        finally:
            delivery.done.set()

    threading.Thread(target=work, name=name, daemon=True).start()
    try:
        finished = delivery.done.wait(deadline)
    finally:
        if not delivery.done.is_set():
            delivery.cut_off()
    return delivery if finished else None


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
