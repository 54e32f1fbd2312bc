"""The delivery ledger: every wake, digest, escalation, run and tell, and what became of it.

Every message is written to the one ``outbox`` before it is sent and marked when
it lands, so none is silently lost (:mod:`~rouse.sweep.ledger.outbox`: the one
state machine, the one retry rule, the one take, and the seam to a database).
:class:`Ledger` (:mod:`~rouse.sweep.ledger.sqlite`, with its schema) is the
read-write handle on ``.rouse/ledger.sqlite3``, made of one part per kind of
message (``wakes`` with their digests, ``escalations``, ``tells``) and the agent
``runs``; a fleet's PostgreSQL ledger is a subclass (:class:`rouse.fleet.pg_schema.PgLedger`).
``entry`` is a wake's row and ``views`` the read-only views of ``rouse log``.

Outside this package, import the names below from here; the parts import each
other by their own paths.
"""

from rouse.sweep.ledger.entry import Entry, said
from rouse.sweep.ledger.outbox import (
    GIVE_UP_AFTER,
    NOTICE_SINK,
    SET_ASIDE,
    WORKERS,
    backoff,
    gives_up,
    next_try,
    ready,
)
from rouse.sweep.ledger.sqlite import Ledger
from rouse.sweep.ledger.views import log_lines, recent

__all__ = [
    "GIVE_UP_AFTER",
    "NOTICE_SINK",
    "SET_ASIDE",
    "WORKERS",
    "Entry",
    "Ledger",
    "backoff",
    "gives_up",
    "log_lines",
    "next_try",
    "ready",
    "recent",
    "said",
]
