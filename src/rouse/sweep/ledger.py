"""The delivery ledger: ``.rouse/ledger.sqlite3`` (stdlib sqlite3).

Every wake is written here before it is sent and marked when it lands, so an
undelivered wake is never silently lost: it is resent (same id) with backoff,
and given up after 24h as a nudge file. The schema moves forward by numbered
migrations recorded in ``PRAGMA user_version``.

States: ``pending`` (not delivered yet: new, failing, or in flight),
``held`` (waiting out quiet hours), ``delivered``, ``given_up`` (written as a
nudge file after 24h of failures), ``withdrawn`` (its record moved or ended
before the wake could land, so there was nothing left to say).

Only the sweeper writes the ledger (it holds the sweeper lock); readers
(``status``, ``log``, the pack) open it without ever creating it.
"""

from __future__ import annotations

import json
import re
import sqlite3
from dataclasses import dataclass
from datetime import datetime, time, timedelta
from pathlib import Path

from rouse.core.errors import UsageError
from rouse.core.statedir import StateError, state_path
from rouse.core.sweepstate import LEDGER, TIME_FORMAT, _reader, counts, undelivered_counts
from rouse.core.timefmt import iso_stamp
from rouse.sweep.wake import Wake

GIVE_UP_AFTER = timedelta(hours=24)
FIRST_RETRY = timedelta(minutes=1)
MAX_RETRY = timedelta(hours=1)
STATES = ("pending", "held", "delivered", "given_up", "withdrawn")
__all__ = ["LEDGER", "Entry", "Ledger", "QuietHours", "counts", "recent", "undelivered_counts"]

MIGRATIONS: tuple[str, ...] = (
    # 1: the wakes table
    """
    CREATE TABLE wakes (
        id TEXT PRIMARY KEY,
        record TEXT NOT NULL,
        path TEXT NOT NULL,
        file TEXT NOT NULL,
        reason TEXT NOT NULL,
        nudge INTEGER NOT NULL,
        made_at TEXT NOT NULL,
        wake TEXT NOT NULL,
        sink TEXT NOT NULL,
        state TEXT NOT NULL,
        attempts INTEGER NOT NULL DEFAULT 0,
        in_flight INTEGER NOT NULL DEFAULT 0,
        first_failure TEXT,
        last_attempt TEXT,
        next_attempt TEXT,
        finished TEXT,
        stamped INTEGER NOT NULL DEFAULT 0,
        receipt TEXT,
        error TEXT
    );
    CREATE INDEX wakes_state ON wakes (state, stamped);
    CREATE INDEX wakes_made ON wakes (made_at);
    """,
    # 2: digests (sweep --digest): one message carrying several wakes
    """
    ALTER TABLE wakes ADD COLUMN digest TEXT;
    CREATE TABLE digests (
        id TEXT PRIMARY KEY,
        made_at TEXT NOT NULL,
        wakes TEXT NOT NULL,
        sink TEXT NOT NULL,
        state TEXT NOT NULL,
        attempts INTEGER NOT NULL DEFAULT 0,
        last_attempt TEXT,
        finished TEXT,
        receipt TEXT,
        error TEXT
    );
    """,
    # 3: escalations to a human (sweep --escalate): once per record, streak and level
    """
    CREATE TABLE escalations (
        id TEXT PRIMARY KEY,
        record TEXT NOT NULL,
        path TEXT NOT NULL,
        last_moved TEXT NOT NULL,
        level INTEGER NOT NULL,
        wake_id TEXT NOT NULL,
        made_at TEXT NOT NULL,
        message TEXT NOT NULL,
        sink TEXT NOT NULL,
        state TEXT NOT NULL,
        attempts INTEGER NOT NULL DEFAULT 0,
        last_attempt TEXT,
        finished TEXT,
        receipt TEXT,
        error TEXT,
        UNIQUE (path, last_moved, level)
    );
    """,
    # 4: agent runs (sweep --run): one per digest
    """
    CREATE TABLE runs (
        id TEXT PRIMARY KEY,
        digest TEXT NOT NULL,
        wakes TEXT NOT NULL,
        command TEXT NOT NULL,
        started TEXT NOT NULL,
        state TEXT NOT NULL,
        exit INTEGER,
        seconds REAL,
        answered INTEGER,
        woken INTEGER
    );
    CREATE INDEX runs_started ON runs (started);
    """,
)
SCHEMA_VERSION = len(MIGRATIONS)


def _t(value: datetime | None) -> str | None:
    return value.strftime(TIME_FORMAT) if value is not None else None


def _dt(value: str | None) -> datetime | None:
    return datetime.strptime(value, TIME_FORMAT) if value else None


def backoff(attempts: int) -> timedelta:
    """``min(1m × 2^(attempts-1), 1h)``: the wait after the ``attempts``-th try."""
    if attempts >= 8:
        return MAX_RETRY
    wait: timedelta = FIRST_RETRY * 2 ** max(attempts - 1, 0)
    return min(wait, MAX_RETRY)


@dataclass
class Entry:
    """One ledger row: a wake and what happened to it."""

    wake: Wake
    sink: str
    state: str
    attempts: int = 0
    in_flight: bool = False
    first_failure: datetime | None = None
    last_attempt: datetime | None = None
    next_attempt: datetime | None = None
    finished: datetime | None = None
    stamped: bool = False
    receipt: str | None = None
    error: str | None = None
    digest: str | None = None  # the digest that carried it (sweep --digest)
    #: escalations this wake set off (sweep --escalate): "level N via SINK: STATE"
    escalations: tuple[str, ...] = ()

    @property
    def id(self) -> str:
        return self.wake.id

    def as_json(self) -> dict[str, object]:
        """The entry as ``rouse log --json`` prints it: what ``rouse log`` shows, for programs.

        Keys are snake_case; times are ISO 8601 with the local offset; ``state``
        is spelled as the text shows it (``given up``).
        """
        return {
            "id": self.wake.id,
            "record": self.wake.record,
            "path": self.wake.path,
            "reason": self.wake.reason,
            "nudge": self.wake.nudge,
            "sink": self.sink,
            "state": self.state.replace("_", " "),
            "attempts": self.attempts,
            "made_at": iso_stamp(self.wake.made_at),
            "first_failure": iso_stamp(self.first_failure),
            "last_attempt": iso_stamp(self.last_attempt),
            "next_attempt": iso_stamp(self.next_attempt) if self.state == "pending" else None,
            "finished": iso_stamp(self.finished),
            "receipt": self.receipt,
            "error": self.error,
            "digest": self.digest,
            "escalations": list(self.escalations),
        }


_COLUMNS = (
    "wake, sink, state, attempts, in_flight, first_failure, last_attempt, "
    "next_attempt, finished, stamped, receipt, error, digest"
)


def _entry(row: sqlite3.Row) -> Entry:
    return Entry(
        wake=Wake.from_dict(json.loads(row["wake"])),
        sink=row["sink"],
        state=row["state"],
        attempts=row["attempts"],
        in_flight=bool(row["in_flight"]),
        first_failure=_dt(row["first_failure"]),
        last_attempt=_dt(row["last_attempt"]),
        next_attempt=_dt(row["next_attempt"]),
        finished=_dt(row["finished"]),
        stamped=bool(row["stamped"]),
        receipt=row["receipt"],
        error=row["error"],
        digest=row["digest"],
    )


class Ledger:
    """The sweeper's read-write handle (creates and migrates the database)."""

    def __init__(self, root: Path):
        self.path = state_path(root, "ledger.sqlite3")
        try:
            self.db = sqlite3.connect(self.path, isolation_level=None, timeout=30)
        except sqlite3.Error as exc:
            raise StateError(_unusable(self.path, exc)) from None
        try:
            self.db.row_factory = sqlite3.Row
            # WAL + NORMAL: every commit survives a killed process; a power cut can
            # lose the last commits, which at worst resends a wake (same id).
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            migrate(self.db)
        except sqlite3.Error as exc:
            self.db.close()
            raise StateError(_unusable(self.path, exc)) from None

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- reading ------------------------------------------------------------

    def open_entries(self) -> list[Entry]:
        """Wakes still owed something: pending, held, or delivered but not stamped."""
        rows = self.db.execute(
            f"SELECT {_COLUMNS} FROM wakes WHERE state IN ('pending', 'held') "
            "OR (state = 'delivered' AND stamped = 0) ORDER BY made_at, id"
        )
        return [_entry(row) for row in rows]

    def get(self, wake_id: str) -> Entry | None:
        row = self.db.execute(f"SELECT {_COLUMNS} FROM wakes WHERE id = ?", (wake_id,)).fetchone()
        return _entry(row) if row else None

    # -- writing ------------------------------------------------------------

    def add(self, wake: Wake, sink: str, now: datetime, *, held: bool = False) -> None:
        """Write a new wake: held, or pending with its first attempt starting now."""
        self.db.execute(
            "INSERT INTO wakes (id, record, path, file, reason, nudge, made_at, wake, sink, "
            "state, attempts, in_flight, last_attempt) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                wake.id,
                wake.record,
                wake.path,
                wake.file,
                wake.reason,
                wake.nudge,
                wake.at,
                json.dumps(wake.as_dict(), ensure_ascii=False),
                sink,
                "held" if held else "pending",
                0 if held else 1,
                0 if held else 1,
                None if held else _t(now),
            ),
        )

    def start_attempt(self, wake_id: str, sink: str, now: datetime) -> None:
        self.db.execute(
            "UPDATE wakes SET state = 'pending', sink = ?, attempts = attempts + 1, "
            "in_flight = 1, last_attempt = ? WHERE id = ?",
            (sink, _t(now), wake_id),
        )

    def failed(
        self, wake_id: str, now: datetime, error: str, *, when: datetime | None = None
    ) -> None:
        """Record a failed attempt (made at ``when``, default now) and the next try's time."""
        row = self.db.execute(
            "SELECT attempts, last_attempt FROM wakes WHERE id = ?", (wake_id,)
        ).fetchone()
        failed_at = when or now
        last = _dt(row["last_attempt"]) or failed_at
        self.db.execute(
            "UPDATE wakes SET in_flight = 0, first_failure = COALESCE(first_failure, ?), "
            "next_attempt = ?, error = ? WHERE id = ?",
            (_t(failed_at), _t(last + backoff(row["attempts"])), error, wake_id),
        )

    def delivered(self, wake_id: str, now: datetime, receipt: str, *, stamped: bool) -> None:
        """It landed; ``stamped`` says whether the record's stamp is written yet."""
        self.db.execute(
            "UPDATE wakes SET state = 'delivered', in_flight = 0, finished = ?, receipt = ?, "
            "next_attempt = NULL, error = NULL, stamped = ? WHERE id = ?",
            (_t(now), receipt, int(stamped), wake_id),
        )

    def given_up(self, wake_id: str, now: datetime, receipt: str, *, stamped: bool) -> None:
        self.db.execute(
            "UPDATE wakes SET state = 'given_up', in_flight = 0, finished = ?, receipt = ?, "
            "next_attempt = NULL, stamped = ? WHERE id = ?",
            (_t(now), receipt, int(stamped), wake_id),
        )

    def hold(self, wake_id: str) -> None:
        self.db.execute("UPDATE wakes SET state = 'held' WHERE id = ?", (wake_id,))

    def withdraw(self, wake_id: str, now: datetime, why: str) -> None:
        self.db.execute(
            "UPDATE wakes SET state = 'withdrawn', in_flight = 0, finished = ?, "
            "next_attempt = NULL, stamped = 1, receipt = ? WHERE id = ?",
            (_t(now), why, wake_id),
        )

    def mark_stamped(self, wake_id: str) -> None:
        self.db.execute("UPDATE wakes SET stamped = 1 WHERE id = ?", (wake_id,))

    # -- escalations ------------------------------------------------------------

    def streak(self, path: str, last_moved: str) -> tuple[datetime | None, int]:
        """Since the record at ``path`` last moved (``last_moved``): when it was first
        woken, and how many of its wakes landed (delivered or given up)."""
        row = self.db.execute(
            "SELECT MIN(made_at), SUM(state IN ('delivered', 'given_up')) FROM wakes "
            "WHERE path = ? AND json_extract(wake, '$.last_moved') = ?",
            (path, last_moved),
        ).fetchone()
        return (_dt(row[0]) if row and row[0] else None), int(row[1] or 0) if row else 0

    def escalated(self, path: str, last_moved: str, level: int) -> bool:
        row = self.db.execute(
            "SELECT 1 FROM escalations WHERE path = ? AND last_moved = ? AND level = ?",
            (path, last_moved, level),
        ).fetchone()
        return row is not None

    def add_escalation(
        self, message: Wake, wake_id: str, level: int, sink: str, now: datetime
    ) -> None:
        self.db.execute(
            "INSERT INTO escalations (id, record, path, last_moved, level, wake_id, made_at, "
            "message, sink, state) VALUES (?,?,?,?,?,?,?,?,?,'pending')",
            (
                message.id,
                message.record,
                message.path,
                message.last_moved,
                level,
                wake_id,
                _t(now),
                json.dumps(message.as_dict(), ensure_ascii=False),
                sink,
            ),
        )

    def escalation_attempt(
        self, escalation_id: str, now: datetime, *, receipt: str | None, error: str | None
    ) -> None:
        """One attempt at sending an escalation: landed (``receipt``) or not (``error``)."""
        self.db.execute(
            "UPDATE escalations SET attempts = attempts + 1, last_attempt = ?, state = ?, "
            "finished = ?, receipt = ?, error = ? WHERE id = ?",
            (
                _t(now),
                "pending" if error else "delivered",
                None if error else _t(now),
                receipt,
                error,
                escalation_id,
            ),
        )

    def withdraw_escalation(self, escalation_id: str, now: datetime, why: str) -> None:
        self.db.execute(
            "UPDATE escalations SET state = 'withdrawn', finished = ?, receipt = ? WHERE id = ?",
            (_t(now), why, escalation_id),
        )

    def pending_escalations(self) -> list[tuple[Wake, int]]:
        """Escalations not delivered yet, oldest first: the message and its level."""
        rows = self.db.execute(
            "SELECT message, level FROM escalations WHERE state = 'pending' ORDER BY made_at, id"
        )
        return [(Wake.from_dict(json.loads(row[0])), int(row[1])) for row in rows]

    def escalations(self) -> list[dict[str, object]]:
        """Every escalation, oldest first, as plain rows (for ``rouse log`` and tests)."""
        rows = self.db.execute(
            "SELECT id, record, path, last_moved, level, wake_id, made_at, sink, state, "
            "attempts, finished, receipt, error FROM escalations ORDER BY made_at, id"
        )
        return [dict(row) for row in rows]

    # -- runs -------------------------------------------------------------------

    def start_run(
        self, run_id: str, digest_id: str, wake_ids: list[str], command: str, now: datetime
    ) -> None:
        self.db.execute(
            "INSERT INTO runs (id, digest, wakes, command, started, state, woken) "
            "VALUES (?,?,?,?,?,'running',?) ON CONFLICT(id) DO UPDATE SET started = "
            "excluded.started, state = 'running', wakes = excluded.wakes",
            (run_id, digest_id, json.dumps(wake_ids), command, _t(now), len(wake_ids)),
        )

    def end_run(self, run_id: str, state: str, code: int | None, seconds: float) -> None:
        """``state``: ran (exit 0; answered or not is decided after), failed."""
        self.db.execute(
            "UPDATE runs SET state = ?, exit = ?, seconds = ? WHERE id = ?",
            (state, code, round(seconds, 3), run_id),
        )

    def run_answered(self, run_id: str, answered: int) -> None:
        """After a run exited 0: how many of its woken records it moved or ended."""
        self.db.execute(
            "UPDATE runs SET answered = ?, state = CASE WHEN ? = 0 THEN 'not answered' "
            "ELSE 'answered' END WHERE id = ?",
            (answered, answered, run_id),
        )

    def runs_since(self, since: datetime) -> list[datetime]:
        """When each run started after ``since``, oldest first (the budget's window)."""
        rows = self.db.execute(
            "SELECT started FROM runs WHERE started > ? ORDER BY started", (_t(since),)
        )
        return [datetime.strptime(row[0], TIME_FORMAT) for row in rows]

    def runs(self) -> list[dict[str, object]]:
        rows = self.db.execute(
            "SELECT id, digest, wakes, command, started, state, exit, seconds, answered, woken "
            "FROM runs ORDER BY started, id"
        )
        return [dict(row) for row in rows]

    def defer(self, wake_id: str, why: str) -> None:
        """The wake waits (held) without it counting as a failed attempt: no run now."""
        self.db.execute(
            "UPDATE wakes SET state = 'held', in_flight = 0, attempts = MAX(attempts - 1, 0), "
            "error = ? WHERE id = ?",
            (why, wake_id),
        )

    # -- digests --------------------------------------------------------------

    def digest_of(self, wake_ids: list[str]) -> str | None:
        """The digest these wakes were all last sent in, if one carried them all."""
        if not wake_ids:
            return None
        marks = ",".join("?" * len(wake_ids))
        found = {
            row[0]
            for row in self.db.execute(f"SELECT digest FROM wakes WHERE id IN ({marks})", wake_ids)
        }
        return found.pop() if len(found) == 1 and None not in found else None

    def start_digest(self, digest_id: str, wake_ids: list[str], sink: str, now: datetime) -> None:
        """Record an attempt at sending ``digest_id`` carrying ``wake_ids`` (new or a retry)."""
        listed = json.dumps(wake_ids)
        self.db.execute(
            "INSERT INTO digests (id, made_at, wakes, sink, state, attempts, last_attempt) "
            "VALUES (?,?,?,?,'pending',1,?) ON CONFLICT(id) DO UPDATE SET wakes = excluded.wakes, "
            "sink = excluded.sink, state = 'pending', attempts = attempts + 1, "
            "last_attempt = excluded.last_attempt",
            (digest_id, _t(now), listed, sink, _t(now)),
        )
        marks = ",".join("?" * len(wake_ids))
        self.db.execute(
            f"UPDATE wakes SET digest = ? WHERE id IN ({marks})", [digest_id, *wake_ids]
        )

    def digest_done(
        self, digest_id: str, now: datetime, *, receipt: str | None, error: str | None
    ) -> None:
        """The digest landed (``receipt``) or failed (``error``)."""
        self.db.execute(
            "UPDATE digests SET state = ?, finished = ?, receipt = ?, error = ? WHERE id = ?",
            ("failed" if error else "delivered", _t(now), receipt, error, digest_id),
        )


def _unusable(path: Path, exc: sqlite3.Error) -> str:
    """Why the ledger cannot be opened, and what to do (the wakes it held are history)."""
    return (
        f"the ledger {path} cannot be used ({exc}): if it is damaged, move it aside "
        f"(mv {path} {path}.damaged) and sweep again — wakes still owed are found "
        "again by the clock; check that .rouse/ is writable"
    )


def migrate(db: sqlite3.Connection) -> None:
    """Bring the schema up to ``SCHEMA_VERSION``, one numbered step at a time."""
    version = int(db.execute("PRAGMA user_version").fetchone()[0])
    if version > SCHEMA_VERSION:
        raise UsageError(
            f"the ledger has schema {version}, newer than this rouse knows ({SCHEMA_VERSION}): "
            "upgrade rouse, or move .rouse/ledger.sqlite3 aside"
        )
    for number in range(version, SCHEMA_VERSION):
        db.execute("BEGIN IMMEDIATE")
        try:
            _run_script(db, MIGRATIONS[number])
            db.execute(f"PRAGMA user_version = {number + 1}")
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise


def _run_script(db: sqlite3.Connection, script: str) -> None:
    """Run a migration's statements inside the caller's transaction."""
    for statement in script.split(";"):
        if statement.strip():
            db.execute(statement)


# -- read-only views (status, log, the pack) ----------------------------------
# The cheap counts live in ``rouse.core.sweepstate`` (no dataclasses, no sqlite3 until
# a ledger exists) so the pack can ask without paying for this module.


def recent(root: Path, limit: int = 20) -> list[Entry]:
    """The most recent wakes, newest first (``rouse log``)."""
    with _reader(root) as db:
        if db is None:
            return []
        try:
            rows = db.execute(
                f"SELECT {_COLUMNS} FROM wakes ORDER BY made_at DESC, rowid DESC LIMIT ?",
                (limit,),
            ).fetchall()
        except sqlite3.Error:
            return []
        entries = [_entry(row) for row in rows]
        try:
            found: dict[str, list[str]] = {}
            for row in db.execute(
                "SELECT wake_id, level, sink, state FROM escalations ORDER BY made_at, id"
            ):
                line = f"level {row['level']} via {row['sink']}: {row['state']}"
                found.setdefault(row["wake_id"], []).append(line)
        except sqlite3.Error:  # an older ledger: no escalations table yet
            found = {}
        for entry in entries:
            entry.escalations = tuple(found.get(entry.id, ()))
        return entries


def log_lines(entries: list[Entry]) -> list[str]:
    """``rouse log``: one line per wake, then what went wrong if anything did."""
    lines: list[str] = []
    for entry in entries:
        wake = entry.wake
        when = _t(entry.finished or entry.last_attempt) or wake.at
        lines.append(
            f"{wake.at}  {entry.state.replace('_', ' '):<9}  {wake.record}  {wake.reason} "
            f"nudge {wake.nudge}  via {entry.sink}  attempts {entry.attempts}  "
            f"last {when}  id {wake.id}"
        )
        if entry.state == "pending" and entry.next_attempt is not None:
            lines.append(f"    next attempt at or after {_t(entry.next_attempt)}")
        if entry.receipt and entry.state == "delivered" and entry.receipt.startswith("run "):
            lines.append(f"    {entry.receipt}")
        if entry.error and entry.state != "delivered":
            lines.append(f"    error: {entry.error}")
        if entry.digest:
            lines.append(f"    in digest {entry.digest}")
        lines += [f"    escalated to the owner, {line}" for line in entry.escalations]
        if entry.receipt and entry.state in ("given_up", "withdrawn"):
            lines.append(f"    {entry.receipt}")
    return lines


# -- quiet hours ----------------------------------------------------------------

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
