"""Where wakes go: a nudge file, a command, a webhook, or stdout.

:mod:`~rouse.sweep.sinks.base` is what every sink is (the :class:`Sink`
protocol, ``SinkError``); ``local`` the file and stdout sinks, ``exec`` the
command, ``webhook`` the signed POST (its bounded request is ``request``'s,
the heartbeat's too); :func:`make_sink`, here, builds the one an option names.

Outside this package, import the names below from here; the parts import each
other by their own paths.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from rouse.core.errors import UsageError
from rouse.sweep.sinks.base import Sink, SinkError, check_timeout, check_wait, child_environment
from rouse.sweep.sinks.exec import ExecSink
from rouse.sweep.sinks.local import FileSink, StdoutSink, write_nudge
from rouse.sweep.sinks.webhook import WebhookSink, parse_secret

__all__ = [
    "KINDS",
    "ExecSink",
    "FileSink",
    "Sink",
    "SinkError",
    "StdoutSink",
    "WebhookSink",
    "check_timeout",
    "check_wait",
    "child_environment",
    "make_sink",
    "parse_secret",
    "write_nudge",
]

KINDS = ("file", "exec", "webhook", "stdout")
DEFAULT_TIMEOUT = {"exec": 60.0, "webhook": 10.0}


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
