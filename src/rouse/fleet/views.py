"""One view of every tree: ``rouse fleet status``, ``due`` and ``recall`` over the database.

Everything here reads: the ``trees`` the sweepers report, their ``leaders``,
the ledger's ``wakes``, the delivery ``workers`` (:mod:`rouse.fleet.workers`)
and the mirror (:mod:`rouse.fleet.mirror`). Each view
returns plain objects with a ``to_json()`` (ISO 8601 times with the offset)
and a ``*_lines`` rendering for people.

``due`` decides at query time from the instants the mirror stored, so a record
that passed its due instant since the last sync reads due. ``recall`` ranks as
local recall does: documents matching more of the words first, then by a
weighted rank in which keywords count more than the path, and the path more
than the body.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from rouse.core.clockplan import due_at_time
from rouse.core.errors import UsageError
from rouse.core.header import Header
from rouse.core.timefmt import format_stamp, human_age, iso_stamp
from rouse.core.tree import Record
from rouse.fleet.mirror import TEXT_CONFIG
from rouse.fleet.pg import PgDatabase
from rouse.fleet.pg_schema import migrate
from rouse.fleet.workers import WorkerRow, listed
from rouse.pack import written
from rouse.pack.index import KINDS
from rouse.pack.search import SNIPPET_TOKENS, one_line, query_words
from rouse.pack.views import clock_time, natural_key, when_due
from rouse.sweep.ledger import STATES
from rouse.trust.origins import VERIFIED

#: How many characters of a tree id the text views show (``--tree`` takes any unique start).
SHORT_ID = 8
#: ``ts_rank`` weights, in PostgreSQL's order {D, C, B, A}: body 0.1, path 0.4, keywords 1.
RANK_WEIGHTS = "{0, 0.1, 0.4, 1.0}"
#: Characters of a hit's body the snippet is looked for in.
SNIPPET_SOURCE = 200_000


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


def _local(value: datetime | None) -> datetime | None:
    """An aware instant as the naive local time the rest of rouse uses."""
    return None if value is None else value.astimezone().replace(tzinfo=None)


# -- which trees ------------------------------------------------------------------

_ALL_TREES = (
    "SELECT tree FROM trees UNION SELECT tree FROM mirror_state "
    "UNION SELECT tree FROM leaders UNION SELECT tree FROM wakes"
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


def _only(trees: list[str] | None, column: str) -> tuple[str, tuple[Any, ...]]:
    if trees is None:
        return "", ()
    return f" AND {column} = ANY(?)", (trees,)


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
    oldest_queued: str | None = None
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
                "oldest": iso_stamp(_stamp(self.oldest_queued)),
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
    where, params = _only(trees, "ids.tree")
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
    counts: dict[str, dict[str, int]] = {}
    where, params = _only(trees, "tree")
    for row in db.execute(
        f"SELECT tree, state, count(*) AS n FROM wakes WHERE TRUE{where} GROUP BY tree, state",
        params,
    ):
        counts.setdefault(row["tree"], dict.fromkeys(STATES, 0))[row["state"]] = int(row["n"])
    queued: dict[str, tuple[int, str | None]] = {}
    for row in db.execute(
        "SELECT tree, count(*) AS n, min(made_at) AS oldest FROM wakes "
        f"WHERE sink = 'workers' AND state = 'pending'{where} GROUP BY tree",
        params,
    ):
        queued[row["tree"]] = (int(row["n"]), row["oldest"])
    every_worker = listed(db)
    found = []
    for row in rows:
        leader = None
        if row["holder"] is not None:
            leader = {
                "holder": row["holder"],
                "host": row["l_host"],
                "pid": row["pid"],
                "token": row["token"],
                "since": row["since"],
                "expires": row["expires"],
                "live": bool(row["live"]),
            }
        found.append(
            TreeStatus(
                tree=row["tree"],
                root=row["t_root"] or row["m_root"] or "",
                host=row["t_host"] or row["m_host"] or "",
                last_tick=row["last_tick"],
                last_tick_by=row["last_tick_by"],
                leader=leader,
                wakes=counts.get(row["tree"], dict.fromkeys(STATES, 0)),
                files=row["files"],
                skipped=row["skipped"],
                synced_at=row["synced_at"],
                now=row["db_now"],
                queued=queued.get(row["tree"], (0, None))[0],
                oldest_queued=queued.get(row["tree"], (0, None))[1],
                workers=tuple(w for w in every_worker if w.serves(row["tree"])),
            )
        )
    found.sort(key=lambda s: (s.root, s.host, s.tree))
    return found


def _stamp(text: str | None) -> datetime | None:
    """A ledger stamp (local, to the second) as a datetime; None for none or a bad one."""
    try:
        return datetime.strptime(text, "%Y-%m-%d %H:%M:%S") if text else None
    except ValueError:
        return None


def _age(value: datetime | None, now: datetime) -> str:
    local, at = _local(value), _local(now)
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
            oldest = _stamp(item.oldest_queued)
            since = f" since {format_stamp(oldest)}" if oldest else ""
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


# -- due ----------------------------------------------------------------------------


@dataclass
class DueItem:
    """One mirrored record due at the asked instant."""

    tree: str
    root: str
    host: str
    record_id: str
    type: str
    slug: str
    path: str  # the record's directory, as `rouse due` shows it
    file: str
    reason: str
    due_at: datetime  # naive local
    moved_at: datetime | None
    nudge: int
    origin: str
    verified: str

    def to_json(self) -> dict[str, Any]:
        return {
            "tree": self.tree,
            "root": self.root,
            "host": self.host,
            "record": self.record_id,
            "type": self.type,
            "slug": self.slug,
            "path": self.path,
            "file": self.file,
            "reason": self.reason,
            "due_at": iso_stamp(self.due_at),
            "moved_at": iso_stamp(self.moved_at),
            "nudge": self.nudge,
            "origin": self.origin,
            "verified": self.verified,
        }


def due(
    db: PgDatabase, now: datetime, trees: list[str] | None = None, limit: int | None = None
) -> list[DueItem]:
    """Every mirrored record due at ``now`` (naive local), earliest first, across trees."""
    at = now.astimezone()
    where, params = _only(trees, "m.tree")
    rows = db.execute(
        "SELECT m.tree, m.path, m.kind, m.record, m.record_id, m.slug, m.wake_at, m.review_at, "
        "m.stale_at, m.expires_at, m.nagging, m.fires_out, m.nudge, m.moved_at, m.origin, "
        "m.verified, coalesce(t.root, s.root, '') AS root, coalesce(t.host, s.host, '') AS host "
        "FROM mirror_files m LEFT JOIN mirror_state s ON s.tree = m.tree "
        "LEFT JOIN trees t ON t.tree = m.tree "
        f"WHERE m.wake_at IS NOT NULL AND m.wake_at <= ?{where}",
        (at, *params),
    ).fetchall()
    found = []
    for row in rows:
        decided = due_at_time(row, at)
        if decided is None:
            continue
        reason, due_at = decided
        local = _local(due_at)
        assert local is not None
        found.append(
            DueItem(
                tree=row["tree"],
                root=row["root"],
                host=row["host"],
                record_id=row["record_id"] or row["record"],
                type=row["kind"],
                slug=row["slug"] or "",
                path=row["record"],
                file=row["path"],
                reason=reason,
                due_at=local,
                moved_at=_local(row["moved_at"]),
                nudge=int(row["nudge"] or 1),
                origin=row["origin"],
                verified=row["verified"],
            )
        )
    found.sort(key=lambda d: (d.due_at, d.root, d.tree, natural_key(d.path)))
    return found if limit is None else found[:limit]


def _decision(item: DueItem, now: datetime) -> Any:
    """A clock decision standing for the row, so the words are `rouse due`'s own."""
    from rouse.core.clock import Decision

    record = Record(item.file, Header(), 0, 0, item.type, item.path)
    decision = Decision(record, now)
    decision.reason, decision.due_at, decision.nudge = item.reason, item.due_at, item.nudge
    decision.moved_at = item.moved_at
    return decision


def due_lines(found: list[DueItem], now: datetime) -> list[str]:
    """``rouse fleet due``'s rows, tab-separated: tree, id, reason, when, path (as `rouse due`)."""
    return [
        "\t".join((short(d.tree), d.record_id, d.reason, when_due(_decision(d, now), now), d.path))
        for d in found
    ]


def due_header(count: int, trees: int, now: datetime) -> str | None:
    if count:
        return None
    return f"nothing is due at {format_stamp(now)} in {trees} mirrored tree(s)"


def mirrored_tree_count(db: PgDatabase, trees: list[str] | None) -> int:
    where, params = _only(trees, "tree")
    row = db.execute(f"SELECT count(*) AS n FROM mirror_state WHERE TRUE{where}", params)
    return int(row.fetchone()["n"])


# -- recall -------------------------------------------------------------------------


@dataclass
class FleetHit:
    """One file recalled from the mirror."""

    tree: str
    root: str
    host: str
    path: str
    kind: str
    origin: str
    verified: str  # the origin reader's verdict on the machine that mirrored it
    keywords: str
    snippet: str
    mtime: datetime
    updated: str | None = None
    words: int = 0
    rank: float = 0.0

    @property
    def origin_verified(self) -> bool:
        return self.verified in VERIFIED

    def to_json(self) -> dict[str, Any]:
        return {
            "tree": self.tree,
            "root": self.root,
            "host": self.host,
            "path": self.path,
            "kind": self.kind,
            "origin": self.origin,
            "verified": self.verified,
            "origin_verified": self.origin_verified,
            "age": iso_stamp(self.mtime),
            "keywords": self.keywords,
            "snippet": self.snippet,
            "updated": self.updated,
        }


#: The configuration a query made only of stopwords is searched with: ``english``
#: drops them all, as local FTS5 does not. The mirror's tsvector is ``english``,
#: so then each file's vector is made on the fly (a scan: such queries are rare).
SIMPLE_CONFIG = "simple"
SIMPLE_VECTOR = (
    "(setweight(to_tsvector('simple', coalesce(m.keywords, '')), 'A') || "
    "setweight(to_tsvector('simple', m.path), 'B') || "
    "setweight(to_tsvector('simple', m.body), 'C'))"
)
#: What ``fleet recall --mode`` can do: the mirror holds words, not vectors.
MIRROR_MODES = ("words",)


def search_config(db: PgDatabase, words: list[str]) -> str:
    """``english``, or ``simple`` when ``english`` would leave nothing of the query."""
    row = db.execute(
        f"SELECT numnode(plainto_tsquery('{TEXT_CONFIG}', ?)) AS n", (" ".join(words),)
    ).fetchone()
    return TEXT_CONFIG if int(row["n"]) else SIMPLE_CONFIG


def check_mode(mode: str | None) -> None:
    """``fleet recall --mode``: words only; the mirror holds no vectors, and says so."""
    if mode is None or mode in MIRROR_MODES:
        return
    raise UsageError(
        f"the fleet's mirror holds no vectors, so fleet recall cannot search by {mode}: "
        "give --mode words (or run rouse recall on a tree itself, which can)"
    )


def recall(
    db: PgDatabase,
    query: str,
    trees: list[str] | None = None,
    limit: int = 10,
    mode: str | None = None,
) -> list[FleetHit]:
    """The best ``limit`` mirrored files for ``query`` across trees, best first."""
    check_mode(mode)
    words = query_words(query)
    config = search_config(db, words)
    vector = "m.search" if config == TEXT_CONFIG else SIMPLE_VECTOR
    one = f"plainto_tsquery('{config}', ?)"
    matched = " + ".join(f"({vector} @@ {one})::int" for _ in words)
    either = " || ".join(one for _ in words)
    where, params = _only(trees, "m.tree")
    rows = db.execute(
        "SELECT best.*, ts_headline(?::regconfig, left(best.body || E'\\n' || best.log, ?), "
        "best.q, ?) AS snippet FROM ("
        "SELECT m.tree, m.path, m.kind, m.origin, m.verified, m.keywords, m.mtime_ns, "
        "m.header->>'updated' AS updated, m.body, m.log, q.q, "
        "coalesce(t.root, s.root, '') AS root, coalesce(t.host, s.host, '') AS host, "
        f"{matched} AS words, ts_rank(?::float4[], {vector}, q.q) AS rank "
        f"FROM (SELECT {either} AS q) q JOIN mirror_files m ON {vector} @@ q.q "
        "LEFT JOIN mirror_state s ON s.tree = m.tree LEFT JOIN trees t ON t.tree = m.tree "
        f"WHERE m.kind = ANY(?){where} "
        "ORDER BY words DESC, rank DESC, m.path, m.tree LIMIT ?) best "
        "ORDER BY best.words DESC, best.rank DESC, best.path, best.tree",
        (
            config,
            SNIPPET_SOURCE,
            f'StartSel="",StopSel="",MaxWords={SNIPPET_TOKENS},MinWords=8',
            *words,
            RANK_WEIGHTS,
            *words,
            list(KINDS),
            *params,
            limit,
        ),
    ).fetchall()
    return [
        FleetHit(
            tree=row["tree"],
            root=row["root"],
            host=row["host"],
            path=row["path"],
            kind=row["kind"],
            origin=row["origin"],
            verified=row["verified"],
            keywords=row["keywords"],
            snippet=marked_snippet(row["snippet"] or "", f"{row['body']}\n{row['log']}"),
            mtime=datetime.fromtimestamp(int(row["mtime_ns"]) / 1e9),
            updated=(row["updated"] or "").strip() or None,
            words=int(row["words"]),
            rank=float(row["rank"]),
        )
        for row in rows
    ]


def marked_snippet(fragment: str, source: str) -> str:
    """A headline fragment as one line of plain words, with ``…`` where it cuts ``source``."""
    flat = " ".join(fragment.split())
    whole = " ".join(source[:SNIPPET_SOURCE].split())
    if not flat:
        return ""
    lead = "" if whole.startswith(flat) else "…"
    tail = "" if whole.endswith(flat) else "…"
    words = " ".join(written.plain(flat).split())
    return one_line(f"{lead}{words}{tail}") if words else ""


def recall_lines(hits: list[FleetHit], now: datetime) -> list[str]:
    """``rouse fleet recall``: each hit's line (tree, path, origin and verdict), its snippet."""
    lines: list[str] = []
    for hit in hits:
        keywords = f" — {hit.keywords}" if hit.keywords else ""
        age = human_age(hit.mtime, now)
        lines.append(
            f"{short(hit.tree)} {hit.path} [{hit.origin}: {hit.verified}] ({age}{keywords})"
        )
        if hit.snippet:
            lines.append(f"  {hit.snippet}")
        if hit.updated:
            lines.append(f"  updated: {hit.updated}")
    return lines
