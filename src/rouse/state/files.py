"""Best-effort JSON state in ``.rouse/``: caches that may be lost at no cost.

Every state file is read through one bounded reader (:func:`read`, or
:func:`decode` for bytes a caller has already split, like the walk cache's
MACed body): at most ``max_bytes`` (default 1 MiB) are read, nesting deeper
than ``max_depth`` (default 16) is refused before the decoder sees it,
``NaN``, ``Infinity`` and numbers beyond ±1e15 are refused, and the decoded
value must fit the file's *shape* (see :func:`conform`). Anything refused is
a miss — the caller re-derives, rewrites or reports it; it is never trusted
and never fatal — and :func:`problem` says why, for ``rouse check``.

Writes go to a temp file in the same directory and are renamed over, so a
reader never sees half a file; a tree that cannot be written is not an
error (the caller just works without its cache). Neither reads nor writes go
through a symlink anywhere from ``.rouse`` down (see ``rouse.core.statedir``):
state behind a link is treated as missing. Kept free of ``tempfile``
and friends: this is on the pack's start-up path.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
import time
from pathlib import Path

# typing costs ~5 ms to import on the pack's start-up path; annotations are
# strings here (__future__), so it is only imported for the type checker
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: the default bounds of a state file
MAX_BYTES = 1 << 20
MAX_DEPTH = 16
#: no number in rouse's state is larger than this (seconds, counts; nanosecond
#: stamps are integers and bounded by their shape)
MAX_NUMBER = 1e15


class Damaged(ValueError):
    """Why a state file's bytes are not trusted (one line, for ``rouse check``)."""


class Num:
    """A shape: a number (never a bool) within ``[lo, hi]``; ``whole``: an integer."""

    __slots__ = ("hi", "lo", "whole")

    def __init__(self, lo: float, hi: float, whole: bool = False):
        self.lo, self.hi, self.whole = lo, hi, whole


#: any value at all (its owner checks it when it uses it)
ANY = object


#: shapes whose values are checked by type alone (no bounds, nothing inside)
_PLAIN = (list, dict, str, bool)


def conform(value: Any, shape: Any, where: str = "") -> None:
    """Raise :class:`Damaged` unless ``value`` has ``shape``.

    A shape is a type (``str``, ``bool``, ``type(None)``; ``int`` and ``float``
    as for :class:`Num` without bounds), a :class:`Num`, a tuple (any one of
    them), ``[shape]`` (a list of such), ``{str: shape}`` (a mapping of any
    string keys), ``{"key": shape, "key?": shape}`` (an object with those keys,
    ``?`` meaning optional; others allowed), or :data:`ANY`. ``where``: the
    value's place in the file, for the message.
    """
    if shape is ANY:
        return
    at = where or "the top level"
    if type(shape) is tuple:
        failures = []
        for option in shape:
            try:
                conform(value, option, where)
                return
            except Damaged as exc:
                failures.append(exc)
        bounded = [f for f in failures if "out of bounds" in str(f)]
        raise (bounded or failures)[0]
    if type(shape) is Num:
        if type(value) not in (int, float) or (shape.whole and type(value) is not int):
            raise Damaged(f"{at} is not a{' whole' if shape.whole else ''} number")
        if not shape.lo <= value <= shape.hi:
            raise Damaged(f"{at} is out of bounds ({value!r})")
        return
    if shape is int or shape is float:
        conform(value, Num(-MAX_NUMBER, MAX_NUMBER, shape is int), where)
        return
    if type(shape) is list:
        if type(value) is not list:
            raise Damaged(f"{at} is not a list")
        for index, item in enumerate(value):
            conform(item, shape[0], f"{where}[{index}]")
        return
    if type(shape) is dict:
        if type(value) is not dict:
            raise Damaged(f"{at} is not an object")
        if str in shape:
            kind = shape[str]
            if kind in _PLAIN and all(type(item) is kind for item in value.values()):
                return  # (the common case at C speed: the walk cache has thousands)
            for key, item in value.items():
                conform(item, shape[str], f"{where}[{key[:40]!r}]")
            return
        for key, option in shape.items():
            name = key.rstrip("?")
            if name not in value:
                if key.endswith("?"):
                    continue
                raise Damaged(f"{at} lacks {name!r}")
            conform(value[name], option, f"{where}.{name}" if where else name)
        return
    if type(value) is not shape:
        kind = {str: "a string", bool: "true or false", type(None): "null"}.get(shape, shape)
        raise Damaged(f"{at} is not {kind}")


# -- the decoder's bounds ------------------------------------------------------

#: every byte but the structural ones (brackets, quotes, backslashes) — translated away
_NOT_STRUCTURE = bytes(range(256)).translate(None, b'[]{}"\\')
_NOT_BRACKETS = bytes(range(256)).translate(None, b"[]{}")
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)


def _nesting_ok(brackets: bytes, limit: int) -> bool:
    """Do these brackets (nothing else) nest at most ``limit`` deep, and balance?"""
    for _ in range(limit):
        if not brackets:
            return True
        inner = brackets.replace(b"[]", b"").replace(b"{}", b"")
        if len(inner) == len(brackets):
            return False
        brackets = inner
    return not brackets


def _depth_ok(data: bytes, limit: int) -> bool:
    """Is ``data`` (JSON text) nested at most ``limit`` deep? Exact, and cheap for state
    whose strings hold no bracket, quote or backslash: then every bracket left after
    dropping the (bracket-free) strings is structure. Otherwise strings are cut out
    properly first (slower, and only for such files). Unbalanced text is refused."""
    skeleton = data.translate(None, _NOT_STRUCTURE).replace(b'""', b"")
    if b'"' not in skeleton and b"\\" not in skeleton:
        return _nesting_ok(skeleton, limit)
    return _nesting_ok(_STRING.sub(b"", data).translate(None, _NOT_BRACKETS), limit)


def _no_constant(name: str) -> Any:
    raise Damaged(f"{name}, which rouse never writes")


def _bounded_float(text: str) -> float:
    value = float(text)
    if value != value or abs(value) > MAX_NUMBER:  # NaN, ±inf, 1e300
        raise Damaged(f"the number {text[:40]}, out of bounds")
    return value


def decode(data: bytes, shape: Any = ANY, *, max_depth: int = MAX_DEPTH) -> Any:
    """The JSON value in ``data``, fitting ``shape``; else :class:`Damaged` saying why."""
    if not _depth_ok(data, max_depth):
        raise Damaged(f"nested deeper than {max_depth} levels (or unbalanced)")
    try:
        value = json.loads(data, parse_constant=_no_constant, parse_float=_bounded_float)
    except Damaged:
        raise
    except (ValueError, RecursionError) as exc:
        raise Damaged(f"not JSON ({str(exc)[:80]})") from None
    conform(value, shape)
    return value


# -- reading and writing --------------------------------------------------------


def through_link(path: Path) -> bool:
    """Is ``path``, or a directory above it up to ``.rouse``, a symlink (or unreadable)?"""
    current = path
    for _ in range(8):  # state files sit at most a few levels under .rouse/
        try:
            if os.path.islink(current):
                return True
        except OSError:
            return True
        if current.name == ".rouse" or current.parent == current:
            return False
        current = current.parent
    return False


def read_bounded(path: Path, max_bytes: int = MAX_BYTES) -> bytes | None:
    """The file's bytes; None if it is missing, unreadable or behind a link;
    :class:`Damaged` if it is larger than ``max_bytes`` or not a regular file."""
    if through_link(path):
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                raise Damaged("not a regular file")
            data = handle.read(max_bytes + 1)
    except OSError:
        return None
    if len(data) > max_bytes:
        raise Damaged(f"larger than {max_bytes:,} bytes")
    return data


def load_bytes(path: Path, max_bytes: int = MAX_BYTES) -> bytes | None:
    """The file's bytes, or None if it is missing, unreadable, behind a link, or too large."""
    try:
        return read_bounded(path, max_bytes)
    except Damaged:
        return None


def read(
    path: Path, shape: Any = ANY, *, max_bytes: int = MAX_BYTES, max_depth: int = MAX_DEPTH
) -> Any:
    """The decoded file, or None: missing, unreadable, behind a link, or refused by the
    bounds or the shape (damaged state is a miss, never fatal)."""
    try:
        data = read_bounded(path, max_bytes)
        return None if data is None else decode(data, shape, max_depth=max_depth)
    except Damaged:
        return None


def problem(
    path: Path, shape: Any = ANY, *, max_bytes: int = MAX_BYTES, max_depth: int = MAX_DEPTH
) -> str | None:
    """Why :func:`read` refuses this file (None: fine, or simply missing)."""
    try:
        data = read_bounded(path, max_bytes)
        if data is not None:
            decode(data, shape, max_depth=max_depth)
    except Damaged as exc:
        return str(exc)
    return None


def save_json(path: Path, data: Any) -> bool:
    """Write ``data`` atomically; return False (and leave no temp file) if we can't."""
    try:
        # dumps, not dump: dump streams through the pure-Python encoder (~7× slower)
        text = json.dumps(data, separators=(",", ":")).encode()
    except (TypeError, ValueError, RecursionError):
        return False
    return save_bytes(path, text)


def make_parent(path: Path) -> bool:
    """Make the folder ``path`` goes in (never through a link); False if we can't."""
    if through_link(path):
        return False
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError:
        return False
    return True


def save_bytes(path: Path, text: bytes) -> bool:
    """Write ``text`` atomically; return False (and leave no temp file) if we can't."""
    temp = path.with_name(f".{path.name}.{os.getpid()}.{time.monotonic_ns()}.tmp")
    if not make_parent(path):
        return False
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        with os.fdopen(fd, "wb") as handle:
            handle.write(text)
        os.replace(temp, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        return False
    return True
