"""Fitting and rendering the pack: the text an agent reads, within ``--max-chars``.

:func:`fit` trims the memory index first, then the due and woken lists (each
keeps its first :data:`KEEP_FIRST` entries), and never a belief or the
persona; :func:`render_text` lays out the sections in the order SPEC §4 gives
them. No line is ever cut.

A session-start hook has a hard wall as well (:class:`HardWall`): past it
the agent swaps the whole output for a short preview. Inside one, when the
context layers alone are over the wall, :func:`fit` keeps whole context files
in order while they fit, names the rest by path, and opens the text with a
warning that says so.
"""

from __future__ import annotations

from collections.abc import Mapping

from rouse.core import layout
from rouse.trust import fence

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

QUARANTINE_TEXT = "not injected: nobody you trust vouches for these"
#: Why each quarantined file is held back, by its effective origin.
QUARANTINE_WHY = {
    "untrusted": "from an untrusted source",
    "unknown": "its origin does not verify (edited since stamped, or never stamped)",
}
#: For the owner, never an instruction to the agent: re-stamping is the owner's act.
QUARANTINE_OWNER = (
    "  (for the owner, from outside the agent: review them, then `rouse stamp --changed` "
    "re-signs what you edited by hand, `rouse stamp --origin owner FILE` vouches for a "
    "file; or delete them)"
)

LIST_CAP = 20
#: The due and woken sections show at least this many entries, whatever the size.
KEEP_FIRST = 3
LADDER = ("intention", "goal", "action", "task", "reminder")
CONTEXT_KINDS = (("persona", "persona"), ("belief", "beliefs"), ("motivation", "motivations"))

#: (limit, measure) while a :class:`HardWall` is in force; see :func:`fit`.
_wall: tuple[int, Callable[[str], int]] | None = None


class HardWall:
    """While in force, :func:`fit` never returns text longer than ``limit``.

    ``measure`` is how the agent counts (characters, UTF-16 units, bytes).
    The pack runs as a hook in a process of its own, so a module-level
    setting is enough, and it keeps the CLI's call to :func:`fit` as it is.
    """

    def __init__(self, limit: int, measure: Callable[[str], int] = len) -> None:
        self.wall = (limit, measure)

    def __enter__(self) -> HardWall:
        global _wall
        self.before, _wall = _wall, self.wall
        return self

    def __exit__(self, *exc: object) -> None:
        global _wall
        _wall = self.before


class Pack:
    """The pack, as data (``--json``) and as text."""

    def __init__(self, data: dict[str, Any], text: str, trimmed: list[str] | None = None):
        self.data = data
        self.text = text
        self.trimmed = trimmed or []  # what was cut to fit, in order
        #: what it was computed from: the tree, the decisions, the walk cache (the CLI
        #: keeps these alive to the end of the process: tearing thousands of objects
        #: down costs more than it saves)
        self.kept: tuple[object, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return self.data


def _context_entries(data: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """The context files in the order the pack shows them: persona, beliefs, motivations."""
    entries: list[tuple[str, Mapping[str, Any]]] = []
    for kind, key in CONTEXT_KINDS:
        value = data[key]
        entries += [(kind, value)] if kind == "persona" else [(kind, e) for e in value]
    return [(kind, entry) for kind, entry in entries if entry]


def fit(data: dict[str, Any], max_chars: int) -> Pack:
    """Render within ``max_chars``: trim the index, then due and woken, never context.

    Lists shrink one entry at a time; due and woken keep their first
    :data:`KEEP_FIRST` entries. If the text is still too long, the context
    layers alone are over: the pack says so and is longer than asked — unless
    a :class:`HardWall` is in force and the text is over it too, in which
    case whole context files are left out from the end (each still named by
    its path) until it fits.
    """
    limit, measure = _wall if _wall is not None else (None, len)
    caps = {
        "index": len(data["index"]),
        "due": len(data["due"]),
        "woken": min(LIST_CAP, len(data["woken"])),
    }
    floors = {"index": 0, "due": KEEP_FIRST, "woken": KEEP_FIRST}
    context_total = len(_context_entries(data))
    shown_context = context_total

    def render() -> str:
        return render_text(data, caps["index"], caps["due"], caps["woken"], shown_context)

    def shrink(target: int, floor: Mapping[str, int]) -> str:
        text = render()
        for name in ("index", "due", "woken"):
            while measure(text) > target and caps[name] > floor[name]:
                caps[name] -= 1
                text = render()
        return text

    text = shrink(max_chars, floors)
    if measure(text) > max_chars:
        data["warnings"].append(
            f"the context layers alone exceed --max-chars {max_chars}: "
            "they are never cut, so the pack is longer than asked"
            if context_total
            else f"the pack is longer than --max-chars {max_chars}: the due and woken lists "
            f"keep their first {KEEP_FIRST} entries and warnings are never cut"
        )
        text = render()
        if limit is not None and measure(text) > limit:
            data["warnings"].pop()  # the first line says what happened instead
            text = render()
            while measure(text) > limit and shown_context > 0:
                shown_context -= 1
                text = render()
            if measure(text) > limit:  # warnings and probes alone: lists give way too
                text = shrink(limit, dict.fromkeys(floors, 0))
    uncapped = {"index": len(data["index"]), "due": len(data["due"])}
    uncapped["woken"] = min(LIST_CAP, len(data["woken"]))  # the usual cap is not a trim
    trimmed = [name for name in ("index", "due", "woken") if caps[name] < uncapped[name]]
    if shown_context < context_total:
        trimmed.append("context")
    data["not_listed"].update(
        index=data["index_total"] - caps["index"],
        due=data["due_total"] - caps["due"],
        woken=len(data["woken"]) - caps["woken"],
        context=[entry["path"] for _, entry in _context_entries(data)[shown_context:]],
        trimmed_for_size=trimmed,
    )
    shown = dict(data)
    shown["index"] = data["index"][: caps["index"]]
    shown["due"] = data["due"][: caps["due"]]
    shown["woken"] = data["woken"][: caps["woken"]]
    return Pack(shown, text, trimmed)


def _context_block(kind: str, entry: Mapping[str, Any]) -> list[str]:
    name = "persona" if kind == "persona" else f"{kind} {entry['slug']}"
    if entry["body"] is None:
        return [
            f"{kind} [{entry['slug']}] — {entry['age']} (on disk: no keyword matches the query)"
        ]
    if fence.quoted(entry["origin"]):  # (no key: context nobody signed, quoted as data)
        lead = f"{name} [{entry['origin']}] — not standing truth until the owner vouches for it: "
        return [*fence.block(entry["body"], entry["origin"], lead=lead, inner="  "), ""]
    return [f"{name} [{entry['origin']}]:", entry["body"], ""]


def _message_lines(message: Mapping[str, Any] | None) -> list[str]:
    """A reminder's message under its woken or due entry (nothing for other records)."""
    if not message:
        return []
    return fence.message_block(
        message["lines"], message["more"], message["file"], message["origin"]
    )


def _left_out_line(kind: str, entry: Mapping[str, Any]) -> str:
    return f"{kind} [{entry['slug']}] — left out to fit the hook's limit: read {entry['path']}"


def render_text(
    data: Mapping[str, Any],
    index_cap: int,
    due_cap: int,
    woken_cap: int,
    context_cap: int | None = None,
) -> str:
    """The pack's text with the lists cut to their caps, and the first ``context_cap``
    context files shown (the rest named by path under a first-line warning)."""
    entries = _context_entries(data)
    shown_context = len(entries) if context_cap is None else context_cap
    out: list[str] = []
    if shown_context < len(entries):
        out.append(
            f"WARNING: {len(entries) - shown_context} of {len(entries)} context files are NOT "
            "in this pack (it would pass the agent's limit on hook output): read each file "
            "marked 'left out' below before you rely on your memory"
        )
    out += [f"now: {data['now']}", ""]
    if data["probes"]:
        out.append(
            "probes (measured now; a reading outranks any memory file; <unknown> means go check):"
        )
        out += [f"  {p['name']}: {p['reading']}" for p in data["probes"]]
        out.append("")
    woken = data["woken"]
    if woken:
        out.append(f"woken: {len(woken)} record(s) woke you, not answered yet")
        for item in woken[:woken_cap]:
            out.append(f"  {item['wake']}")
            out += _message_lines(item.get("message"))
            out.append(f"    at: {item['path']}")
        if len(woken) > woken_cap:
            out.append(f"  … and {len(woken) - woken_cap} more — ls .rouse/nudges")
        out.append("")
    due, due_total = data["due"], data["due_total"]
    if due:
        out.append(f"due: {due_total} record(s) want you")
        for item in due[:due_cap]:
            nudge = f", nudge {item['nudge']}" if item["nudge"] else ""
            still = "due" if item["reason"] in ("due", "nag", "expire") else "last moved"
            out.append(f"  {item['record']} — {item['reason']}, {still} {item['still']}{nudge}")
            out += _message_lines(item.get("message"))
            out.append(f"    at: {item['path']}")
            if item["line"] and fence.quoted(item["origin"]):
                out += fence.block(item["line"], item["origin"], "its fields: ", "    ", "      ")
            elif item["line"]:
                out.append(f"    {item['line']}")
        if due_total > due_cap:
            out.append(f"  … and {due_total - due_cap} more — rouse due")
        out.append("")
    if entries:
        out += ["standing truth (context layers: true until edited, not news):", ""]
        for kind, entry in entries[:shown_context]:
            out += _context_block(kind, entry)
        out += [_left_out_line(kind, entry) for kind, entry in entries[shown_context:]]
        if out[-1] != "":
            out.append("")
    if data["quarantined"]:
        out.append(f"quarantined ({QUARANTINE_TEXT}):")
        out += [
            f"  {q['kind']} {q['slug']} — {q['path']}: "
            + QUARANTINE_WHY.get(q.get("origin", "untrusted"), QUARANTINE_WHY["untrusted"])
            for q in data["quarantined"]
        ]
        out += [QUARANTINE_OWNER, ""]
    ladder = data["ladder"]
    line = "ladder: " + " · ".join(f"{ladder[k]} {k}s" for k in LADDER) + " open"
    if ladder.get("snoozed"):
        line += f" ({ladder['snoozed']} of them snoozed)"
    if ladder.get("fired"):
        line += f" · {ladder['fired']} fired, waiting for done"
    out.append(line)
    tasks = data.get("tasks") or {}
    for item in tasks.get("running", []):
        latest = item["checkpoint"]
        said = f" — latest checkpoint {fence.inline(latest, item['origin'])}" if latest else ""
        out.append(
            f"  running: {item['record']} (attempt {item['attempts'] or '?'}, "
            f"since {item['started'] or '?'}){said}"
        )
    out += [f"  held: {why}" for why in tasks.get("held", [])]
    if data["plugins"]:
        out.append(
            f"plugins: {len(data['plugins'])} on ({', '.join(data['plugins'])}) — "
            f"settings in {layout.PLUGINS}/"
        )
    out.append("")
    index = data["index"][:index_cap]
    if index:
        out.append("memory index (bodies stay on disk; open a file to read it):")
        for label, fresh in (("fresh", True), ("older", False)):
            group = [item for item in index if item["fresh"] is fresh]
            if group:
                out.append(f"{label}:")
            for item in group:
                words = fence.inline(item["keywords"], item["origin"])
                keywords = f" — {words}" if words else ""
                out.append(f"  {item['path']} [{item['origin']}] ({item['age']}{keywords})")
                if item["probes"]:
                    shown = ", ".join(f"{k}={v}" for k, v in item["probes"].items())
                    out.append(f"    probes: {shown}")
                if item.get("drifted"):
                    out.append(f"    drifted: {item['drifted']}")
        out.append("")
    hidden = data["index_total"] - index_cap
    closed = data["not_listed"]["closed_records"]
    parts = []
    if hidden:
        parts.append(f"{hidden} more notes/backlog items")
    if closed:
        parts.append(f"{closed} closed records")
    parts.append("every body")
    out.append(f"not listed: {', '.join(parts)} — `rouse recall QUERY` or grep finds them")
    if data["warnings"]:
        out += ["", "warnings:"]
        out += [f"  {w}" for w in data["warnings"]]
    # what the tree's files say (a checkpoint, a header) never reaches a terminal raw
    return layout.shown("\n".join(out) + "\n", lines=True)
