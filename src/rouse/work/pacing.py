"""When ``rouse work`` may start a task: outside quiet hours, within the run budget."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from rouse.sweep.ledger import Ledger
from rouse.sweep.quiet import QuietHours
from rouse.sweep.runner import Budget


class Pacing:
    """Whether one more task may start now; why not is said once, and kept for status."""

    def __init__(
        self, quiet: QuietHours | None, budget: Budget | None, say: Callable[[str], None]
    ) -> None:
        self.quiet = quiet
        self.budget = budget
        self.say = say
        self.waiting = ""  # why tasks wait now ("" while they may start)

    def quiet_now(self, now: datetime) -> bool:
        if self.quiet is not None and self.quiet.holds(now):
            self._wait(f"quiet hours ({self.quiet}): no task starts until they end")
            return True
        return False

    def may_start(self, now: datetime, book: Ledger, ahead: int) -> bool:
        """Whether one more task may be claimed: not in quiet hours, within the budget
        (the runs started, and the ``ahead`` claims that will start)."""
        if self.quiet_now(now):
            return False
        budget = self.budget
        if budget is not None:
            started = book.runs_since(now - budget.period, tasks=True)
            if len(started) + ahead >= budget.count:
                if len(started) >= budget.count:
                    until = started[-budget.count] + budget.period
                    self._wait(
                        f"the run budget ({budget.text}) is spent: tasks wait until "
                        f"{until:%Y-%m-%d %H:%M}"
                    )
                return False
        self.waiting = ""
        return True

    def _wait(self, why: str) -> None:
        if why != self.waiting:
            self.say(why)
        self.waiting = why
