"""Escalation to a human: a record woken N times (or for a while) without moving.

``--escalate-after 3`` (nudges) or ``--escalate-after 2d`` (a duration since
the first unanswered wake) with ``--escalate webhook URL`` /
``--escalate exec -- CMD``: when a wake lands at or past a threshold, a
message addressed to the owner also goes to that second sink, once per
escalation level (level k at k×N nudges, or k×D), until the record moves.
The ledger's ``escalations`` table records each one; the pack says so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from rouse.core.errors import UsageError
from rouse.core.timefmt import format_interval, parse_interval
from rouse.sweep.sinks import Sink
from rouse.sweep.wake import Wake, new_id

#: The most nudges ``--escalate-after`` takes.
MOST_NUDGES = 1000


@dataclass(frozen=True)
class Threshold:
    """After ``nudges`` wakes, or ``after`` since the first unanswered wake."""

    nudges: int | None = None
    after: timedelta | None = None

    @classmethod
    def parse(cls, text: str) -> Threshold:
        raw = text.strip()
        if re.fullmatch(r"\d+", raw):
            count = int(raw)
            if 1 <= count <= MOST_NUDGES:
                return cls(nudges=count)
        else:
            try:
                interval = parse_interval(raw)
            except ValueError:
                interval = timedelta(0)
            if interval > timedelta(0):
                return cls(after=interval)
        raise UsageError(
            f"bad --escalate-after {text!r}: want a number of nudges (1 to {MOST_NUDGES}, "
            "e.g. 3) or a duration (e.g. 12h, 2d)"
        )

    def level(self, woken: int, first_wake: datetime, now: datetime) -> int:
        """The level a record woken ``woken`` times since ``first_wake`` reaches (0: none)."""
        if self.nudges is not None:
            return woken // self.nudges
        assert self.after is not None
        return int((now - first_wake) / self.after)

    def __str__(self) -> str:
        if self.nudges is not None:
            return f"{self.nudges} nudge" + ("" if self.nudges == 1 else "s")
        assert self.after is not None
        return format_interval(self.after)


@dataclass(frozen=True)
class Escalation:
    threshold: Threshold
    sink: Sink

    def describe(self) -> str:
        return f"escalate after {self.threshold} via {self.sink.describe()}"


def message(
    root: Path,
    made: Wake,
    level: int,
    threshold: Threshold,
    woken: int,
    first_wake: datetime,
    now: datetime,
) -> Wake:
    """The escalation: a wake-shaped message addressed to the owner (pure)."""
    since = first_wake.strftime("%Y-%m-%d %H:%M")
    text = (
        f"To the owner of the memory at {root}: {made.record} needs you.\n"
        f"Your agent has been woken about it {woken} time(s) since {since} and it has "
        f"not moved (last moved {made.last_moved}).\n"
        f"This is escalation {level} (after {threshold}); rouse says it once per level.\n"
        f"at: {made.path}\n"
        "Decide: move it, close it, or tell your agent what to do about it.\n"
        f"\nThe last wake (id {made.id}):\n\n{made.text}"
    )
    return Wake(
        id="e" + new_id(now),
        record=made.record,
        type=made.type,
        slug=made.slug,
        path=made.path,
        file=made.file,
        reason="escalate",
        nudge=level,
        last_moved=made.last_moved,
        at=now.strftime("%Y-%m-%d %H:%M:%S"),
        text=text,
    )
