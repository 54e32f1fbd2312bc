"""The pack: the block printed at the top of every session (seam one).

Read-only toward memory (its only writes are its own caches in ``.rouse/``,
and it still works when it cannot write them) and fresh (computed now; the
header cache only saves re-reading files whose size and mtime are unchanged).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from pathlib import Path

from rouse.cache import snapshot
from rouse.cache.plans import instant, survey
from rouse.cache.walk import HeaderCache
from rouse.core import layout
from rouse.core.timefmt import human_age, iso_stamp
from rouse.core.tree import display_ids
from rouse.pack import sections
from rouse.pack.findings import keep
from rouse.pack.render import LIST_CAP, Pack, fit
from rouse.pack.views import stamper
from rouse.pack.warnings import live_warnings, standing_warnings, walk_warnings
from rouse.probes import definitions as probes
from rouse.probes import readings
from rouse.probes.readings import probes_allowed_at
from rouse.state import nudges
from rouse.state import sweeper as sweepstate
from rouse.state.shapes import WORK
from rouse.trust import fence
from rouse.trust.origins import effective_origin, origin_reader

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

DEFAULT_MAX_CHARS = 9000
FRESH = timedelta(hours=36)
PROBES_OFF = "probes are off (ROUSE_PROBES=off): every reading is <unknown>"

# -- the pack at now, from what the tree says -------------------------------------


def _for_json(data: dict[str, Any], now: datetime) -> dict[str, Any]:
    """The pack's data once its text is rendered, as ``--json`` prints it.

    Human ages are for the text only: ``now`` becomes ISO 8601 and the items
    keep their instants (``due_at``, ``moved_at``, ``at``, ``mtime``) without
    the ``still`` and ``age`` the text was written from. Words from a file
    are as the text shows them (:mod:`rouse.trust.fence`): quoted as data, after their
    label, when their origin says so; each item says its ``origin``.
    """

    def without(items: list[dict[str, Any]], key: str) -> list[dict[str, Any]]:
        return [{k: v for k, v in item.items() if k != key} for item in items]

    shaped = dict(data)
    shaped["now"] = iso_stamp(now)
    shaped["woken"] = [_fenced_message(item) for item in data["woken"]]
    shaped["due"] = [_fenced_message(item) for item in without(data["due"], "still")]
    for item in shaped["due"]:
        if item["line"]:
            item["line"] = fence.inline(item["line"], item["origin"])
    shaped["index"] = [
        {**item, "keywords": fence.inline(item["keywords"], item["origin"])}
        for item in without(data["index"], "age")
    ]
    for kind in ("beliefs", "motivations"):
        shaped[kind] = [_fenced_body(entry) for entry in without(data[kind], "age")]
    shaped["persona"] = _fenced_body(data["persona"]) if data["persona"] else None
    return shaped


def _fenced_message(item: dict[str, Any]) -> dict[str, Any]:
    message = item.get("message")
    if not message or not fence.quoted(message["origin"]):
        return item
    lines = fence.block(message["lines"], message["origin"])
    return {**item, "message": {**message, "lines": lines}}


def _fenced_body(entry: dict[str, Any]) -> dict[str, Any]:
    if entry.get("body") is None:
        return entry
    return {**entry, "body": fence.shown(entry["body"], entry["origin"])}


def _instant(value: int) -> datetime:
    """An item's instant (:func:`rouse.cache.plans.micros`); TypeError if it is none."""
    found = instant(value)
    if found is None:
        raise TypeError("an item without its instant")
    return found


def _now_line(now: datetime) -> str:
    zone = now.astimezone().tzname() or "local"
    return f"{now.strftime('%A %Y-%m-%d %H:%M')} {zone}"


def _wake_line(item: dict[str, Any], at: datetime, now: datetime) -> str:
    """A woken entry's line, its age (``at``) measured now (a 09:00 wake read at 12:00)."""
    age = human_age(at, now)
    if item["file"] is None:  # a fired reminder whose wake went elsewhere (or was archived)
        return f"{item['record']} — fired {age}, waiting for done"
    if item["reason"] == "tell":
        return f"{item['record']} — your tell to the owner was given up {age}"
    return f"{item['record']} — woke you {age} ({item['reason']}, nudge {item['nudge']})"


def _held(root: Path) -> list[str]:
    """The tasks the worker holds for trust (its ``work.json``: read at every pack)."""
    state = WORK.read(root / layout.STATE_DIR / sweepstate.WORK_STATE)
    if isinstance(state, dict) and isinstance(state.get("held"), list):
        return [str(why) for why in state["held"][:LIST_CAP]]
    return []


def _readings(
    root: Path, probe_list: list[probes.Probe], budget_ms: int, off: str | None
) -> tuple[list[tuple[str, str]], list[str]]:
    """The pack tier's readings and the pack's note on them; ``off``: why probes are off
    (every reading <unknown>), or None."""
    if off is None:
        return readings.run_pack_tier(root, probe_list, budget_ms), []
    unknown = [(p.name, readings.UNKNOWN) for p in probe_list if p.tier == "pack"]
    return unknown, [off] if probe_list else []


def build_pack(
    root: Path,
    now: datetime,
    *,
    query: str | None = None,
    max_chars: int = DEFAULT_MAX_CHARS,
    probe_budget_ms: int = readings.DEFAULT_BUDGET_MS,
    probes_enabled: bool = True,
    origin_of: sections.OriginOf | None = None,
    probes_reason: str | None = None,
    cache_secret: bytes | None = None,
) -> Pack:
    """Compute the pack for the tree at ``root`` at ``now``: from the snapshot the last
    full walk kept (:mod:`rouse.cache.snapshot`) while it holds, else from a walk."""
    # a reader without a key: every [origin] label is only what a file claims (said once)
    unverified = origin_of is not None and not getattr(origin_of, "keyed", False)
    origin_of = origin_of or effective_origin
    keyed = bool(getattr(origin_of, "keyed", False))
    part = f"pack {query}" if query else "pack"
    # no snapshot stands while anything could wake the agent (what answers a wake is
    # not the tree's to say): a nudge file waiting, or a fired reminder (see below)
    waiting = nudges.waiting(root)
    kept = None if waiting else snapshot.load(root, cache_secret, keyed, now, part)
    if kept is not None:
        try:
            return _finish(root, kept, now, max_chars, [], ([], []))
        except snapshot.DAMAGED:
            pass  # not what a pack kept: walk
    walked = HeaderCache(root, cache_secret)
    tree = walked.walk(now)
    ids = display_ids(tree)
    probe_list, _ = probes.load_probes(tree)
    known = {p.name: p for p in probe_list} if probes_enabled else {}
    off = None if probes_enabled else probes_reason or PROBES_OFF
    measured, probe_notes = _readings(root, probe_list, probe_budget_ms, off)
    with sweepstate.one_reader(root):  # (the ledger reads below share one connection)
        woken = sections.woken(root, tree, ids, origin_of, now)
        # the clock's verdicts, from the plans the walk cache kept where nothing changed
        surveyed = survey(tree, now)
        shown, due_total = surveyed.first(LIST_CAP, {w["path"] for w in woken})
        replaced = sections.replaced(tree, origin_of)
        layers, quarantined = sections.context(root, tree, origin_of, query, replaced)
        census = sections.Census(tree)
        index, index_total = sections.index(root, tree, origin_of, known, census.backlog, replaced)
        ladder = census.ladder
        ladder["snoozed"] = surveyed.snoozed  # (counted open)
        found: dict[str, Any] = {
            "woken": woken,
            "due": sections.due(root, shown, ids, origin_of),
            "due_total": due_total,
            "persona": layers["persona"],
            "beliefs": layers["beliefs"],
            "motivations": layers["motivations"],
            "quarantined": quarantined,
            "ladder": ladder,
            "running": sections.tasks(root, census.running, ids, origin_of),
            "plugins": [Path(p.rel).stem for p in tree.plugins],
            "index": index,
            "index_total": index_total,
            "closed_records": census.closed,
            "unverified": unverified,
        }
        said = walk_warnings(tree, surveyed.problems, probe_notes, origin_of)
        # kept for the next pack while nothing changes: not when it runs probes, nor
        # while anything could wake the agent
        if tree.probes is None and not waiting and not nudges.any_fired(tree):
            keep(walked, tree, surveyed, keyed, {part: found})
        return _finish(root, found, now, max_chars, measured, said, tree, shown, walked)


def _at_now(found: dict[str, Any], now: datetime) -> dict[str, list[dict[str, Any]]]:
    """The found items whose instants are said at ``now``: the woken, the due, the
    motivations and the index, each instant as a stamp and its age in words."""
    stamp = stamper()
    woken = [
        {**item, "at": stamp(item["at"]), "wake": _wake_line(item, _instant(item["at"]), now)}
        for item in found["woken"]
    ]
    due = [
        {
            **item,
            "still": human_age(_instant(item["still"]), now),  # (text only)
            "due_at": stamp(item["due_at"]),
            "moved_at": stamp(item["moved_at"]),
        }
        for item in found["due"]
    ]
    motivations = [
        {**entry, "mtime": stamp(entry["mtime"]), "age": human_age(_instant(entry["mtime"]), now)}
        if "mtime" in entry
        else entry
        for entry in found["motivations"]
    ]
    index = []
    for item in found["index"]:
        mtime = _instant(item["mtime"])
        index.append(
            {
                **item,
                "mtime": stamp(item["mtime"]),
                "age": human_age(mtime, now),  # (text only)
                "fresh": mtime >= now - FRESH,
            }
        )
    return {"woken": woken, "due": due, "motivations": motivations, "index": index}


def _finish(
    root: Path,
    found: dict[str, Any],
    now: datetime,
    max_chars: int,
    measured: list[tuple[str, str]],
    said: tuple[list[str], list[str]],
    *kept_alive: object,
) -> Pack:
    """The pack at ``now`` from what the tree says (``found``: as a walk found it, or as
    the snapshot kept it) and what the walk found wrong (``said``: none from the
    snapshot): ages measured now, and what is read afresh at every pack (probe
    readings, the tasks held, the sweeper's warnings: the ledger, not the tree, says
    those), then fitted to ``max_chars``."""
    timed = _at_now(found, now)
    before, after = standing_warnings(found, found["unverified"] is True, said)
    data: dict[str, Any] = {
        "now": _now_line(now),
        "probes": [{"name": name, "reading": value} for name, value in measured],
        "woken": timed["woken"],
        "due": timed["due"],
        "due_total": found["due_total"],
        "persona": found["persona"],
        "beliefs": found["beliefs"],
        "motivations": timed["motivations"],
        "quarantined": found["quarantined"],
        "ladder": found["ladder"],
        "tasks": {"running": found["running"], "held": _held(root)},
        "plugins": found["plugins"],
        "index": timed["index"],
        "index_total": found["index_total"],
        "not_listed": {
            "closed_records": found["closed_records"],
            "index": 0,
            "due": 0,
            "woken": 0,
        },
        "warnings": before + live_warnings(root, now) + after,
    }
    built = fit(data, max_chars)
    built.data = _for_json(built.data, now)  # (the text is already rendered)
    built.kept = kept_alive
    return built


def pack(
    root: Path,
    now: datetime,
    *,
    env: Mapping[str, str],
    key_path: Path | None,
    query: str | None = None,
    max_chars: int = DEFAULT_MAX_CHARS,
    probe_budget_ms: int = readings.DEFAULT_BUDGET_MS,
) -> Pack:
    """``rouse pack`` (and the MCP tool): origins verified, probes run only when trusted."""
    origins = origin_reader(root, key_path)
    allowed, why = probes_allowed_at(root, origins, env)
    built = build_pack(
        root,
        now,
        query=query,
        max_chars=max_chars,
        probe_budget_ms=probe_budget_ms,
        probes_enabled=allowed,
        origin_of=origins,
        probes_reason=why,
        cache_secret=origins.cache_secret,
    )
    origins.flush()
    return built
