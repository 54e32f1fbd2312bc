"""The walk cache's file (:mod:`rouse.cache.walk`): its first line and MAC, how it
writes a header as JSON and reads it back, and which cached names it may believe."""

from __future__ import annotations

import json
import os
import time

from rouse.core import layout
from rouse.core.header import COMPACT_LINES, Header, HeaderLine
from rouse.state.files import Damaged, read_signed, write_signed
from rouse.state.shapes import WALK_CACHE

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

#: names a cached listing may never hold (besides anything with "/" or NUL)
_BAD_NAMES = frozenset({"", ".", "..", layout.STATE_DIR, ".git"})


def dump_header(header: Header) -> dict[str, str] | list[Any]:
    """A header as JSON. Almost every header is compact: fenced, one line per key
    right under the opening fence, closed on the next line; it is stored as its
    fields alone. Else ``[fenced, fields, lines, end_line]`` when it is plain
    (one line per key, in order), else with its entries and findings spelled out."""
    count = len(header.fields)
    if (
        header._entries is None
        and count < len(COMPACT_LINES)
        and header.lines is COMPACT_LINES[count]
    ):
        return header.fields  # read compact (its HeaderLine objects never made)
    entries = header.entries
    plain = not (header.duplicates or header.continued or header.bad_lines)
    if plain and list(header.fields) == [e.key for e in entries]:
        lines = [e.line for e in entries]
        count = len(lines)
        if (
            header.fenced
            and count < len(COMPACT_LINES)
            and lines == list(COMPACT_LINES[count])
            and header.end_line == count + 2
        ):
            return header.fields
        return [int(header.fenced), header.fields, lines, header.end_line]
    return [
        int(header.fenced),
        header.fields,
        [[e.key, e.value, e.line] for e in entries],
        header.end_line,
        [e.line for e in header.duplicates],
        header.continued,
        [list(bad) for bad in header.bad_lines],
    ]


def _strings(fields: dict[str, str]) -> None:
    """TypeError unless every key and value is a string (checked at C speed)."""
    "".join(fields)
    "".join(fields.values())


def names_ok(names: list[str], at_root: bool) -> bool:
    """Are these (cached) names single path components rouse would list itself?"""
    try:
        joined = "".join(names)
    except TypeError:
        return False
    if "/" in joined or "\0" in joined or not _BAD_NAMES.isdisjoint(names):
        return False
    return not at_root or not any(name.startswith(".") for name in names)


def load_header(data: dict[str, str] | list[Any]) -> Header:
    if type(data) is dict:  # compact
        _strings(data)
        count = len(data)
        header = Header(True, data, count + 2)
        header.lines = COMPACT_LINES[count]
        return header
    if not isinstance(data, list):
        raise ValueError("cached header is neither fields nor a list")
    fenced, fields, lines, end_line = data[:4]
    if not isinstance(fields, dict):
        raise ValueError("cached fields are not a mapping")
    _strings(fields)
    header = Header(bool(fenced), fields, int(end_line))
    if len(data) == 4:  # plain: made into HeaderLine objects only if someone asks
        if len(lines) != len(fields) or any(type(line) is not int for line in lines):
            raise ValueError("cached lines do not match the fields")
        header.lines = lines
        return header
    duplicate_lines, continued, bad_lines = data[4:]
    header.continued = tuple(int(line) for line in continued)
    header.bad_lines = tuple((int(line), str(text)) for line, text in bad_lines)
    entries = [HeaderLine(str(key), str(value), int(line)) for key, value, line in lines]
    dupes = set(duplicate_lines)
    header._entries = entries
    header.duplicates = tuple(e for e in entries if e.line in dupes)
    return header


VERSION = 9  # 8: plans made by the 0.4 clock (DST instants, future stamps); 9: real micros
#: the first line of the file: magic, version, MAC (or "-" when unkeyed)
MAGIC = b"rouse-walk-cache"


#: which key the walk cache is MACed with
_LABEL = b"rouse-walk-cache-mac"


def read_cache(path: Path, secret: bytes | None) -> Any:
    """The decoded cache, or None: missing, damaged, or (with a key) not ours."""
    body = read_signed(path, WALK_CACHE.max_bytes, MAGIC, VERSION, secret, _LABEL)
    if body is None:
        return None
    try:
        return WALK_CACHE.decode(body)
    except Damaged:  # too deep, not JSON, NaN, the wrong shape: no cache, rewritten
        return None


def zone() -> str:
    """What the clock's local times hang on (a file's mtime is read as local time):
    plans kept under another zone are not used."""
    return f"{os.environ.get('TZ', '')}|{time.timezone}|{time.altzone}|{'|'.join(time.tzname)}"


def write_cache(
    path: Path, secret: bytes | None, dirs: dict[str, list[Any]], token: str | None
) -> None:
    """Save the cache (best effort), MACed when there is a secret."""
    state = {"version": VERSION, "zone": zone(), "token": token, "dirs": dirs}
    body = json.dumps(state, separators=(",", ":"), check_circular=False).encode()
    write_signed(path, MAGIC, VERSION, secret, _LABEL, body)
