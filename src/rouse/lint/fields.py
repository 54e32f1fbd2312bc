"""Field rules: header lines, values that must parse, floors, fields nothing reads, states.

Every rule here looks at one file's header; none reads a body.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Iterator
from datetime import timedelta
from typing import Literal

from rouse.core import clockfields, layout, levels
from rouse.core.timefmt import FLOOR, parse_interval
from rouse.core.tree import File, Problem, Record
from rouse.trust.origins import Finding

Level = Literal["error", "warn"]

LONGEST_INTENTION_STALE = timedelta(days=7)
#: A task's ``reasoning:`` values (the agent's effort, as the task worker maps it).
REASONING = ("low", "medium", "high")


STAMP_FIELDS = layout.STAMP_KEYS - {"cancel"}  # (any word in a cancel calls a task off)
INTERVAL_FIELDS = layout.INTERVAL_KEYS


COUNT_FIELDS = frozenset({"fires", "nudges", "max-fires", "attempts"})


FLOORED_FIELDS = ("stale-after", "review-every", "nag", "every")


#: Clock and status fields: nothing reads them on a context file or a note.
CLOCK_FIELDS = frozenset(
    {
        *("status", "opened", "last-moved", "stale-after", "swept", "nudges", "reviewed"),
        *("review-every", "due", "nag", "backoff", "max-fires", "expires", "fires", "set"),
        *("fired", "ended", "cancel", "snoozed-until"),
        *("every", "until"),
    }
)


#: Clock fields a backlog item must not carry (``opened`` is fine: it dates the idea).
BACKLOG_CLOCK_FIELDS = (
    "last-moved",
    "stale-after",
    "due",
    "nag",
    "review-every",
    "swept",
    "nudges",
    "snoozed-until",
)


#: Fields read only for some record types: field → (types, what to say).
ONLY_ON: dict[str, tuple[frozenset[str], str]] = {
    "closes-when": (
        frozenset({"intention", "action"}),
        "only an intention's or an action's closes-when is read",
    ),
    **{
        key: (frozenset({"goal"}), f"only a goal's {key} is read (its wakes and explain)")
        for key in ("waiting-on", "falsifiers")
    },
    **{
        key: (frozenset({"task"}), f"only a task's {key} is read (by the task worker)")
        for key in ("model", "reasoning", "repo", "category", "started", "worker", "attempts")
    },
    "success-when": (frozenset({"goal"}), "only a goal's success-when is read"),
    **{
        key: (
            frozenset({"note", *layout.CONTEXT_TYPES}),
            f"only a note's or a context file's {key} is read",
        )
        for key in ("supersedes", "forgotten")
    },
    "outcome": (frozenset({"action"}), "only an action is judged by its outcome"),
    "cancel": (frozenset({"task"}), "only a task's worker reads cancel"),
    "channel": (frozenset({"reminder"}), "only a reminder's channel is read (its outreach)"),
    **{
        key: (frozenset({"reminder"}), f"only a reminder's {key} is read")
        for key in ("due", "nag", "backoff", "max-fires", "expires", "every", "until")
    },
    **{
        key: (
            frozenset(levels.STALE_LEVELS),
            f"{key} is read on intentions, goals, actions and tasks",
        )
        for key in ("stale-after", "review-every", "snoozed-until")
    },
}


#: Fields read on notes and some records besides the clock's (``recall``, the pack's index).
INDEX_FIELDS = frozenset({"keywords", "probes", "updated"})


#: Every header key rouse reads (one list, in ``rouse.core.layout``): any other is a
#: typo or free-form metadata, which rouse does not have.
KNOWN_KEYS = layout.KNOWN_KEYS
#: Every key some rule below is about: a test holds it equal to KNOWN_KEYS.
RULED_KEYS = frozenset(
    CLOCK_FIELDS
    | STAMP_FIELDS
    | INTERVAL_FIELDS
    | COUNT_FIELDS
    | ONLY_ON.keys()
    | INDEX_FIELDS
    | layout.MACHINE_FIELDS
)


def article(noun: str) -> str:
    return f"an {noun}" if noun[:1] in "aeiou" else f"a {noun}"


def error_finding(problem: Problem, fix: str = "") -> Finding:
    message = f"{problem.message} — {fix}" if fix else problem.message
    return Finding("error", problem.path, message, problem.line)


def unknown_key_findings(file: File) -> Iterator[Finding]:
    """Keys nothing reads on any file, with the nearest known key when one is close.

    Not for plugin files: a plugin's header is its own settings.
    """
    for key in file.header.fields:
        if key in KNOWN_KEYS:
            continue
        guess = difflib.get_close_matches(key, sorted(KNOWN_KEYS), n=1)
        fix = (
            f"did you mean '{guess[0]}'? — fix the key"
            if guess
            else "rouse has no free-form fields — remove it, or put the text in the body"
        )
        yield Finding(
            "warn",
            file.rel,
            f"unknown key '{key}': nothing in rouse reads it; {fix}",
            file.header.line_of(key),
        )


def header_findings(file: File) -> Iterator[Finding]:
    header = file.header
    for line, text in header.bad_lines:
        yield Finding(
            "error",
            file.rel,
            f"unparseable header line {text.strip()!r} — write it as 'key: value' "
            "(keys: a letter, then letters, digits or '-') or start it with '#'",
            line,
        )
    for entry in header.duplicates:
        first = header.line_of(entry.key)
        yield Finding(
            "error",
            file.rel,
            f"duplicate key {entry.key!r} (first on line {first}, which is the one read) "
            "— keep one",
            entry.line,
        )
    for line in header.continued:
        yield Finding(
            "warn",
            file.rel,
            "indented line continues the previous value — join it onto that line",
            line,
        )


#: each clock value's kind, as :data:`rouse.core.clockfields.PARSERS` reads it
_KINDS = {
    **dict.fromkeys(STAMP_FIELDS, "stamp"),
    **dict.fromkeys(INTERVAL_FIELDS, "interval"),
    **dict.fromkeys(COUNT_FIELDS, "count"),
    "every": "every",
    "backoff": "backoff",
}


def value_findings(file: File, skip: set[str], reported: set[str]) -> Iterator[Finding]:
    """Unparseable stamps, intervals and numbers not already reported."""
    for key, value in file.header.fields.items():
        kind = _KINDS.get(key)
        if key in skip or key in reported or not kind or not value.strip():
            continue
        why = clockfields.value_problem(kind, key, value.strip())
        if why is not None:
            yield Finding(
                "error",
                file.rel,
                f"{why} — fix the value (until then it is read as absent)",
                file.header.line_of(key),
            )


def floor_findings(record: Record, skip: set[str]) -> Iterator[Finding]:
    for key in FLOORED_FIELDS:
        value = (record.get(key) or "").strip()
        if key in skip or not value:
            continue
        try:
            interval = parse_interval(value)
        except ValueError:
            continue
        line = record.header.line_of(key)
        if interval < FLOOR:
            yield Finding(
                "warn",
                record.rel,
                f"'{key}: {value}' is floored to 15m — write 15m or more",
                line,
            )
        elif (
            key == "stale-after"
            and record.type == "intention"
            and interval > LONGEST_INTENTION_STALE
        ):
            yield Finding(
                "warn",
                record.rel,
                f"'stale-after: {value}' is over 7d: it wanted to be a backlog item — "
                "move it to inventory/backlog/ or shorten it",
                line,
            )


def misplaced(file: File, kind: str, fields: Iterable[str]) -> Iterator[tuple[str, Finding]]:
    for key in fields:
        if key not in ONLY_ON:
            continue
        types, why = ONLY_ON[key]
        if kind in types:
            continue
        yield (
            key,
            Finding(
                "warn",
                file.rel,
                f"'{key}' on {article(kind)}: nothing reads it ({why}) — remove it",
                file.header.line_of(key),
            ),
        )


def state_findings(record: Record) -> Iterator[Finding]:
    header = record.header
    level = levels.LEVELS[record.type]
    status = levels.status_of(record)
    if not levels.known_status(record):
        counts = "it counts as open" if levels.is_open(record) else "its outcome ends it"
        yield Finding(
            "error",
            record.rel,
            f"unknown status {status!r} for {article(record.type)} — use one of "
            f"{', '.join(level.states)} (until then {counts})",
            header.line_of("status"),
        )
    if record.type in MUST_SAY:
        key, severity, message = MUST_SAY[record.type]
        if not (record.get(key) or "").strip():
            yield Finding(severity, record.rel, message, header.line_of(key))
    if record.type == "action":
        yield from _outcome_findings(record, status)
    if record.type == "task":
        yield from _task_findings(record)


#: The field a type must not leave empty: its key, how bad, and what to say.
MUST_SAY: dict[str, tuple[str, Level, str]] = {
    "intention": (
        "closes-when",
        "warn",
        "intention with no closes-when — add 'closes-when:' saying what would close it",
    ),
    "goal": (
        "success-when",
        "warn",
        "goal with no success-when — add 'success-when:' saying what success looks like",
    ),
    "reminder": (
        "due",
        "error",
        "reminder with no due — add 'due: YYYY-MM-DD HH:MM' (until then it counts as "
        "due since it last moved)",
    ),
}


def _outcome_findings(record: Record, status: str) -> Iterator[Finding]:
    """An action's outcome: one of :data:`levels.OUTCOMES`, and not beside an open status."""
    header = record.header
    outcome = (record.get("outcome") or "").strip().lower()
    if outcome and outcome not in levels.OUTCOMES:
        yield Finding(
            "error",
            record.rel,
            f"unknown outcome {outcome!r} — use one of {', '.join(levels.OUTCOMES)}",
            header.line_of("outcome"),
        )
    if outcome == "as-expected" and status == "open":
        yield Finding(
            "warn",
            record.rel,
            "outcome as-expected but status still open — set 'status: done'",
            header.line_of("status") or header.line_of("outcome"),
        )


def _task_findings(record: Record) -> Iterator[Finding]:
    """A task's reasoning (one the worker can pass on) and a cancel still pending."""
    header = record.header
    reasoning = (record.get("reasoning") or "").strip().lower()
    if reasoning and reasoning not in REASONING:
        yield Finding(
            "warn",
            record.rel,
            f"unknown reasoning {reasoning!r} — use one of {', '.join(REASONING)} (the worker "
            "passes it on as the agent's effort)",
            header.line_of("reasoning"),
        )
    cancel = (record.get("cancel") or "").strip()
    if cancel and levels.is_open(record):
        yield Finding(
            "warn",
            record.rel,
            f"cancel: {cancel} is pending — the task worker stops it and writes "
            "'status: cancelled' (or close it: rouse close REF --cancelled WHY)",
            header.line_of("cancel"),
        )


def stamp_findings(record: Record) -> Iterator[Finding]:
    """A sweeper's stamp that lost a line: ``nudges`` without ``swept`` (a header
    rewritten by hand, a file restored from git). The sweeper writes it again from
    its ledger, so the record is woken at its next step; check says so."""
    if record.type in ("reminder", "backlog") or record.get("swept") is not None:
        return
    nudged = (record.get("nudges") or "").strip()
    if nudged and nudged != "0":
        yield Finding(
            "warn",
            record.rel,
            f"'nudges: {nudged}' without 'swept:' — the sweeper's stamp lost a line; the "
            "next sweep writes it again from its ledger (or remove 'nudges' too)",
            record.header.line_of("nudges"),
        )
