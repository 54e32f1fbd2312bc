"""JSON within bounds, for :mod:`rouse.state.files`: a state file's *shape* and the check
that a value fits it (:func:`conform`), the decoder that refuses what is too deep,
``NaN``/``Infinity`` and numbers beyond ±1e15 before or while it reads (json's C
scanner, else json itself, which says why), and the compact encoder.

Light to import, like :mod:`rouse.state.files`: nothing Python has not loaded at
start-up but json's C half.
"""

from __future__ import annotations

try:  # json's C half: importing the json package would pull in re (~6 ms)
    import _json
except ImportError:  # another Python: every read goes through json
    _json = None  # type: ignore[assignment]

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: the default nesting bound of a state file
MAX_DEPTH = 16
#: no number in rouse's state is larger than this (seconds, counts; nanosecond
#: stamps are integers and bounded by their shape)
MAX_NUMBER = 1e15


class Damaged(ValueError):
    """Why a state file's bytes are not trusted (one line, for ``rouse check``)."""


class suppress:
    """``contextlib.suppress``, without importing contextlib (and functools and
    collections behind it: ~3 ms at a hook's start-up)."""

    def __init__(self, *kinds: type[BaseException]) -> None:
        self.kinds = kinds

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, *rest: object) -> bool:
        return kind is not None and issubclass(kind, self.kinds)


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
        if shape[0] in _PLAIN and all(type(item) is shape[0] for item in value):
            return  # (at C speed: a session's seen-set has thousands of names)
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
_WHITESPACE = " \t\n\r"  # what json skips around a value


class _Declined(Exception):
    """Not decided by the fast reading: json decides (and says why it refuses)."""


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
    brackets = _outside_strings(data)
    if brackets is None:  # an unclosed string: what is outside is as the regex finds it
        import re

        brackets = re.sub(rb'"(?:[^"\\]|\\.)*"', b"", data, flags=re.DOTALL)
        brackets = brackets.translate(None, _NOT_BRACKETS)
    return _nesting_ok(brackets, limit)


def _outside_strings(data: bytes) -> bytes | None:
    """The brackets of ``data`` outside its JSON strings; None for an unclosed string."""
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
                return None
            before = end - 1
            while data[before] == 0x5C:  # a backslash: the quote is escaped if they are odd
                before -= 1
            if (end - 1 - before) % 2 == 0:
                break
            end += 1
        at = end + 1


def _no_constant(name: str) -> Any:
    raise Damaged(f"{name}, which rouse never writes")


def _bounded_float(text: str) -> float:
    value = float(text)
    if value != value or abs(value) > MAX_NUMBER:  # NaN, ±inf, 1e300
        raise Damaged(f"the number {text[:40]}, out of bounds")
    return value


class _Decoder:
    """What json's C scanner reads from a ``json.JSONDecoder``: json.loads with
    :func:`_bounded_float` and :func:`_no_constant`."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = staticmethod(_bounded_float)
    parse_int = int
    parse_constant = staticmethod(_no_constant)


_scan = _json.make_scanner(_Decoder()) if _json is not None else None  # type: ignore[arg-type]


def _fast(data: bytes) -> Any:
    """The UTF-8 JSON value in ``data`` (already within the depth), read by the C
    scanner; :class:`_Declined` for whatever json should decide."""
    if _scan is None:
        raise _Declined
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise _Declined from None
    start = len(text) - len(text.lstrip(_WHITESPACE))
    try:
        value, end = _scan(text, start)
    except Exception:  # StopIteration, json's own error, a bound, RecursionError
        raise _Declined from None
    if text[end:].strip(_WHITESPACE):
        raise _Declined
    return value


def decode(data: bytes, shape: Any = ANY, *, max_depth: int = MAX_DEPTH) -> Any:
    """The JSON value in ``data``, fitting ``shape``; else :class:`Damaged` saying why."""
    if not _depth_ok(data, max_depth):
        raise Damaged(f"nested deeper than {max_depth} levels (or unbalanced)")
    try:
        value = _fast(data)
    except _Declined:
        import json

        try:
            value = json.loads(data, parse_constant=_no_constant, parse_float=_bounded_float)
        except Damaged:
            raise
        except (ValueError, RecursionError) as exc:
            raise Damaged(f"not JSON ({str(exc)[:80]})") from None
    conform(value, shape)
    return value


def _unserializable(value: object) -> Any:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def dumps(data: Any) -> bytes:
    """``json.dumps(data, separators=(",", ":")).encode()``, by json's C encoder when
    there is one (so a hook writing its state loads no json)."""
    if _json is None or type(data) is str:
        import json

        return json.dumps(data, separators=(",", ":")).encode()
    encode = _json.make_encoder(
        {}, _unserializable, _json.encode_basestring_ascii, None, ":", ",", False, False, True
    )
    return "".join(encode(data, 0)).encode()
