"""The UserPromptSubmit hook: wakes delivered while a session was open, at its next prompt.

Each session keeps a seen-set in ``.rouse/sessions/<session id>.json``: the nudge file
names it has been shown (the SessionStart hook writes those its pack showed). Of the new
ones, only those the ledger vouches for, whose record the agent has not acted on since,
are shown, each once per session. A prompt with nothing new prints nothing and does not
even list the folder: the seen-set keeps the folder's stat (``"nudges": [mtime_ns,
ctime_ns, inode, device]``) from a listing every one of whose names it holds, taken
before that listing and only once the folder had settled (unchanged for the walk cache's
racy window, 2 s, so a file added in the same clock tick cannot hide). That path, and
the Stop hook's waiter, import nothing heavy (``str`` paths, state read through
:mod:`rouse.state.shapes`): tests/test_hook_quick.py pins what they load.
"""

from __future__ import annotations

import os
import stat
import time

from rouse.state.files import (
    NUDGES_DIR,
    RACY_NS,
    STATE_DIR,
    Damaged,
    dumps,
    read_bounded,
    save_bytes,
    suppress,
    through_link,
)
from rouse.state.shapes import SEEN

TYPE_CHECKING = False
if TYPE_CHECKING:
    from datetime import datetime
    from pathlib import Path
    from typing import Any

    from rouse.state import nudges

DIR = "sessions"
#: A session's seen-set not touched for this long is deleted (when another session starts).
KEEP_SECONDS = 30 * 24 * 3600
#: A session id usable as a file name as it is: [A-Za-z0-9_-][A-Za-z0-9._-]{0,127}
_PLAIN_FIRST = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
_PLAIN = _PLAIN_FIRST | {"."}
LIST_MOST = 20  # wakes listed by name in one prompt; the rest are counted
#: The most a hook waits for the sessions folder's lock (seconds); then it goes on without.
LOCK_WAIT = 1.0


def _plain(name: str) -> bool:
    return len(name) <= 128 and name[0] in _PLAIN_FIRST and all(c in _PLAIN for c in name)


def seen_file(root: str | Path, session_id: object) -> str | None:
    """Where this session's seen-set lives, or None without a usable session id."""
    if not isinstance(session_id, str) or not session_id:
        return None
    name = session_id
    if not _plain(name):
        import hashlib  # ~3 ms, and only for an id that cannot be a file name as it is

        name = "h-" + hashlib.sha256(session_id.encode("utf-8", "replace")).hexdigest()[:32]
    return os.path.join(root, STATE_DIR, DIR, f"{name}.json")


def listing(root: str | Path) -> tuple[list[str], list[int] | None]:
    """The nudge files' names, and the folder's stamp when it has settled (taken first)."""
    info = _nudge_dir_stat(os.fspath(root))
    if info is None:
        return [], None
    stamp = _stamp(info) if time.time_ns() - info.st_mtime_ns > RACY_NS else None
    return _nudge_names(os.fspath(root)), stamp


def usable_dir(path: str) -> os.stat_result | None:
    """The directory's lstat, or None where rouse.core.statedir finds a problem or nothing."""
    try:
        info = os.lstat(path)
    except OSError:
        return None
    return info if stat.S_ISDIR(info.st_mode) else None  # (a link is not a directory)


def _nudge_dir_stat(root: str) -> os.stat_result | None:
    """``.rouse/nudges``'s lstat; None when no nudge file is listed there: missing, or a
    link or something other than a directory on the way (statedir's rule)."""
    state = os.path.join(root, STATE_DIR)
    if usable_dir(state) is None:
        return None
    return usable_dir(os.path.join(state, NUDGES_DIR))


def _nudge_names(root: str) -> list[str]:
    """The names of the nudge files in ``.rouse/nudges/`` (never one behind a link)."""
    if _nudge_dir_stat(root) is None:
        return []
    try:
        with os.scandir(os.path.join(root, STATE_DIR, NUDGES_DIR)) as entries:
            return [e.name for e in entries if e.name.endswith(".md") and not e.is_symlink()]
    except OSError:
        return []


def _stamp(info: os.stat_result) -> list[int]:
    return [info.st_mtime_ns, info.st_ctime_ns, info.st_ino, info.st_dev]


def _read_seen(path: str) -> tuple[dict[str, Any] | None, bytes | None]:
    """The seen-set file (None: none, or refused) and its bytes (``stateshapes.SEEN``)."""
    try:
        raw = read_bounded(path, SEEN.max_bytes)
        return (None, None) if raw is None else (SEEN.decode(raw), raw)
    except Damaged:
        return None, None


def _load_seen(path: str) -> set[str] | None:
    data = _read_seen(path)[0]
    if not isinstance(data, dict) or not isinstance(data.get("seen"), list):
        return None
    return {name for name in data["seen"] if isinstance(name, str)}


def _save_seen(path: str, seen: set[str], present: list[str], stamp: list[int] | None) -> bool:
    """Keep only names still present (archived nudge files never come back); the
    folder's stamp only when every name it listed is kept."""
    kept = sorted(seen.intersection(present))
    if len(kept) != len(set(present)):
        stamp = None
    return save_bytes(path, _seen_bytes(kept, stamp))


def _seen_bytes(seen: list[str], stamp: list[int] | None) -> bytes:
    return dumps({"seen": seen} if stamp is None else {"seen": seen, "nudges": stamp})


def _prune(folder: str, now: float) -> None:
    """Delete seen-sets of sessions idle for :data:`KEEP_SECONDS` (best effort)."""
    try:
        with os.scandir(folder) as entries:
            old = [
                e.path
                for e in entries
                if e.name.endswith(".json")
                and e.is_file(follow_symlinks=False)
                and now - e.stat(follow_symlinks=False).st_mtime > KEEP_SECONDS
            ]
    except OSError:
        return
    for path in old:
        with suppress(OSError):
            os.unlink(path)


def mark_seen(
    root: str | Path, session_id: object, names: list[str], stamp: list[int] | None = None
) -> bool:
    """The SessionStart side: every nudge in ``names`` (listed when ``stamp`` was
    taken) was in this session's pack. False when the seen-set could not be kept."""
    path = seen_file(root, session_id)
    if path is None or through_link(path):
        return False
    with _Taking(os.path.dirname(path)):
        old = _load_seen(path)
        if old is None:
            _prune(os.path.dirname(path), time.time())
        return _save_seen(path, (old or set()) | set(names), names, stamp)


def unstarted(root: str | Path, session_id: object) -> bool:
    """Has this session no seen-set at all, so no SessionStart hook gave it a pack?
    (Gemini CLI runs none over ACP; a seen-set idle for :data:`KEEP_SECONDS` is gone
    too.) One ``lstat``; a session without an id is never unstarted."""
    path = seen_file(root, session_id)
    if path is None:
        return False
    try:
        os.lstat(path)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return False


def nothing_new(root: str | Path, session_id: object) -> bool:
    """Is there surely nothing :func:`take_new` would take? Fast, and light to import:
    the folder's stat against the seen-set's stamp, else a listing. False: ask it."""
    path = seen_file(root, session_id)
    if path is None:
        return True
    info = _nudge_dir_stat(os.fspath(root))
    if info is None:
        return True  # no folder to list, or one behind a link: nothing is listed
    data, raw = _read_seen(path)
    if data is None or raw is None:  # no seen-set
        return not _nudge_names(os.fspath(root))
    if data.get("nudges") == _stamp(info):
        return True  # the folder has not changed since a listing the seen-set covers
    if set(_nudge_names(os.fspath(root))).difference(data["seen"]):
        return False
    if time.time_ns() - info.st_mtime_ns > RACY_NS:
        _restamp(path, raw, data["seen"], _stamp(info))
    return True


def _restamp(path: str, raw: bytes, seen: list[str], stamp: list[int]) -> None:
    """Keep the seen-set, with the folder's new stamp, unless it was written meanwhile."""
    with _Taking(os.path.dirname(path)) as taking:
        if taking.busy():
            return  # (only a shortcut for the next prompt: it is restamped then)
        try:
            if read_bounded(path, SEEN.max_bytes) != raw:
                return
        except Damaged:
            return
        save_bytes(path, _seen_bytes(seen, stamp))


def take_new(root: str | Path, session_id: object) -> tuple[list[tuple[str, nudges.Nudge]], bool]:
    """The wakes this session has not been shown, each with its record's short id, marked
    shown; and whether a nudge file just written is not vouched for yet.

    Fast when nothing is new: a listing and the seen-set, no ledger, no walk.
    A session without a seen-set (its SessionStart hook did not run) is shown
    every wake still standing, once.

    The file sink links the nudge file into place a moment before the ledger
    records the delivery; a file that new that the ledger does not know yet
    (:data:`~rouse.agents.prompt_wakes.SETTLE_SECONDS`) is left unseen, to be looked
    at again (:mod:`rouse.agents.prompt_wakes` says which new wakes stand). Taking is
    serialised per tree (a lock on the sessions folder), so the Stop hook's waiter and
    a prompt never both show one wake; :class:`Busy` when another
    process holds that lock past :data:`LOCK_WAIT` (nothing is taken).
    """
    path = seen_file(root, session_id)
    if path is None:
        return [], False
    names, stamp = listing(root)
    fresh = set(names) - (_load_seen(path) or set())
    if not fresh:
        return [], False
    from pathlib import Path

    from rouse.agents.prompt_wakes import candidates, standing, unsettled_names
    from rouse.state import nudges

    tree = Path(root)
    with _Taking(os.path.dirname(path)) as taking:
        if taking.busy():  # showing them unlocked could show a wake twice: they wait
            raise Busy(
                f"another process holds the lock on {os.path.dirname(path)} (over "
                f"{LOCK_WAIT:g}s): the new wakes wait for the next prompt"
            )
        seen = _load_seen(path)  # again, under the lock
        fresh = set(names) - (seen or set())
        kept, strays = nudges.vouched(tree, candidates(tree, fresh))
        unsettled = unsettled_names(strays)
        if not fresh - unsettled:
            return [], bool(unsettled)
        if not _save_seen(path, (seen or set()) | (fresh - unsettled), names, stamp):
            return [], False  # no place to remember what was shown (a link, a read-only
            # tree): show nothing rather than the same wakes at every prompt
    return standing(tree, kept), bool(unsettled)


class Busy(Exception):
    """The sessions folder's lock stayed taken past :data:`LOCK_WAIT`: nothing taken."""


class _Taking:
    """An advisory lock on the sessions folder, waited for :data:`LOCK_WAIT` at most
    (best effort: none where it cannot be had). ``held`` says whether it was had: a
    hook never waits longer on another process (a stuck one, say)."""

    def __init__(self, folder: str) -> None:
        self.folder = folder
        self.fd: int | None = None
        self.held = False

    def __enter__(self) -> _Taking:
        try:
            import fcntl

            self.fd = os.open(
                self.folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | os.O_NOFOLLOW
            )
        except (ImportError, OSError):
            return self
        end = time.monotonic() + LOCK_WAIT
        while True:
            try:
                fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if time.monotonic() >= end:
                    return self
                time.sleep(0.01)
                continue
            except OSError:  # no locks here (some network file systems)
                return self
            self.held = True
            return self

    def __exit__(self, *exc: object) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def busy(self) -> bool:
        """Whether another process holds the lock (not had, though it could be)."""
        return self.fd is not None and not self.held


def render(found: list[tuple[str, nudges.Nudge]], now: datetime, idle: bool = False) -> str:
    """What the prompt is given: the new wakes, and how to answer them (``idle``: what
    the Stop hook wakes an idle session with)."""
    from rouse.core import layout
    from rouse.core.timefmt import human_age
    from rouse.state import nudges

    since = "while the session was idle" if idle else "since your last prompt"
    lines = [f"rouse: {len(found)} record(s) woke you {since}"]
    for record, nudge in found[:LIST_MOST]:
        lines.append(
            f"  {record} — woke you {human_age(nudge.at, now)} "
            f"({nudge.reason}, nudge {nudge.number})"
        )
        lines += nudge.says
        lines.append(f"    at: {nudge.record_dir}")
        lines.append(f"    the wake: {nudges.rel_of(nudge)}")
    if len(found) > LIST_MOST:
        lines.append(f"  … and {len(found) - LIST_MOST} more — run `rouse pack`")
    lines.append(
        "Act on each now (then `rouse move` or `rouse close` its record), or say why not."
        if idle
        else "Act on each (then `rouse move` or `rouse close` its record), or say why not; "
        "no need to answer them before the user's request."
    )
    return layout.shown("\n".join(lines) + "\n", lines=True)
