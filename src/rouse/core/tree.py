"""One walk of the tree: records with parents, context, notes, and problems.

The walk stats every entry (never following a symlink) and reads headers
only; it never reads a body. A file whose header cannot be read is listed in
``untrackable`` and otherwise ignored.
"""

from __future__ import annotations

import operator
import os
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path, PurePosixPath

from rouse.core import layout
from rouse.core.errors import HeaderError, UsageError
from rouse.core.header import Header, read_header

# the files a walk finds (re-exported: ``from rouse.core.tree import Record`` is how
# the rest of rouse names them)
from rouse.core.treefiles import Context as Context
from rouse.core.treefiles import File as File
from rouse.core.treefiles import Note as Note
from rouse.core.treefiles import Problem as Problem
from rouse.core.treefiles import Record as Record

HeaderReader = Callable[[str, str, os.stat_result], Header]
#: A directory's (subdirectory names, .md file names, symlink names), sorted.
Listing = tuple[list[str], list[str], list[str]]
Lister = Callable[[str, str], Listing]
#: (path, rel, names) -> each name still there with its lstat (or what stands in for it)
StatNames = Callable[[str, str, list[str]], list[tuple[str, os.stat_result]]]
SKIP_NAMES = frozenset({layout.STATE_DIR, ".git"})
#: intentions/ and everything above it are never records (a top-level intention has no parent).
NEVER_RECORDS = frozenset(
    {layout.ENTRYPOINT, layout.BELIEFS, layout.MOTIVATIONS, layout.INTENTIONS}
)


class Tree:
    """Everything one walk found."""

    def __init__(self, root: Path):
        self.root = root
        self.records: dict[str, Record] = {}  # by dir
        self.context: list[Context] = []
        self.notes: list[Note] = []
        self.plugins: list[File] = []
        self.probes: File | None = None
        self.instructions: str | None = None
        self.untrackable: list[Problem] = []
        self.symlinks: list[str] = []
        self.strays: list[Problem] = []  # shape findings for check
        self.conflicts: list[Problem] = []  # two <type>.md in one dir

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


_by_name = operator.attrgetter("name")
RECORD_FILES = frozenset(f"{kind}.md" for kind in layout.RECORD_TYPES)
_NOTES_PREFIX = f"{layout.NOTES}/"


class _Walker:
    """Walks with plain strings: this runs at every session start, so no pathlib here."""

    def __init__(
        self, root: Path, read: HeaderReader, list_dir: Lister, stat_names: StatNames | None
    ):
        self.tree = Tree(root)
        self.read = read
        self.list_dir = list_dir
        self.stat_names = stat_names

    def load(self, path: str, rel: str, info: os.stat_result) -> Header | None:
        try:
            return self.read(path, rel, info)
        except HeaderError as exc:
            self.tree.untrackable.append(Problem(rel, exc.message, exc.line))
            return None

    def walk(self, path: str, rel: str, parent: str | None) -> None:
        try:
            dirs, names, links = self.list_dir(path, rel)
        except OSError as exc:
            self.tree.untrackable.append(Problem(rel or ".", f"cannot list: {exc.strerror}"))
            return
        prefix = f"{rel}/" if rel else ""
        if links:
            self.tree.symlinks.extend(layout.shown(prefix + name) for name in links)
        files: list[tuple[str, os.stat_result]] = []
        record_files: list[tuple[str, os.stat_result]] = []
        # every name printable ASCII and every directory's short? (at C speed)
        joined = "".join(dirs) + "".join(names)
        if not (joined.isascii() and joined.isprintable()) or (
            dirs and max(map(len, dirs)) > layout.MAX_NAME
        ):
            dirs, names = self.untrackable_names(rel, prefix, dirs, names)
        if self.stat_names is not None:
            for name, info in self.stat_names(path, rel, names):
                (record_files if name in RECORD_FILES else files).append((name, info))
        else:
            lstat = os.lstat
            for name in names:
                try:
                    info = lstat(f"{path}/{name}")
                except OSError:
                    continue  # gone since the listing: it will not be there next time either
                (record_files if name in RECORD_FILES else files).append((name, info))
        record_dir = False
        if (
            record_files
            and rel
            and rel not in NEVER_RECORDS
            and rel != layout.NOTES
            and not rel.startswith(_NOTES_PREFIX)
        ):
            parent = self.add_record(path, rel, record_files, parent)
            record_dir = True
        elif record_files:
            files = sorted(files + record_files)
        if files:
            owned = record_dir or parent is not None
            for name, info in files:
                self.add_file(path, rel, name, info, owned)
        walk = self.walk
        for name in dirs:
            walk(f"{path}/{name}", prefix + name, parent)

    def untrackable_names(
        self, rel: str, prefix: str, dirs: list[str], names: list[str]
    ) -> tuple[list[str], list[str]]:
        """Leave out (and report, escaped) the names that cannot be tracked (SPEC §1)."""
        kept: tuple[list[str], list[str]] = ([], [])
        for directory, group, into in ((True, dirs, kept[0]), (False, names, kept[1])):
            for name in group:
                why = layout.name_problem(name, directory)
                if why is None:
                    into.append(name)
                    continue
                self.tree.untrackable.append(Problem(layout.shown(prefix + name), why))
        return kept

    def add_record(
        self,
        path: str,
        rel: str,
        record_files: list[tuple[str, os.stat_result]],
        parent: str | None,
    ) -> str | None:
        if len(record_files) > 1:
            record_files.sort(key=lambda pair: layout.RECORD_TYPES.index(pair[0][:-3]))
            names = ", ".join(name for name, _ in record_files)
            self.tree.conflicts.append(
                Problem(rel, f"two record files in one directory ({names}); keep one")
            )
        name, info = record_files[0]
        file_rel = f"{rel}/{name}"
        try:  # self.load inlined: once per record
            header = self.read(f"{path}/{name}", file_rel, info)
        except HeaderError as exc:
            self.tree.untrackable.append(Problem(file_rel, exc.message, exc.line))
            return parent
        # positional: keyword calls cost more, and this runs once per record
        record = Record(file_rel, header, info.st_size, info.st_mtime_ns, name[:-3], rel)
        self.tree.records[rel] = record
        if parent is not None:
            record.parent = parent
            self.tree.records[parent].children.append(rel)
        return rel

    def add_file(
        self, path: str, where: str, name: str, info: os.stat_result, record_dir: bool
    ) -> None:
        rel = f"{where}/{name}" if where else name
        tree = self.tree
        if name != layout.PERSONA and (where == layout.NOTES or where.startswith(_NOTES_PREFIX)):
            # notes first (the most files here), as the branch below would take them
            header = self.load(f"{path}/{name}", rel, info)
            if header is not None:
                slug = where.rpartition("/")[2] if name == layout.NOTE_FILE else name[:-3]
                tree.notes.append(Note(rel, header, info.st_size, info.st_mtime_ns, slug))
            return

        def make(cls: type[File], **extra: str) -> File | None:
            header = self.load(f"{path}/{name}", rel, info)
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
        elif layout.is_inside(where, layout.NOTES):
            slug = where.rpartition("/")[2] if name == layout.NOTE_FILE else name[:-3]
            note = make(Note, slug=slug)
            if isinstance(note, Note):
                tree.notes.append(note)
        elif record_dir:
            return  # a record's own things: scripts, outputs, attachments
        elif layout.is_inside(where, layout.ENTRYPOINT):
            tree.strays.append(
                Problem(rel, "loose file: neither context nor a record; move it or delete it")
            )


def scan_dir(path: str, rel: str) -> Listing:
    """A directory's subdirectories, ``.md`` files and symlinks, by name, sorted.

    Answered from the listing alone (no stat): ``.rouse``, ``.git`` and, at
    the tree root, hidden entries are left out.
    """
    with os.scandir(path) as listing:
        entries = sorted(listing, key=_by_name)
    dirs: list[str] = []
    files: list[str] = []
    links: list[str] = []
    for entry in entries:
        name = entry.name
        if name in SKIP_NAMES or (not rel and name.startswith(".")):
            continue
        if entry.is_symlink():
            links.append(name)
        elif entry.is_dir(follow_symlinks=False):
            dirs.append(name)
        elif name.endswith(".md"):
            files.append(name)
    return dirs, files, links


def walk(
    root: Path,
    read: HeaderReader | None = None,
    list_dir: Lister | None = None,
    stat_names: StatNames | None = None,
) -> Tree:
    """Walk ``root`` once and build the Tree (header-only reads)."""
    walker = _Walker(root, read or read_header, list_dir or scan_dir, stat_names)
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
                    layout.shown(f"{directory}/{entry.name}"),
                    f"only {allowed}/ belongs in {directory}/: move this directory out",
                )
            )


class DisplayIds(Mapping[str, str]):
    """Record dir → id: ``type/slug``, or the path when the slug collides (computed on lookup)."""

    def __init__(self, tree: Tree):
        self.records = tree.records
        # (a record's slug is its directory's last part: read straight off the keys)
        self.counts = Counter(d.rpartition("/")[2] for d in tree.records)

    def __getitem__(self, directory: str) -> str:
        record = self.records[directory]
        return record.id if self.counts[record.slug] == 1 else record.dir

    def __iter__(self) -> Iterator[str]:
        return iter(self.records)

    def __len__(self) -> int:
        return len(self.records)


def display_ids(tree: Tree) -> DisplayIds:
    return DisplayIds(tree)
