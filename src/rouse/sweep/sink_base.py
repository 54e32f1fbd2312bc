"""What every sink shares: ``SinkError`` (a delivery that did not land) and the timeout check."""

from __future__ import annotations

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
