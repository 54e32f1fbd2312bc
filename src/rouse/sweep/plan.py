"""Planning a tick: a pure function of the tree, the ledger's open wakes and ``now``.

It decides, touching nothing, what to do about each due record and each wake
the ledger still owes; :mod:`rouse.sweep.tick` carries the plan out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from rouse.core import clock
from rouse.core.clock import Decision
from rouse.core.tree import Tree
from rouse.state import acts
from rouse.state.nudges import DRIFTED, acted_since
from rouse.sweep.ledger import WORKERS, Entry, gives_up, ready
from rouse.sweep.quiet import QuietHours
from rouse.sweep.stamping import already_stamped
from rouse.sweep.wake import NOTICES


@dataclass
class Step:
    """One thing a tick will do.

    ``new``: make a wake for a due record and send it (or hold it);
    ``send``: resend a wake the ledger owes; ``hold``: keep it through quiet
    hours; ``give_up``: 24h of failures, write it as a nudge file and stamp;
    ``withdraw``: its record moved or ended first; ``confirm``: its stamp
    landed but the ledger missed it (a crash); ``restamp``: delivered but the
    record could not be stamped yet.

    Wakes queued for a fleet's delivery workers (``sink = 'workers'``) are
    theirs to send while this sweeper is ``--plan-only``: ``release`` hands one
    held through quiet hours back to them when the hours end. A sweeper that
    sends itself sends them (``send``: it takes one back unless a worker holds
    a live claim on it), so none waits for workers that never come. ``nudge``:
    write the nudge file of one a worker gave up on after 24h, then stamp
    (without a decision: its record moved, ended or went first; nothing to write).
    """

    action: str
    decision: Decision | None = None
    entry: Entry | None = None
    why: str = ""


@dataclass
class Plan:
    steps: list[Step] = field(default_factory=list)
    next_at: datetime | None = None  # the next instant something known comes due


def plan(
    tree: Tree,
    now: datetime,
    entries: list[Entry],
    *,
    quiet: QuietHours | None = None,
    sends: bool = True,
    done: acts.Acts | None = None,
) -> Plan:
    """What a tick at ``now`` does: a pure function of the tree, the ledger and now.

    ``quiet``: the quiet hours that hold this sweeper's sink (None: none, or a
    sink never held). ``sends``: this sweeper sends wakes itself (False:
    ``--plan-only``, the delivery workers send them). ``done``: when rouse's
    verbs last acted on each record (``rouse.state.acts``), to tell an answered wake.
    """
    scene = _Scene(tree, now, quiet is not None and quiet.holds(now), sends, done or {})
    quiet_now = scene.quiet_now
    result = Plan()
    upcoming: list[datetime] = []
    owed: set[str] = set()
    for entry in entries:
        owed.add(entry.wake.path)
        step = scene.step(entry)
        if step is not None:
            result.steps.append(step)
        elif (
            entry.state == "pending"
            and (sends or entry.sink != WORKERS)  # a worker's retry is the worker's to time
            and entry.next_attempt is not None
            and not quiet_now
        ):
            upcoming.append(entry.next_attempt)
    # the same order as clock.due(): earliest due first
    due = sorted(
        (d for d in scene.decided.values() if d.is_due),
        key=lambda d: (d.due_at or now, d.record.dir),
    )
    result.steps += [Step("new", d) for d in due if d.record.dir not in owed]
    upcoming += [d.due_at for d in scene.decided.values() if d.due_at and d.due_at > now]
    waiting = any(s.action in ("new", "hold") for s in result.steps)
    if quiet_now and quiet is not None and (waiting or any(e.state == "held" for e in entries)):
        upcoming.append(quiet.ends_after(now))
    result.next_at = min(upcoming) if upcoming else None
    return result


@dataclass
class _Scene:
    """What each owed wake's step is planned against: the tree and the clock at ``now``."""

    tree: Tree
    now: datetime
    quiet_now: bool
    sends: bool
    done: acts.Acts

    def __post_init__(self) -> None:
        self.decided = {d.record.dir: d for d in clock.decisions(self.tree, self.now)}
        self.untrackable = {p.path for p in self.tree.untrackable}

    def step(self, entry: Entry) -> Step | None:
        now = self.now
        found = self.tree.records.get(entry.wake.path)
        record = found if found is not None and found.rel == entry.wake.file else None
        if record is None and entry.wake.file in self.untrackable:
            return None  # a bad file is skipped, not given up on: try again next tick
        decision = self.decided[record.dir] if record is not None else None
        queued = entry.sink == WORKERS
        if entry.state == "delivered" or (entry.state == "given_up" and not queued):
            return Step("restamp", decision, entry)
        if entry.state == "given_up":  # a worker gave up: the nudge file and the stamp are ours
            if record is None:
                return Step("nudge", None, entry, "its record is gone")
            assert decision is not None
            # (the agent may have moved it and it came due again since: a new wake's, not this)
            made = entry.wake.made_at
            if not decision.is_due or acted_since(record, made, self.done, entry.wake.reason):
                return Step("nudge", None, entry, "its record moved or ended first")
            if already_stamped(record, entry.wake):  # (a crash after the nudge file, say)
                return Step("nudge", None, entry, "its record is stamped for it already")
            return Step("nudge", decision, entry)
        if entry.wake.reason == DRIFTED:
            return self._drift(entry)
        if record is None:
            return Step("withdraw", None, entry, "its record is gone")
        assert decision is not None
        if entry.wake.reason in NOTICES:  # a task's news: owed whether or not it is due
            if gives_up(entry.first_failure, now):
                return Step("give_up", decision, entry)
            sendable = _sendable(entry, now) and not self.quiet_now
            return Step("send", decision, entry) if sendable else None
        if already_stamped(record, entry.wake):
            return Step("confirm", decision, entry)
        if not decision.is_due:
            return Step("withdraw", decision, entry, "its record moved or ended first")
        if gives_up(entry.first_failure, now):
            return Step("give_up", decision, entry)
        return self._owed(decision, entry)

    def _drift(self, entry: Entry) -> Step | None:
        """A note's drift wake the ledger owes: it has no record and no clock (no decision),
        so it is sent as owed, and withdrawn when its note is gone or after 24h of failures
        (the next tick makes it again while the note still drifts)."""
        if not any(note.rel == entry.wake.file for note in self.tree.notes):
            return Step("withdraw", None, entry, "its note is gone")
        if gives_up(entry.first_failure, self.now):
            return Step("withdraw", None, entry, "not delivered for 24h")
        return self._owed(None, entry)

    def _owed(self, decision: Decision | None, entry: Entry) -> Step | None:
        """A wake still owed: held through quiet hours, released to the workers, or sent."""
        if self.quiet_now:
            return Step("hold", decision, entry) if entry.state != "held" else None
        if entry.sink == WORKERS and not self.sends:  # the workers send it: a held one goes back
            return Step("release", decision, entry) if entry.state == "held" else None
        return Step("send", decision, entry) if _sendable(entry, self.now) else None


def _sendable(entry: Entry, now: datetime) -> bool:
    """Sent this tick: cut off in flight, released from quiet hours, or its backoff out."""
    return bool(entry.in_flight) or entry.state == "held" or ready(entry.next_attempt, now)
