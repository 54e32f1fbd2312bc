"""What a user or a model gives a writer — field keys, values, bodies — checked once for all.

``new --set``, ``remind``, ``remember`` and the MCP tools all pass keys and values
through here before anything is written: a key must be one rouse reads (machine
fields are refused, whatever their spelling), a value must be one line that reads
back as written, stamps and intervals are normalised, and the header they make
must fit the reader's limits. The rules ``check`` applies to files already
written are :mod:`rouse.lint.fields`.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from datetime import datetime

from rouse.core import header, layout
from rouse.core.errors import HeaderError, UsageError
from rouse.core.humantime import parse_when
from rouse.core.recurrence import parse_every
from rouse.core.timefmt import format_stamp, parse_interval

KNOWN_KEYS = layout.KNOWN_KEYS
#: The keys a user or a model may give (``new --set``, MCP ``fields``).
WRITABLE_KEYS = KNOWN_KEYS - layout.MACHINE_FIELDS


def parse_assignments(pairs: list[str], now: datetime) -> dict[str, str]:
    """``k=v`` strings from ``new --set`` → fields, through :func:`validate_fields`.

    Spaces around the ``=`` are the syntax's and go; the key itself is checked
    by :func:`check_key`, as the MCP tools' keys are.
    """
    fields: dict[str, str] = {}
    for pair in pairs:
        key, eq, value = pair.partition("=")
        if not eq:
            raise UsageError(f"bad --set {pair!r}: use key=value with a key like closes-when")
        fields[check_key(key.strip())] = value
    return validate_fields(fields, now)


def check_key(key: str) -> str:
    """The one check of a field key a user or a model gives (``new --set``, MCP tools).

    A key is lowercase kebab-case (``[a-z][a-z0-9-]*``); a machine field is
    refused whatever its case or the spaces around it. Returns the key.
    """
    folded = key.strip().lower()
    if folded in layout.MACHINE_FIELDS:
        raise UsageError(f"'{folded}' is a machine field: only rouse writes it")
    if not layout.FIELD_KEY_RE.match(key):
        hint = (
            f" (write {folded!r})" if layout.FIELD_KEY_RE.match(folded) else " (like closes-when)"
        )
        shown = repr(key) if len(key) <= 60 else repr(key[:60]) + "..."
        raise UsageError(
            f"bad field key {shown}: use lowercase letters, digits and '-', "
            f"starting with a letter{hint}"
        )
    if key not in WRITABLE_KEYS:
        raise UsageError(unknown_key(key))
    return key


def unknown_key(key: str) -> str:
    """The refusal of a key rouse does not read, with the nearest one it does."""
    shown = key if len(key) <= 60 else key[:60] + "..."
    guess = difflib.get_close_matches(key, sorted(WRITABLE_KEYS), n=1)
    if guess:
        return (
            f"unknown field '{shown}': did you mean '{guess[0]}'? (rouse writes only fields "
            "it reads)"
        )
    return (
        f"unknown field '{shown}': rouse writes only fields it reads, so free text goes in "
        f"the body (fields: {', '.join(sorted(WRITABLE_KEYS))})"
    )


def check_value(key: str, value: str) -> str:
    """A header value from a user or a model, trimmed, or a UsageError naming the key.

    One line, no control characters, at most ``header.MAX_VALUE_CHARS``
    characters: what a writer accepts, the reader reads back.
    """
    problem = header.value_problem(value)
    if problem is not None:
        raise UsageError(f"the value of '{key}' {problem}")
    return value.strip()


def check_body(text: str, what: str = "the body") -> str:
    """Body text from a user or a model: any length, but text (no NUL, valid UTF-8)."""
    if "\x00" in text:
        raise UsageError(f"{what} holds a NUL character (U+0000): memory files are plain text")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError(
            f"{what} is not valid UTF-8 text: re-type or re-save it as UTF-8"
        ) from None
    return text


def validate_fields(fields: Mapping[str, str], now: datetime) -> dict[str, str]:
    """Check keys and values from a user or model; normalise stamps and intervals.

    Machine fields, bad keys and values that would not read back are refused,
    and so is a set of fields too big for the reader to read as one header.
    """
    clean: dict[str, str] = {}
    for raw_key, raw_value in fields.items():
        key = check_key(raw_key)
        value = check_value(key, raw_value)
        try:
            if key in layout.STAMP_KEYS and value:
                value = format_stamp(parse_when(value, now))
            elif key in layout.INTERVAL_KEYS and value:
                parse_interval(value)
            elif key == "every" and value:
                parse_every(value)
            elif key == "supersedes":
                value = _slugs(value)
        except ValueError as exc:
            raise UsageError(f"bad value for '{key}': {exc}") from None
        clean[key] = value
    readable_header(clean, "the fields given")
    return clean


def _slugs(value: str) -> str:
    """A ``supersedes:`` value: one or more slugs, comma-separated (ValueError otherwise)."""
    names = [name.strip() for name in value.split(",")]
    for name in names:
        if not layout.SLUG_RE.match(name):
            raise ValueError(f"{name!r} is not a slug (lowercase letters, digits and -)")
    return ", ".join(names)


def readable_header(fields: Mapping[str, str], what: str) -> str:
    """The header block for ``fields``, refused unless the reader reads it back as written."""
    text = header.format_header(fields)
    try:
        back = header.parse_header(text).fields
    except HeaderError:
        size = len(text.encode("utf-8"))
        raise UsageError(
            f"{what} would make a header of {text.count(chr(10))} lines / {size:,} bytes, and "
            f"rouse reads a header only up to {header.MAX_HEADER_LINES} lines / "
            f"{header.MAX_HEADER_BYTES // 1024} KiB: give fewer or shorter fields, or put the "
            "text in the body"
        ) from None
    if back != dict(fields):
        raise UsageError(f"{what} would not read back as written: check the keys and values")
    return text
