"""The leader lease: one sweeper per tree plans and sends; the others stand by.

One row per tree in ``leaders``: who holds the lease (``holder`` =
``host:pid:random``), until when (``expires``, on the database's clock, never
a machine's), and a fencing token that grows by one at every takeover. A
sweeper takes the lease only when it has expired (or was released), renews
it while it lives — every tick, every third of the lease between ticks, and
before each send, for as long as the send may take — and a renewal names its
token, so a sweeper that paused past its lease while another took over finds
out at its next renewal, and stops, instead of sending beside the new leader.

A statement on a dedicated row, not a session advisory lock: a pooler in
transaction mode (PgBouncer) hands sessions around, and a session lock would
follow the wrong client; a row and the database's clock survive any pooler.

A standby looks every third of the lease, so it leads within ``lease + lease/3``
of a leader's death between sends; a leader killed mid-send holds the tree
until that send's timeout has passed too (so a slow send is never doubled by a
standby that thought it dead).
"""

from __future__ import annotations

import os
import secrets
import socket
import sys
import time
from collections.abc import Callable
from datetime import datetime
from functools import partial
from typing import Any

from rouse.fleet.pg import PgDatabase

#: The lease's default length, in seconds (``sweep --lease``).
DEFAULT_LEASE = 30.0
#: The shortest lease: renewed every third of it, a lease under 2s would be lost to
#: one slow statement or a busy machine, and the tree would change hands for nothing.
SHORTEST_LEASE = 2.0
#: The longest: a dead leader's tree waits up to this long for a standby to take over.
LONGEST_LEASE = 3600.0

_TAKE = """
INSERT INTO leaders (tree, holder, host, pid, token, since, expires)
VALUES (?, ?, ?, ?, 1, now(), now() + ? * interval '1 second')
ON CONFLICT (tree) DO UPDATE SET
    holder = EXCLUDED.holder, host = EXCLUDED.host, pid = EXCLUDED.pid,
    token = leaders.token + 1, since = now(), expires = EXCLUDED.expires
WHERE leaders.expires <= now()
RETURNING token
"""

_RENEW = """
UPDATE leaders SET expires = now() + ? * interval '1 second'
WHERE tree = ? AND holder = ? AND token = ?
RETURNING token
"""

#: A released lease expires now: the next standby to look takes it (token + 1).
_RELEASE = """
UPDATE leaders SET expires = now() WHERE tree = ? AND holder = ? AND token = ?
"""


def _choose_clock() -> Callable[[], float]:
    """Seconds on a clock that keeps counting while the machine is suspended.

    ``time.monotonic()`` stops in suspend on Linux and macOS, so a claim judged
    by it would look live after a night with the lid shut. Linux has
    ``CLOCK_BOOTTIME``; macOS's ``CLOCK_MONOTONIC`` counts sleep; elsewhere
    ``time.monotonic()``. (Each send is checked on the database anyway: see
    :meth:`rouse.fleet.claims.Claims.start`.)
    """
    name = {"linux": "CLOCK_BOOTTIME", "darwin": "CLOCK_MONOTONIC"}.get(sys.platform, "")
    which = getattr(time, name, None)
    if which is None:
        return time.monotonic
    try:
        time.clock_gettime(which)
    except OSError:  # (an old kernel)
        return time.monotonic
    return partial(time.clock_gettime, which)


#: The clock leases and claims' deadlines are kept on (seconds; counts time suspended where it can).
clock = _choose_clock()


def check_lease(seconds: float) -> float:
    """``--lease S``: a number of seconds from 2 to 3600 (else exit 2, saying why)."""
    from rouse.core.errors import UsageError

    if not SHORTEST_LEASE <= seconds <= LONGEST_LEASE:  # (nan is not)
        raise UsageError(
            f"--lease must be from {SHORTEST_LEASE:g} to {LONGEST_LEASE:g} seconds, got "
            f"{seconds:g}: shorter and one slow statement hands the tree over; longer and a "
            "dead leader's wakes wait that long"
        )
    return seconds


def holder_name(random: int = 4) -> str:
    """This process's name in a lease or a claim: ``host:pid:random`` (the random part
    tells apart two processes that had the same pid on the same host)."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(random)}"


class Lease:
    """This sweeper's hold on one tree's lease.

    ``token`` is the fencing token of our current term, None while we do not lead.
    """

    def __init__(self, db: PgDatabase, tree: str, seconds: float = DEFAULT_LEASE):
        self.db = db
        self.tree = tree
        self.seconds = seconds
        self.holder = holder_name()
        self.host = socket.gethostname()
        self.token: int | None = None
        #: when (:func:`clock`) the lease was last renewed or taken
        self.renewed = 0.0

    @property
    def leading(self) -> bool:
        return self.token is not None

    def lead(self) -> bool:
        """Renew our term, or take the lease if it expired: whether we lead now."""
        if self.token is not None and self.renew():
            return True
        return self._take()

    def renew(self, cover: float = 0.0) -> bool:
        """Keep our term (from the database's now); False if another took it over.

        ``cover``: a send about to start may take that long; the lease is made
        to outlive it (and the renewal before the next send), so no standby
        takes over mid-send. A send shorter than the lease needs nothing more.
        """
        if self.token is None:
            return False
        seconds = max(self.seconds, cover + self.seconds / 3)
        row = self.db.execute(_RENEW, (seconds, self.tree, self.holder, self.token)).fetchone()
        if row is None:
            self.token = None  # another took over after our lease ran out
            return False
        self.renewed = clock()
        return True

    def keep(self) -> bool:
        """Renew when a third of the lease has passed since the last renewal."""
        if self.token is None:
            return False
        if clock() - self.renewed < self.seconds / 3:
            return True
        return self.renew()

    def _take(self) -> bool:
        row = self.db.execute(
            _TAKE, (self.tree, self.holder, self.host, os.getpid(), self.seconds)
        ).fetchone()
        if row is None:
            self.token = None
            return False
        self.token = int(row["token"])
        self.renewed = clock()
        return True

    def release(self) -> None:
        """Let the lease go now (a clean exit): a standby takes it at its next look."""
        if self.token is None:
            return
        token, self.token = self.token, None
        self.db.execute(_RELEASE, (self.tree, self.holder, token))


def leader(db: Any, tree: str) -> dict[str, Any] | None:
    """The tree's lease row: who leads (or last led), its token, since and until when.

    ``live`` is false when the lease has expired (no sweeper leads now); times
    are local, naive, as the rest of rouse shows them.
    """
    row = db.execute(
        "SELECT holder, host, pid, token, since, expires, expires > now() AS live "
        "FROM leaders WHERE tree = ?",
        (tree,),
    ).fetchone()
    return lease_row(row)


def lease_row(row: Any, host: str = "host", *, local: bool = True) -> dict[str, Any] | None:
    """A ``leaders`` row (its host under the column ``host``) as :func:`leader` gives it;
    None when no one holds the lease. ``local=False``: its times as the database gave them."""
    if row is None or row["holder"] is None:
        return None
    since, expires = row["since"], row["expires"]
    return {
        "holder": row["holder"],
        "host": row[host],
        "pid": int(row["pid"]),
        "token": int(row["token"]),
        "since": _local(since) if local else since,
        "expires": _local(expires) if local else expires,
        "live": bool(row["live"]),
    }


def _local(value: datetime) -> datetime:
    """A TIMESTAMPTZ as local naive time, to the second."""
    return value.astimezone().replace(tzinfo=None, microsecond=0)
