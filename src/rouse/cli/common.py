"""What every verb shares: finding the tree and now, printing lines and JSON, and what a
verb that writes memory prints (a record made or changed: its summary, or with ``--json``
one object, header fields as written with stamps in ISO 8601 and intervals in seconds)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path

from rouse.core import layout
from rouse.core.errors import UsageError
from rouse.core.home import find_tree
from rouse.core.layout import shown
from rouse.core.timefmt import OutOfRange, parse_interval, parse_stamp

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from typing import Any

    from rouse.records.lifecycle import Changed
    from rouse.records.scaffold import Created


def resolve_now(args: argparse.Namespace) -> datetime:
    """``--now``, else ``$ROUSE_NOW``, else the wall clock (local time)."""
    given = getattr(args, "now", None) or os.environ.get("ROUSE_NOW")
    if not given:
        return datetime.now().replace(microsecond=0)
    try:
        return parse_stamp(given)
    except OutOfRange as exc:
        raise UsageError(f"bad --now {given!r}: it {exc.need}") from None
    except ValueError:
        pass
    # a human form (``tomorrow 09:00``, ``+2h``), from the wall clock; said back on
    # stderr, so that what the verb evaluated is never a guess
    from rouse.core.humantime import parse_when
    from rouse.core.timefmt import format_stamp

    try:
        when = parse_when(given, datetime.now().replace(microsecond=0))
    except OutOfRange as exc:
        raise UsageError(f"bad --now {given!r}: it {exc.need}") from None
    except ValueError as exc:
        raise UsageError(f"bad --now {given!r}: {exc}") from None
    sys.stderr.write(f"rouse: --now {given!r} is {format_stamp(when)}\n")
    return when


def given_now(args: argparse.Namespace) -> datetime | None:
    """:func:`resolve_now` when ``--now`` or ``$ROUSE_NOW`` sets the clock; None: the wall clock."""
    return resolve_now(args) if getattr(args, "now", None) or os.environ.get("ROUSE_NOW") else None


def speaking(args: argparse.Namespace) -> str:
    """Who is speaking, for a writing verb (:mod:`rouse.trust.speaker`): a terminal on
    stderr and on stdin or stdout (a body piped in with ``--body -`` still counts),
    the agent markers in the environment, and ``--origin``."""
    from rouse.trust.speaker import speaker

    terminal = sys.stderr.isatty() and (sys.stdin.isatty() or sys.stdout.isatty())
    return speaker(os.environ, terminal, getattr(args, "origin", None))


def tree_root(args: argparse.Namespace) -> Path:
    return find_tree(getattr(args, "memory", None), warn=lambda line: print(line, file=sys.stderr))


def emit(lines: Sequence[str]) -> None:
    """Print a verb's lines, control characters escaped (:func:`rouse.core.layout.shown`)."""
    if lines:
        sys.stdout.write(shown("\n".join(lines) + "\n", lines=True))


def emit_json(data: Any) -> None:
    """Print ``data`` as JSON; all of it as ``\\u`` escapes when it holds a character a
    terminal would act on (C1 controls, bidi controls: JSON escapes only C0)."""
    text = json.dumps(data, indent=2, ensure_ascii=False)
    if shown(text, lines=True) != text:
        text = json.dumps(data, indent=2)
    sys.stdout.write(text + "\n")


def read_body(text: str | None) -> str:
    if text == "-":
        return sys.stdin.read()
    return text or ""


def probes_enabled() -> bool:
    return os.environ.get("ROUSE_PROBES", "").strip().lower() != "off"


#: What a read verb built and the process may leave behind at exit (see ``run``).
LEFT_BEHIND: list[object] = []


def verbosity_options(sub: argparse.ArgumentParser, verbose: str) -> None:
    """``-v`` (``verbose`` says what it adds) and ``-q`` (errors only) into ``verbosity``:
    0 errors, 1 events (the default), 2 every tick. ``-q`` is ``--silent`` because
    ``--quiet`` is quiet hours."""
    talk = sub.add_mutually_exclusive_group()
    talk.add_argument(
        "-v",
        "--verbose",
        dest="verbosity",
        action="store_const",
        const=2,
        default=1,
        help=verbose,
    )
    talk.add_argument(
        "-q",
        "--silent",
        dest="verbosity",
        action="store_const",
        const=0,
        help="errors only (quiet hours are --quiet)",
    )


def ledger_dsn(args: argparse.Namespace) -> str | None:
    """``--ledger`` or ``ROUSE_LEDGER``; None (the SQLite ledger) without loading rouse.fleet."""
    given = getattr(args, "ledger", None)
    if given is None and not os.environ.get("ROUSE_LEDGER"):
        return None
    from rouse.fleet.pg import chosen_dsn

    return chosen_dsn(given)


def global_options(parser: argparse.ArgumentParser, suppress: bool) -> None:
    """``--memory`` and ``--now``, taken before the verb and after it (``suppress``: a
    verb's own copy leaves the value given before the verb alone)."""
    import argparse

    default = argparse.SUPPRESS if suppress else None
    parser.add_argument(
        "--memory",
        metavar="DIR",
        default=default,
        help="the tree (else $ROUSE_HOME, the nearest memory/ tree up from here, ~/.rouse)",
    )
    parser.add_argument(
        "--now",
        metavar="WHEN",
        default=default,
        help="evaluate the clock at this instant: 'YYYY-MM-DD HH:MM', mon 9am (else $ROUSE_NOW)",
    )


def _json_value(value: object) -> object:
    """A time as ISO 8601 with its offset, a duration in seconds, anything else as is."""
    if isinstance(value, datetime):
        return value.astimezone().isoformat()
    if isinstance(value, timedelta):
        return int(value.total_seconds())
    return value


def _json_field(key: str, value: str) -> object:
    """A header value as written, with stamps and intervals converted (else the text)."""
    try:
        if value and key in layout.STAMP_KEYS:
            return _json_value(parse_stamp(value))
        if value and key in layout.INTERVAL_KEYS:
            return _json_value(parse_interval(value))
    except ValueError:
        pass
    return value


def report_changed(changed: Changed, args: argparse.Namespace, *more: str) -> int:
    if args.json:
        data: dict[str, Any] = {"record": changed.record, "path": changed.path, "file": changed.rel}
        data.update((key, _json_value(value)) for key, value in changed.facts.items())
        emit_json(data)
    else:
        emit([changed.summary, *more])
    return 0


def report_created(created: Created, args: argparse.Namespace) -> int:
    for warning in created.warnings:
        print(f"rouse: warning: {warning}", file=sys.stderr)
    if args.json:
        fields = {k.replace("-", "_"): _json_field(k, v) for k, v in created.fields.items()}
        emit_json(
            {
                "record": created.record,
                "type": created.kind,
                "path": created.dir,
                "file": created.rel,
                "fields": fields,
                "fill_in": created.todo,
                "warnings": created.warnings,
            }
        )
        return 0
    lines = [str(created.path)]
    if created.todo:
        lines.append(f"fill in: {', '.join(created.todo)}")
    emit([*lines, *created.notes])
    return 0
