"""One record found by its reference, without walking the whole tree when its path is given.

A writer (``close``, ``move``, a task's claim) needs one record's file, not
the tree. A reference that is a path (``entrypoint/…/ship/notes``, or its
``task.md``) names the record's directory, so :func:`find` reads just that
directory's record file — after checking, directory by directory, that the
walk (:func:`rouse.core.tree.walk`) would reach it and find a record there:
each step listed by the walk's own lister (no symlink, no ``.rouse``, no
hidden top-level entry, no name the walk leaves out), the directory not one
that never holds records, the record file the one the walk would take, its
header readable. Anything else — a slug, ``type/slug``, a path the walk would
not reach — goes through the walk and :meth:`rouse.core.tree.Tree.resolve`,
so the answer, and every error, is the walk's.

A record found by path carries no ``parent`` or ``children`` (None, []): the
writers read only its own header.
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

from rouse.core import layout
from rouse.core.errors import HeaderError
from rouse.core.header import read_header
from rouse.core.tree import NEVER_RECORDS, Record, scan_dir, walk


def find(root: Path, ref: str) -> Record:
    """The record ``ref`` names (a slug, ``type/slug`` or tree-relative path), as
    ``walk(root).resolve(ref)`` would find it."""
    found = _by_path(root, ref)
    return found if found is not None else walk(root).resolve(ref)


def _by_path(root: Path, ref: str) -> Record | None:
    """The record at the path ``ref``, read on its own; None to ask the walk instead."""
    ref = ref.strip().rstrip("/")
    if "/" not in ref or not ref.isascii():  # (a non-ASCII name may be spelled two ways)
        return None
    pure = PurePosixPath(ref)
    if pure.is_absolute() or ".." in pure.parts or pure.as_posix() != ref:
        return None
    rel = pure.parent.as_posix() if layout.record_type_of(pure.name) else ref
    if rel in ("", ".") or rel in NEVER_RECORDS or layout.is_inside(rel, layout.NOTES):
        return None
    path, here = str(root), ""
    for part in rel.split("/"):
        if part == "." or layout.name_problem(part) is not None:
            return None
        try:
            dirs, _, _ = scan_dir(path, here)
        except OSError:
            return None
        if part not in dirs:  # (an exact name: a case-insensitive file system matches more)
            return None
        path, here = f"{path}/{part}", f"{here}/{part}" if here else part
    try:
        _, files, _ = scan_dir(path, here)
    except OSError:
        return None
    for kind in layout.RECORD_TYPES:  # the walk's order when a directory holds two
        name = f"{kind}.md"
        if name not in files:
            continue
        try:
            info = os.lstat(f"{path}/{name}")
        except OSError:
            continue  # gone since the listing, as the walk skips it
        try:
            header = read_header(f"{path}/{name}", f"{rel}/{name}")
        except (HeaderError, OSError):
            return None
        return Record(f"{rel}/{name}", header, info.st_size, info.st_mtime_ns, kind, rel)
    return None
