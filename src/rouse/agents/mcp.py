"""``rouse mcp``: the memory as MCP tools over stdio (the ``mcp`` extra).

The tools themselves are :class:`rouse.agents.mcp_tools.Tools`; this module
builds the server around them: what clients are told (instructions, tool and
parameter descriptions), strict input schemas (an argument a tool does not
take is an error result that names it), and a refusal (a ``RouseError``)
turned into an error result with nothing written. The ``mcp`` SDK (v2:
``mcp.server.mcpserver.MCPServer``) is imported only inside
:func:`build_server`, so this module loads without it.
"""

import functools
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from rouse.agents.mcp_tools import ADD_TYPES, ENDINGS, Tools, wall_clock
from rouse.core import levels
from rouse.core.errors import RouseError

INSTRUCTIONS = """\
rouse is your memory: plain markdown files in a tree, with a clock that brings \
records back when they go still. If the memory pack is not already in your \
context, call `pack` first and treat it as your memory. Before writing memory \
for the first time in a session, read entrypoint/rouse.md in the tree. Use \
`recall` to find what the pack does not list, `due` to see what wants you, \
`remember` for notes, `intend` for a new intention, `add` for a goal, action, \
task, reminder or backlog item, and `move` / `snooze` / `close` / `promote` to \
keep records honest. To reach the owner (a reminder that speaks to a person, \
news they must hear), call `tell`: the sweeper delivers it through their \
channel. Machine fields (swept, nudges, origin, ...) are rouse's own: a call \
that sets one is refused."""


# -- the server ---------------------------------------------------------------

DESCRIPTIONS = {
    "pack": "The memory pack: now, probe readings, what woke you, what is due, your persona, "
    "beliefs and motivations, and an index of notes. Call it at session start if it is not "
    "already in your context. query thins motivations that share no keyword with it.",
    "recall": "Search notes, backlog, records and context files by words (keywords weigh "
    "most) and, with the semantic extra, by meaning. Returns hits best first as JSON: path, "
    "kind, origin, age (the file's last change, ISO 8601), keywords, snippet, probes, updated, "
    "matched (words, meaning or both), only_log (only the log of rouse's verbs matched), "
    "superseded_by (a newer file replaces it: do not act on it), newer (a newer note on "
    "the same keywords), chunk (the part of a long file that matched by meaning) and "
    "drifted (a probe it names reads differently from when it was written: re-check it, "
    "then review or rewrite it).",
    "due": "What the clock would wake you about now (or by `until`, a stamp, +2h or 'fri 18:00'): "
    "one line per record saying when it is or was due (a forecast first says what it covers, "
    "and lists a repeating reminder once per occurrence), then the "
    "same items as JSON (times ISO 8601). With nothing due, one line saying so.",
    "probe": "Run one demand probe by name (or all, with no name) and return its live reading. "
    "<unknown> means go and check; a reading outranks any note.",
    "remember": "Write a note (inventory/notes/<slug>.md) or replace the body of the existing "
    "note with that slug. keywords: comma-separated words recall and the index use. Stamps "
    "`updated:`. fields: other header fields (never machine fields).",
    "intend": "Open a new intention: something you mean to get done. closes_when says how you "
    "will know it is done. under: a record to nest it under (optional).",
    "add": "Add a goal, action, task, reminder or backlog item (kind). Goals, actions and tasks go "
    "under a record (under = its slug or path). fields: e.g. {'success-when': ...} for a goal, "
    "{'due': '2026-03-20 09:00', '+2h' or 'mon 9am', 'nag': '1h'} for a reminder; "
    "{'every': 'weekdays 09:00'} (or 1d, 2w, 1mo, 'mon,thu 18:30') makes it repeat.",
    "review": "Say a note is still true after checking it (recall or the pack showed it "
    "drifted: a probe it names reads differently now): stamps reviewed:, logs note, and "
    "takes its probes' current readings as what it was written against. Edit the note "
    "instead if it is no longer true.",
    "forget": "Forget a note or context file on purpose (the user asked, or it was wrong and "
    "harmful): its text is replaced by a tombstone holding only why, and it leaves the recall "
    "index at once. The file stays so the forgetting is seen. Records are closed, not "
    "forgotten.",
    "move": "Say a record moved: stamps last-moved now (note: a line appended to its body).",
    "snooze": "Put a record off: not due for any reason before `until` (a stamp, +2h, 'monday', "
    "'tomorrow 09:00') or `duration` from now (e.g. 3d); a move does not cancel it; clear: "
    "true removes it. A reminder gets a new due instead. note: why.",
    "close": "End a record out loud: ending done, dropped or abandoned (a goal is abandoned; "
    "a task ends done, failed or cancelled), with why (required unless done). An action may "
    "carry outcome: as-expected, surprising or contradicts. Done on a repeating reminder "
    "arms its next occurrence; series ends it. Nothing is deleted.",
    "promote": "Turn the backlog item `slug` into an open intention (moves its directory), with "
    "closes_when; under nests it under a record.",
    "cancel": "Call a task off (a cancel: stamp): a pending task ends cancelled without "
    "running; a running one is stopped (its process group) and ends cancelled, listing the "
    "checkpoints it reported.",
    "checkpoint": "Report a task's progress from inside its run: a dated checkpoint line in "
    "the task's log and a wake the sweeper delivers to whoever watches. Give every outward "
    "action (a message sent, something published) its own checkpoint.",
    "tell": "Reach the owner (the human): a message about a record, written to the ledger at "
    "once and delivered by the sweeper at its next tick through the record's channel (a "
    "reminder's channel:) or the default. Says where it will go, or that it waits.",
}


#: Every tool parameter's description, as clients show it (a test holds every one to it).
PARAMETERS: dict[str, dict[str, str]] = {
    "pack": {
        "query": "words about the task at hand: motivations sharing none shrink to one line",
        "max_chars": "fit the pack in this many characters (at least 200; default 9000)",
    },
    "recall": {
        "query": "words to look for (any of them; keywords weigh most)",
        "limit": "at most this many hits (default 10)",
        "kind": "only files of this kind",
        "mode": "words (full-text), meaning (needs the semantic extra) or both; default: both "
        "when the extra is installed, else words",
    },
    "due": {"until": "forecast what comes due by then: '2026-03-14 09:00', '+2h' or 'fri 18:00'"},
    "probe": {"name": "the probe to run; leave it out to run every probe"},
    "remember": {
        "slug": "the note's name: lowercase letters, digits and -, e.g. 'deploy-steps'",
        "body": "the note's text (replaces the body of an existing note with this slug)",
        "keywords": "comma-separated words that recall and the pack's index use",
        "fields": "other header fields, key → one-line value (never machine fields)",
        "supersedes": "the slug of the note this one replaces: the old one leaves the pack "
        "and recall shows it as superseded",
    },
    "intend": {
        "slug": "the intention's name: lowercase letters, digits and -",
        "closes_when": "one line: how you will know it is done",
        "body": "why, and anything worth knowing (markdown)",
        "under": "a record (slug or path) to nest it under",
        "fields": "other header fields, e.g. {'stale-after': '4h'} (never machine fields)",
    },
    "add": {
        "kind": "what to add",
        "slug": "its name: lowercase letters, digits and -",
        "under": "the record (slug or path) it belongs under; goals, actions and tasks need one",
        "body": "what it is about (markdown)",
        "fields": "header fields: 'success-when' for a goal; 'due', 'nag', 'every', 'until' "
        "for a reminder",
    },
    "review": {
        "ref": "the note: its slug or tree-relative path",
        "note": "why it is still true, kept in its log",
    },
    "forget": {
        "ref": "a note's slug, or a note's or context file's tree-relative path",
        "why": "the reason, kept word for word in place of the text",
    },
    "move": {
        "ref": "the record: a slug, type/slug or tree-relative path",
        "note": "a line appended to its body, dated",
    },
    "snooze": {
        "ref": "the record: a slug, type/slug or tree-relative path",
        "until": "when it should next come due: '2026-03-14 09:00', '+2h' or 'monday'",
        "duration": "or how long from now, e.g. '3d' (give until, duration or clear)",
        "note": "why, appended to its body",
        "clear": "true: remove the record's snooze (it comes due as its clock says)",
    },
    "close": {
        "ref": "the record: a slug, type/slug or tree-relative path",
        "ending": "how it ended (a goal is abandoned, not dropped; a task failed or cancelled)",
        "why": "the reason, appended to its body (required unless done)",
        "outcome": "for an action: how the result compared with what you expected",
        "series": "with done, on a repeating reminder: end the series for good",
    },
    "promote": {
        "slug": "the backlog item to turn into an open intention",
        "closes_when": "one line: how you will know the intention is done",
        "under": "a record (slug or path) to nest the intention under",
    },
    "cancel": {"ref": "the task: a slug, type/slug or tree-relative path"},
    "checkpoint": {
        "ref": "the task: a slug, type/slug or tree-relative path",
        "text": "what the run did, one line (up to 500 characters)",
    },
    "tell": {
        "ref": "the record it is about: a slug, type/slug or tree-relative path",
        "message": "what the owner should hear: up to 4,000 characters, newlines kept",
    },
}

#: What a pydantic error type asks of a value, in rouse's words.
_WANTS = {
    "string_type": "text",
    "int_type": "a whole number",
    "int_parsing": "a whole number",
    "int_from_float": "a whole number",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "dict_type": "an object of one-line text values",
    "list_type": "a list",
}


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _invalid(tool: str, errors: list[Any], takes: list[str], choices: Mapping[str, Any]) -> str:
    """A pydantic validation failure in rouse's words: one line, no URLs."""
    problems: list[str] = []
    missing = False
    for error in errors:
        where = ".".join(str(part) for part in error.get("loc", ())) or "arguments"
        kind = error.get("type", "")
        if kind == "missing":
            missing = True
            problems.append(f"missing argument {where!r}")
            continue
        if where in choices:
            want = "one of " + ", ".join(choices[where])
        else:
            message = str(error.get("msg", "")).split("\n")[0]
            want = _WANTS.get(kind) or message.removeprefix("Input should be ").rstrip(".")
        problems.append(f"{where} must be {want}, got {_shown(error.get('input'))}")
    text = "; ".join(dict.fromkeys(problems)) or "the arguments do not fit the tool"
    if missing:
        text += f": it takes {', '.join(takes) or 'no arguments'}"
    return f"{tool}: {text}"


def build_server(tools: Tools) -> Any:
    """An ``MCPServer`` exposing ``tools``; imports the ``mcp`` SDK here and only here.

    Every tool's input schema says ``additionalProperties: false``, and the
    server holds to it: a call with an argument the tool does not take is an
    error result naming it, before the tool runs.
    """
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
    from pydantic import ValidationError

    import rouse
    from rouse.pack.indexdoc import KINDS

    takes: dict[str, list[str]] = {}
    enums: dict[str, dict[str, tuple[str, ...]]] = {
        "recall": {"kind": KINDS, "mode": ("words", "meaning", "both")},
        "add": {"kind": ADD_TYPES},
        "close": {"ending": ENDINGS, "outcome": levels.OUTCOMES},
    }

    class RefusedError(ToolError):
        """rouse refused the call (a RouseError): its message is the whole answer."""

    class StrictServer(MCPServer[Any]):
        async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
            known = takes.get(name)
            unknown = sorted(set(arguments) - set(known or ()))
            if known is not None and unknown:
                raise ToolError(_unknown_arguments(name, unknown, known))
            try:
                return await super().call_tool(name, arguments, context)
            except UnexpectedToolError as exc:  # a crash: its text stays in the server's log
                raise UnexpectedToolError(
                    f"{name}: internal error (the server's log on stderr has the details)"
                ) from exc.__cause__
            except ToolError as exc:
                cause = exc.__cause__
                if isinstance(cause, ValidationError):
                    choices = enums.get(name, {})
                    message = _invalid(name, cause.errors(), known or [], choices)
                    raise ToolError(message) from cause
                if isinstance(cause, RefusedError):
                    raise ToolError(f"{name}: {cause}") from None
                raise

    return StrictServer(
        name="rouse",
        version=rouse.__version__,
        instructions=INSTRUCTIONS,
        tools=[
            _tool(getattr(tools, name), _hints(name), RefusedError, enums, takes)
            for name in DESCRIPTIONS
        ],
        resources=resources(tools),
    )


#: What each tool may do (MCP's tool annotations): read only, destroy, reach past the tree.
#: Clients list the tools in :data:`DESCRIPTIONS`' order.
READ_ONLY = frozenset({"pack", "recall", "due", "probe"})
DESTRUCTIVE = frozenset({"remember", "forget", "close", "promote", "cancel"})
OPEN_WORLD = frozenset({"probe", "checkpoint", "tell"})


def _hints(name: str) -> Any:
    """A tool's annotations for clients (a read-only tool says nothing of the rest)."""
    from mcp_types import ToolAnnotations

    if name in READ_ONLY:
        return ToolAnnotations(read_only_hint=True, open_world_hint=name in OPEN_WORLD)
    return ToolAnnotations(
        read_only_hint=False,
        destructive_hint=name in DESTRUCTIVE,
        idempotent_hint=False,
        open_world_hint=name in OPEN_WORLD,
    )


def _tool(
    fn: Callable[..., str],
    annotations: Any,
    refused: type[Exception],
    enums: dict[str, dict[str, tuple[str, ...]]],
    takes: dict[str, list[str]],
) -> Any:
    """``fn`` as an SDK tool: a RouseError it raises becomes ``refused``; its schema takes
    no other arguments, each described, with its ``enums``; ``takes`` learns its names."""
    from mcp.server.mcpserver.tools import Tool

    name = fn.__name__

    @functools.wraps(fn)
    def guarded(*args: Any, **kwargs: Any) -> str:
        try:
            return fn(*args, **kwargs)
        except RouseError as exc:
            raise refused(exc.render()) from None

    tool = Tool.from_function(
        guarded,
        name=name,
        description=DESCRIPTIONS[name],
        annotations=annotations,
        structured_output=False,
    )
    tool.parameters["additionalProperties"] = False
    properties = tool.parameters.get("properties", {})
    for param, schema in properties.items():
        schema["description"] = PARAMETERS[name][param]
        choices = enums.get(name, {}).get(param)
        if choices:  # on the string itself, or on the string branch of "string or null"
            branches = [b for b in schema.get("anyOf", []) if b.get("type") == "string"]
            (branches[0] if branches else schema)["enum"] = list(choices)
    takes[name] = list(properties)
    return tool


#: The read-only resources beside the tools (issue 21, item 7): what a client may show or
#: attach without a tool call. Each is read fresh, like the tool of the same name.
RESOURCES = {
    "pack": "The memory pack, as the pack tool returns it: now, probe readings, what woke "
    "you, what is due, persona, beliefs and motivations, an index of notes. Read-only.",
    "due": "What the clock would wake you about now, as the due tool returns it: one line "
    "per record, then the items as JSON. Read-only.",
}


def resources(tools: Tools) -> list[Any]:
    """``rouse://pack`` and ``rouse://due``: the pack and due tools, read as resources."""
    from mcp.server.mcpserver.resources import FunctionResource

    readers: dict[str, Callable[[], str]] = {"pack": tools.pack, "due": tools.due}
    return [
        FunctionResource(
            uri=f"rouse://{name}",
            name=name,
            description=RESOURCES[name],
            mime_type="text/plain",
            fn=readers[name],
        )
        for name in RESOURCES
    ]


def _unknown_arguments(tool: str, unknown: list[str], known: list[str]) -> str:
    names = ", ".join(repr(name) for name in unknown)
    plural = "s" if len(unknown) > 1 else ""
    takes = ", ".join(known) or "no arguments"
    return f"{tool}: unknown argument{plural} {names}: it takes {takes}"


def serve(
    root: Path,
    now: Callable[[], datetime] = wall_clock,
    env: Mapping[str, str] | None = None,
) -> None:
    """Run the server on stdin/stdout until the client hangs up."""
    build_server(Tools(root, now, env)).run("stdio")
