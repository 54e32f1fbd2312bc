"""The pack's warnings: what the agent should know is wrong, said last.

Context layers over their budget, a sweeper that stopped, wakes the ledger
still owes, escalations and messages to the owner, a spent run budget, a
stalled fleet queue, state files the pack ignored, untrackable files and
unreadable clock fields.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from pathlib import Path

from rouse.core import statedir
from rouse.core.clockfields import FieldProblem
from rouse.core.timefmt import format_stamp, human_age
from rouse.core.tree import File, Tree
from rouse.state import sweeper as sweepstate
from rouse.trust import fence

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

CONTEXT_BUDGET = 8000
STOPPED_AFTER = timedelta(hours=1)  # or 3 × the sweeper's interval, whichever is longer
GIVEN_UP_SHOWN = timedelta(days=1)
#: Said once by a pack with no stamp key (for the owner: how to sign is theirs to do).
UNVERIFIED = (
    "origins are unverified: no stamp key signs this tree, so each [origin] label is only "
    "what its file claims (the owner can make a key: `rouse stamp --init-key`)"
)


def _context_chars(layers: Mapping[str, Any]) -> int:
    entries = [layers["persona"]] if layers["persona"] else []
    entries += layers["beliefs"] + layers["motivations"]
    return sum(len(e["body"] or "") for e in entries)


def _sweeper_warnings(root: Path, now: datetime) -> list[str]:
    """A sweeper that has stopped ticking, and wakes the ledger still owes."""
    warnings = []
    last, interval = sweepstate.last_tick(root)
    if last is not None:
        allowed = max(STOPPED_AFTER, timedelta(seconds=3 * (interval or 0)))
        if now - last > allowed:
            warnings.append(
                f"the sweeper has stopped: its last tick was {human_age(last, now)} "
                f"({format_stamp(last)}); wakes are not being delivered — restart `rouse sweep`"
            )
    damaged = sweepstate.ledger_problem(root)
    if damaged is not None:
        warnings.append(damaged)
    owed = sweepstate.undelivered_counts(root, since=now - GIVEN_UP_SHOWN)
    if owed["pending"]:
        warnings.append(f"{owed['pending']} wake(s) not delivered yet (retrying) — `rouse log`")
    if owed["given_up"]:
        warnings.append(
            f"{owed['given_up']} wake(s) given up after 24h of failed delivery in the last "
            "day, written as nudge files instead — `rouse log`"
        )
    told = sweepstate.escalation_counts(root, since=now - GIVEN_UP_SHOWN)
    if told["delivered"]:
        warnings.append(
            f"{told['delivered']} record(s) escalated to the owner in the last day: woken "
            "again and again without moving — `rouse log`"
        )
    if told["pending"]:
        warnings.append(f"{told['pending']} escalation(s) to the owner not delivered yet")
    if told["given_up"]:
        warnings.append(
            f"{told['given_up']} escalation(s) to the owner given up after 24h of failed "
            "delivery in the last day: the owner was not reached — `rouse log`"
        )
    tells = sweepstate.tell_counts(root, since=now - GIVEN_UP_SHOWN)
    if tells["pending"]:
        warnings.append(
            f"{tells['pending']} message(s) to the owner (rouse tell) not delivered yet: the "
            "sweeper sends them at its next tick — `rouse log`"
        )
    if tells["waiting"]:
        warnings.append(
            f"{tells['waiting']} message(s) to the owner wait: the sweeper has no channel for "
            "them (it needs --notify SINK or --channel NAME=SINK) — `rouse log`"
        )
    if tells["given_up"]:
        warnings.append(
            f"{tells['given_up']} message(s) to the owner given up after 24h of failed "
            "delivery in the last day, written as nudge files: reach the owner another way"
        )
    spent = sweepstate.run_budget_spent(root, now)
    if spent is not None:
        warnings.append(
            f"the agent run budget ({spent['budget']}) is spent: wakes wait until "
            f"{format_stamp(spent['until'])} — `rouse log`"
        )
    stalled = sweepstate.stalled_queue(sweepstate.fleet_queue(root), now)
    if stalled:
        warnings.append(f"{stalled}: nothing is delivering them — `rouse fleet status`")
    return warnings


def problem_lines(
    tree: Tree, problems: list[FieldProblem], origin_of: Callable[[File], str]
) -> list[str]:
    """Unreadable clock fields as a model may see them: a value from a file whose words
    are quoted is quoted too (:func:`rouse.trust.fence.said_of`)."""
    if not problems:
        return []
    files = {record.rel: record for record in tree.records.values()}
    return [
        fence.said_of(p, origin_of(files[p.path]) if p.path in files else "unknown")
        for p in problems
    ]


def walk_warnings(
    tree: Tree,
    unreadable: list[FieldProblem],
    extra: list[str],
    origin_of: Callable[[File], str],
) -> tuple[list[str], list[str]]:
    """What a walk found wrong with the tree: ``extra`` (said first) and, after the rest,
    untrackable files and unreadable clock fields. (A walk that found any of these is
    never kept in the snapshot, so a pack from the snapshot has none to say.)"""
    after = [f"untrackable: {p.render()}" for p in tree.untrackable]
    after += [f"unreadable clock field: {p}" for p in problem_lines(tree, unreadable, origin_of)]
    return list(extra), after


def standing_warnings(
    layers: Mapping[str, Any], unverified: bool, walked: tuple[list[str], list[str]]
) -> tuple[list[str], list[str]]:
    """The warnings the tree itself gives, those said before :func:`live_warnings` (the
    walk's first, then the context layers' size) and those said after (the walk's, and
    with ``unverified`` — no stamp key — that the origins are only what the files
    claim)."""
    before, after = list(walked[0]), list(walked[1])
    size = _context_chars(layers)
    if size > CONTEXT_BUDGET:
        before.append(
            f"context layers are {size:,} characters (budget {CONTEXT_BUDGET:,}): "
            "merge or retire beliefs and motivations"
        )
    if unverified:
        after.append(UNVERIFIED)
    return before, after


def live_warnings(root: Path, now: datetime) -> list[str]:
    """The warnings read afresh at every pack: the sweeper's and the ledger's, and state
    files the pack ignored."""
    warnings = _sweeper_warnings(root, now)
    warnings += [f"{p}; the pack ignored it" for p in statedir.quick_problems(root)]
    return warnings
