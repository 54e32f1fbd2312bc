"""``rouse mcp``: the memory as MCP tools over stdio (extra ``rouse-memory[mcp]``).

:class:`Tools` holds the behaviour as plain methods over the same library
functions the CLI calls (``scaffold.new``, ``lifecycle.*``, ``clock.due``, the
pack, recall, probes), with the same validation: bad slugs, field keys and
values checked by the CLI's own functions (``scaffold.check_key``,
``check_value``, ``check_body``), illegal endings raise, and the server turns
that into an error result with nothing written. Input schemas are strict: an
argument a tool does not take is an error result that names it. The ``mcp``
SDK (v2: ``mcp.server.mcpserver.MCPServer``) is imported only inside
:func:`build_server`, so this module loads without it.
No tool offers ``stamp``: origins are written from outside the agent.
"""

import functools
import json
from collections.abc import Callable, Mapping
from dataclasses import asdict, is_dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from rouse.core import clock, layout
from rouse.core.errors import RouseError, UsageError
from rouse.core.timefmt import format_stamp, parse_when
from rouse.core.tree import display_ids, walk
from rouse.pack.views import due_header, due_item, due_lines, due_order
from rouse.probes import gate
from rouse.records import lifecycle, notes, scaffold
from rouse.trust import origins

ADD_TYPES = ("goal", "action", "task", "reminder", "backlog")
ENDINGS = ("done", "dropped", "abandoned")

INSTRUCTIONS = """\
rouse is your memory: plain markdown files in a tree, with a clock that brings \
records back when they go still. If the memory pack is not already in your \
context, call `pack` first and treat it as your memory. Before writing memory \
for the first time in a session, read entrypoint/rouse.md in the tree. Use \
`recall` to find what the pack does not list, `due` to see what wants you, \
`remember` for notes, `intend` for a new intention, `add` for a goal, action, \
task, reminder or backlog item, and `move` / `snooze` / `close` / `promote` to \
keep records honest. Machine fields (swept, nudges, origin, ...) are rouse's \
own: a call that sets one is refused."""


def _wall_clock() -> datetime:
    return datetime.now().replace(microsecond=0)


def _one_line(value: str | None, what: str) -> str:
    """A header value given as its own argument: checked as a field value, and not empty."""
    text = scaffold.check_value(what, value or "")
    if not text:
        raise UsageError(f"{what} must be one non-empty line")
    return text


def _text(value: str | None, what: str) -> str | None:
    """Body text (a note, a reason): any length, but text."""
    return None if value is None else scaffold.check_body(value, what)


class Tools:
    """The MCP tools as plain methods returning text (testable without ``mcp``)."""

    def __init__(
        self,
        root: Path,
        now: Callable[[], datetime] = _wall_clock,
        env: Mapping[str, str] | None = None,
        key_path: Path | None = None,
    ):
        self.root = root
        self.now = now
        self.env: Mapping[str, str] = env or {}
        self.key_path = key_path

    def _reader(self) -> origins.OriginReader:
        return origins.origin_reader(self.root, self.key_path)

    # -- read ---------------------------------------------------------------

    def pack(self, query: str | None = None, max_chars: int = 9000) -> str:
        from rouse.pack.build import pack

        if max_chars < 200:
            raise UsageError("max_chars must be at least 200")
        built = pack(
            self.root,
            self.now(),
            env=self.env,
            key_path=self.key_path,
            query=query or None,
            max_chars=max_chars,
        )
        return built.text

    def recall(self, query: str, limit: int = 10, kind: str | None = None) -> str:
        from rouse.pack import recall

        hits = recall.recall(self.root, query, self.now(), limit=limit, kind=kind)
        if not hits:
            return f"nothing recalled for {query!r}"
        return json.dumps([_as_dict(hit) for hit in hits], indent=2, ensure_ascii=False)

    def due(self, until: str | None = None) -> str:
        """``rouse due``'s header (if any) and rows, then the items as ``rouse due --json``."""
        now = self.now()
        at = None
        if until:
            try:
                at = parse_when(until, now)
            except ValueError as exc:
                raise UsageError(f"bad until: {exc}") from None
        tree = walk(self.root)
        found = due_order(clock.due(tree, at or now))
        header = due_header(len(found), now, at)
        lines = [header] if header else []
        if not found:
            return "\n".join(lines)
        ids = display_ids(tree)
        items = [due_item(d, ids[d.record.dir]) for d in found]
        lines += due_lines(tree, found, now)
        return "\n".join(lines) + "\n\n" + json.dumps(items, indent=2, ensure_ascii=False)

    def probe(self, name: str | None = None) -> str:
        from rouse.probes import definitions as probes
        from rouse.probes import readings

        tree = walk(self.root)
        allowed, reason = gate.probes_allowed(tree, self._reader(), self.env)
        found, _ = probes.load_probes(tree)
        if name is not None and name not in {p.name for p in found}:
            names = ", ".join(p.name for p in found) or "none"
            raise UsageError(f"no probe named {name!r} in {layout.PROBES} (have: {names})")
        chosen = [p for p in found if name is None or p.name == name]
        if not allowed:
            lines = [f"{p.name}: {readings.UNKNOWN}" for p in chosen]
            return "\n".join([*lines, reason])
        return "\n".join(
            f"{p.name}: {readings.run_demand(self.root, p, self.key_path)}" for p in chosen
        )

    # -- write --------------------------------------------------------------

    def remember(
        self,
        slug: str,
        body: str,
        keywords: str | None = None,
        fields: dict[str, str] | None = None,
    ) -> str:
        given = dict(fields or {})
        if keywords is not None:
            given["keywords"] = keywords
        scaffold.check_body(body)
        done = notes.remember(self.root, slug, body, self.now(), given)
        return f"wrote {done.rel}" + _todo(done.todo) if done.created else f"updated {done.rel}"

    def intend(
        self,
        slug: str,
        closes_when: str,
        body: str = "",
        under: str | None = None,
        fields: dict[str, str] | None = None,
    ) -> str:
        given = {**(fields or {}), "closes-when": _one_line(closes_when, "closes_when")}
        created = scaffold.new(
            self.root,
            "intention",
            slug,
            self.now(),
            under=under,
            fields=scaffold.validate_fields(given, self.now()),
            body=body,
        )
        return f"wrote {created.rel}" + _todo(created.todo)

    def add(
        self,
        kind: str,
        slug: str,
        under: str | None = None,
        body: str = "",
        fields: dict[str, str] | None = None,
    ) -> str:
        if kind not in ADD_TYPES:
            raise UsageError(f"kind must be one of {', '.join(ADD_TYPES)}, not {kind!r}")
        given = dict(fields or {})
        if kind == "reminder" and not given.get("due"):
            raise UsageError("a reminder needs fields.due: a stamp 'YYYY-MM-DD HH:MM' or '+2h'")
        now = self.now()
        clean = scaffold.validate_fields(given, now)
        created = scaffold.new(self.root, kind, slug, now, under=under, fields=clean, body=body)
        return f"wrote {created.rel}" + _todo(created.todo)

    def move(self, ref: str, note: str | None = None) -> str:
        return lifecycle.move(self.root, ref, self.now(), _text(note, "note")).summary

    def snooze(
        self,
        ref: str,
        until: str | None = None,
        duration: str | None = None,
        note: str | None = None,
    ) -> str:
        changed = lifecycle.snooze(
            self.root, ref, self.now(), until=until, duration=duration, note=_text(note, "note")
        )
        nxt = f"; next due {format_stamp(changed.next_due)}" if changed.next_due else ""
        return changed.summary + nxt

    def close(
        self, ref: str, ending: str, why: str | None = None, outcome: str | None = None
    ) -> str:
        if ending not in ENDINGS:
            raise UsageError(f"ending must be one of {', '.join(ENDINGS)}, not {ending!r}")
        why = _text(why, "why")
        return lifecycle.close(self.root, ref, self.now(), ending, why, outcome).summary

    def promote(self, slug: str, closes_when: str, under: str | None = None) -> str:
        closes_when = _one_line(closes_when, "closes_when")
        return lifecycle.promote(self.root, slug, closes_when, self.now(), under).summary


def _todo(todo: list[str]) -> str:
    return f" (fill in: {', '.join(todo)})" if todo else ""


def _as_dict(hit: Any) -> Any:
    if hasattr(hit, "to_json"):
        return hit.to_json()
    if is_dataclass(hit) and not isinstance(hit, type):
        return asdict(hit)
    return hit


# -- the server ---------------------------------------------------------------

DESCRIPTIONS = {
    "pack": "The memory pack: now, probe readings, what woke you, what is due, your persona, "
    "beliefs and motivations, and an index of notes. Call it at session start if it is not "
    "already in your context. query thins motivations that share no keyword with it.",
    "recall": "Full-text search over notes, backlog, records and context files (keywords weigh "
    "most). Returns hits best first as JSON: path, kind, origin, age (the file's last change, "
    "ISO 8601), keywords, snippet, probes, updated.",
    "due": "What the clock would wake you about now (or by `until`, a stamp or +2h): one line "
    "per record saying when it is or was due (a forecast first says what it covers), then the "
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
    "{'due': '2026-03-20 09:00' or '+2h', 'nag': '1h'} for a reminder.",
    "move": "Say a record moved: stamps last-moved now (note: a line appended to its body).",
    "snooze": "Push a record so it next comes due at `until` (a stamp or +2h) or after "
    "`duration` (e.g. 3d); a reminder gets a new due. note: why.",
    "close": "End a record out loud: ending done, dropped or abandoned (a goal is abandoned), "
    "with why (required unless done). An action may carry outcome: as-expected, surprising "
    "or contradicts. Nothing is deleted.",
    "promote": "Turn the backlog item `slug` into an open intention (moves its directory), with "
    "closes_when; under nests it under a record.",
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
    },
    "due": {"until": "forecast what comes due by then: a stamp '2026-03-14 09:00' or '+2h'"},
    "probe": {"name": "the probe to run; leave it out to run every probe"},
    "remember": {
        "slug": "the note's name: lowercase letters, digits and -, e.g. 'deploy-steps'",
        "body": "the note's text (replaces the body of an existing note with this slug)",
        "keywords": "comma-separated words that recall and the pack's index use",
        "fields": "other header fields, key → one-line value (never machine fields)",
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
        "fields": "header fields: 'success-when' for a goal, 'due' (and 'nag') for a reminder",
    },
    "move": {
        "ref": "the record: a slug, type/slug or tree-relative path",
        "note": "a line appended to its body, dated",
    },
    "snooze": {
        "ref": "the record: a slug, type/slug or tree-relative path",
        "until": "when it should next come due: a stamp '2026-03-14 09:00' or '+2h'",
        "duration": "or how long from now, e.g. '3d' (give until or duration)",
        "note": "why, appended to its body",
    },
    "close": {
        "ref": "the record: a slug, type/slug or tree-relative path",
        "ending": "how it ended (a goal is abandoned, not dropped)",
        "why": "the reason, appended to its body (required unless done)",
        "outcome": "for an action: how the result compared with what you expected",
    },
    "promote": {
        "slug": "the backlog item to turn into an open intention",
        "closes_when": "one line: how you will know the intention is done",
        "under": "a record (slug or path) to nest the intention under",
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
    from mcp.server.mcpserver.tools import Tool
    from mcp_types import ToolAnnotations
    from pydantic import ValidationError

    import rouse
    from rouse.pack.index import KINDS

    takes: dict[str, list[str]] = {}
    enums: dict[str, dict[str, tuple[str, ...]]] = {
        "recall": {"kind": KINDS},
        "add": {"kind": ADD_TYPES},
        "close": {"ending": ENDINGS, "outcome": clock.OUTCOMES},
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

    def hints(read_only: bool, destructive: bool = False, open_world: bool = False) -> Any:
        if read_only:
            return ToolAnnotations(read_only_hint=True, open_world_hint=open_world)
        return ToolAnnotations(
            read_only_hint=False,
            destructive_hint=destructive,
            idempotent_hint=False,
            open_world_hint=False,
        )

    def strict(fn: Callable[..., str], annotations: Any) -> Any:
        name = fn.__name__

        @functools.wraps(fn)
        def guarded(*args: Any, **kwargs: Any) -> str:
            try:
                return fn(*args, **kwargs)
            except RouseError as exc:
                raise RefusedError(exc.render()) from None

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

    return StrictServer(
        name="rouse",
        version=rouse.__version__,
        instructions=INSTRUCTIONS,
        tools=[
            strict(tools.pack, hints(read_only=True)),
            strict(tools.recall, hints(read_only=True)),
            strict(tools.due, hints(read_only=True)),
            strict(tools.probe, hints(read_only=True, open_world=True)),
            strict(tools.remember, hints(read_only=False, destructive=True)),
            strict(tools.intend, hints(read_only=False)),
            strict(tools.add, hints(read_only=False)),
            strict(tools.move, hints(read_only=False)),
            strict(tools.snooze, hints(read_only=False)),
            strict(tools.close, hints(read_only=False, destructive=True)),
            strict(tools.promote, hints(read_only=False, destructive=True)),
        ],
    )


def _unknown_arguments(tool: str, unknown: list[str], known: list[str]) -> str:
    names = ", ".join(repr(name) for name in unknown)
    plural = "s" if len(unknown) > 1 else ""
    takes = ", ".join(known) or "no arguments"
    return f"{tool}: unknown argument{plural} {names}: it takes {takes}"


def serve(
    root: Path,
    now: Callable[[], datetime] = _wall_clock,
    env: Mapping[str, str] | None = None,
) -> None:
    """Run the server on stdin/stdout until the client hangs up."""
    build_server(Tools(root, now, env)).run("stdio")
