"""The delivery ledger: every wake, digest, escalation, run and tell, and what became of it.

Every message is written to the one ``outbox`` before it is sent and marked when
it lands, so none is silently lost (:mod:`~rouse.sweep.ledger.outbox`: the one
state machine and the one take). :class:`Ledger`
(:mod:`~rouse.sweep.ledger.sqlite`) is the read-write handle on
``.rouse/ledger.sqlite3``, made of one part per kind of message (``wakes``,
``digests``, ``escalations``, ``tells``) and the agent ``runs``; ``db`` is the seam to a database (a
fleet's PostgreSQL ledger is a subclass, :mod:`rouse.fleet.pg_ledger`),
``schema`` its migrations, ``retry`` the one rule of retries and giving up,
``entry`` a wake's row and ``views`` the read-only
views of ``rouse log``.

Outside this package, import the names below from here; the parts import each
other by their own paths.
"""

from rouse.sweep.ledger.entry import Entry, said
from rouse.sweep.ledger.outbox import NOTICE_SINK, SET_ASIDE, WORKERS
from rouse.sweep.ledger.retry import GIVE_UP_AFTER, backoff, gives_up, next_try, ready
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
