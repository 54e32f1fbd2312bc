"""Fitting and rendering the pack: the text an agent reads, within ``--max-chars``
(:func:`fit`: what it cuts first, and what never), its sections laid out in the order
SPEC §4 gives them (:class:`_Pieces`). No line is ever cut. A session-start hook's
hard wall is :class:`HardWall`.
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

    ``measure`` is how the agent counts (characters, UTF-16 units, bytes): a sum over
    the characters, so a text's measure is the sum of its pieces'.
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
    its path) until it fits. Each cut is tried by adding up the measures of
    pieces rendered once (:class:`_Pieces`); the text is joined at the end.
    """
    limit, measure = _wall if _wall is not None else (None, len)
    pieces = _Pieces(data, measure)
    caps = {
        "index": len(data["index"]),
        "due": len(data["due"]),
        "woken": min(LIST_CAP, len(data["woken"])),
        "context": len(pieces.context),
    }
    floors = {"index": 0, "due": KEEP_FIRST, "woken": KEEP_FIRST}
    pieces.shrink(caps, max_chars, floors)
    if pieces.size(caps) > max_chars:
        data["warnings"].append(
            f"the context layers alone exceed --max-chars {max_chars}: "
            "they are never cut, so the pack is longer than asked"
            if pieces.context
            else f"the pack is longer than --max-chars {max_chars}: the due and woken lists "
            f"keep their first {KEEP_FIRST} entries and warnings are never cut"
        )
        if limit is not None and pieces.size(caps) > limit:
            data["warnings"].pop()  # the first line says what happened instead
            while pieces.size(caps) > limit and caps["context"] > 0:
                caps["context"] -= 1
            if pieces.size(caps) > limit:  # warnings and probes alone: lists give way too
                pieces.shrink(caps, limit, dict.fromkeys(floors, 0))
    return _cut(data, caps, pieces.text(caps))


def _cut(data: dict[str, Any], caps: Mapping[str, int], text: str) -> Pack:
    """The pack cut to ``caps``: its data says what was left out, and why."""
    uncapped = {"index": len(data["index"]), "due": len(data["due"])}
    uncapped["woken"] = min(LIST_CAP, len(data["woken"]))  # the usual cap is not a trim
    trimmed = [name for name in ("index", "due", "woken") if caps[name] < uncapped[name]]
    context = _context_entries(data)
    if caps["context"] < len(context):
        trimmed.append("context")
    data["not_listed"].update(
        index=data["index_total"] - caps["index"],
        due=data["due_total"] - caps["due"],
        woken=len(data["woken"]) - caps["woken"],
        context=[entry["path"] for _, entry in context[caps["context"] :]],
        trimmed_for_size=trimmed,
    )
    shown = dict(data)
    for name in ("index", "due", "woken"):
        shown[name] = data[name][: caps[name]]
    return Pack(shown, text, trimmed)


def _joined(lines: list[str]) -> str:
    return "".join(f"{line}\n" for line in lines)


class _Pieces:
    """The pack's text in pieces of whole lines, each entry's rendered once, laid out in
    the order SPEC §4 gives: :meth:`text` joins those a cut keeps (``caps``: how many
    index, due and woken entries and context files), :meth:`size` measures that text."""

    def __init__(self, data: Mapping[str, Any], measure: Callable[[str], int] = len) -> None:
        self.data, self.measure = data, measure
        self.context = _context_entries(data)
        blocks = [_context_block(kind, entry) for kind, entry in self.context]
        self.blocks = [(_joined(lines), lines[-1] == "") for lines in blocks]
        self.left_out = [
            f"{kind} [{entry['slug']}] — left out to fit the hook's limit: read {entry['path']}\n"
            for kind, entry in self.context
        ]
        self.woken = [_joined(_woken_lines(item)) for item in data["woken"][:LIST_CAP]]
        self.due = [_joined(_due_lines(item)) for item in data["due"]]
        self.index = [(item["fresh"], _joined(_index_lines(item))) for item in data["index"]]
        self.middle = _joined(_middle_lines(data))
        self.probes = _joined(_probe_lines(data["probes"]))
        self.sizes: dict[str, int] = {}

    def pieces(self, caps: Mapping[str, int]) -> list[str]:
        data, shown_context = self.data, caps["context"]
        out = []
        if shown_context < len(self.context):
            out.append(
                f"WARNING: {len(self.context) - shown_context} of {len(self.context)} context "
                "files are NOT in this pack (it would pass the agent's limit on hook output): "
                "read each file marked 'left out' below before you rely on your memory\n"
            )
        out.append(f"now: {data['now']}\n\n")
        if self.probes:
            out.append(self.probes)
        woken, woken_cap = data["woken"], caps["woken"]
        if woken:
            out += [f"woken: {len(woken)} record(s) woke you, not answered yet\n"]
            out += self.woken[:woken_cap]
            if len(woken) > woken_cap:
                out.append(f"  … and {len(woken) - woken_cap} more — ls .rouse/nudges\n")
            out.append("\n")
        due_total, due_cap = data["due_total"], caps["due"]
        if data["due"]:
            out += [f"due: {due_total} record(s) want you\n", *self.due[:due_cap]]
            if due_total > due_cap:
                out.append(f"  … and {due_total - due_cap} more — rouse due\n")
            out.append("\n")
        return [*out, *self._context(shown_context), self.middle, *self._tail(caps["index"])]

    def _context(self, shown: int) -> list[str]:
        if not self.context:
            return []
        out = ["standing truth (context layers: true until edited, not news):\n\n"]
        out += [text for text, _ in self.blocks[:shown]] + self.left_out[shown:]
        if shown < len(self.context) or not self.blocks[-1][1]:
            out.append("\n")
        return out

    def _tail(self, index_cap: int) -> list[str]:
        """The memory index cut to ``index_cap``, what is not listed, and the warnings."""
        out = []
        if index_cap:
            out.append("memory index (bodies stay on disk; open a file to read it):\n")
            for label, fresh in (("fresh", True), ("older", False)):
                group = [text for is_fresh, text in self.index[:index_cap] if is_fresh is fresh]
                out += [f"{label}:\n", *group] if group else []
            out.append("\n")
        hidden = self.data["index_total"] - index_cap
        closed = self.data["not_listed"]["closed_records"]
        parts = [f"{hidden} more notes/backlog items"] if hidden else []
        parts += [f"{closed} closed records"] if closed else []
        parts.append("every body")
        out.append(f"not listed: {', '.join(parts)} — `rouse recall QUERY` or grep finds them\n")
        if self.data["warnings"]:
            out.append(_joined(["", "warnings:", *(f"  {w}" for w in self.data["warnings"])]))
        return out

    def text(self, caps: Mapping[str, int]) -> str:
        # what the tree's files say (a checkpoint, a header) never reaches a terminal raw
        return layout.shown("".join(self.pieces(caps)), lines=True)

    def size(self, caps: Mapping[str, int]) -> int:
        """``measure(self.text(caps))``: the sum of its pieces' measures (each taken once),
        unless a piece has something to escape (then a backslash anywhere is doubled too)."""
        pieces, total = self.pieces(caps), 0
        for piece in pieces:
            found = self.sizes.get(piece)
            if found is None:
                plain = layout.shown(piece, lines=True) is piece
                found = self.sizes[piece] = self.measure(piece) if plain else -1
            if found < 0:
                return self.measure(self.text(caps))
            total += found
        return total

    def shrink(self, caps: dict[str, int], target: int, floors: Mapping[str, int]) -> None:
        """Cut the index, then due, then woken, an entry at a time, until within ``target``."""
        for name in ("index", "due", "woken"):
            while caps[name] > floors[name] and self.size(caps) > target:
                caps[name] -= 1


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


def _probe_lines(probes: list[Mapping[str, str]]) -> list[str]:
    if not probes:
        return []
    head = "probes (measured now; a reading outranks any memory file; <unknown> means go check):"
    return [head, *(f"  {p['name']}: {p['reading']}" for p in probes), ""]


def _woken_lines(item: Mapping[str, Any]) -> list[str]:
    return [f"  {item['wake']}", *_message_lines(item.get("message")), f"    at: {item['path']}"]


def _due_lines(item: Mapping[str, Any]) -> list[str]:
    nudge = f", nudge {item['nudge']}" if item["nudge"] else ""
    still = "due" if item["reason"] in ("due", "nag", "expire") else "last moved"
    out = [f"  {item['record']} — {item['reason']}, {still} {item['still']}{nudge}"]
    out += _message_lines(item.get("message"))
    out.append(f"    at: {item['path']}")
    if item["line"] and fence.quoted(item["origin"]):
        out += fence.block(item["line"], item["origin"], "its fields: ", "    ", "      ")
    elif item["line"]:
        out.append(f"    {item['line']}")
    return out


def _index_lines(item: Mapping[str, Any]) -> list[str]:
    words = fence.inline(item["keywords"], item["origin"])
    keywords = f" — {words}" if words else ""
    out = [f"  {item['path']} [{item['origin']}] ({item['age']}{keywords})"]
    if item["probes"]:
        out.append("    probes: " + ", ".join(f"{k}={v}" for k, v in item["probes"].items()))
    if item.get("drifted"):
        out.append(f"    drifted: {item['drifted']}")
    return out


def _middle_lines(data: Mapping[str, Any]) -> list[str]:
    """What no cut touches, between the context and the index: the quarantined files,
    the ladder, the running and held tasks, the plugins."""
    out = []
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
    return [*out, ""]
