"""One view of every tree: ``rouse fleet status`` over the database, and what the views share.

Everything here reads: the ``trees`` the sweepers report, their ``leaders``,
the wakes in the ledger's ``outbox``, the delivery ``workers`` (:mod:`rouse.fleet.workers`)
and the mirror (:mod:`rouse.fleet.mirror`). Each view returns plain objects
with a ``to_json()`` (ISO 8601 times with the offset) and a ``*_lines``
rendering for people. ``rouse fleet due`` is :mod:`rouse.fleet.due`'s,
``rouse fleet recall`` :mod:`rouse.fleet.recall`'s.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from rouse.core.errors import UsageError
from rouse.core.timefmt import format_stamp, human_age, iso_stamp
from rouse.fleet.lease import lease_row
from rouse.fleet.pg import PgDatabase, local_time, only_trees
from rouse.fleet.pg_schema import migrate
from rouse.fleet.workers import WorkerRow, listed
from rouse.pack.views import clock_time
from rouse.state.ledgerschema import WAKE_STATES
from rouse.state.sweeper import stamp_or_none

#: How many characters of a tree id the text views show (``--tree`` takes any unique start).
SHORT_ID = 8


def open_fleet(dsn: str) -> PgDatabase:
    """The fleet's database, its schema brought up to date (a newer one is refused)."""
    db = PgDatabase(dsn, application="rouse fleet")
    try:
        migrate(db, db.where)
    except BaseException:
        db.close()
        raise
    return db


def short(tree: str) -> str:
    return tree[:SHORT_ID]


# -- which trees ------------------------------------------------------------------

_ALL_TREES = (
    "SELECT tree FROM trees UNION SELECT tree FROM mirror_state "
    "UNION SELECT tree FROM leaders UNION SELECT tree FROM outbox"
)


def pick_trees(db: PgDatabase, given: list[str] | None) -> list[str] | None:
    """The tree ids ``--tree`` names (each an id or a unique start of one); None for all."""
    if not given:
        return None
    known = [str(row["tree"]) for row in db.execute(_ALL_TREES).fetchall()]
    chosen: list[str] = []
    for text in given:
        wanted = text.strip().lower()
        matches = [tree for tree in known if tree == wanted] or [
            tree for tree in known if wanted and tree.startswith(wanted)
        ]
        if not matches:
            raise UsageError(
                f"no tree {text!r} in the fleet at {db.where}: `rouse fleet status` lists them"
            )
        if len(matches) > 1:
            raise UsageError(
                f"--tree {text!r} is the start of {len(matches)} trees: give more of the id"
            )
        if matches[0] not in chosen:
            chosen.append(matches[0])
    return chosen


# -- status -----------------------------------------------------------------------


@dataclass
class TreeStatus:
    """One tree as the fleet sees it."""

    tree: str
    root: str
    host: str
    last_tick: datetime | None
    last_tick_by: str | None
    leader: dict[str, Any] | None
    wakes: dict[str, int]
    files: int | None
    skipped: int | None
    synced_at: datetime | None
    now: datetime  # the database's clock, which leases are measured by
    #: wakes queued for delivery workers (pending, ``sink = 'workers'``) and the oldest's stamp
    queued: int = 0
    oldest_queued: datetime | None = None
    #: the delivery workers that serve this tree (live or not)
    workers: tuple[WorkerRow, ...] = ()

    @property
    def live_workers(self) -> int:
        return sum(worker.live for worker in self.workers)

    def to_json(self) -> dict[str, Any]:
        leader = None
        if self.leader is not None:
            leader = dict(self.leader)
            leader["since"] = iso_stamp(leader["since"])
            leader["expires"] = iso_stamp(leader["expires"])
        return {
            "tree": self.tree,
            "root": self.root,
            "host": self.host,
            "last_tick": iso_stamp(self.last_tick),
            "last_tick_by": self.last_tick_by,
            "leader": leader,
            "wakes": dict(self.wakes),
            "queued_for_workers": {
                "count": self.queued,
                "oldest": iso_stamp(self.oldest_queued),
            },
            "workers": [worker.to_json() for worker in self.workers],
            "mirror": None
            if self.synced_at is None
            else {
                "files": self.files,
                "skipped": self.skipped,
                "synced_at": iso_stamp(self.synced_at),
            },
        }


def status(db: PgDatabase, trees: list[str] | None = None) -> list[TreeStatus]:
    """Every tree (or those named): who ticked, who leads, the ledger's counts, the mirror."""
    where, params = only_trees(trees, "ids.tree")
    rows = db.execute(
        f"WITH ids AS ({_ALL_TREES}) "
        "SELECT ids.tree, t.root AS t_root, t.host AS t_host, t.last_tick, t.last_tick_by, "
        "m.root AS m_root, m.host AS m_host, m.files, m.skipped, m.synced_at, "
        "l.holder, l.host AS l_host, l.pid, l.token, l.since, l.expires, "
        "l.expires > now() AS live, now() AS db_now "
        "FROM ids LEFT JOIN trees t ON t.tree = ids.tree "
        "LEFT JOIN mirror_state m ON m.tree = ids.tree "
        f"LEFT JOIN leaders l ON l.tree = ids.tree WHERE TRUE{where}",
        params,
    ).fetchall()
    counts, queued = _outbox_counts(db, trees)
    every_worker = listed(db)
    found = [
        TreeStatus(
            tree=row["tree"],
            root=row["t_root"] or row["m_root"] or "",
            host=row["t_host"] or row["m_host"] or "",
            last_tick=row["last_tick"],
            last_tick_by=row["last_tick_by"],
            leader=lease_row(row, "l_host", local=False),
            wakes=counts.get(row["tree"], dict.fromkeys(WAKE_STATES, 0)),
            files=row["files"],
            skipped=row["skipped"],
            synced_at=row["synced_at"],
            now=row["db_now"],
            queued=queued.get(row["tree"], (0, None))[0],
            oldest_queued=queued.get(row["tree"], (0, None))[1],
            workers=tuple(w for w in every_worker if w.serves(row["tree"])),
        )
        for row in rows
    ]
    return sorted(found, key=lambda s: (s.root, s.host, s.tree))


def _outbox_counts(
    db: PgDatabase, trees: list[str] | None
) -> tuple[dict[str, dict[str, int]], dict[str, tuple[int, datetime | None]]]:
    """Each tree's wakes by state, and its messages waiting for workers (count, oldest)."""
    counts: dict[str, dict[str, int]] = {}
    where, params = only_trees(trees, "tree")
    for row in db.execute(
        f"SELECT tree, state, count(*) AS n FROM outbox WHERE kind = 'wake'{where} "
        "GROUP BY tree, state",
        params,
    ):
        counts.setdefault(row["tree"], dict.fromkeys(WAKE_STATES, 0))[row["state"]] = int(row["n"])
    queued: dict[str, tuple[int, datetime | None]] = {}
    for row in db.execute(
        "SELECT tree, count(*) AS n, min(made_at) AS oldest FROM outbox "
        f"WHERE sink = 'workers' AND state = 'pending'{where} GROUP BY tree",
        params,
    ):
        queued[row["tree"]] = (int(row["n"]), stamp_or_none(row["oldest"]))
    return counts, queued


def _age(value: datetime | None, now: datetime) -> str:
    local, at = local_time(value), local_time(now)
    assert local is not None and at is not None
    return f"{human_age(local, at)} ({clock_time(local, at)})"


def status_lines(found: list[TreeStatus]) -> list[str]:
    """``rouse fleet status``: one line per tree."""
    lines = []
    for item in found:
        where = item.root or "(root unknown)"
        if item.host:
            where += f" on {item.host}"
        parts = [short(item.tree), where]
        if item.last_tick is not None:
            by = f" by {item.last_tick_by}" if item.last_tick_by else ""
            parts.append(f"ticked {_age(item.last_tick, item.now)}{by}")
        else:
            parts.append("no tick reported")
        leader = item.leader
        if leader is None:
            parts.append("no leader")
        elif leader["live"]:
            parts.append(f"led by {leader['holder']} until {_age(leader['expires'], item.now)}")
        else:
            parts.append(
                f"no leader (the lease of {leader['holder']} ran out "
                f"{_age(leader['expires'], item.now)})"
            )
        wakes = item.wakes
        parts.append(
            f"wakes {wakes['pending']} pending, {wakes['held']} held, "
            f"{wakes['delivered']} delivered, {wakes['given_up']} given up"
        )
        if item.queued:
            since = f" since {format_stamp(item.oldest_queued)}" if item.oldest_queued else ""
            live = item.live_workers
            serving = f"{live} live worker(s)" if live else "no live worker"
            parts.append(f"{item.queued} queued for workers{since}, {serving}")
        if item.synced_at is None:
            parts.append("not mirrored")
        else:
            skipped = f", {item.skipped} skipped" if item.skipped else ""
            parts.append(
                f"mirror {item.files:,} files{skipped}, synced {_age(item.synced_at, item.now)}"
            )
        lines.append("  ".join(parts))
    return lines


def workers(db: PgDatabase, trees: list[str] | None = None) -> list[WorkerRow]:
    """The delivery workers remembered (those serving the trees named, if any): live first."""
    found = listed(db)
    if trees is None:
        return found
    return [worker for worker in found if any(worker.serves(tree) for tree in trees)]


def worker_lines(found: list[WorkerRow], now: datetime) -> list[str]:
    """``rouse fleet status``'s workers: one line each, after the trees.

    ``now`` is the database's clock (the rows' times are on it)."""
    lines = []
    for worker in found:
        serves = (
            "every tree"
            if worker.trees is None
            else "trees " + ", ".join(short(tree) for tree in worker.trees)
        )
        if worker.live:
            state = f"live, seen {_age(worker.last_seen, now)}"
        elif worker.stopped is not None:
            state = f"stopped {_age(worker.stopped, now)}"
        else:
            state = f"gone: last seen {_age(worker.last_seen, now)}"
        claim = (
            f"last claim {_age(worker.last_claim, now)}, {worker.claimed:,} wake(s) claimed"
            if worker.last_claim is not None
            else "no claim yet"
        )
        lines.append(
            "  ".join(
                (
                    f"worker {worker.host} pid {worker.pid}",
                    state,
                    claim,
                    f"started {_age(worker.started, now)}",
                    f"{serves} via {worker.sink}",
                    worker.holder,
                )
            )
        )
    return lines


def database_now(db: PgDatabase) -> datetime:
    """The database's clock (worker and lease times are on it)."""
    value: datetime = db.execute("SELECT now() AS now").fetchone()["now"]
    return value
