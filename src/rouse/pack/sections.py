"""The pack's sections, as a walk finds them in the tree: what woke the agent, the due
list, the context layers, the memory index, the running tasks and the census of open
records. Each is data — records, the clock's verdicts, instants in microseconds
(:func:`rouse.cache.plans.micros`) — which :mod:`rouse.pack.build` renders (ages are
measured at every pack) and the snapshot keeps as it is."""

from __future__ import annotations

import heapq
import re
from collections.abc import Callable, Mapping
from pathlib import Path

from rouse.cache.plans import micros
from rouse.core import body, clock, header, levels, supersession
from rouse.core.body import log_entries, split_log
from rouse.core.clock import still_since
from rouse.core.errors import HeaderError
from rouse.core.tree import File, Record, Tree
from rouse.pack.render import LADDER
from rouse.probes import baselines, demand
from rouse.probes import definitions as probes
from rouse.state import nudges
from rouse.trust import fence

TYPE_CHECKING = False
if TYPE_CHECKING:
    from datetime import datetime
    from typing import Any


INDEX_CAP = 40
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


def woken(
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


def due(
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


def replaced(tree: Tree, origin_of: OriginOf) -> set[str]:
    """The paths of notes and context files another one supersedes: never served as
    current. A file held back for its origin supersedes nothing."""
    keyed = bool(getattr(origin_of, "keyed", False))
    return set(supersession.superseded(tree, lambda f: not fence.held_back(origin_of(f), keyed)))


def context(
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


def index(
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
    cache = demand.DemandCache(root, getattr(origin_of, "key_path", None))
    held = _baselines(root, origin_of, files)
    items = []
    for file in files:
        names = [n.strip() for n in (file.get("probes") or "").split(",") if n.strip()]
        shown = {}
        for name in names:
            probe = known.get(name)
            reading = cache.reading(probe) if probe else None
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


def tasks(
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


class Census:
    """One pass over the records, for the ladder, the running tasks and the index: open
    records per level (and ``fired``: one-shot reminders waiting for done, which are not
    closed), how many records are closed, the running tasks, the open backlog items."""

    def __init__(self, tree: Tree):
        self.ladder = ladder = dict.fromkeys((*LADDER, "fired"), 0)
        closed = 0
        self.running: list[Record] = []
        self.backlog: list[Record] = []
        is_open, status_of = levels.is_open, levels.status_of
        for record in tree.records.values():
            kind = record.type
            memo = record.open_memo  # (is_open, where the clock has already asked)
            if memo is None:
                memo = is_open(record)
            if memo:
                if kind in ladder:  # (no record is of the kind "fired")
                    ladder[kind] += 1
                if kind == "task":
                    if status_of(record) == "running":  # (running is open)
                        self.running.append(record)
                elif kind == "backlog":
                    self.backlog.append(record)
            elif kind == "reminder" and status_of(record) == "fired":
                ladder["fired"] += 1
            else:
                closed += 1
        self.closed = closed
