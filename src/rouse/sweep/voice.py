"""What the sweeper says, and how much: the verbosity levels and :class:`Voice`.

Also the helpers every line it says is made with: the tick's time (:func:`moment`)
and a wake named the same way each time (:func:`named`).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from datetime import datetime

from rouse.core.layout import shown
from rouse.state.sweeper import TIME_FORMAT
from rouse.sweep.wake import Wake

Log = Callable[[str], None]
Say = Callable[[str, int], None]

#: How much the sweeper says (``verbosity``): only what went wrong (``-q``) …
ERRORS = 0
#: … also what it did: a delivery, a hold, a withdrawal, a skipped file (the default) …
EVENTS = 1
#: … also every tick, idle or not, and how it started (``-v``).
EVERY_TICK = 2


class Voice:
    """Lines said at a verbosity, and whether a tick had anything to say (the sweeper's base)."""

    def __init__(self, log: Log | None, verbosity: int) -> None:
        self.log: Log = log or _stderr
        self.verbosity = verbosity
        self._eventful = False
        self._told: set[str] = set()

    def say(self, line: str, level: int = EVENTS) -> None:
        """Log ``line`` if the sweeper's verbosity reaches ``level``.

        A line of ``EVENTS`` or ``ERRORS`` makes the tick eventful, said or not.
        """
        if level <= EVENTS:
            self._eventful = True
        if level <= self.verbosity:
            self.log(line)

    def tell_once(self, line: str) -> None:
        """Say ``line`` the first time only (a skipped file, a run that waits)."""
        if line not in self._told:
            self._told.add(line)
            self.say(line)


def named(made: Wake) -> str:
    return f"{made.record} ({made.reason}, nudge {made.nudge}) id={made.id}"


def moment(value: datetime) -> str:
    return value.strftime(TIME_FORMAT)


def _stderr(line: str) -> None:
    print(f"rouse sweep: {shown(line, lines=True)}", file=sys.stderr, flush=True)
