"""The hooks' light reading of the tree and ``.rouse/``: ``str`` paths, ``os`` alone.

An agent runs the prompt hook at every prompt and the Stop hook at every
turn's end. With nothing new each should cost little more than starting
Python (issue 24: at most 1.5× ``python -c pass``), and importing pathlib
(re and urllib.parse come with it), json, contextlib or enum costs more than
that margin. So the idle paths read through these twins of the core's
readers, which import nothing that Python has not loaded already but the C
half of json:

- :func:`loads`: JSON read by the C scanner json itself uses, under the
  bounds of :func:`rouse.state.files.decode` (the nesting depth, no
  ``NaN`` or ``Infinity``, numbers within ±1e15). It *declines*
  (:class:`Declined`) whatever it cannot decide cheaply: another encoding, a
  BOM, a bound crossed, anything json would refuse. The caller then asks the
  core reader, which says what is wrong; so it never takes what the core
  refuses, and what it takes is the value the core would decode.
- :func:`through_link`, :func:`read_bounded`, :func:`save_bytes`,
  :func:`nudge_dir_stat`: the core's rules (:mod:`rouse.state.files`,
  :mod:`rouse.core.statedir`): never through a symlink from ``.rouse`` down,
  regular files only, bounded reads, atomic writes.
- :func:`pure`, :func:`explicit_tree`, :func:`surely_local`: the tree a hook
  names, as :func:`rouse.core.home.find_tree` finds it for ``--memory`` (or
  ``$ROUSE_HOME``), spelled as pathlib spells it; None where only the core can
  say (no such directory, no home, the global tree).

tests/test_hook_quick.py holds each twin to the core's answer on the same input.
"""

from __future__ import annotations

import os
import stat
import time

try:  # json's C half: importing the json package would pull in re (~6 ms)
    import _json
except ImportError:  # another Python: every read goes to the core reader
    _json = None  # type: ignore[assignment]

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

STATE_DIR = ".rouse"  # rouse.core.layout.STATE_DIR
NUDGES = "nudges"  # rouse.state.nudges.DIR
SESSIONS = "sessions"  # rouse.agents.prompt_hook.DIR
MAX_NUMBER = 1e15  # rouse.state.files.MAX_NUMBER
TREE_MARKS = ("entrypoint/rouse.md", ".rouse-tree")  # rouse.core.home.TREE_MARKS
_WHITESPACE = " \t\n\r"  # what json skips around a value
_NOT_STRUCTURE = bytes(range(256)).translate(None, b'[]{}"\\')
_NOT_BRACKETS = bytes(range(256)).translate(None, b"[]{}")


class Declined(Exception):
    """Not decided here: ask the core reader."""


class suppress:
    """``contextlib.suppress``, without importing contextlib (and functools and
    collections behind it: ~3 ms at start-up)."""

    def __init__(self, *kinds: type[BaseException]) -> None:
        self.kinds = kinds

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, *rest: object) -> bool:
        return kind is not None and issubclass(kind, self.kinds)


# -- JSON ----------------------------------------------------------------------


def _float(text: str) -> float:
    value = float(text)
    if value != value or abs(value) > MAX_NUMBER:  # NaN, ±inf, 1e300: the core refuses them
        raise Declined(text[:40])
    return value


def _constant(name: str) -> Any:
    raise Declined(name)  # NaN, Infinity: the core refuses them


class _Decoder:
    """What json's C scanner reads from a ``json.JSONDecoder``: json.loads with the
    core's ``parse_float`` and ``parse_constant``."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = staticmethod(_float)
    parse_int = int
    parse_constant = staticmethod(_constant)


_scan = _json.make_scanner(_Decoder()) if _json is not None else None  # type: ignore[arg-type]


def _nesting_ok(brackets: bytes, limit: int) -> bool:
    """rouse.state.files's: do these brackets nest at most ``limit`` deep, and balance?"""
    for _ in range(limit):
        if not brackets:
            return True
        inner = brackets.replace(b"[]", b"").replace(b"{}", b"")
        if len(inner) == len(brackets):
            return False
        brackets = inner
    return not brackets


def _outside_strings(data: bytes) -> bytes:
    """The brackets of ``data`` outside its JSON strings; Declined for an unclosed string."""
    kept = []
    at = 0
    while True:
        opening = data.find(b'"', at)
        if opening < 0:
            kept.append(data[at:])
            return b"".join(kept).translate(None, _NOT_BRACKETS)
        kept.append(data[at:opening])
        end = opening + 1
        while True:
            end = data.find(b'"', end)
            if end < 0:
                raise Declined("an unclosed string")
            before = end - 1
            while data[before] == 0x5C:  # a backslash: the quote is escaped if they are odd
                before -= 1
            if (end - 1 - before) % 2 == 0:
                break
            end += 1
        at = end + 1


def loads(data: bytes, max_depth: int) -> Any:
    """The JSON value in ``data``, as ``statefile.decode`` reads it; else :class:`Declined`."""
    if _scan is None:
        raise Declined("no C scanner")
    skeleton = data.translate(None, _NOT_STRUCTURE).replace(b'""', b"")
    if b'"' in skeleton or b"\\" in skeleton:
        skeleton = _outside_strings(data)
    if not _nesting_ok(skeleton, max_depth):
        raise Declined("too deep")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise Declined("not UTF-8") from None
    start = len(text) - len(text.lstrip(_WHITESPACE))
    try:
        value, end = _scan(text, start)
    except Declined:
        raise
    except Exception:  # StopIteration, json's own error, RecursionError: the core says it
        raise Declined("not JSON") from None
    if text[end:].strip(_WHITESPACE):
        raise Declined("more after the value")
    return value


def dumps_seen(seen: list[str], stamp: list[int] | None) -> bytes:
    """A seen-set's bytes, as ``statefile.save_json`` writes ``{"seen": seen}`` (and
    ``"nudges": stamp`` when there is one): compact, ASCII, in that order."""
    if _json is None:
        import json

        data: dict[str, Any] = {"seen": seen} if stamp is None else {"seen": seen, "nudges": stamp}
        return json.dumps(data, separators=(",", ":")).encode()
    names = ",".join([_json.encode_basestring_ascii(name) for name in seen])
    tail = "" if stamp is None else f',"nudges":[{",".join(map(str, stamp))}]'
    return f'{{"seen":[{names}]{tail}}}'.encode()


# -- state files -----------------------------------------------------------------


def through_link(path: str) -> bool:
    """rouse.state.files's: is ``path``, or a directory above it up to ``.rouse``, a link?"""
    current = path
    for _ in range(8):
        if os.path.islink(current):
            return True
        parent = os.path.dirname(current)
        if os.path.basename(current) == STATE_DIR or parent == current:
            return False
        current = parent
    return False


def read_bounded(path: str, max_bytes: int) -> bytes | None:
    """rouse.state.files's: the file's bytes, or None (missing, unreadable, behind a
    link); Declined where the core says it is damaged (too large, not a regular file)."""
    if through_link(path):
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    chunks = []
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise Declined("not a regular file")
        # at most max_bytes + 1, as the core reads; asked for in the size the file has
        # (a buffer of max_bytes, 8 MiB for a seen-set, costs more than the read)
        want, total = min(info.st_size, max_bytes) + 1, 0
        while total <= max_bytes:
            chunk = os.read(fd, min(want, max_bytes + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            want = 1 << 16
    except OSError:
        return None
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > max_bytes:
        raise Declined("too large")
    return data


def save_bytes(path: str, text: bytes) -> bool:
    """rouse.state.files's: write ``text`` atomically; False (no temp file left) if not."""
    folder, name = os.path.split(path)
    temp = os.path.join(folder, f".{name}.{os.getpid()}.{time.monotonic_ns()}.tmp")
    if through_link(path):
        return False
    try:
        os.makedirs(folder, exist_ok=True)
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        with os.fdopen(fd, "wb") as handle:
            handle.write(text)
        os.replace(temp, path)
    except OSError:
        with suppress(OSError):
            os.unlink(temp)
        return False
    return True


def _usable_dir(path: str) -> os.stat_result | None:
    """The directory's lstat, or None where rouse.core.statedir finds a problem or nothing."""
    try:
        info = os.lstat(path)
    except OSError:
        return None
    return info if stat.S_ISDIR(info.st_mode) else None  # (a link is not a directory)


def nudge_dir_stat(root: str) -> os.stat_result | None:
    """``.rouse/nudges``'s lstat; None when the prompt hook would list no nudge file there:
    missing, or a link or something other than a directory on the way (statedir's rule)."""
    state = os.path.join(root, STATE_DIR)
    if _usable_dir(state) is None:
        return None
    return _usable_dir(os.path.join(state, NUDGES))


def nudge_names(root: str) -> list[str]:
    """The names of the nudge files in ``.rouse/nudges/`` (never one behind a link)."""
    if nudge_dir_stat(root) is None:
        return []
    try:
        with os.scandir(os.path.join(root, STATE_DIR, NUDGES)) as entries:
            return [e.name for e in entries if e.name.endswith(".md") and not e.is_symlink()]
    except OSError:
        return []


# -- which tree ------------------------------------------------------------------


def pure(path: str) -> str:
    """``str(PurePosixPath(path))``: no empty or ``.`` parts, no trailing slash."""
    lead = "/" if path.startswith("/") else ""
    if path.startswith("//") and not path.startswith("///"):
        lead = "//"  # POSIX leaves exactly two leading slashes to the system
    parts = [part for part in path.split("/") if part and part != "."]
    return lead + "/".join(parts) or "."


def joined(folder: str, name: str) -> str:
    """``str(Path(folder) / name)``, for a ``folder`` spelled as :func:`pure` spells it
    and a relative ``name``."""
    rest = pure(name)
    if rest == ".":
        return folder
    return folder + rest if folder in ("/", "//") else f"{folder}/{rest}"


def explicit_tree(memory: str | None, env: Mapping[str, str]) -> str | None:
    """The tree ``find_tree`` takes from ``--memory`` or ``$ROUSE_HOME``, or None when
    only the core can say (no such rung, no such directory, no home for ``~``)."""
    value = memory or env.get("ROUSE_HOME")
    if not value:
        return None
    path = os.path.expanduser(value) if value.startswith("~") else value
    if path.startswith("~"):
        return None  # pathlib raises for a home it cannot find: the core says so
    if path.startswith("/"):
        path = pure(path)
    else:
        try:
            path = joined(pure(os.getcwd()), path)
        except OSError:
            return None
    return path if os.path.isdir(path) else None


def surely_local(root: str) -> bool:
    """Is ``root`` certainly not the global tree (``~/.rouse``)? False when it may be, or
    when pathlib would raise on the way (no home, a symlink loop): the core then decides."""
    home = os.path.expanduser("~")
    if home.startswith("~"):
        return False
    outer = os.path.realpath(joined(home, STATE_DIR))
    try:
        os.stat(outer)
    except FileNotFoundError:
        pass
    except OSError:
        return False
    return os.path.realpath(root) != outer
