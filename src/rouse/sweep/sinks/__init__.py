"""Where wakes go: a nudge file, a command, a webhook, or stdout.

:mod:`~rouse.sweep.sinks.base` is what every sink is (the :class:`Sink`
protocol, ``SinkError``); ``local`` the file and stdout sinks, ``exec`` the
command, ``webhook`` the signed POST (its bounded request is ``request``'s,
the heartbeat's too), and ``make`` builds the one an option names.

Outside this package, import the names below from here; the parts import each
other by their own paths.
"""

from rouse.sweep.sinks.base import Sink, SinkError, check_timeout, child_environment
from rouse.sweep.sinks.exec import ExecSink
from rouse.sweep.sinks.local import FileSink, StdoutSink, write_nudge
from rouse.sweep.sinks.make import KINDS, make_sink
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
    "child_environment",
    "make_sink",
    "parse_secret",
    "write_nudge",
]
