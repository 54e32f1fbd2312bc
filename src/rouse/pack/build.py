"""The pack: the block printed at the top of every session (seam one).

Read-only toward memory (its only writes are its own caches in ``.rouse/``,
and it still works when it cannot write them) and fresh (computed now; the
header cache only saves re-reading files whose size and mtime are unchanged).
"""

from __future__ import annotations

import heapq
import re
from collections import Counter
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from pathlib import Path

from rouse.core import body, clock, header, layout, nudges, snapshot, supersession, sweepstate
from rouse.core.body import log_entries, split_log
from rouse.core.cache import HeaderCache
from rouse.core.clock import still_since
from rouse.core.errors import HeaderError
from rouse.core.planned import instant, micros, survey
from rouse.core.stateshapes import WORK
from rouse.core.timefmt import human_age, iso_stamp
from rouse.core.tree import File, Record, Tree, display_ids
from rouse.pack.findings import keep
from rouse.pack.render import LADDER, LIST_CAP, Pack, fit
from rouse.pack.warnings import live_warnings, standing_warnings
from rouse.probes import baselines, demand, readings
from rouse.probes import definitions as probes
from rouse.probes.gate import probes_allowed_at
from rouse.trust import fence
from rouse.trust.origins import effective_origin, origin_reader

# typing costs ~5 ms to import on the pack's start-up path; annotations are
# strings here (__future__), so it is only imported for the type checker
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

DEFAULT_MAX_CHARS = 9000
INDEX_CAP = 40
FRESH = timedelta(hours=36)
MAX_CONTEXT_BYTES = 1024 * 1024
_WORD = re.compile(r"[a-z0-9]+")

OriginOf = Callable[[File], str]


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def _body(root: Path, file: File) -> str:
    """A context file's body, injected whole — its authored part, that is: lines
    below a log marker are nobody's vouched-for words, so they are only counted."""
    with open(root / file.rel, "rb") as handle:
        data = handle.read(MAX_CONTEXT_BYTES)
    try:
        _, body = header.split(data, file.rel)
    except HeaderError:
        body = data
    authored, log = split_log(body)
    text = authored.decode("utf-8", "replace").strip("\n")
    notes = log_entries(body) if log else []
    if notes:
        text += f"\n({len(notes)} note(s) in its log are not part of it: read {file.rel})"
    return text


# -- sections -------------------------------------------------------------------


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
    """An item's instant (:func:`rouse.core.planned.micros`); TypeError if it is none."""
    found = instant(value)
    if found is None:
        raise TypeError("an item without its instant")
    return found


def _now_line(now: datetime) -> str:
    zone = now.astimezone().tzname() or "local"
    return f"{now.strftime('%A %Y-%m-%d %H:%M')} {zone}"


def _message(root: Path, record: Record, origin_of: OriginOf) -> dict[str, Any] | None:
    """A reminder's message for a woken or due entry (None for other records)."""
    if record.type != "reminder":
        return None
    shown, more = nudges.message(root, record)
    if not shown and not more:
        return None
    return {
        "lines": shown,
        "more": more,
        "origin": origin_of(record),
        "file": record.rel,
    }


def _woken(
    root: Path, tree: Tree, ids: Mapping[str, str], origin_of: OriginOf, now: datetime
) -> list[dict[str, Any]]:
    items = []
    for n in nudges.woken(root, tree, getattr(origin_of, "cache_secret", None), now):
        record = tree.records.get(n.record_dir)
        items.append(
            {
                "record": ids.get(n.record_dir, n.record_dir),
                "path": n.record_dir,
                "at": micros(n.at),
                "reason": n.reason,
                "nudge": n.number,
                "file": n.path.relative_to(root).as_posix() if n.path is not None else None,
                "message": _message(root, record, origin_of) if record is not None else None,
            }
        )
    return items


def _wake_line(item: dict[str, Any], at: datetime, now: datetime) -> str:
    """A woken entry's line, its age (``at``) measured now (a 09:00 wake read at 12:00)."""
    age = human_age(at, now)
    if item["file"] is None:  # a fired reminder whose wake went elsewhere (or was archived)
        return f"{item['record']} — fired {age}, waiting for done"
    if item["reason"] == "tell":
        return f"{item['record']} — your tell to the owner was given up {age}"
    return f"{item['record']} — woke you {age} ({item['reason']}, nudge {item['nudge']})"


def _due(
    root: Path, shown: list[clock.Decision], ids: Mapping[str, str], origin_of: OriginOf
) -> list[dict[str, Any]]:
    """The due list's items: ``shown`` (the LIST_CAP records still longest, oldest first)."""
    items = []
    for decision in shown:
        record = decision.record
        line = None
        for key in ("closes-when", "success-when", "due"):
            value = (record.get(key) or "").strip()
            if value:
                line = f"{key}: {value}"
                break
        items.append(
            {
                "record": ids[record.dir],
                "path": record.dir,
                "reason": decision.reason,
                "still": micros(still_since(decision)),  # (its age, at render: text only)
                "due_at": micros(decision.due_at),
                "moved_at": micros(decision.moved_at),
                "nudge": decision.nudge if decision.nudge > 1 else None,
                "line": line,
                # its line is the record's words: shown by the fence rule of its origin
                "origin": origin_of(record),
                "message": _message(root, record, origin_of),
            }
        )
    return items


def _replaced(tree: Tree, origin_of: OriginOf) -> set[str]:
    """The paths of notes and context files another one supersedes: never served as
    current. A file held back for its origin supersedes nothing."""
    keyed = bool(getattr(origin_of, "keyed", False))
    return set(supersession.superseded(tree, lambda f: not fence.held_back(origin_of(f), keyed)))


def _context(
    root: Path, tree: Tree, origin_of: OriginOf, query: str | None, replaced: set[str]
) -> tuple[dict[str, Any], list[dict[str, str]]]:
    layers: dict[str, Any] = {"persona": None, "beliefs": [], "motivations": []}
    quarantined: list[dict[str, str]] = []
    asked = _words(query) if query else None
    # with a stamp key the owner vouches for context by stamping it: what does not
    # verify is quarantined like what came from an untrusted source
    keyed = bool(getattr(origin_of, "keyed", False))
    for ctx in sorted(tree.context, key=lambda c: c.slug):
        if ctx.rel in replaced:
            continue
        origin = origin_of(ctx)
        if fence.held_back(origin, keyed):
            quarantined.append(
                {"kind": ctx.kind, "slug": ctx.slug, "path": ctx.rel, "origin": origin}
            )
            continue
        entry: dict[str, Any] = {"slug": ctx.slug, "path": ctx.rel, "origin": origin}
        if ctx.kind == "motivation" and asked is not None:
            keywords = _words((ctx.get("keywords") or "").replace(",", " "))
            # without keywords nothing says it is off-topic: it stays whole
            if keywords and not keywords & asked:
                entry["mtime"] = micros(ctx.mtime)
                entry["body"] = None  # on disk, thinned by --query
                layers["motivations"].append(entry)
                continue
        entry["body"] = _body(root, ctx)
        if ctx.kind == "persona":
            layers["persona"] = entry
        else:
            layers[f"{ctx.kind}s"].append(entry)
    return layers, quarantined


def _index(
    root: Path,
    tree: Tree,
    origin_of: OriginOf,
    known: Mapping[str, probes.Probe],
    backlog: list[Record],
    replaced: set[str],
) -> tuple[list[dict[str, Any]], int]:
    """The newest INDEX_CAP notes and open backlog items, and how many there are in all
    (a superseded note is not one of them)."""
    files: list[File] = [*(n for n in tree.notes if n.rel not in replaced), *backlog]
    total = len(files)
    # (the newest first, then by path: only the first INDEX_CAP are shown)
    files = heapq.nsmallest(INDEX_CAP, files, key=lambda f: (-f.mtime_ns, f.rel))
    cache = demand.load_cache(root, getattr(origin_of, "key_path", None))
    held = _baselines(root, origin_of, files)
    items = []
    for file in files:
        names = [n.strip() for n in (file.get("probes") or "").split(",") if n.strip()]
        shown = {}
        for name in names:
            probe = known.get(name)
            reading = demand.cached_reading(root, probe, cache) if probe else None
            if reading is not None:
                shown[name] = reading
        items.append(
            {
                "path": file.rel,
                "origin": origin_of(file),
                "mtime": micros(file.mtime),
                "keywords": (file.get("keywords") or "").strip(),
                "probes": shown,
            }
        )
        found = baselines.drift(held.get(file.rel), shown) if held else []
        if found:
            items[-1]["drifted"] = baselines.said(found)
    return items, total


def _baselines(root: Path, origin_of: OriginOf, files: list[File]) -> baselines.Baselines:
    """The readings the shown notes were written against (read only when one names probes)."""
    if not any(f.get("probes") for f in files):
        return {}
    secret = getattr(origin_of, "cache_secret", None)
    return baselines.load(root, secret)


def _tasks(
    root: Path, tasks: list[Record], ids: Mapping[str, str], origin_of: OriginOf
) -> list[dict[str, Any]]:
    """Running tasks (``tasks``), each with its latest checkpoint (read from the task
    file itself: running tasks are few)."""
    running = []
    for record in tasks:
        latest = None
        try:
            data = (root / record.rel).read_bytes()
            _, rest = header.split(data, record.rel)
            found = body.checkpoints(rest)
            latest = found[-1] if found else None
        except (OSError, HeaderError):
            pass
        running.append(
            {
                "record": ids.get(record.dir, record.id),
                "path": record.dir,
                "started": (record.get("started") or "").strip(),
                "attempts": (record.get("attempts") or "").strip(),
                "checkpoint": latest,
                "origin": origin_of(record),
            }
        )
    running.sort(key=lambda item: (item["started"], item["path"]))
    return running


def _held(root: Path) -> list[str]:
    """The tasks the worker holds for trust (its ``work.json``: read at every pack)."""
    state = WORK.read(root / layout.STATE_DIR / sweepstate.WORK_STATE)
    if isinstance(state, dict) and isinstance(state.get("held"), list):
        return [str(why) for why in state["held"][:LIST_CAP]]
    return []


class _Census:
    """One pass over the records, for the ladder, the running tasks and the index: open
    records per level (and ``fired``: one-shot reminders waiting for done, which are not
    closed), how many records are closed, the running tasks, the open backlog items."""

    def __init__(self, tree: Tree):
        open_kinds: list[str] = []
        fired = closed = 0
        self.running: list[Record] = []
        self.backlog: list[Record] = []
        is_open, status_of = clock.is_open, clock.status_of
        for record in tree.records.values():
            kind = record.type
            memo = record.open_memo  # (is_open, where the clock has already asked)
            if memo is None:
                memo = is_open(record)
            if memo:
                open_kinds.append(kind)
                if kind == "task":
                    if status_of(record) == "running":  # (running is open)
                        self.running.append(record)
                elif kind == "backlog":
                    self.backlog.append(record)
            elif kind == "reminder" and status_of(record) == "fired":
                fired += 1
            else:
                closed += 1
        self.ladder = dict.fromkeys((*LADDER, "fired"), 0)
        for kind, count in Counter(open_kinds).items():
            if kind in LADDER:
                self.ladder[kind] = count
        self.ladder["fired"] = fired
        self.closed = closed


def build_pack(
    root: Path,
    now: datetime,
    *,
    query: str | None = None,
    max_chars: int = DEFAULT_MAX_CHARS,
    probe_budget_ms: int = readings.DEFAULT_BUDGET_MS,
    probes_enabled: bool = True,
    origin_of: OriginOf | None = None,
    probes_reason: str | None = None,
    cache_secret: bytes | None = None,
) -> Pack:
    """Compute the pack for the tree at ``root`` at ``now``: from the snapshot the last
    full walk kept (:mod:`rouse.core.snapshot`) while it holds, else from a walk."""
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
            return _finish(root, kept, now, max_chars, [])
        except snapshot.DAMAGED:
            pass  # not what a pack kept: walk
    walked = HeaderCache(root, cache_secret)
    tree = walked.walk(now)
    ids = display_ids(tree)
    probe_list, _ = probes.load_probes(tree)
    known = {p.name: p for p in probe_list} if probes_enabled else {}
    probe_notes = []
    if probe_list and not probes_enabled:
        probe_notes.append(
            probes_reason or "probes are off (ROUSE_PROBES=off): every reading is <unknown>"
        )
    if probes_enabled:
        measured = readings.run_pack_tier(root, probe_list, probe_budget_ms)
    else:
        measured = [(p.name, readings.UNKNOWN) for p in probe_list if p.tier == "pack"]
    with sweepstate.one_reader(root):  # (the ledger reads below share one connection)
        woken = _woken(root, tree, ids, origin_of, now)
        # the clock's verdicts, from the plans the walk cache kept where nothing changed
        surveyed = survey(tree, now)
        shown, due_total = surveyed.first(LIST_CAP, {w["path"] for w in woken})
        replaced = _replaced(tree, origin_of)
        layers, quarantined = _context(root, tree, origin_of, query, replaced)
        census = _Census(tree)
        index, index_total = _index(root, tree, origin_of, known, census.backlog, replaced)
        ladder = census.ladder
        ladder["snoozed"] = surveyed.snoozed  # (counted open)
        found: dict[str, Any] = {
            "woken": woken,
            "due": _due(root, shown, ids, origin_of),
            "due_total": due_total,
            "persona": layers["persona"],
            "beliefs": layers["beliefs"],
            "motivations": layers["motivations"],
            "quarantined": quarantined,
            "ladder": ladder,
            "running": _tasks(root, census.running, ids, origin_of),
            "plugins": [Path(p.rel).stem for p in tree.plugins],
            "index": index,
            "index_total": index_total,
            "closed_records": census.closed,
            "warnings": standing_warnings(
                tree, surveyed.problems, layers, probe_notes, origin_of, unverified
            ),
        }
        # kept for the next pack while nothing changes: not when it runs probes, nor
        # while anything could wake the agent
        if tree.probes is None and not waiting and not nudges.any_fired(tree):
            keep(root, walked, tree, surveyed, now, cache_secret, keyed, {part: found})
        return _finish(root, found, now, max_chars, measured, tree, shown, walked)


def _finish(
    root: Path,
    found: dict[str, Any],
    now: datetime,
    max_chars: int,
    measured: list[tuple[str, str]],
    *kept_alive: object,
) -> Pack:
    """The pack at ``now`` from what the tree says (``found``): ages measured now, and
    what is read afresh at every pack (probe readings, the tasks held, the sweeper's
    warnings: the ledger, not the tree, says those), then fitted to ``max_chars``."""
    stamps: dict[int, str | None] = {}  # (instants shared by items: each said once)

    def stamp(value: int | None) -> str | None:
        if value is None:
            return None
        if value not in stamps:
            stamps[value] = iso_stamp(instant(value))
        return stamps[value]

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
    before, after = found["warnings"]
    data: dict[str, Any] = {
        "now": _now_line(now),
        "probes": [{"name": name, "reading": value} for name, value in measured],
        "woken": woken,
        "due": due,
        "due_total": found["due_total"],
        "persona": found["persona"],
        "beliefs": found["beliefs"],
        "motivations": motivations,
        "quarantined": found["quarantined"],
        "ladder": found["ladder"],
        "tasks": {"running": found["running"], "held": _held(root)},
        "plugins": found["plugins"],
        "index": index,
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
