"""``rouse status``: the tree's counts per level, the sweeper, and the ledger.

With a fleet's ledger (``rouse status --ledger DSN``) the counts are this
tree's rows in it, and the lease says which sweeper of the tree's clones leads.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

from rouse.cache.counts import tasks_of, tree_counts
from rouse.cache.plans import survey
from rouse.core.timefmt import format_stamp, iso_stamp
from rouse.core.tree import Tree, walk
from rouse.state import locks
from rouse.state import sweeper as sweepstate

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from rouse.sweep.ledger import Ledger


def _local(text: str) -> datetime:
    """The naive local time an :func:`~rouse.core.timefmt.iso_stamp` string names."""
    return datetime.fromisoformat(text).astimezone().replace(tzinfo=None)


def status(tree: Tree, now: datetime) -> dict[str, Any]:
    """Counts per level, what is due, and what was skipped (``rouse status --json``)."""
    # (plans, where the walk cache kept them)
    return status_of(tree.root, tree_counts(tree, survey(tree, now).count), now)


def status_of(
    root: Path,
    counts: dict[str, Any],
    now: datetime,
    ledger: Ledger | None = None,
    leader: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """:func:`status` from the tree's counts (:func:`rouse.cache.counts.tree_counts`, as
    the snapshot may keep them): the sweeper's, the ledger's and the worker's side read now.

    ``ledger``: read the counts there (a fleet's) instead of the tree's SQLite
    file; it adds ``fleet`` (the tree's id, the database, and ``leader``: the
    lease row given, or None when no sweeper has led the tree yet).
    """
    data = {
        "tree": str(root),
        "now": iso_stamp(now),
        **{k: counts[k] for k in ("levels", "due", "context", "notes", "untrackable", "symlinks")},
        **sweeper_status(root, ledger),
        "tasks": _tasks(root, counts["running"], counts["pending"]),
    }
    if ledger is not None:
        data["fleet"] = {"tree": ledger.tree, "ledger": ledger.where, "leader": _lease(leader)}
    return data


def _lease(found: dict[str, Any] | None) -> dict[str, Any] | None:
    """The lease row as ``--json`` shows it (ISO times)."""
    if found is None:
        return None
    return {
        **found,
        "since": iso_stamp(found.get("since")),
        "expires": iso_stamp(found.get("expires")),
    }


def sweeper_status(root: Path, book: Ledger | None = None) -> dict[str, Any]:
    """The last tick, the sweeper lock's holder, and the ledger's counts (``book``'s if given)."""
    tick, interval = sweepstate.last_tick(root)
    holder = locks.holder(root)
    if holder is not None:
        holder["interval"] = interval
        holder["since"] = _since(holder.get("since"))
    # (sweepstate's read-only counts: the ledger's own, without loading the ledger package)
    counts = book.counts() if book is not None else sweepstate.counts(root)
    return {
        "last_tick": iso_stamp(tick),
        "sweeper": holder,
        "ledger": {key: counts[key] for key in ("pending", "held", "delivered", "given_up")},
        # messages to the owner (rouse tell): always in the tree's own SQLite ledger
        "tells": sweepstate.tell_counts(root),
    }


def _since(value: object) -> str | None:
    """The lock's ``since`` (local seconds, as the sweeper writes it) in ISO, or None."""
    if not isinstance(value, str):
        return None
    try:
        return iso_stamp(datetime.strptime(value, sweepstate.TIME_FORMAT))
    except ValueError:
        return None


#: How many of the sweeper's intervals may pass without a tick before ``--check`` fails.
LATE_AFTER_INTERVALS = 3
#: The allowance when the interval is unknown (``sweep --once`` without ``--every``).
LATE_UNKNOWN_INTERVAL = timedelta(hours=1)
#: Wakes given up within this window fail ``--check`` (as the pack warns of them).
GIVEN_UP_WINDOW = timedelta(days=1)


def _tasks(root: Path, running: list[dict[str, Any]], pending: int) -> dict[str, Any]:
    """The task worker's side: running tasks (stuck: no live claim holds one), pending
    ones, those held for trust, and the worker's last round (``rouse work``)."""
    worker = locks.work_state(root)
    return {
        "running": [
            {**item, "stuck": not locks.claim_live(root, item["path"])} for item in running
        ],
        "pending": pending,
        "held": list(worker.get("held") or []) if worker else [],
        "worker": (
            None
            if worker is None
            else {k: worker.get(k) for k in ("last_round", "pid", "alive", "jobs", "waiting")}
        ),
    }


def task_problems(tree: Tree) -> list[str]:
    """``--check``'s lines about tasks: one left running with no live run, one held."""
    found = _tasks(tree.root, *tasks_of(tree))
    problems = [
        f"{item['record']} is stuck: running (attempt {item['attempts'] or '?'}, worker "
        f"{item['worker'] or '?'}) but no live run holds it — `rouse work` hands it back"
        for item in found["running"]
        if item["stuck"]
    ]
    problems += [f"a task waits for the owner: {why}" for why in found["held"]]
    return problems


def check(
    root: Path,
    now: datetime,
    *,
    ledger: Ledger | None = None,
    leader: dict[str, Any] | None = None,
    queue: dict[str, Any] | None = None,
) -> list[str]:
    """``rouse status --check``: one line per reason a monitor should wake a human.

    Empty when all is well. Fails when the last tick is older than
    ``LATE_AFTER_INTERVALS`` intervals (or no sweeper ever ticked), when a
    wake was given up in the last day, when a message to the owner waits for a
    channel or was given up in the last day, when a run budget is spent, or when
    wakes have waited for delivery workers longer than
    ``sweepstate.QUEUED_TOO_LONG`` with no live worker. With a fleet's
    ``ledger``: given-up wakes are counted there, the workers' ``queue`` is the
    database's (:func:`rouse.fleet.workers.queue_state`; else the one the
    fleet sweeper noted at the last tick), and it also fails when no sweeper of
    the tree holds the lease (``leader``).
    """
    problems: list[str] = []
    tick, interval = sweepstate.last_tick(root)
    if tick is None:
        problems.append(f"no sweeper has ticked {root} yet: start `rouse sweep`")
    else:
        allowed = (
            timedelta(seconds=LATE_AFTER_INTERVALS * interval)
            if interval
            else LATE_UNKNOWN_INTERVAL
        )
        if now - tick > allowed:
            if interval:
                every = f"{LATE_AFTER_INTERVALS} intervals of {interval:g}s"
            else:  # a --once without --every records none
                hours = LATE_UNKNOWN_INTERVAL.total_seconds() / 3600
                every = f"{hours:g}h (its interval is unknown: give `sweep --once` --every S)"
            problems.append(
                f"the sweeper is late: its last tick was at {format_stamp(tick)}, "
                f"more than {every} before {format_stamp(now)}"
            )
    if ledger is not None:
        given_up = ledger.given_up_since(now - GIVEN_UP_WINDOW)
        if leader is None or not leader["live"]:
            problems.append(
                f"no sweeper leads this tree in the fleet ({_lapsed(leader)}): "
                f"start `rouse sweep --ledger …` on one of its clones"
            )
    else:
        given_up = sweepstate.undelivered_counts(root, since=now - GIVEN_UP_WINDOW)["given_up"]
    if given_up:
        problems.append(
            f"{given_up} wake(s) given up after 24h of failed delivery in the last day "
            "(written as nudge files instead): `rouse log`"
        )
    problems += tell_problems(root, now)
    stalled = sweepstate.stalled_queue(
        queue if ledger is not None else sweepstate.fleet_queue(root), now
    )
    if stalled:
        problems.append(
            f"{stalled}: nothing is delivering them; start `rouse deliver --ledger … "
            "--sink …` where they should be delivered, or sweep without --plan-only"
        )
    problems += run_budget_problems(root, now)
    problems += task_problems(walk(root))
    return problems


def tell_problems(root: Path, now: datetime) -> list[str]:
    """Messages to the owner that wait for a channel, or were given up in the last day."""
    tells = sweepstate.tell_counts(root, since=now - GIVEN_UP_WINDOW)
    problems = []
    if tells["waiting"]:
        problems.append(
            f"{tells['waiting']} message(s) to the owner (rouse tell) wait: the sweeper has no "
            "channel for them (give it --notify SINK or --channel NAME=SINK)"
        )
    if tells["given_up"]:
        problems.append(
            f"{tells['given_up']} message(s) to the owner given up after 24h of failed "
            "delivery in the last day (written as nudge files instead): `rouse log`"
        )
    return problems


def _lapsed(leader: dict[str, Any] | None) -> str:
    if leader is None:
        return "none ever has"
    return (
        f"the lease of {leader['host']} pid {leader['pid']} lapsed at "
        f"{format_stamp(leader['expires'])}"
    )


def run_budget_problems(root: Path, now: datetime) -> list[str]:
    """A line when the agent-run budget (``sweep --max-runs``) is spent at ``now``."""
    spent = sweepstate.run_budget_spent(root, now)
    if spent is None:
        return []
    return [
        f"the run budget ({spent['budget']}) is spent: wakes wait for agent runs until "
        f"{format_stamp(spent['until'])} (raise --max-runs, or answer them by hand)"
    ]


def status_lines(data: dict[str, Any]) -> list[str]:
    """The text of ``rouse status``, from :func:`status`'s data (local stamps, not ISO)."""
    lines = [f"tree: {data['tree']}", f"now: {format_stamp(_local(data['now']))}"]
    for kind, counts in data["levels"].items():
        lines.append(f"{kind}: {counts['open']} open of {counts['total']}")
    lines.append(f"due now: {data['due']}")
    lines += task_lines(data.get("tasks") or {})
    lines.append(f"context files: {data['context']}, notes: {data['notes']}")
    if data["untrackable"] or data["symlinks"]:
        lines.append(f"skipped: {data['untrackable']} untrackable, {data['symlinks']} symlinks")
    tick = data["last_tick"]
    lines.append(
        f"last tick: {format_stamp(_local(tick)) if tick else 'never (no sweeper has run)'}"
    )
    sweeper = data["sweeper"]
    if sweeper is not None:
        every = f", every {sweeper['interval']:g}s" if sweeper.get("interval") else ""
        state = "running" if sweeper["running"] else "not running (last"
        close = "" if sweeper["running"] else ")"
        since = sweeper["since"]
        since = _local(since).strftime(sweepstate.TIME_FORMAT) if since else "an unknown time"
        lines.append(f"sweeper: {state} pid {sweeper['pid']} since {since}{close}{every}")
    ledger = data["ledger"]
    lines.append(
        f"ledger: {ledger['pending']} pending, {ledger.get('held', 0)} held, "
        f"{ledger['delivered']} delivered, {ledger['given_up']} given up"
    )
    tells = data.get("tells") or {}
    if any(tells.values()):
        lines.append(
            f"tells to the owner: {tells['pending']} pending, {tells['waiting']} waiting for "
            f"a channel, {tells['delivered']} delivered, {tells['given_up']} given up"
        )
    fleet = data.get("fleet")
    if fleet is not None:
        lines.append(f"fleet: tree {fleet['tree']} in {fleet['ledger']}")
        lines.append(f"leader: {leader_line(fleet['leader'])}")
    return lines


def task_lines(tasks: dict[str, Any]) -> list[str]:
    """The task worker's part of ``rouse status``."""
    lines = []
    for item in tasks.get("running", []):
        stuck = " — STUCK: no live run holds it" if item["stuck"] else ""
        lines.append(
            f"running: {item['record']} since {item['started'] or '?'} (attempt "
            f"{item['attempts'] or '?'}, {item['worker'] or '?'}){stuck}"
        )
    lines += [f"held: {why}" for why in tasks.get("held", [])]
    worker = tasks.get("worker")
    if worker is not None:
        alive = "running" if worker["alive"] else "not running"
        waits = f"; {worker['waiting']}" if worker.get("waiting") else ""
        lines.append(
            f"task worker: {alive} pid {worker['pid']}, last round {worker['last_round']}, "
            f"{tasks.get('pending', 0)} task(s) pending{waits}"
        )
    return lines


def leader_line(lease: dict[str, Any] | None) -> str:
    """Who leads the tree, from the lease row as ``--json`` shows it."""
    if lease is None:
        return "none yet (no sweeper has swept this tree with the fleet's ledger)"
    since = format_stamp(_local(lease["since"]))
    until = format_stamp(_local(lease["expires"]))
    who = f"{lease['host']} pid {lease['pid']} (token {lease['token']})"
    if lease["live"]:
        return f"{who} since {since}, lease until {until}"
    return f"none: the lease of {who} lapsed at {until}"
