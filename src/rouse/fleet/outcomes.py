"""What came of a delivery worker's claimed wakes: written to the ledger, said, counted.

:class:`Outcomes` writes each :class:`Result` through the claims
(:mod:`rouse.fleet.claims`) and says it (and, with ``--json``, prints it as a
line); a result the ledger could not take (its database away) is held and
written first when it is back. At the end it makes the worker's exit code and
``--once``'s summary line.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from rouse.fleet.claims import Claim, Claims
from rouse.fleet.pg import LedgerUnreachable
from rouse.sweep.report import ERRORS, EVENTS, EVERY_TICK, Voice, moment, named


@dataclass
class Result:
    """What came of one claimed wake, kept until the ledger has it."""

    claim: Claim
    at: datetime
    outcome: str  # delivered | failed | given_up
    text: str  # the receipt or the error


@dataclass
class Tally:
    delivered: int = 0
    failed: int = 0
    given_up: int = 0
    released: int = 0
    unwritten: list[Result] = field(default_factory=list)


@dataclass
class Outcomes:
    """A worker's results: written (or held), said, counted in :attr:`tally`."""

    #: the claim SQL on the ledger (reached on first use)
    claims: Callable[[], Claims]
    voice: Voice
    sink: str
    holder: str
    where: str
    lease: float
    json_lines: bool
    tally: Tally = field(default_factory=Tally)

    def write(self, result: Result) -> None:
        """Write one result to the ledger (held for later if it cannot be), and say it."""
        try:
            self.record(result)
        except LedgerUnreachable:
            self.tally.unwritten.append(result)
            raise

    def record(self, result: Result) -> None:
        """Write one result to the ledger and say it (LedgerUnreachable: not written)."""
        claim, at = result.claim, result.at
        what = named(claim.wake)
        kind = self.sink
        next_try: datetime | None = None
        if result.outcome == "delivered":
            untouched = self.claims().delivered(claim, at, result.text)
            self.tally.delivered += 1
            line, level = f"delivered {what} via {kind}: {result.text}", EVENTS
        elif result.outcome == "failed":
            next_try, untouched = self.claims().failed(claim, at, result.text)
            self.tally.failed += 1
            line = f"not delivered {what} via {kind}: {result.text}; next try {moment(next_try)}"
            level = ERRORS
        else:
            untouched = self.claims().given_up(claim, at)
            self.tally.given_up += 1
            since = moment(claim.first_failure) if claim.first_failure else "?"
            line = (
                f"gave up on {what}: failing since {since} (24h); its sweeper writes it "
                "as a nudge file"
            )
            level = ERRORS
        if untouched:
            line += f" (not written to the ledger: {untouched})"
        self.voice.say(f"{moment(at)} {line}", level)
        if self.json_lines:
            state = {"given_up": "given up"}.get(result.outcome, result.outcome)
            said = json.dumps(
                {
                    "id": claim.id,
                    "tree": claim.tree,
                    "record": claim.wake.record,
                    "state": state,
                    "attempts": claim.attempts,
                    "receipt": result.text if result.outcome == "delivered" else None,
                    "error": result.text if result.outcome == "failed" else None,
                    "next_attempt": moment(next_try) if next_try else None,
                    "worker": self.holder,
                    "written": untouched is None,
                },
                ensure_ascii=False,
            )
            sys.stdout.write(said + "\n")
            sys.stdout.flush()

    def catch_up(self) -> None:
        """Write the results held while the database was away, oldest first."""
        while self.tally.unwritten:
            self.record(self.tally.unwritten[0])
            self.tally.unwritten.pop(0)

    def finish(
        self, now: datetime, *, once: bool, elsewhere: int, gave_up_waiting: bool = False
    ) -> int:
        """The exit code, and (``once``) the summary line.

        2 when ``--once`` stopped waiting for a lost database (after one lease:
        by then its claims have run out for other workers to take).
        """
        tally = self.tally
        unwritten = len(tally.unwritten)
        if unwritten:
            self.voice.say(
                f"{unwritten} results could not be written to {self.where}: "
                "those wakes will be sent again when their claims run out (same ids)",
                ERRORS,
            )
        code = 1 if tally.failed or tally.given_up or unwritten else 0
        if gave_up_waiting:
            self.voice.say(
                f"gave up waiting for the ledger at {self.where} after {self.lease:g}s (one lease)",
                ERRORS,
            )
            code = 2
        if once:
            line = (
                f"{moment(now)} {tally.delivered} delivered, {tally.failed} failed, "
                f"{tally.given_up} given up"
            )
            if elsewhere:
                line += f"; {elsewhere} claimed by other workers"
            eventful = tally.delivered or code
            self.voice.say(line, ERRORS if code else EVENTS if eventful else EVERY_TICK)
        return code
