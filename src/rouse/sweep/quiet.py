"""Quiet hours (``sweep --quiet HH:MM-HH:MM``): when holdable sinks wait."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, time, timedelta

from rouse.core.errors import UsageError

_QUIET_RE = re.compile(r"^(\d{1,2}):(\d{2})-(\d{1,2}):(\d{2})$")


@dataclass(frozen=True)
class QuietHours:
    """``HH:MM-HH:MM``: start inclusive, end exclusive, may wrap midnight."""

    start: time
    end: time

    @classmethod
    def parse(cls, text: str) -> QuietHours:
        match = _QUIET_RE.match(text.strip())
        if match:
            h1, m1, h2, m2 = (int(g) for g in match.groups())
            if h1 < 24 and h2 < 24 and m1 < 60 and m2 < 60 and (h1, m1) != (h2, m2):
                return cls(time(h1, m1), time(h2, m2))
        raise UsageError(f"bad --quiet {text!r}: want HH:MM-HH:MM, e.g. 22:00-07:00")

    def holds(self, now: datetime) -> bool:
        moment = now.time()
        if self.start < self.end:
            return self.start <= moment < self.end
        return moment >= self.start or moment < self.end

    def ends_after(self, now: datetime) -> datetime:
        """The first instant after ``now`` at which the window is over."""
        end = datetime.combine(now.date(), self.end)
        return end if end > now else end + timedelta(days=1)

    def __str__(self) -> str:
        return f"{self.start:%H:%M}-{self.end:%H:%M}"


class QuietSpell:
    """Quiet hours as a polling loop meets them: whether they hold now, ``told`` once a
    window (``now``, the window's end), and how long an idle loop waits."""

    def __init__(self, hours: QuietHours | None, told: Callable[[datetime, datetime], None]):
        self.hours = hours
        self.told = told
        self.ends: datetime | None = None  # the end of the window last told (None: outside)

    def holds(self, now: datetime) -> bool:
        if self.hours is None or not self.hours.holds(now):
            self.ends = None
            return False
        ends = self.hours.ends_after(now)
        if self.ends != ends:
            self.ends = ends
            self.told(now, ends)
        return True

    def idle(self, now: datetime, every: float) -> float:
        """Seconds to wait after a round with nothing to do: ``every``, or to the window's end."""
        if self.ends is None:
            return every
        return max(min(every, (self.ends - now).total_seconds()), 0.05)
