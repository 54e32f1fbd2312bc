"""The one-way mirror: a tree's files as rows of the fleet's database.

The leading sweeper of a tree calls :meth:`Mirror.sync` at the end of each
tick. Every file the walk knows (records, context, notes, plugins, the probes
file) becomes one row of ``mirror_files`` (:mod:`rouse.fleet.mirror_rows` says
what a row holds).

Files are canonical: a row that disagrees with its file is wrong by
definition, and the next sync rewrites it. Syncs are incremental — a file is
read and written only when its size or mtime changed (or it was written too
recently to trust its mtime), rows of deleted files are deleted — and the
clock's plan is recomputed for every record at every sync, but written only
where it changed (a goal's clock moves when a child closes, its file does not).

The plan is stored as instants, not verdicts (:mod:`rouse.core.dueplan`), so
``fleet due`` decides at query time, as the clock would, and is right between syncs.

A lost database costs one re-sync: what the mirror remembers of the rows is
checked at each sync against ``mirror_state`` (an epoch each writing sync
changes, the row count, the format and the stamp key) and against the rows
themselves when they disagree; missing tables are made again.
"""

from __future__ import annotations

import hashlib
import json
import socket
import time
import uuid
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from rouse.core.tree import File, Tree, display_ids
from rouse.fleet.mirror_rows import (
    CONTENT_COLUMNS,
    DERIVED_COLUMNS,
    SEARCH_PARTS,
    batches,
    derived_values,
    dumps,
    fingerprint,
    local_zone,
    mirrored_files,
    read_row,
    valid_utf8,
)
from rouse.fleet.pg import PgDatabase
from rouse.fleet.pg_schema import MIGRATION_LOCK, MIRROR, migrate
from rouse.trust.origins import OriginReader

#: What a row holds; a mirror of another format is re-synced whole (2: text written
#: without spaces searched as pairs of characters).
FORMAT = 2
#: The text search configuration of the tsvector and of ``fleet recall``'s queries.
TEXT_CONFIG = "english"


@dataclass
class SyncStats:
    """What the last :meth:`Mirror.sync` did (tests and the benchmark read it)."""

    written: int = 0  # rows (re)written from their file: new or changed files
    clock: int = 0  # rows whose clock plan (or place in the tree) changed, file unchanged
    deleted: int = 0  # rows of files that are gone
    unchanged: int = 0  # files skipped: same size and mtime as mirrored, same plan
    skipped: int = 0  # files that could not be mirrored (unreadable, bad header, bad name)
    full: bool = False  # every file re-read (new tree, lost rows, another format or key)
    reloaded: bool = False  # what the mirror remembers was read back from the database
    seconds: float = 0.0


class Mirror:
    """One tree's mirror in the fleet's database. ``sync`` once per leading tick."""

    def __init__(self, root: Path, db: PgDatabase, tree: str, origins: OriginReader):
        self.root = root
        self.db = db
        self.tree = tree
        self.origins = origins
        self.host = socket.gethostname()
        self.keyed = _key_mark(origins)
        self.stats = SyncStats()
        # what the rows hold, as last written or read: path → [size, mtime_ns, settled, derived]
        self._known: dict[str, list[Any]] | None = None
        self._epoch: str | None = None

    # -- the sync -------------------------------------------------------------

    def sync(self, tree: Tree, now: datetime) -> int:
        """Bring this tree's rows up to date with ``tree`` (a walk of ``root``) at ``now``.

        Returns how many rows were written (content or clock). Never raises on
        a bad file (it is skipped and counted); a lost connection raises
        :class:`~rouse.fleet.pg.LedgerUnreachable` and the next sync catches up.
        """
        started = time.perf_counter()
        stats = self.stats = SyncStats()
        self._ensure_tables()
        state = self._state()
        known = self._remembered(state)
        files = mirrored_files(tree)
        if not stats.full and not stats.reloaded and self._quiet(files, known):
            # No file changed since this mirror wrote the rows: the clock's plans
            # are functions of the files alone (never of now), so none changed.
            stats.unchanged = len(known)
            stats.skipped = len(tree.untrackable) + len(files) - len(known)
            assert state is not None
            self._save_state(str(state["epoch"]), len(known), stats.skipped)
            stats.seconds = time.perf_counter() - started
            return 0
        content, derived_only, next_known = self._compare(tree, files, known, now)
        gone = [rel for rel in known if rel not in next_known]
        stats.written, stats.clock, stats.deleted = len(content), len(derived_only), len(gone)

        wrote = bool(content or derived_only or gone or stats.full)
        epoch = uuid.uuid4().hex if wrote or state is None else str(state["epoch"])
        with self.db.transaction():
            if stats.full:  # rows of another format or key, or left without their state
                self.db.execute("DELETE FROM mirror_files WHERE tree = ?", (self.tree,))
            elif gone:
                self.db.execute(
                    "DELETE FROM mirror_files WHERE tree = ? AND path = ANY(?)", (self.tree, gone)
                )
            for batch in batches(content):
                self._upsert(batch)
            for batch in batches(derived_only):
                self._update_derived(batch)
            self._save_state(epoch, len(next_known), stats.skipped)
        self._known, self._epoch = next_known, epoch
        stats.seconds = time.perf_counter() - started
        return stats.written + stats.clock

    def _remembered(self, state: Any) -> dict[str, list[Any]]:
        """What the rows hold, as this mirror remembers it or reads it back; nothing when
        they must all be written again (a new tree, another format or key)."""
        stats = self.stats
        stats.full = state is None or int(state["format"]) != FORMAT or state["keyed"] != self.keyed
        if stats.full:
            return {}
        if self._trusted(state):
            assert self._known is not None
            return self._known
        stats.reloaded = True
        return self._load_known()

    def _compare(
        self,
        tree: Tree,
        files: dict[str, tuple[File, str]],
        known: dict[str, list[Any]],
        now: datetime,
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, list[Any]]]:
        """The files against their rows: the rows to write whole (new or changed files),
        those whose clock plan alone changed, and what the rows will then hold."""
        stats = self.stats
        ids = display_ids(tree)
        zone = local_zone()
        content: list[dict[str, Any]] = []
        derived_only: list[dict[str, Any]] = []
        next_known: dict[str, list[Any]] = {}
        stats.skipped = len(tree.untrackable)
        for rel, (file, kind) in files.items():
            if not valid_utf8(rel):
                stats.skipped += 1
                continue
            values = derived_values(tree, file, kind, ids, now)
            mark = fingerprint(values, zone)
            values["derived"] = mark
            values["clock_at"] = now
            old = known.get(rel)
            if old is None or old[0] != file.size or old[1] != file.mtime_ns or not old[2]:
                row = read_row(self.root, file, self.origins)
                if row is None:
                    stats.skipped += 1
                    if old is not None:
                        next_known[rel] = old  # left as it was: the next walk tells
                    continue
                row.update(values, path=rel)
                content.append(row)
                next_known[rel] = [row["size"], row["mtime_ns"], row["settled"], mark]
            elif old[3] != mark:
                values["path"] = rel
                derived_only.append(values)
                next_known[rel] = [old[0], old[1], old[2], mark]
            else:
                stats.unchanged += 1
                next_known[rel] = old
        return content, derived_only, next_known

    # -- the database's side ----------------------------------------------------

    def _ensure_tables(self) -> None:
        """Make the mirror's tables if they are gone (a dropped schema, a fresh database)."""
        if self._tables_present():
            return
        migrate(self.db, self.db.where)
        if self._tables_present():
            return
        with self.db.transaction():  # the schema number says 2, yet the tables were dropped
            self.db.execute("SELECT pg_advisory_xact_lock(?)", (MIGRATION_LOCK,))
            for statement in MIRROR.split(";"):
                if statement.strip():
                    self.db.execute(statement)

    def _tables_present(self) -> bool:
        row = self.db.execute(
            "SELECT to_regclass('mirror_files') IS NOT NULL AND "
            "to_regclass('mirror_state') IS NOT NULL AS present"
        ).fetchone()
        return bool(row["present"])

    def _state(self) -> Any:
        return self.db.execute(
            "SELECT epoch, format, keyed, files, "
            "(SELECT count(*) FROM mirror_files WHERE tree = ?) AS rows "
            "FROM mirror_state WHERE tree = ?",
            (self.tree, self.tree),
        ).fetchone()

    @staticmethod
    def _quiet(files: dict[str, tuple[File, str]], known: dict[str, list[Any]]) -> bool:
        """Whether every file is as the rows hold it (same size and settled mtime), none
        new and none gone."""
        seen = 0
        for rel, (file, _) in files.items():
            old = known.get(rel)
            if old is None:
                if valid_utf8(rel):
                    return False
                continue  # a name the rows cannot hold: skipped again
            if old[0] != file.size or old[1] != file.mtime_ns or not old[2]:
                return False
            seen += 1
        return seen == len(known)

    def _trusted(self, state: Any) -> bool:
        """Whether what this mirror remembers still describes the rows."""
        return (
            self._known is not None
            and state["epoch"] == self._epoch
            and int(state["rows"]) == len(self._known)
            and int(state["files"]) == len(self._known)
        )

    def _load_known(self) -> dict[str, list[Any]]:
        row = self.db.execute(
            "SELECT coalesce(jsonb_object_agg(path, "
            "jsonb_build_array(size, mtime_ns, settled, derived)), '{}'::jsonb)::text AS known "
            "FROM mirror_files WHERE tree = ?",
            (self.tree,),
        ).fetchone()
        found = json.loads(row["known"])
        return found if isinstance(found, dict) else {}

    def _upsert(self, rows: list[dict[str, Any]]) -> None:
        columns = (*CONTENT_COLUMNS, *DERIVED_COLUMNS)
        names = [name for name, _ in columns]
        typed = (("path", "text"), *columns, *((part, "text") for part, _ in SEARCH_PARTS))
        shape = ", ".join(f"{name} {kind}" for name, kind in typed)
        search = " || ".join(
            f"setweight(to_tsvector('{TEXT_CONFIG}', r.{part}), '{weight}')"
            for part, weight in SEARCH_PARTS
        )
        self.db.execute(
            f"INSERT INTO mirror_files (tree, path, {', '.join(names)}, search, mirrored_at) "
            f"SELECT ?, r.path, {', '.join('r.' + n for n in names)}, {search}, now() "
            f"FROM jsonb_to_recordset(?::jsonb) AS r({shape}) "
            "ON CONFLICT (tree, path) DO UPDATE SET "
            + ", ".join(f"{n} = EXCLUDED.{n}" for n in (*names, "search", "mirrored_at")),
            (self.tree, dumps(rows)),
        )

    def _update_derived(self, rows: list[dict[str, Any]]) -> None:
        names = [name for name, _ in DERIVED_COLUMNS]
        shape = ", ".join(f"{name} {kind}" for name, kind in (("path", "text"), *DERIVED_COLUMNS))
        self.db.execute(
            "UPDATE mirror_files m SET "
            + ", ".join(f"{n} = r.{n}" for n in names)
            + f", mirrored_at = now() FROM jsonb_to_recordset(?::jsonb) AS r({shape}) "
            "WHERE m.tree = ? AND m.path = r.path",
            (dumps(rows), self.tree),
        )

    def _save_state(self, epoch: str, files: int, skipped: int) -> None:
        self.db.execute(
            "INSERT INTO mirror_state (tree, root, host, epoch, format, keyed, synced_at, files, "
            "skipped) VALUES (?, ?, ?, ?, ?, ?, now(), ?, ?) ON CONFLICT (tree) DO UPDATE SET "
            "root = EXCLUDED.root, host = EXCLUDED.host, epoch = EXCLUDED.epoch, "
            "format = EXCLUDED.format, keyed = EXCLUDED.keyed, synced_at = EXCLUDED.synced_at, "
            "files = EXCLUDED.files, skipped = EXCLUDED.skipped",
            (self.tree, str(self.root), self.host, epoch, FORMAT, self.keyed, files, skipped),
        )


def _key_mark(origins: OriginReader) -> str:
    """Which stamp key judged the origins (never the key itself): another key, another sync."""
    key = origins.key
    if key is None:
        return "none"
    if key.secret is None:
        return "unusable"
    return hashlib.sha256(b"rouse mirror key\0" + key.secret).hexdigest()[:16]
