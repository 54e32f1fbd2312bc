"""What every sink shares: ``SinkError`` (a delivery that did not land) and the timeout check."""

from __future__ import annotations

from collections.abc import Mapping

from rouse.core.errors import UsageError

MAX_TIMEOUT = 24 * 3600.0  # as the CLI's --timeout; a wake failing that long is given up


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


#: Secrets of rouse's own that a command it starts (an exec sink, an agent run)
#: never inherits: the fleet's database URL (it may carry a password) and the
#: webhook signing key.
PRIVATE_ENV = frozenset({"ROUSE_LEDGER", "ROUSE_WEBHOOK_SECRET"})


def child_environment(base: Mapping[str, str]) -> dict[str, str]:
    """``base`` without rouse's own secrets: what a command rouse starts inherits."""
    return {key: value for key, value in base.items() if key not in PRIVATE_ENV}
