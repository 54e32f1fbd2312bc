"""What the read verbs last found, kept against the tree's state: a warm ``rouse pack``,
``rouse due`` or ``rouse status`` at the cost of one ``lstat`` per directory and per
file (issue 24; docs/pack.md "Speed", docs/hardening.md).

One *part* per verb in ``.rouse/cache/snapshot.json``, beside the paths the walk read
and a digest of their identities as the walk cache trusts them, valid from when it
was made until a plan turns (:func:`rouse.cache.plans.holds_until`). :func:`load`
takes a part only while every rule holds; anything else is a full walk. Derived and
disposable, like the walk cache.
"""

from __future__ import annotations

import json
import os
from datetime import datetime

from rouse.cache.walkfile import zone
from rouse.core import layout
from rouse.core.timefmt import micros
from rouse.state.files import Damaged, conform, read_signed, write_signed
from rouse.state.shapes import SNAPSHOT

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path
    from typing import Any

    from rouse.cache.plans import Survey
    from rouse.cache.walk import HeaderCache
    from rouse.core.tree import Tree

    #: (directories, files: each one ``\n``-joined string of paths, each from the
    #: tree's root and opening with ``/``; the directories that
    #: stand on their listing; the digest of the identities)
    Shape = tuple[str, str, dict[str, list[list[str]]], str]

VERSION = 9  # 6: texts fenced by origin; 7: real micros; 8: decisions, never text;
# 9: init's example task is not pending
MAGIC = b"rouse-snapshot"
_LABEL = b"rouse-snapshot-mac"
#: what reading a part that is not what the verb wrote can raise (then: walk in full)
DAMAGED = (TypeError, KeyError, ValueError, AttributeError, IndexError, OverflowError)


def path_of(root: Path) -> Path:
    return root / layout.STATE_DIR / SNAPSHOT.rel


def _digest(values: list[int]) -> str:
    # (_blake2 and _struct are hashlib's BLAKE2 and struct's packer, without the ~3 ms
    # of loading OpenSSL; the text form is for numbers past 64 bits)
    from _blake2 import blake2b
    from _struct import pack

    if not values or (min(values) >= -(2**63) and max(values) < 2**63):
        packed = pack(f"<{len(values)}q", *values)
    else:
        packed = ",".join(map(str, values)).encode()
    return blake2b(packed, digest_size=20).hexdigest()


def shape_of(dirs: dict[str, list[Any]], listed: dict[str, Any]) -> Shape | None:
    """The paths a snapshot depends on and their digest, from the state a walk cache
    just saved (``HeaderCache.dirs``) and the listings it made of directories too new
    for their mtime to be trusted (``listed``: the tree's root, just after ``.rouse/``
    was made in it, say): those stand on their listing instead. None when a directory
    has neither."""
    dir_paths: list[str] = []
    file_paths: list[str] = []
    values: list[int] = []
    kept: dict[str, list[list[str]]] = {}
    for rel, entry in dirs.items():
        mtime_ns = entry[0]
        if type(mtime_ns) is int:
            dir_paths.append(f"/{rel}")
            values.append(mtime_ns)
        elif rel in listed:
            kept[rel] = [list(names) for names in listed[rel]]
        else:
            return None
    for rel, entry in dirs.items():
        files = entry[4]
        if files:
            prefix = f"/{rel}/" if rel else "/"
            file_paths += [prefix + name for name in files]
            for known in files.values():
                values += known[:4]
    return "\n".join(dir_paths), "\n".join(file_paths), kept, _digest(values)


def _key(keyed: bool) -> str:
    from rouse import __version__

    return f"{VERSION}|{__version__}|{zone()}|{int(keyed)}"


def _read(root: Path, secret: bytes | None) -> tuple[dict[str, Any], _Lines] | None:
    """The saved snapshot's head, decoded, and its other lines as they are — the paths,
    then one line per part, in the order the head names them — (with a key, all of it
    verified); None if anything is off."""
    body = read_signed(path_of(root), SNAPSHOT.max_bytes, MAGIC, VERSION, secret, _LABEL)
    if body is None:
        return None
    ends = [*_newlines(body), len(body)]
    try:  # (parts are the verbs' to check as they read them: see load)
        state: dict[str, Any] = json.loads(body[: ends[0]], parse_constant=_no_constant)
        conform(state, SNAPSHOT.shape)
    except (ValueError, RecursionError, Damaged):
        return None
    names = state["parts"]
    if len(ends) != 2 + len(names) or len(set(names)) != len(names):
        return None
    return state, _Lines(body, ends)


def _newlines(body: bytes) -> Iterator[int]:
    """Where each line of ``body`` ends (a handful of lines, some of them megabytes)."""
    at = body.find(b"\n")
    while at >= 0:
        yield at
        at = body.find(b"\n", at + 1)


class _Lines:
    """The lines after the head, each cut out only when it is read (the paths and the
    due rows are megabytes on a large tree, and most verbs need neither)."""

    def __init__(self, body: bytes, ends: list[int]):
        self.body, self.ends = body, ends

    def __getitem__(self, index: int) -> bytes:
        return self.body[self.ends[index] + 1 : self.ends[index + 1]]

    def __len__(self) -> int:
        return len(self.ends) - 1


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name}, which rouse never writes")


def load(root: Path, secret: bytes | None, keyed: bool, now: datetime, part: str) -> Any:
    """The saved ``part``, if it holds at ``now`` for the tree as it is; else None.

    It holds when a sweeper watching the tree says nothing in it changed since the
    token the snapshot was made at, or else when a fresh ``lstat`` of every path gives
    the same digest (and a directory kept by its listing lists the same).

    The part is as the file holds it: a verb reads it as it wrote it, and anything it
    raises (:data:`DAMAGED`) while it does means the part is not what it wrote — it walks
    in full instead (without a stamp key anyone who can write the tree can write this
    file, and so do no more than by writing the tree)."""
    found = _read(root, secret)
    if found is None:
        return None
    state, lines = found
    if state["key"] != _key(keyed) or part not in state["parts"]:
        return None
    at = micros(now)
    until = state["until"]
    if at < state["made"] or (until is not None and at >= until):
        return None
    if not _listed_alike(root, state["listed"]):
        return None
    unchanged = _unchanged(root, state["token"], secret)
    if not unchanged and not _holds(root, lines[0], state["digest"]):
        return None
    try:
        return json.loads(lines[1 + state["parts"].index(part)], parse_constant=_no_constant)
    except (ValueError, RecursionError):
        return None


def _unchanged(root: Path, token: str | None, secret: bytes | None) -> bool:
    """Does a sweeper watching the tree vouch that nothing changed since ``token``?"""
    if token is None:
        return False
    from rouse.cache import fsmon

    answer = fsmon.ask(root, token, secret)
    return answer is not None and answer[1] == []


def _listed_alike(root: Path, listed: dict[str, list[list[str]]]) -> bool:
    """Do the directories kept by their listing list the same now?"""
    if not listed:
        return True
    from rouse.core.tree import scan_dir

    try:
        return all(
            [list(names) for names in scan_dir(f"{root}/{rel}", rel)] == listing
            for rel, listing in listed.items()
        )
    except OSError:
        return False


def still(root: Path, shape: Shape, token: str | None, secret: bytes | None) -> bool:
    """Is the tree still as it was when a walk made ``shape`` (:func:`shape_of`) at
    ``token``? The rule :func:`load` holds a snapshot to, for a process that keeps
    its own (the MCP server's recall): a directory kept by its listing lists the
    same, and a watching sweeper says nothing changed since ``token`` or a fresh
    ``lstat`` of every path gives the same digest."""
    dir_text, file_text, listed, digest = shape
    return _listed_alike(root, listed) and (
        _unchanged(root, token, secret) or _same(root, dir_text, file_text, digest)
    )


def _holds(root: Path, paths: bytes, digest: str) -> bool:
    """Do the snapshot's paths have the same identities now?"""
    try:
        kept = json.loads(paths)
        return _same(root, kept["dirs"], kept["files"], digest)
    except (ValueError, RecursionError, TypeError, KeyError):
        return False


def _same(root: Path, dir_text: str, file_text: str, digest: str) -> bool:
    """Do these paths (``\n``-joined, each opening with ``/``) have the identities
    that make ``digest`` now?"""
    base = str(root)
    lstat = os.lstat
    values: list[int] = []
    add = values.append
    extend = values.extend
    try:
        if dir_text:
            for rel in dir_text.split("\n"):
                add(lstat(base + rel).st_mtime_ns)
        if file_text:
            for rel in file_text.split("\n"):
                info = lstat(base + rel)
                extend((info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino))
    except (OSError, ValueError, RecursionError, TypeError, KeyError, AttributeError):
        return False
    return bool(_digest(values) == digest)


def save(
    walked: HeaderCache,
    keyed: bool,
    made: datetime,
    fits: tuple[Shape, datetime | None],
    parts: dict[str, Any],
) -> None:
    """Save ``parts`` as found at ``made`` by the walk ``walked`` (its root, its secret and
    the watching sweeper's token it was made at), which ``fits`` as :func:`keepable`
    says (best effort); the parts of a snapshot already there for the same tree and
    window are kept beside, but for a part named with a space (the pack for one
    ``--query``: the newest is kept, not every one asked)."""
    root, secret = walked.root, walked.secret
    (dir_text, file_text, listed, digest), until = fits
    state: dict[str, Any] = {
        "key": _key(keyed),
        "made": micros(made),
        "until": None if until is None else micros(until),
        "token": walked.token_next,
        "listed": listed,
        "digest": digest,
        "parts": list(parts),
    }
    dump = json.JSONEncoder(separators=(",", ":"), check_circular=False).encode
    paths = dump({"dirs": dir_text, "files": file_text}).encode()
    lines = [dump(value).encode() for value in parts.values()]
    old = _read(root, secret)
    if old is not None and old[1][0] == paths:
        kept, kept_lines = old
        if all(kept[k] == state[k] for k in ("key", "until", "listed", "digest")):
            # (a part for one query is not carried over: the file stays bounded)
            for index, name in enumerate(kept["parts"], 1):
                if name not in parts and " " not in name:
                    state["parts"].append(name)
                    lines.append(kept_lines[index])
    body = b"\n".join([dump(state).encode(), paths, *lines])
    write_signed(path_of(root), MAGIC, VERSION, secret, _LABEL, body)


def keepable(
    walked: HeaderCache, tree: Tree, surveyed: Survey
) -> tuple[Shape, datetime | None] | None:
    """What a snapshot of this walk (that has just walked ``tree``) and survey (of it, at
    its ``now``) would stand on: its shape and the end of its window; None when the
    walk cannot vouch for every entry (a file too new to trust, an untrackable one, a
    record the clock decides afresh)."""
    from rouse.cache.plans import holds_until

    if walked.unsettled or tree.untrackable or surveyed.evaluated:
        return None
    holds, until = holds_until(tree, surveyed.now)
    if not holds:
        return None
    shape = shape_of(walked.dirs, walked.racy_listings)
    return None if shape is None else (shape, until)
