"""What a verb that writes memory prints: its summary, or with ``--json`` one object.

A record made (:class:`~rouse.records.scaffold.Created`) or changed
(:class:`~rouse.records.lifecycle.Changed`) as the text a person reads or as JSON:
header fields as written, with stamps as ISO 8601 with their offset and intervals
as seconds.
"""

from __future__ import annotations

import sys
from datetime import datetime, timedelta

from rouse.cli.common import emit, emit_json
from rouse.core import layout
from rouse.core.timefmt import parse_interval, parse_stamp

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from typing import Any

    from rouse.records.lifecycle import Changed
    from rouse.records.scaffold import Created


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


def created_json(created: Created) -> dict[str, Any]:
    return {
        "record": created.record,
        "type": created.kind,
        "path": created.dir,
        "file": created.rel,
        "fields": {k.replace("-", "_"): _json_field(k, v) for k, v in created.fields.items()},
        "fill_in": created.todo,
        "warnings": created.warnings,
    }


def changed_json(changed: Changed) -> dict[str, Any]:
    data: dict[str, Any] = {"record": changed.record, "path": changed.path, "file": changed.rel}
    data.update((key, _json_value(value)) for key, value in changed.facts.items())
    return data


def report_changed(changed: Changed, args: argparse.Namespace, *more: str) -> int:
    if args.json:
        emit_json(changed_json(changed))
    else:
        emit([changed.summary, *more])
    return 0


def report_created(created: Created, args: argparse.Namespace) -> int:
    for warning in created.warnings:
        print(f"rouse: warning: {warning}", file=sys.stderr)
    if args.json:
        emit_json(created_json(created))
        return 0
    lines = [str(created.path)]
    if created.todo:
        lines.append(f"fill in: {', '.join(created.todo)}")
    emit([*lines, *created.notes])
    return 0
