"""``rouse fleet due``: what is due in every mirrored tree, decided at query time.

``due`` decides from the instants the mirror stored (:mod:`rouse.fleet.mirror`),
so a record that passed its due instant since the last sync reads due.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from rouse.core.dueplan import due_at_time
from rouse.core.header import Header
from rouse.core.timefmt import format_stamp
from rouse.core.tree import Record
from rouse.fleet.pg import PgDatabase, as_json, local_time, only_trees
from rouse.fleet.views import short
from rouse.pack.views import natural_key, when_due


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
        return as_json(self, record_id="record")


def due(
    db: PgDatabase, now: datetime, trees: list[str] | None = None, limit: int | None = None
) -> list[DueItem]:
    """Every mirrored record due at ``now`` (naive local), earliest first, across trees."""
    at = now.astimezone()
    where, params = only_trees(trees, "m.tree")
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
        local = local_time(due_at)
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
                moved_at=local_time(row["moved_at"]),
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
    where, params = only_trees(trees, "tree")
    row = db.execute(f"SELECT count(*) AS n FROM mirror_state WHERE TRUE{where}", params)
    return int(row.fetchone()["n"])
