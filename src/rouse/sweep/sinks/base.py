"""What every sink is and shares: the :class:`Sink` protocol, ``SinkError``, the timeout check.

A sink's ``send`` returns a short receipt when the wake landed and raises
``SinkError`` when it did not; it never raises anything else for a failed
delivery. Only real-world timers (timeouts, the Standard Webhooks timestamp)
use the wall clock; everything else takes the tick's ``now``.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Protocol

from rouse.core.errors import UsageError
from rouse.sweep.wake import Wake
from rouse.trust.speaker import marked


class Sink(Protocol):
    kind: str
    holdable: bool  # quiet hours hold it (exec, webhook)

    def describe(self) -> str: ...

    def send(self, wake: Wake, now: datetime) -> str: ...


#: The longest wait an option takes (``--timeout``, ``--every``, ``--lease``), in seconds:
#: one day (what ``status`` believes of a sweeper's interval at most; a wake failing that
#: long is given up).
MAX_TIMEOUT = 24 * 3600.0


class SinkError(Exception):
    """The wake was not delivered; the message says why, in one line."""


def check_wait(option: str, seconds: float | None) -> None:
    """Refuse (exit 2) a wait that is not a number of seconds above 0 and at most a day."""
    if seconds is not None and not 0 < seconds <= MAX_TIMEOUT:  # (nan and inf are not)
        raise UsageError(
            f"{option} must be a number of seconds above 0 and at most {MAX_TIMEOUT:g} "
            f"(one day), got {seconds:g}"
        )


def check_timeout(timeout: float) -> float:
    """``timeout`` if it is a usable deadline in seconds, else a UsageError."""
    check_wait("--timeout", timeout)
    return float(timeout)


#: Secrets of rouse's own that a command it starts (an exec sink, an agent run)
#: never inherits: the fleet's database URL (it may carry a password) and the
#: webhook signing key.
PRIVATE_ENV = frozenset({"ROUSE_LEDGER", "ROUSE_WEBHOOK_SECRET"})


def child_environment(base: Mapping[str, str]) -> dict[str, str]:
    """``base`` without rouse's own secrets, with rouse's agent marker: what a command
    rouse starts inherits (what it writes through rouse signs as ``agent``)."""
    return marked({key: value for key, value in base.items() if key not in PRIVATE_ENV})
