"""A task's notices reach a fleet's ledger: the tree's own SQLite ledger is their outbox.

``rouse checkpoint`` (run by an agent inside its run) and the worker (a
``lost`` notice) queue a notice in the tree's SQLite ledger, always: they need
no DSN and no database driver, and the run's environment never holds the
fleet's password (``ROUSE_LEDGER`` is kept from agents). A sweeper on that
SQLite ledger delivers it at its next tick. A sweeper on a fleet's PostgreSQL
ledger (``sweep --ledger DSN``), leader or standby, first carries its clone's
outbox into the fleet's ledger at the start of each tick (:func:`carry`); the
leader then delivers each notice like any wake it owes, whichever clone it
came from. So a notice reaches whichever ledger the tree's sweeper uses, as
long as a sweeper runs beside the worker's clone.

Carrying is claimed first in the outbox (the row's sink becomes :data:`FLEET`,
only from :data:`~rouse.work.notices.NOTICE_SINK`), so a worker's ``--sink``
and a second carrier never take the same notice; it is then added to the
fleet's ledger under its own id (a second add of the same id is a no-op) and
withdrawn from the outbox. A carrier killed between the two leaves it held
with sink ``fleet``: the next tick carries it again, once.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from rouse.core.errors import RouseError
from rouse.core.statedir import state_path
from rouse.sweep.ledger import Ledger
from rouse.work.notices import NOTICE_SINK, NOTICES

#: An outbox row's sink once a sweeper has taken it to carry into the fleet's ledger.
FLEET = "fleet"


def carry(root: Path, into: Ledger, now: datetime) -> list[str]:
    """Carry the notices queued in ``root``'s SQLite ledger into ``into`` (a fleet's);
    the ids carried. A tree without a SQLite ledger, or with one that cannot be read,
    has none (it is not made here); the fleet's ledger's errors are raised."""
    try:
        if not state_path(root, "ledger.sqlite3", create=False).is_file():
            return []
        outbox = Ledger(root)
    except RouseError:
        return []  # (status and the pack say what is wrong with it)
    carried: list[str] = []
    with outbox:
        for entry in outbox.open_entries():
            if entry.wake.reason not in NOTICES or entry.state != "held":
                continue
            if entry.sink != FLEET and not (
                entry.sink == NOTICE_SINK and outbox.take_notice(entry.id, FLEET)
            ):
                continue
            into.add(entry.wake, NOTICE_SINK, now, held=True)
            outbox.withdraw(entry.id, now, f"carried to the fleet's ledger ({into.where})")
            carried.append(entry.id)
    return carried
