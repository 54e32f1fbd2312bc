"""A tiny base for small slotted value classes on the start-up path.

The standard ``dataclasses`` module costs about 20 ms to import (it pulls in
``inspect`` and ``ast``) and about 1 ms per class it builds; ``rouse pack``
runs at every session start, so the classes it needs are written out by hand
and get equality and a readable repr from here.
"""

from __future__ import annotations


class Value:
    """Equality and repr by the fields named in ``_fields``."""

    __slots__ = ()
    _fields: tuple[str, ...] = ()
    __hash__ = None  # type: ignore[assignment]  # mutable values are not hashable

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name) for name in self._fields)

    def __repr__(self) -> str:
        inner = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._fields)
        return f"{type(self).__name__}({inner})"


class Frozen(Value):
    """A Value that cannot be changed after ``__init__`` (and so can be hashed)."""

    __slots__ = ()

    def __setattr__(self, name: str, value: object) -> None:
        if hasattr(self, name):
            raise AttributeError(f"{type(self).__name__} is frozen: cannot set {name!r}")
        object.__setattr__(self, name, value)

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(getattr(self, name) for name in self._fields))
