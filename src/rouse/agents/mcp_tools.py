"""The MCP tools as plain methods (``rouse mcp`` serves them; see :mod:`rouse.agents.mcp`).

:class:`Tools` runs the same library functions the CLI calls, with the same validation
(the CLI's own ``inputs.check_key``, ``check_value``, ``check_body``): a bad argument
raises and nothing is written. No ``mcp`` SDK here. No tool offers ``stamp``: origins
are written from outside the agent.
"""

import json
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from rouse.core import clock, layout, nextdue
from rouse.core.errors import UsageError
from rouse.core.humantime import parse_when
from rouse.core.timefmt import format_stamp
from rouse.core.tree import display_ids, walk
from rouse.pack.views import due_header, due_item, due_lines, due_order
from rouse.probes import readings
from rouse.records import inputs, lifecycle, notes, scaffold
from rouse.trust import origins

if TYPE_CHECKING:
    from rouse.pack.recall import Session

ADD_TYPES = ("goal", "action", "task", "reminder", "backlog")
ENDINGS = ("done", "dropped", "abandoned", "failed", "cancelled")


#: Who speaks through an MCP tool: always the agent (the server is started by one).
AGENT = "agent"


def wall_clock() -> datetime:
    return datetime.now().replace(microsecond=0)


def _one_line(value: str | None, what: str) -> str:
    """A header value given as its own argument: checked as a field value, and not empty."""
    text = inputs.check_value(what, value or "")
    if not text:
        raise UsageError(f"{what} must be one non-empty line")
    return text


def _text(value: str | None, what: str) -> str | None:
    """Body text (a note, a reason): any length, but text."""
    return None if value is None else inputs.check_body(value, what)


class Tools:
    """The MCP tools as plain methods returning text (testable without ``mcp``)."""

    def __init__(
        self,
        root: Path,
        now: Callable[[], datetime] = wall_clock,
        env: Mapping[str, str] | None = None,
        key_path: Path | None = None,
    ):
        self.root = root
        self.now = now
        self.env: Mapping[str, str] = env or {}
        self.key_path = key_path
        #: what recall keeps between queries (rouse.pack.recall.Session), from the first
        self.recalling: Session | None = None

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

    def recall(
        self, query: str, limit: int = 10, kind: str | None = None, mode: str | None = None
    ) -> str:
        from rouse.pack import recall

        if self.recalling is None:
            self.recalling = recall.Session()
        hits = recall.recall(
            self.root,
            query,
            self.now(),
            limit=limit,
            kind=kind,
            mode=mode,
            key_path=self.key_path,
            session=self.recalling,
        )
        if not hits:
            return f"nothing recalled for {query!r}"
        return json.dumps([hit.to_json() for hit in hits], indent=2, ensure_ascii=False)

    def due(self, until: str | None = None) -> str:
        now = self.now()
        at = None
        if until:
            try:
                at = parse_when(until, now, end=True)
            except ValueError as exc:
                raise UsageError(f"bad until: {exc}") from None
        tree = walk(self.root)
        every = clock.decisions(tree, at or now)
        found = due_order(clock.select_due(every) if at is None else nextdue.forecast(every, at))
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
        from rouse.probes import demand

        tree = walk(self.root)
        allowed, reason = readings.probes_allowed(tree, self._reader(), self.env)
        found, _ = probes.load_probes(tree)
        if name is not None and name not in {p.name for p in found}:
            names = ", ".join(p.name for p in found) or "none"
            raise UsageError(f"no probe named {name!r} in {layout.PROBES} (have: {names})")
        chosen = [p for p in found if name is None or p.name == name]
        if not allowed:
            lines = [f"{p.name}: {readings.UNKNOWN}" for p in chosen]
            return "\n".join([*lines, reason])
        return "\n".join(
            f"{p.name}: {demand.run_demand(self.root, p, self.key_path)}" for p in chosen
        )

    # -- write --------------------------------------------------------------

    def remember(
        self,
        slug: str,
        body: str,
        keywords: str | None = None,
        fields: dict[str, str] | None = None,
        supersedes: str | None = None,
    ) -> str:
        given = dict(fields or {})
        if keywords is not None:
            given["keywords"] = keywords
        if supersedes is not None:
            given["supersedes"] = supersedes
        inputs.check_body(body)
        done = notes.remember(self.root, slug, body, self.now(), given, origin=AGENT)
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
            fields=inputs.validate_fields(given, self.now()),
            body=body,
            origin=AGENT,
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
        now = self.now()
        if kind == "reminder" and given.get("every") and not given.get("due"):
            given["due"] = scaffold.first_due_of(given["every"], now)
        if kind == "reminder" and not given.get("due"):
            raise UsageError(
                "a reminder needs fields.due: a stamp 'YYYY-MM-DD HH:MM', '+2h' or 'mon 9am' "
                "(or fields.every, to start a series at its first occurrence)"
            )
        clean = inputs.validate_fields(given, now)
        created = scaffold.new(
            self.root, kind, slug, now, under=under, fields=clean, body=body, origin=AGENT
        )
        due = f" (due {created.fields['due']})" if kind == "reminder" else ""
        return f"wrote {created.rel}{due}" + _todo(created.todo)

    def review(self, ref: str, note: str | None = None) -> str:
        done = notes.review(
            self.root, ref, self.now(), _text(note, "note"), key_path=self.key_path, env=self.env
        )
        return done.summary

    def forget(self, ref: str, why: str) -> str:
        from rouse.pack import index

        done = notes.forget(self.root, ref, why, self.now())
        index.forget(self.root, self._reader().cache_secret)
        return done.summary

    def move(self, ref: str, note: str | None = None) -> str:
        return lifecycle.move(self.root, ref, self.now(), _text(note, "note")).summary

    def snooze(
        self,
        ref: str,
        until: str | None = None,
        duration: str | None = None,
        note: str | None = None,
        clear: bool = False,
    ) -> str:
        changed = lifecycle.snooze(
            self.root,
            ref,
            self.now(),
            until=until,
            duration=duration,
            note=_text(note, "note"),
            clear=clear,
        )
        nxt = f"; next due {format_stamp(changed.next_due)}" if changed.next_due else ""
        return changed.summary + nxt

    def close(
        self,
        ref: str,
        ending: str,
        why: str | None = None,
        outcome: str | None = None,
        series: bool = False,
    ) -> str:
        if ending not in ENDINGS:
            raise UsageError(f"ending must be one of {', '.join(ENDINGS)}, not {ending!r}")
        why = _text(why, "why")
        changed = lifecycle.close(self.root, ref, self.now(), ending, why, outcome, series=series)
        return changed.summary

    def cancel(self, ref: str) -> str:
        from rouse.records import tasks

        return tasks.cancel(self.root, ref, self.now()).summary

    def checkpoint(self, ref: str, text: str) -> str:
        from rouse.work import notices

        return notices.checkpoint(self.root, ref, text, self.now()).summary

    def tell(self, ref: str, message: str) -> str:
        from rouse.sweep import telling

        told = telling.tell(self.root, ref, message, self.now())
        return "; ".join([told.summary, *told.warnings])

    def promote(self, slug: str, closes_when: str, under: str | None = None) -> str:
        closes_when = _one_line(closes_when, "closes_when")
        from rouse.records import promoting

        done = promoting.promote(self.root, slug, closes_when, self.now(), under, origin=AGENT)
        return done.summary


def _todo(todo: list[str]) -> str:
    return f" (fill in: {', '.join(todo)})" if todo else ""
