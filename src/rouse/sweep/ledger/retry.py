"""The one retry rule of what the ledger sends: when to try again, and when to give up.

Pure: every kind of message the ledger owes (a wake, a tell, a task's notice;
a delivery worker's claim on a wake) is retried by these, from its row's
attempts, first failure and next attempt. The next try waits
``min(1m × 2^(attempts-1), 1h)`` after the last; after 24h of failures the
message is given up (written as a nudge file by whoever gives it up).
"""

from __future__ import annotations

from datetime import datetime, timedelta

GIVE_UP_AFTER = timedelta(hours=24)
FIRST_RETRY = timedelta(minutes=1)
MAX_RETRY = timedelta(hours=1)


def backoff(attempts: int) -> timedelta:
    """``min(1m × 2^(attempts-1), 1h)``: the wait after the ``attempts``-th try."""
    if attempts >= 8:
        return MAX_RETRY
    wait: timedelta = FIRST_RETRY * 2 ** max(attempts - 1, 0)
    return min(wait, MAX_RETRY)


def next_try(last_attempt: datetime, attempts: int) -> datetime:
    """When a message whose ``attempts``-th try (made at ``last_attempt``) failed is tried again."""
    return last_attempt + backoff(attempts)


def gives_up(first_failure: datetime | None, now: datetime) -> bool:
    """24h or more of failures at ``now``: give the message up instead of sending it."""
    return first_failure is not None and now - first_failure >= GIVE_UP_AFTER


def ready(next_attempt: datetime | None, now: datetime) -> bool:
    """Its backoff has run out at ``now`` (or it never failed)."""
    return next_attempt is None or now >= next_attempt
