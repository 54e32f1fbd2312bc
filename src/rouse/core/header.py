"""The header subset: ``key: value`` lines between two ``---`` fences.

Reads are header-only (stop at the closing fence; give up after 64 KiB or
500 lines). Rewrites touch only header lines: every body byte is kept.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path

from rouse.core.errors import HeaderError
from rouse.core.layout import KEY_RE
from rouse.core.value import Value

MAX_HEADER_BYTES = 64 * 1024
MAX_HEADER_LINES = 500
#: The longest value a writer puts on a header line, in characters: longer text goes in the body.
MAX_VALUE_CHARS = 4000
BOM = b"\xef\xbb\xbf"
FENCE = "---"


class HeaderLine(Value):
    __slots__ = _fields = ("key", "value", "line")

    def __init__(self, key: str, value: str, line: int):
        self.key = key
        self.value = value
        self.line = line  # 1-based line number in the file


class Header(Value):
    """What a header says. ``fields`` holds the first occurrence of each key."""

    __slots__ = (
        *("_entries", "bad_lines", "continued", "duplicates", "end_line", "fenced"),
        *("fields", "lines"),
    )
    _fields = ("fenced", "fields", "entries", "duplicates", "continued", "bad_lines", "end_line")

    def __init__(
        self, fenced: bool = False, fields: dict[str, str] | None = None, end_line: int = 0
    ):
        self.fenced = fenced
        self.fields: dict[str, str] = {} if fields is None else fields
        self.end_line = end_line  # line number of the closing fence (0 when unfenced)
        # findings, as tuples: one shared empty tuple for the common clean header
        self.duplicates: tuple[HeaderLine, ...] = ()  # later lines repeating a key
        self.continued: tuple[int, ...] = ()  # line numbers of continuation lines
        self.bad_lines: tuple[tuple[int, str], ...] = ()  # lines that are not key: value
        #: the line of each key in ``fields``, in order, for a plain header whose
        #: HeaderLine objects are not made yet (a cache hit fills this; the pack's hot
        #: path never needs the entries themselves)
        self.lines: Sequence[int] | None = None
        self._entries: list[HeaderLine] | None = None

    @property
    def entries(self) -> list[HeaderLine]:
        """Every ``key: value`` line in order, duplicates included."""
        if self._entries is None:
            lines = self.lines if self.lines is not None else [0] * len(self.fields)
            pairs = zip(self.fields.items(), lines, strict=True)
            self._entries = [HeaderLine(key, value, line) for (key, value), line in pairs]
            self.lines = None
        return self._entries

    def get(self, key: str) -> str | None:
        return self.fields.get(key)

    def line_of(self, key: str) -> int | None:
        for entry in self.entries:
            if entry.key == key:
                return entry.line
        return None


def _is_fence(line: str) -> bool:
    return line.rstrip(" \t\r\n") == FENCE


def _split_lines(data: bytes) -> tuple[bytes, list[bytes]]:
    """Strip a BOM and split into lines keeping their ends."""
    bom = BOM if data.startswith(BOM) else b""
    return bom, data[len(bom) :].splitlines(keepends=True)


def _text(raw: bytes, path: str | None, line: int, where: str = "") -> str:
    """One line as text; NUL bytes or bytes that are not UTF-8 are a HeaderError."""
    if b"\x00" in raw:
        raise HeaderError(f"binary data{where}: not a text file", path=path, line=line)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise HeaderError(
            "not valid UTF-8: re-save the file as UTF-8", path=path, line=line
        ) from None


_UNTERMINATED = (
    f"unterminated header: no closing '---' within {MAX_HEADER_LINES} lines / "
    f"{MAX_HEADER_BYTES // 1024} KiB"
)


def _scan(lines: list[bytes], path: str | None) -> tuple[Header, int]:
    """Parse header lines; return the header and the index of the first body line."""
    header = Header()
    if not lines or not _is_fence(_text(lines[0], path, 1)):
        return header, 0
    header.fenced = True
    size = len(lines[0])
    last: HeaderLine | None = None
    entries: list[HeaderLine] = []
    duplicates: list[HeaderLine] = []
    continued: list[int] = []
    bad_lines: list[tuple[int, str]] = []
    header._entries = entries
    for index in range(1, len(lines)):
        raw = lines[index]
        size += len(raw)
        if index >= MAX_HEADER_LINES or size > MAX_HEADER_BYTES:
            break
        lineno = index + 1
        line = _text(raw, path, lineno, " in header")
        if _is_fence(line):
            header.end_line = lineno
            header.duplicates, header.continued = tuple(duplicates), tuple(continued)
            header.bad_lines = tuple(bad_lines)
            return header, index + 1
        text = line.rstrip("\r\n")
        if not text.strip() or text.lstrip().startswith("#"):
            continue
        if text[0] in " \t":
            if last is None:
                bad_lines.append((lineno, text))
                continue
            last.value = f"{last.value} {text.strip()}".strip()
            if header.fields.get(last.key) is not None and header.line_of(last.key) == last.line:
                header.fields[last.key] = last.value
            continued.append(lineno)
            continue
        key, colon, value = text.partition(":")
        key = key.strip()
        if not colon or not KEY_RE.match(key):
            bad_lines.append((lineno, text))
            last = None
            continue
        entry = HeaderLine(key.lower(), value.strip(), lineno)
        if entry.key in header.fields:
            duplicates.append(entry)
        else:
            header.fields[entry.key] = entry.value
        entries.append(entry)
        last = entry
    raise HeaderError(_UNTERMINATED, path=path, line=1)


def parse_header(data: bytes | str, path: str | None = None) -> Header:
    """Parse the header of a whole file's content."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    _, lines = _split_lines(raw)
    return _scan(lines, path)[0]


def split(data: bytes, path: str | None = None) -> tuple[Header, bytes]:
    """Split a whole file into its header and its body bytes."""
    _, lines = _split_lines(data)
    header, body_index = _scan(lines, path)
    return header, b"".join(lines[body_index:])


#: a compact header, as writers leave one: a fence, one ``key: value`` line per key
#: (lowercase keys, no blank, comment or continued line, no carriage return), a fence
_COMPACT = re.compile(rb"---\n((?:[a-z][a-z0-9-]*:[^\r\n\x00]*\n)*)---\n")
_COMPACT_LINE = re.compile(r"([a-z][a-z0-9-]*):([^\n]*)\n")
#: the line numbers of a compact header's keys: lines 2, 3, … under the fence
COMPACT_LINES = [range(2, 2 + count) for count in range(MAX_HEADER_LINES)]


def _compact(head: bytes) -> Header | None:
    """The header of ``head`` when it is compact (what :func:`_scan` would find,
    without an object per line); None for anything else, which :func:`_scan` reads."""
    match = _COMPACT.match(head)
    if match is None or match.end() > MAX_HEADER_BYTES:
        return None
    try:
        text = match.group(1).decode("utf-8")
    except UnicodeDecodeError:
        return None  # (the slow path says which line)
    pairs = _COMPACT_LINE.findall(text)
    fields = {key: value.strip() for key, value in pairs}
    count = len(fields)
    if count != len(pairs) or count + 1 >= MAX_HEADER_LINES:
        return None  # a duplicate key, or past the line limit: the slow path's findings
    header = Header(True, fields, count + 2)
    header.lines = COMPACT_LINES[count]
    return header


#: how rouse opens a file of the tree to read it: never through a symlink, and never
#: blocking on a FIFO swapped in since it was looked at
READ_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)


def read_capped(path: str | Path, limit: int) -> bytes:
    """At most ``limit`` bytes of ``path``, opened as :data:`READ_FLAGS` says (OSError
    when it cannot be)."""
    with os.fdopen(os.open(path, READ_FLAGS), "rb") as handle:
        return handle.read(limit)


def read_header(
    path: str | Path, rel: str | None = None, info: os.stat_result | None = None
) -> Header:
    """Read only the header of ``path``; never follow a symlink.

    ``info``: the file's ``lstat``, when the caller (the walk) has just made it.
    Raises HeaderError for a non-regular file, binary or non-UTF-8 header
    data, or an unterminated header.
    """
    where = rel or str(path)
    if info is None:
        try:
            info = os.lstat(path)
        except OSError as exc:
            raise HeaderError(f"cannot stat: {exc.strerror}", path=where) from None
    if not stat.S_ISREG(info.st_mode):
        raise HeaderError("not a regular file (symlinks are never followed)", path=where)
    try:
        fd = os.open(path, READ_FLAGS)
    except OSError as exc:
        raise HeaderError(f"cannot open: {exc.strerror}", path=where) from None
    try:
        head = chunk = os.read(fd, MAX_HEADER_BYTES + 8)
        # (a short read of a regular file: read on; one read holds the whole of a
        # file no longer than its stat said, and a file that grew since is racy)
        while chunk and len(head) < MAX_HEADER_BYTES + 8 and len(head) < info.st_size:
            chunk = os.read(fd, MAX_HEADER_BYTES + 8 - len(head))
            head += chunk
    except OSError as exc:  # a directory swapped in since the stat, say
        raise HeaderError(f"cannot read: {exc.strerror}", path=where) from None
    finally:
        os.close(fd)
    quick = _compact(head)
    if quick is not None:
        return quick
    if b"\x00" in head.split(b"\n", 1)[0]:
        raise HeaderError("binary data: not a text file", path=where, line=1)
    _, lines = _split_lines(head)
    if lines and len(head) > MAX_HEADER_BYTES and not lines[-1].endswith(b"\n"):
        lines = lines[:-1]  # a line cut by our read limit is not a line
    return _scan(lines, where)[0]


def format_header(fields: Mapping[str, str], newline: str = "\n") -> str:
    """A fresh header block for the given fields, in order."""
    body = "".join(f"{key}: {value}{newline}" for key, value in fields.items())
    return f"{FENCE}{newline}{body}{FENCE}{newline}"


def value_problem(value: str) -> str | None:
    """Why a writer must not put ``value`` on a header line, or None when it may.

    A value is one line of text: no line break or other control character
    (U+0000-U+001F, U+007F-U+009F), no line or paragraph separator, nothing
    that is not UTF-8, and at most MAX_VALUE_CHARS characters, so that what a
    writer accepts the reader reads back.
    """
    if len(value) > MAX_VALUE_CHARS:
        return (
            f"is {len(value):,} characters long: a header value holds at most "
            f"{MAX_VALUE_CHARS:,} (put longer text in the body)"
        )
    for char in value:
        code = ord(char)
        if char in "\n\r" or code in (0x2028, 0x2029):
            return f"must be one line (it holds a line break, U+{code:04X})"
        if code < 0x20 or 0x7F <= code <= 0x9F:
            return f"holds the control character U+{code:04X}: write it as one line of plain text"
        if 0xD800 <= code <= 0xDFFF:
            return "is not valid UTF-8 text: re-type it as UTF-8"
    return None


def _check_update(key: str, value: str | None) -> None:
    if not KEY_RE.match(key) or key != key.lower():
        raise ValueError(f"bad header key {key!r}: use lowercase letters, digits and '-'")
    if value is not None and ("\n" in value or "\r" in value):
        raise ValueError(f"header value for {key!r} must be one line")


def set_fields(data: bytes, updates: Mapping[str, str | None], path: str | None = None) -> bytes:
    """Rewrite header keys in ``data``: set each to its value, or remove it (None).

    The first occurrence is replaced in place, later copies (and their
    continuation lines) are removed, new keys go just before the closing
    fence, and a file with no fence gets one. Body bytes are untouched.
    """
    for key, value in updates.items():
        _check_update(key, value)
    bom, lines = _split_lines(data)
    header, body_index = _scan(lines, path)
    newline = "\r\n" if lines and lines[0].endswith(b"\r\n") else "\n"
    if not header.fenced:
        added = {k: v for k, v in updates.items() if v is not None}
        return bom + format_header(added, newline).encode("utf-8") + b"".join(lines)
    written: set[str] = set()
    out: list[bytes] = [lines[0]]
    dropping = False
    for index in range(1, body_index - 1):
        raw = lines[index]
        text = raw.decode("utf-8").rstrip("\r\n")
        if not text.strip() or text.lstrip().startswith("#"):
            out.append(raw)  # ignored by readers: it does not end a continued value
            continue
        if text[0] in " \t":
            if not dropping:
                out.append(raw)
            continue
        dropping = False
        name, colon, _ = text.partition(":")
        key = name.strip().lower()
        if colon and KEY_RE.match(key) and key in updates:
            dropping = True
            value = updates[key]
            if key not in written and value is not None:
                out.append(f"{key}: {value}{newline}".encode())
            written.add(key)
            continue
        out.append(raw)
    for key, value in updates.items():
        if key not in written and value is not None:
            out.append(f"{key}: {value}{newline}".encode())
    out.append(lines[body_index - 1])
    return bom + b"".join(out) + b"".join(lines[body_index:])
