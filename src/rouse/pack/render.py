"""Fitting and rendering the pack: the text an agent reads, within ``--max-chars``.

:func:`fit` trims the memory index first, then the due list, and never a
belief or the persona; :func:`render_text` lays out the sections in the
order SPEC §4 gives them.
"""

from __future__ import annotations

from collections.abc import Mapping

from rouse.core import clock, layout
from rouse.core.tree import Tree

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

QUARANTINE_TEXT = "from an untrusted source — review it, then re-stamp or delete"

LIST_CAP = 20
LADDER = ("intention", "goal", "action", "task", "reminder")


class Pack:
    """The pack, as data (``--json``) and as text."""

    def __init__(self, data: dict[str, Any], text: str, trimmed: list[str] | None = None):
        self.data = data
        self.text = text
        self.trimmed = trimmed or []  # what was cut to fit, in order
        #: what it was computed from (the CLI keeps these alive to the end of
        #: the process: tearing thousands of objects down costs more than it saves)
        self.tree: Tree | None = None
        self.decisions: list[clock.Decision] = []

    def to_json(self) -> dict[str, Any]:
        return self.data


def fit(data: dict[str, Any], max_chars: int) -> Pack:
    """Render within ``max_chars``: trim the index first, then the due list, never context."""
    index_cap = len(data["index"])
    due_cap = len(data["due"])
    woken_cap = min(LIST_CAP, len(data["woken"]))
    trimmed: list[str] = []
    while True:
        text = render_text(data, index_cap, due_cap, woken_cap)
        if len(text) <= max_chars:
            break
        if index_cap > 0:
            index_cap -= 1
        elif due_cap > 0:
            due_cap -= 1
        else:
            break
    if index_cap < len(data["index"]):
        trimmed.append("index")
    if due_cap < len(data["due"]):
        trimmed.append("due")
    if len(text) > max_chars:
        data["warnings"].append(
            f"the context layers alone exceed --max-chars {max_chars}: "
            "they are never cut, so the pack is longer than asked"
        )
        text = render_text(data, index_cap, due_cap, woken_cap)
    data["not_listed"].update(
        index=data["index_total"] - index_cap,
        due=data["due_total"] - due_cap,
        woken=len(data["woken"]) - woken_cap,
        trimmed_for_size=trimmed,
    )
    shown = dict(data)
    shown["index"] = data["index"][:index_cap]
    shown["due"] = data["due"][:due_cap]
    shown["woken"] = data["woken"][:woken_cap]
    return Pack(shown, text, trimmed)


def _context_block(kind: str, entry: Mapping[str, Any]) -> list[str]:
    name = "persona" if kind == "persona" else f"{kind} {entry['slug']}"
    if entry["body"] is None:
        return [
            f"{kind} [{entry['slug']}] — {entry['age']} (on disk: no keyword matches the query)"
        ]
    return [f"{name} [{entry['origin']}]:", entry["body"], ""]


def render_text(data: Mapping[str, Any], index_cap: int, due_cap: int, woken_cap: int) -> str:
    out: list[str] = [f"now: {data['now']}", ""]
    if data["probes"]:
        out.append(
            "probes (measured now; a reading outranks any memory file; <unknown> means go check):"
        )
        out += [f"  {p['name']}: {p['reading']}" for p in data["probes"]]
        out.append("")
    woken = data["woken"]
    if woken:
        out.append(f"woken: {len(woken)} record(s) woke you and have not moved since")
        for item in woken[:woken_cap]:
            out += [f"  {item['wake']}", f"    at: {item['path']}"]
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
            out.append(f"    at: {item['path']}")
            if item["line"]:
                out.append(f"    {item['line']}")
        if due_total > due_cap:
            out.append(f"  … and {due_total - due_cap} more — rouse due")
        out.append("")
    if data["persona"] or data["beliefs"] or data["motivations"]:
        out += ["standing truth (context layers: true until edited, not news):", ""]
        if data["persona"]:
            out += _context_block("persona", data["persona"])
        for entry in data["beliefs"]:
            out += _context_block("belief", entry)
        for entry in data["motivations"]:
            out += _context_block("motivation", entry)
        if out[-1] != "":
            out.append("")
    if data["quarantined"]:
        out.append(f"quarantined ({QUARANTINE_TEXT}):")
        out += [f"  {q['kind']} {q['slug']} — {q['path']}" for q in data["quarantined"]]
        out.append("")
    ladder = data["ladder"]
    out.append("ladder: " + " · ".join(f"{ladder[k]} {k}s" for k in LADDER) + " open")
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
                keywords = f" — {item['keywords']}" if item["keywords"] else ""
                out.append(f"  {item['path']} [{item['origin']}] ({item['age']}{keywords})")
                if item["probes"]:
                    shown = ", ".join(f"{k}={v}" for k, v in item["probes"].items())
                    out.append(f"    probes: {shown}")
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
    return "\n".join(out) + "\n"
