"""The sweeper's last tick, the fleet's queue, the run budget, and what the ledger still owes.

``.rouse/sweep.json`` records the last tick's ``now`` and the sweeper's
interval, so the pack can warn when a sweeper has stopped ticking.
``.rouse/fleet.json`` is what a fleet sweeper learned at that tick about the
wakes it queued for delivery workers and the workers alive to take them, so
the pack and ``status --check`` can say when nothing is delivering them
without ever reaching the database. The ledger
counts here open ``.rouse/ledger.sqlite3`` read-only and never create it.
Light to import: the pack and ``status`` call these on every run. The locks a
sweeper or a task's run holds for its life, who holds them, and the task
worker's last round are :mod:`rouse.state.locks` (which the pack never loads).
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

from rouse.core import layout
from rouse.core.statedir import path_problem
from rouse.state.files import save_json
from rouse.state.ledgerschema import ESCALATION_STATES, TELL_STATES, WAKE_STATES
from rouse.state.shapes import BUDGET, FLEET, SWEEP

TYPE_CHECKING = False
if TYPE_CHECKING:
    import sqlite3
    from typing import Any

SWEEP_LOCK = f"{layout.STATE_DIR}/sweep.lock"
STATE_FILE = f"{layout.STATE_DIR}/sweep.json"
#: a fleet sweeper's last look at its tree's queue for delivery workers (see fleet_queue)
FLEET_FILE = f"{layout.STATE_DIR}/fleet.json"
#: wakes queued for workers longer than this, with no live worker, are reported
QUEUED_TOO_LONG = timedelta(minutes=5)
LEDGER = f"{layout.STATE_DIR}/ledger.sqlite3"
TIME_FORMAT = "%Y-%m-%d %H:%M:%S"
#: The longest interval a sweeper ticks at (``rouse sweep --every``), in seconds: one
#: day. A longer one in ``sweep.json`` is believed as this, so a late sweeper is late.
LONGEST_INTERVAL = 86400.0
#: (under .rouse/) held for an agent run's life (sweep --run): one run at a time
RUN_LOCK = "run.lock"
#: (under .rouse/) written while the run budget (--max-runs) is spent: until when
BUDGET_FILE = "runs/budget.json"
#: (under .rouse/) the task worker's last round: when, its pid, what it holds for trust
WORK_STATE = "work.json"


def _t(value: datetime) -> str:
    return value.strftime(TIME_FORMAT)


def write_state(
    root: Path,
    now: datetime,
    interval: float | None,
    sink: str,
    channels: dict[str, str] | None = None,
    notify: str | None = None,
) -> None:
    """Record the last tick (its ``now``) and the interval, atomically; ``channels``
    (name → sink) and ``notify`` (the default's sink) say where tells go."""
    path = root / STATE_FILE
    data = {
        "last_tick": _t(now),
        "interval": interval,
        "wall": _t(datetime.now()),
        "pid": os.getpid(),
        "sink": sink,
        "channels": channels or {},
        "notify": notify,
    }
    save_json(path, data)  # best-effort like every state file: a miss reads as "stopped"


def last_tick(root: Path) -> tuple[datetime | None, float | None]:
    """The last tick's ``now`` and the sweeper's interval in seconds (None: unknown),
    never more than :data:`LONGEST_INTERVAL` whatever the file claims."""
    data = SWEEP.read(root / STATE_FILE) or {}
    when = stamp_or_none(data.get("last_tick"))
    if when is None:  # missing, damaged or foreign: unknown
        return None, None
    interval = data.get("interval")
    if not isinstance(interval, int | float):
        return when, None
    return when, min(float(interval), LONGEST_INTERVAL)


# -- the fleet's queue, as the fleet sweeper last saw it ---------------------------


def write_fleet_queue(
    root: Path,
    now: datetime,
    *,
    queued: int,
    oldest: datetime | None,
    live: int,
    seen: datetime | None,
) -> None:
    """Record, for the tick at ``now``: ``queued`` wakes of this tree wait for delivery
    workers (the ``oldest`` made then), ``live`` workers serving it are alive, and one
    was last seen at ``seen`` (local times). Best-effort, like every state file."""
    save_json(
        root / FLEET_FILE,
        {
            "tick": _t(now),
            "queued": queued,
            "oldest": _t(oldest) if oldest is not None else None,
            "live_workers": live,
            "worker_seen": _t(seen) if seen is not None else None,
        },
    )


def stamp_or_none(value: object) -> datetime | None:
    """A stamp of :data:`TIME_FORMAT` as a datetime; None for anything else."""
    if not isinstance(value, str):
        return None
    try:
        return datetime.strptime(value, TIME_FORMAT)
    except ValueError:
        return None


def fleet_queue(root: Path) -> dict[str, Any] | None:
    """The queue for delivery workers as this clone's fleet sweeper saw it at the last tick:
    ``queued``, ``oldest``, ``live`` (workers), ``seen`` (the latest any was seen), ``tick``.

    None unless ``.rouse/fleet.json`` was written at the tick ``sweep.json`` names as the
    last: a later tick without the fleet (or one that could not reach it) makes it moot.
    A damaged or foreign file reads as None.
    """
    data = FLEET.read(root / FLEET_FILE)  # (its shape: whole numbers of wakes and workers)
    if data is None:
        return None
    tick = stamp_or_none(data["tick"])
    last, _ = last_tick(root)
    if tick is None or last is None or tick != last:
        return None
    return {
        "tick": tick,
        "queued": data["queued"],
        "oldest": stamp_or_none(data.get("oldest")),
        "live": data["live_workers"],
        "seen": stamp_or_none(data.get("worker_seen")),
    }


def stalled_queue(queue: dict[str, Any] | None, now: datetime) -> str | None:
    """What to say when wakes have waited for workers longer than :data:`QUEUED_TOO_LONG`
    at ``now`` and no live worker serves the tree (``queue`` as :func:`fleet_queue`
    gives it); None when all is well or unknown."""
    if queue is None or queue["queued"] <= 0 or queue["live"] > 0:
        return None
    oldest = queue["oldest"]
    if oldest is None or now - oldest < QUEUED_TOO_LONG:
        return None
    seen = queue["seen"]
    worker = (
        f"no live worker has been seen since {seen:%Y-%m-%d %H:%M}"
        if seen is not None
        else "no worker has ever been seen"
    )
    return (
        f"{queue['queued']} wake(s) queued for delivery workers since "
        f"{oldest:%Y-%m-%d %H:%M} and {worker}"
    )


# -- the ledger, read-only ------------------------------------------------------


def ledger_problem(root: Path) -> str | None:
    """Why ``.rouse/ledger.sqlite3`` cannot be the tree's ledger (a directory, or a file
    that is not SQLite), or None: missing or fine. Cheap: one lstat and 16 bytes."""
    path = root / LEDGER
    try:
        info = os.lstat(path)
    except OSError:
        return None
    if stat.S_ISDIR(info.st_mode):
        why = "is a directory"
    elif not stat.S_ISREG(info.st_mode):
        return None  # a link: statedir's problems say so
    else:
        try:
            with open(path, "rb") as handle:
                head = handle.read(16)
        except OSError:
            return f"{LEDGER} cannot be read: wakes are not being recorded"
        if not head or head == b"SQLite format 3\x00":
            return None
        why = "is not an SQLite database"
    return (
        f"{LEDGER} {why}: no wake can be recorded or delivered — move it aside "
        "(the clock finds what is owed again)"
    )


#: the connection :func:`one_reader` holds open, by tree (its reads share it)
_SHARED: dict[Path, sqlite3.Connection | None] = {}


@contextlib.contextmanager
def one_reader(root: Path) -> Iterator[None]:
    """Within it, every ledger read of ``root`` here shares one connection (the
    pack's warnings make five: each one opening SQLite costs ~1.5 ms)."""
    if root in _SHARED:
        yield
        return
    with _connect(root) as db:
        _SHARED[root] = db
        try:
            yield
        finally:
            del _SHARED[root]


@contextlib.contextmanager
def ledger_reader(root: Path) -> Iterator[sqlite3.Connection | None]:
    """A connection to an existing ledger, or None; never creates the file."""
    if root in _SHARED:
        yield _SHARED[root]
        return
    with _connect(root) as db:
        yield db


@contextlib.contextmanager
def _connect(root: Path) -> Iterator[sqlite3.Connection | None]:
    path = root / LEDGER
    if path_problem(root, "ledger.sqlite3") is not None or not path.is_file():
        yield None  # missing, or behind a link: no ledger to read
        return
    import sqlite3  # only once a ledger exists

    db: sqlite3.Connection | None = None
    for mode in ("rw", "ro"):
        try:
            db = sqlite3.connect(f"{path.as_uri()}?mode={mode}", uri=True, timeout=5)
            db.execute("SELECT 1 FROM sqlite_master LIMIT 1")
            break
        except sqlite3.Error:
            if db is not None:
                db.close()
            db = None
    if db is None:
        yield None
        return
    db.row_factory = sqlite3.Row
    try:
        yield db
    finally:
        db.close()


def counts(root: Path) -> dict[str, int]:
    """Wakes by state (all time): pending, held, delivered, given_up, withdrawn."""
    return _by_state(root, "wake", (WAKE_STATES, ()), None)


def vouched_nudges(root: Path, receipts: list[str]) -> dict[str, tuple[str, str, str, int]]:
    """Of these nudge files (tree-relative paths), the ones the ledger says rouse wrote.

    A nudge file is the file sink's receipt (or a given-up wake's or tell's); the ledger
    row keeps the wake as it was made. Returns receipt → (the record's path,
    the wake's first line, its reason, its nudge number) from the ledger, never
    from the file, so a file written or edited by hand vouches for nothing.
    """
    found: dict[str, tuple[str, str, str, int]] = {}
    if not receipts:
        return found
    with ledger_reader(root) as db:
        if db is None:
            return found
        for start in range(0, len(receipts), 500):
            chunk = receipts[start : start + 500]
            marks = ",".join("?" * len(chunk))
            try:  # a wake's (delivered or given up), or a given-up message to the owner's
                rows = db.execute(
                    "SELECT kind, receipt, path, record, wake, reason, nudge FROM outbox "
                    f"WHERE receipt IN ({marks}) AND ((kind = 'wake' AND state IN "
                    "('delivered', 'given_up')) OR (kind = 'tell' AND state = 'given_up'))",
                    chunk,
                ).fetchall()
            except Exception:  # sqlite3.Error: a busy or damaged ledger vouches for nothing
                return found
            for row in rows:
                if row["kind"] == "tell":
                    title = f"{row['record']} — a message to the owner could not be delivered"
                    found[row["receipt"]] = (str(row["path"]), title, "tell", 0)
                    continue
                try:
                    text = json.loads(row["wake"])["text"]
                except (ValueError, KeyError, TypeError, RecursionError):  # a damaged row
                    continue
                if isinstance(text, str):
                    first = text.split("\n", 1)[0]
                    found[row["receipt"]] = (
                        str(row["path"]),
                        first,
                        str(row["reason"]),
                        row["nudge"],
                    )
    return found


def undelivered_counts(root: Path, since: datetime | None = None) -> dict[str, int]:
    """Cheap counts for the pack's warnings; never creates the database.

    ``pending``: wakes not delivered yet (new, failing or in flight),
    ``held``: waiting out quiet hours (not a failure), ``given_up``: wakes given
    up after 24h of failures, all time or (with ``since``) given up at or after it.
    """
    return _by_state(root, "wake", (("pending", "held"), ("given_up",)), since)


def _by_state(
    root: Path, kind: str, states: tuple[tuple[str, ...], tuple[str, ...]], since: datetime | None
) -> dict[str, int]:
    """The ``kind`` of messages counted by state: every one in an ``owed`` state, and
    those in an ``ended`` state finished at or after ``since``. Never creates the
    database; a ledger busy, damaged or not migrated yet reads as none."""
    owed, ended = states
    found = dict.fromkeys((*owed, *ended), 0)
    listed = ", ".join(f"'{state}'" for state in owed)  # (rouse's own state names)
    over = ", ".join(f"'{state}'" for state in ended) or "NULL"
    with ledger_reader(root) as db:
        if db is None:
            return found
        try:
            for row in db.execute(
                f"SELECT state, COUNT(*) AS n FROM outbox WHERE kind = ? AND (state IN ({listed}) "
                f"OR (state IN ({over}) AND (? IS NULL OR finished >= ?))) GROUP BY state",
                (kind, *(None if since is None else _t(since),) * 2),
            ):
                found[row["state"]] = row["n"]
        except Exception:  # sqlite3.Error
            pass
    return found


def escalation_counts(root: Path, since: datetime | None = None) -> dict[str, int]:
    """Escalations to the owner (``sweep --escalate``): delivered and given up (at or
    after ``since``), and still pending."""
    return _by_state(root, "escalation", ESCALATION_STATES, since)


def tell_counts(root: Path, since: datetime | None = None) -> dict[str, int]:
    """Messages to the owner (``rouse tell``, a reminder's channel): pending (not sent
    yet, or failing), waiting (the sweeper has no channel for them), delivered and
    given up (at or after ``since``)."""
    return _by_state(root, "tell", TELL_STATES, since)


def run_budget_spent(root: Path, now: datetime) -> dict[str, Any] | None:
    """The run budget (``sweep --max-runs``) when it is spent at ``now``: ``budget``
    (e.g. ``6/day``), ``until`` (when the next run may start) and ``runs``; else None."""
    data = BUDGET.read(root / layout.STATE_DIR / BUDGET_FILE) or {}
    until = stamp_or_none(data.get("until"))
    if until is None or until <= now:
        return None
    return {"budget": str(data.get("budget")), "until": until, "runs": data.get("runs")}
