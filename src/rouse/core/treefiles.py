"""What one walk of the tree finds: markdown files with their header and stat —
records (with their parent and children), context files, notes — and problems.

:mod:`rouse.core.tree` walks; these are the values it builds.
"""

from __future__ import annotations

from datetime import datetime

from rouse.core.header import Header
from rouse.core.value import Value

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class File(Value):
    """A markdown file the tree knows, with its header and stat."""

    __slots__ = ("rel", "header", "size", "mtime_ns")
    _fields: tuple[str, ...] = __slots__

    def __init__(self, rel: str, header: Header, size: int, mtime_ns: int):
        self.rel = rel  # tree-relative path of the .md file
        self.header = header
        self.size = size
        self.mtime_ns = mtime_ns

    @property
    def mtime(self) -> datetime:
        return datetime.fromtimestamp(self.mtime_ns / 1e9)

    def get(self, key: str) -> str | None:
        return self.header.fields.get(key)


class Record(File):
    __slots__ = ("type", "dir", "parent", "children", "open_memo", "plan")
    _fields = (*File._fields, "type", "dir", "parent", "children")

    def __init__(
        self,
        rel: str,
        header: Header,
        size: int,
        mtime_ns: int,
        type: str = "",
        dir: str = "",
    ):
        self.rel = rel  # (File.__init__ inlined: thousands of records per walk)
        self.header = header
        self.size = size
        self.mtime_ns = mtime_ns
        self.type = type
        self.dir = dir  # tree-relative record directory (the record's path)
        #: dir of the nearest enclosing trackable record (the walk sets it, and children)
        self.parent: str | None = None
        self.children: list[str] = []
        self.open_memo: bool | None = None  # the clock's is_open, once computed
        #: the clock's plan, when the walk cache vouches for it (rouse.cache.plans)
        self.plan: list[Any] | None = None

    @property
    def slug(self) -> str:
        return self.dir.rpartition("/")[2]

    @property
    def id(self) -> str:
        return f"{self.type}/{self.slug}"


class Context(File):
    __slots__ = ("kind", "slug")
    _fields = (*File._fields, *__slots__)

    def __init__(
        self, rel: str, header: Header, size: int, mtime_ns: int, kind: str = "", slug: str = ""
    ):
        File.__init__(self, rel, header, size, mtime_ns)
        self.kind = kind  # persona, belief, motivation
        self.slug = slug


class Note(File):
    __slots__ = ("slug",)
    _fields = (*File._fields, *__slots__)

    def __init__(self, rel: str, header: Header, size: int, mtime_ns: int, slug: str = ""):
        File.__init__(self, rel, header, size, mtime_ns)
        self.slug = slug


class Problem(Value):
    """A file rouse could not use, or a shape it does not expect."""

    __slots__ = ("path", "message", "line")
    _fields: tuple[str, ...] = __slots__

    def __init__(self, path: str, message: str, line: int | None = None):
        self.path = path
        self.message = message
        self.line = line

    def render(self) -> str:
        where = self.path if self.line is None else f"{self.path}:{self.line}"
        return f"{where}: {self.message}"
