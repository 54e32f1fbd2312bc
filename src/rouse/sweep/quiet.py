"""Quiet hours (``sweep --quiet HH:MM-HH:MM``): when holdable sinks wait."""

from __future__ import annotations

import re
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
