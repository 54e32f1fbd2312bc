"""``rouse explain``: why a record is or is not due, as data (``--json``) and as text,
one fact per line. Pure functions of a Tree, the clock's decision and ``now`` (and the
record's own log, for the agent's notes); the CLI prints them, the MCP server returns
them. Times in the data are ISO 8601 with the local offset, durations in seconds."""

from __future__ import annotations

from datetime import datetime, timedelta

from rouse.core import clock, clockfields, levels, nextdue
from rouse.core.body import log_entries
from rouse.core.errors import HeaderError
from rouse.core.header import split
from rouse.core.timefmt import format_interval, format_stamp, iso_stamp
from rouse.core.tree import Record, Tree, display_ids
from rouse.pack.views import snoozed_text
from rouse.trust import fence

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def _stamp_of(text: str | None) -> str | None:
    return None if text is None else format_stamp(from_iso(text))


def from_iso(text: str) -> datetime:
    """The naive local time an :func:`iso` string names."""
    return datetime.fromisoformat(text).astimezone().replace(tzinfo=None)


def seconds(value: timedelta | None) -> int | None:
    """An interval as JSON carries it: whole seconds."""
    return None if value is None else int(value.total_seconds())


#: The fields ``explain`` quotes as written (the ones a wake quotes, and a task's cancel).
SHOWN_FIELDS = (
    *("closes-when", "success-when", "waiting-on", "falsifiers", "outcome"),
    *("model", "reasoning", "repo", "category", "cancel", "worker", "attempts", "started"),
)


#: A reminder's own fields in ``explain``, and how each is read.
_REMINDER_FIELDS = (
    ("due", "stamp"),
    ("nag", "interval"),
    ("backoff", "backoff"),
    ("fires", "count"),
    ("max-fires", "count"),
    ("expires", "stamp"),
    ("set", "stamp"),
    ("fired", "stamp"),
)


def _reminder(record: Record) -> dict[str, Any]:
    """The reminder's fields as the clock reads them; null when missing or unreadable."""
    problems: list[clockfields.FieldProblem] = []
    reader = clockfields.FieldReader(record, problems)
    data: dict[str, Any] = {}
    for key, kind in _REMINDER_FIELDS:
        value: Any = None
        if reader.text(key):
            if kind == "stamp":
                value = iso_stamp(reader.stamp(key))
            elif kind == "interval":
                value = seconds(reader.interval(key))
            elif kind == "count":
                value = reader.integer(key, 0)
            else:
                value = reader.backoff()
            if any(p.key == key for p in problems):
                value = None  # ``problems`` says what it is and what the clock does instead
        data[key.replace("-", "_")] = value
    return data


def explain(tree: Tree, record: Record, now: datetime, origin: str | None = None) -> dict[str, Any]:
    """Why a record is or is not due, as data (``rouse explain --json``). Its words
    (fields, the agent's notes) are shown by the fence rule of its effective
    ``origin`` (default: read with the stamp key, if any)."""
    if origin is None:
        from rouse.trust.origins import origin_reader

        reader = origin_reader(tree.root)
        origin = reader(record)
        reader.flush()
    decision = clock.evaluate(tree, record, now)
    fields = record.header.fields
    review_every = None
    if (fields.get("review-every") or "").strip():
        review_every = clockfields.FieldReader(record, []).interval("review-every")
    data: dict[str, Any] = {
        "record": display_ids(tree)[record.dir],
        "path": record.dir,
        "type": record.type,
        "origin": origin,
        "status": levels.status_of(record),
        "open": levels.is_open(record),
        "now": iso_stamp(now),
        "moved_at": iso_stamp(decision.moved_at),
        "moved_from": decision.moved_from,
        "swept": iso_stamp(decision.swept),
        "own_clock": iso_stamp(decision.own_clock),
        "stale_after": seconds(decision.stale_after) if decision.stale_after else None,
        "stale_at": iso_stamp(decision.stale_at),
        "silenced_by": decision.silenced_by,
        "review_every": seconds(review_every),
        "review_at": iso_stamp(decision.review_at),
        "reason": decision.reason,
        "due": decision.is_due,
        "due_at": iso_stamp(decision.due_at),
        "nudge": decision.nudge,
        "snoozed_until": iso_stamp(decision.snoozed_until),
        "fields": {
            key: fence.inline(value, origin)
            for key in SHOWN_FIELDS
            if (value := (record.get(key) or "").strip())
        },
        "problems": [fence.said_of(p, origin) for p in decision.problems],
        "notes": decision.notes,
        "agent_notes": [fence.inline(note, origin) for note in _agent_notes(tree, record)],
    }
    if record.type == "reminder":
        data["reminder"] = _reminder(record)
        if decision.every is not None:  # a repeating one: its rule, its end, what follows
            fields_of = clockfields.FieldReader(record, [])
            due = fields_of.stamp("due")
            after = max(now, due) if due is not None else now  # the one after its due
            data["reminder"]["every"] = decision.every.text
            data["reminder"]["until"] = iso_stamp(fields_of.stamp("until"))
            data["reminder"]["next_occurrence"] = iso_stamp(nextdue.rearmed(record, after))
    return data


#: How many of a record's latest log notes ``explain`` shows.
MAX_AGENT_NOTES = 5


def _agent_notes(tree: Tree, record: Record) -> list[str]:
    """The latest notes in the record's log (what rouse's verbs appended), oldest first."""
    try:
        with open(tree.root / record.rel, "rb") as handle:
            data = handle.read(1024 * 1024)
        _, text = split(data, record.rel)
    except (OSError, HeaderError):
        return []
    return log_entries(text)[-MAX_AGENT_NOTES:]


def _shown(key: str, value: Any) -> str:
    """A value of :func:`explain`'s data as the text shows it."""
    if key in ("nag", "review_every", "stale_after"):
        return format_interval(timedelta(seconds=value))
    if key == "backoff":
        return f"{value:g}"
    if key == "every":
        return str(value)  # (a rule, never a stamp)
    if isinstance(value, str) and "T" in value:
        return _stamp_of(value) or ""
    return str(value)


def explain_lines(data: dict[str, Any], now: datetime) -> list[str]:
    """The text form of :func:`explain`'s data: one fact per line, the verdict first."""
    lines = [f"{data['record']} [{data['status']}] at {data['path']}"]
    due_at = _stamp_of(data["due_at"])
    if data["due"]:
        lines.append(f"due now: {data['reason']} (since {due_at}), nudge {data['nudge']}")
    elif data["snoozed_until"]:
        until = snoozed_text(from_iso(data["snoozed_until"]))
        then = f"then comes due {due_at}" if due_at else "then open records under it keep it quiet"
        lines.append(f"not due: {until} (due for no reason before it); {then}")
    elif due_at:
        lines.append(f"not due: next comes due {due_at}")
    elif not data["open"]:
        lines.append("not due: closed records are never swept")
    elif data["type"] == "backlog":
        lines.append("not due: backlog is never swept")
    else:
        lines.append("not due: nothing will wake it while open records sit under it")
    lines.append(f"moved_at: {_stamp_of(data['moved_at'])} (from {data['moved_from']})")
    lines.append(f"origin: {data['origin']}")
    for key in ("swept", "own_clock", "stale_at", "review_every", "review_at"):
        if data.get(key):
            lines.append(f"{key}: {_shown(key, data[key])}")
    if data["stale_after"]:
        lines.append(
            f"stale_after: {_shown('stale_after', data['stale_after'])} (never below the 15m floor)"
        )
    lines += [f"{key}: {value}" for key, value in data["fields"].items()]
    if data["silenced_by"]:
        lines.append("kept quiet by open records under it:")
        lines += [f"  {path}" for path in data["silenced_by"]]
    for key, value in data.get("reminder", {}).items():
        if value is not None:
            lines.append(f"{key.replace('_', '-')}: {_shown(key, value)}")
    lines += [f"note: {note}" for note in data["notes"]]
    lines += [f"problem: {problem}" for problem in data["problems"]]
    if data["agent_notes"]:
        lines.append("the agent's notes (from its log, most recent last):")
        lines += [f"  {note}" for note in data["agent_notes"]]
    return lines
