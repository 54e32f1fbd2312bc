"""One walk of the tree: records with parents, context, notes, and problems.

The walk stats every entry (never following a symlink) and reads headers
only; it never reads a body. A file whose header cannot be read is listed in
``untrackable`` and otherwise ignored.
"""

from __future__ import annotations

import operator
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path, PurePosixPath

from rouse import layout
from rouse.errors import HeaderError, UsageError
from rouse.header import Header, read_header

HeaderReader = Callable[[str, str, os.stat_result], Header]
SKIP_NAMES = frozenset({layout.STATE_DIR, ".git"})
#: intentions/ and everything above it are never records (a top-level intention has no parent).
NEVER_RECORDS = frozenset(
    {layout.ENTRYPOINT, layout.BELIEFS, layout.MOTIVATIONS, layout.INTENTIONS}
)


@dataclass(slots=True)
class File:
    """A markdown file the tree knows, with its header and stat."""

    rel: str  # tree-relative path of the .md file
    header: Header
    size: int
    mtime_ns: int

    @property
    def mtime(self) -> datetime:
        return datetime.fromtimestamp(self.mtime_ns / 1e9)

    def get(self, key: str) -> str | None:
        return self.header.fields.get(key)


@dataclass(slots=True)
class Record(File):
    type: str = ""
    dir: str = ""  # tree-relative record directory (the record's path)
    parent: str | None = None  # dir of the nearest enclosing trackable record
    children: list[str] = field(default_factory=list)

    @property
    def slug(self) -> str:
        return self.dir.rpartition("/")[2]

    @property
    def id(self) -> str:
        return f"{self.type}/{self.slug}"


@dataclass(slots=True)
class Context(File):
    kind: str = ""  # persona, belief, motivation
    slug: str = ""


@dataclass(slots=True)
class Note(File):
    slug: str = ""


@dataclass
class Problem:
    """A file rouse could not use, or a shape it does not expect."""

    path: str
    message: str
    line: int | None = None

    def render(self) -> str:
        where = self.path if self.line is None else f"{self.path}:{self.line}"
        return f"{where}: {self.message}"


@dataclass
class Tree:
    root: Path
    records: dict[str, Record] = field(default_factory=dict)  # by dir
    context: list[Context] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)
    plugins: list[File] = field(default_factory=list)
    probes: File | None = None
    instructions: str | None = None
    untrackable: list[Problem] = field(default_factory=list)
    symlinks: list[str] = field(default_factory=list)
    strays: list[Problem] = field(default_factory=list)  # shape findings for check
    conflicts: list[Problem] = field(default_factory=list)  # two <type>.md in one dir

    # -- navigation ---------------------------------------------------------

    def roots(self) -> list[Record]:
        return [r for r in self.records.values() if r.parent is None]

    def descendants(self, record: Record) -> Iterator[Record]:
        stack = list(reversed(record.children))
        while stack:
            child = self.records[stack.pop()]
            yield child
            stack.extend(reversed(child.children))

    def by_slug(self, slug: str) -> list[Record]:
        return [r for r in self.records.values() if r.slug == slug]

    def resolve(self, ref: str) -> Record:
        """A record by slug, id (``type/slug``) or tree-relative path."""
        ref = ref.strip().rstrip("/")
        pure = PurePosixPath(ref)
        if not ref or pure.is_absolute() or ".." in pure.parts:
            raise UsageError(f"bad reference {ref!r}: give a slug or a path inside the tree")
        if "/" not in ref:
            layout.validate_slug(ref)
            matches = self.by_slug(ref)
        else:
            path = pure.parent.as_posix() if layout.record_type_of(pure.name) else ref
            matches = [self.records[path]] if path in self.records else []
            if not matches and len(pure.parts) == 2 and pure.parts[0] in layout.RECORD_TYPES:
                matches = [r for r in self.by_slug(pure.parts[1]) if r.type == pure.parts[0]]
        if not matches:
            raise UsageError(f"no record {ref!r} in {self.root} (see `rouse tree`)")
        if len(matches) > 1:
            paths = ", ".join(sorted(m.dir for m in matches))
            raise UsageError(f"ambiguous {ref!r}: it names {paths}; give the path instead")
        return matches[0]


def _plain_reader(path: str, rel: str, info: os.stat_result) -> Header:
    return read_header(path, rel)


_by_name = operator.attrgetter("name")


def _inside(rel: str, ancestor: str) -> bool:
    return rel == ancestor or rel.startswith(ancestor + "/")


class _Walker:
    """Walks with plain strings: this runs at every session start, so no pathlib here."""

    def __init__(self, root: Path, read: HeaderReader):
        self.tree = Tree(root)
        self.read = read

    def load(self, path: str, rel: str, info: os.stat_result) -> Header | None:
        try:
            return self.read(path, rel, info)
        except HeaderError as exc:
            self.tree.untrackable.append(Problem(rel, exc.message, exc.line))
            return None

    def walk(self, path: str, rel: str, parent: str | None) -> None:
        try:
            with os.scandir(path) as listing:
                entries = sorted(listing, key=_by_name)
        except OSError as exc:
            self.tree.untrackable.append(Problem(rel or ".", f"cannot list: {exc.strerror}"))
            return
        files: list[tuple[os.DirEntry[str], os.stat_result]] = []
        dirs: list[os.DirEntry[str]] = []
        record_files: list[tuple[os.DirEntry[str], os.stat_result]] = []
        prefix = f"{rel}/" if rel else ""
        for entry in entries:
            name = entry.name
            if name in SKIP_NAMES or (not rel and name.startswith(".")):
                continue
            # is_symlink/is_dir answer from the directory listing: only files are stat'ed
            if entry.is_symlink():
                self.tree.symlinks.append(prefix + name)
            elif entry.is_dir(follow_symlinks=False):
                dirs.append(entry)
            elif name.endswith(".md"):
                info = entry.stat(follow_symlinks=False)
                if name[:-3] in layout.RECORD_TYPES:
                    record_files.append((entry, info))
                else:
                    files.append((entry, info))
        record_dir = False
        if record_files and rel and rel not in NEVER_RECORDS and not _inside(rel, layout.NOTES):
            parent = self.add_record(rel, record_files, parent)
            record_dir = True
        else:
            files = sorted(files + record_files, key=lambda pair: pair[0].name)
        for entry, info in files:
            self.add_file(rel, entry, info, record_dir or parent is not None)
        for entry in dirs:
            self.walk(entry.path, prefix + entry.name, parent)

    def add_record(
        self,
        rel: str,
        record_files: list[tuple[os.DirEntry[str], os.stat_result]],
        parent: str | None,
    ) -> str | None:
        record_files.sort(key=lambda pair: layout.RECORD_TYPES.index(pair[0].name[:-3]))
        if len(record_files) > 1:
            names = ", ".join(e.name for e, _ in record_files)
            self.tree.conflicts.append(
                Problem(rel, f"two record files in one directory ({names}); keep one")
            )
        entry, info = record_files[0]
        file_rel = f"{rel}/{entry.name}"
        header = self.load(entry.path, file_rel, info)
        if header is None:
            return parent
        record = Record(
            rel=file_rel,
            header=header,
            size=info.st_size,
            mtime_ns=info.st_mtime_ns,
            type=entry.name[:-3],
            dir=rel,
            parent=parent,
        )
        self.tree.records[rel] = record
        if parent is not None:
            self.tree.records[parent].children.append(rel)
        return rel

    def add_file(
        self, where: str, entry: os.DirEntry[str], info: os.stat_result, record_dir: bool
    ) -> None:
        name = entry.name
        rel = f"{where}/{name}" if where else name
        tree = self.tree

        def make(cls: type[File], **extra: str) -> File | None:
            header = self.load(entry.path, rel, info)
            if header is None:
                return None
            return cls(
                rel=rel, header=header, size=info.st_size, mtime_ns=info.st_mtime_ns, **extra
            )

        if where == "" and name == layout.PERSONA:
            ctx = make(Context, kind="persona", slug="persona")
            if isinstance(ctx, Context):
                tree.context.append(ctx)
        elif name == layout.PERSONA:
            tree.strays.append(Problem(rel, "persona.md belongs at the tree root; move it there"))
        elif rel == layout.INSTRUCTIONS:
            tree.instructions = rel
        elif where in (layout.BELIEFS, layout.MOTIVATIONS):
            kind = "belief" if where == layout.BELIEFS else "motivation"
            prefix = f"{kind}-"
            slug = name[len(prefix) : -3]
            if name.startswith(prefix) and layout.SLUG_RE.match(slug):
                ctx = make(Context, kind=kind, slug=slug)
                if isinstance(ctx, Context):
                    tree.context.append(ctx)
            else:
                tree.strays.append(
                    Problem(rel, f"not a {kind} file: name it {prefix}<slug>.md or move it out")
                )
        elif where == layout.PLUGINS:
            plugin = make(File)
            if plugin is not None:
                tree.plugins.append(plugin)
        elif rel == layout.PROBES:
            tree.probes = make(File)
        elif _inside(where, layout.NOTES):
            slug = where.rpartition("/")[2] if name == layout.NOTE_FILE else name[:-3]
            note = make(Note, slug=slug)
            if isinstance(note, Note):
                tree.notes.append(note)
        elif record_dir:
            return  # a record's own things: scripts, outputs, attachments
        elif _inside(where, layout.ENTRYPOINT):
            tree.strays.append(
                Problem(rel, "loose file: neither context nor a record; move it or delete it")
            )


def walk(root: Path, read: HeaderReader | None = None) -> Tree:
    """Walk ``root`` once and build the Tree (header-only reads)."""
    walker = _Walker(root, read or _plain_reader)
    walker.walk(str(root), "", None)
    tree = walker.tree
    for directory in (layout.BELIEFS, layout.MOTIVATIONS):
        _check_layer(tree, directory)
    return tree


def _check_layer(tree: Tree, directory: str) -> None:
    """Exactly one directory is legal inside beliefs/ and motivations/: the next layer."""
    allowed = "motivations" if directory == layout.BELIEFS else "intentions"
    path = tree.root / directory
    try:
        entries = list(os.scandir(path))
    except OSError:
        return
    for entry in entries:
        if entry.is_dir(follow_symlinks=False) and entry.name != allowed:
            tree.strays.append(
                Problem(
                    f"{directory}/{entry.name}",
                    f"only {allowed}/ belongs in {directory}/: move this directory out",
                )
            )
