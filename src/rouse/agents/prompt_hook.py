"""The UserPromptSubmit hook: wakes that arrived while a session was open, at its next prompt.

The SessionStart hook gives a session its pack, woken records included. A
wake the sweeper delivers later (a nudge file in ``.rouse/nudges/``) would
wait for the next session; this hook hands it to the open one at its next
prompt instead. ``rouse pack --hook KIND`` is the command of both hooks: it
reads which event called it from the hook's input (``hook_event_name``).

Each session keeps a small seen-set in ``.rouse/sessions/<session id>.json``:
the nudge file names it has been shown (the SessionStart hook writes the ones
that existed when its pack was built). A prompt costs a directory listing and
one small JSON read when nothing is new, and prints nothing. When something
is new, only the nudge files the ledger vouches for, whose record the agent
has not acted on since, are shown — each once per session.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

from rouse.core import acts, layout, nudges, statedir, statefile, stateshapes
from rouse.core.tree import Tree

DIR = "sessions"
#: A session's seen-set not touched for this long is deleted (when another session starts).
KEEP_SECONDS = 30 * 24 * 3600
_PLAIN_ID = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}")
LIST_MOST = 20  # wakes listed by name in one prompt; the rest are counted
#: A nudge file younger than this that the ledger does not know yet is looked at again.
SETTLE_SECONDS = 60


def seen_file(root: Path, session_id: object) -> Path | None:
    """Where this session's seen-set lives, or None without a usable session id."""
    if not isinstance(session_id, str) or not session_id:
        return None
    name = session_id
    if not _PLAIN_ID.fullmatch(name):
        import hashlib  # ~3 ms, and only for an id that cannot be a file name as it is

        name = "h-" + hashlib.sha256(session_id.encode("utf-8", "replace")).hexdigest()[:32]
    return root / layout.STATE_DIR / DIR / f"{name}.json"


def nudge_names(root: Path) -> list[str]:
    """The names of the nudge files now in ``.rouse/nudges/`` (none behind a link)."""
    if statedir.path_problem(root, nudges.DIR, directory=True) is not None:
        return []
    try:
        with os.scandir(nudges.nudge_dir(root)) as entries:
            return [e.name for e in entries if e.name.endswith(".md") and not e.is_symlink()]
    except OSError:
        return []


def _load_seen(path: Path) -> set[str] | None:
    data = stateshapes.SEEN.read(path)
    if not isinstance(data, dict) or not isinstance(data.get("seen"), list):
        return None
    return {name for name in data["seen"] if isinstance(name, str)}


def _save_seen(path: Path, seen: set[str], present: list[str]) -> bool:
    """Keep only names still present (archived nudge files never come back)."""
    kept = sorted(seen.intersection(present))
    return statefile.save_json(path, {"seen": kept})


def _prune(folder: Path, now: float) -> None:
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
        with contextlib.suppress(OSError):
            os.unlink(path)


def mark_seen(root: Path, session_id: object, names: list[str]) -> None:
    """The SessionStart side: every nudge in ``names`` was in this session's pack."""
    path = seen_file(root, session_id)
    if path is None or statefile.through_link(path):
        return
    old = _load_seen(path)
    if old is None:
        _prune(path.parent, time.time())
    _save_seen(path, (old or set()) | set(names), names)


def new_wakes(root: Path, session_id: object) -> list[tuple[str, nudges.Nudge]]:
    """The wakes this session has not been shown, and mark them shown.

    Fast when nothing is new: a listing and the seen-set, no ledger, no walk.
    A session without a seen-set (its SessionStart hook did not run) is shown
    every wake still standing, once. Each comes with its record's short id.
    """
    return take_new(root, session_id)[0]


def take_new(root: Path, session_id: object) -> tuple[list[tuple[str, nudges.Nudge]], bool]:
    """:func:`new_wakes`, and whether a nudge file just written is not vouched for yet.

    The file sink links the nudge file into place a moment before the ledger
    records the delivery; a file that new (:data:`SETTLE_SECONDS`) that the
    ledger does not know yet is left unseen, to be looked at again. Taking is
    serialised per tree (a lock on the sessions folder), so the Stop hook's
    waiter and a prompt never both show one wake.
    """
    path = seen_file(root, session_id)
    if path is None:
        return [], False
    names = nudge_names(root)
    fresh = set(names) - (_load_seen(path) or set())
    if not fresh:
        return [], False
    with _taking(path.parent):
        seen = _load_seen(path)  # again, under the lock
        fresh = set(names) - (seen or set())
        candidates = _candidates(root, fresh)
        kept, strays = nudges.vouched(root, candidates)
        unsettled = _unsettled(strays)
        if not fresh - unsettled:
            return [], bool(unsettled)
        if not _save_seen(path, (seen or set()) | (fresh - unsettled), names):
            return [], False  # no place to remember what was shown (a link, a read-only
            # tree): show nothing rather than the same wakes at every prompt
    return _standing(root, kept), bool(unsettled)


def _unsettled(strays: list[nudges.Nudge]) -> set[str]:
    """Names of nudge files the ledger does not vouch for that were written just now."""
    now = time.time()
    found = set()
    for nudge in strays:
        if nudge.path is None:
            continue
        with contextlib.suppress(OSError):
            if now - nudge.path.stat(follow_symlinks=False).st_mtime < SETTLE_SECONDS:
                found.add(nudge.name)
    return found


@contextlib.contextmanager
def _taking(folder: Path) -> Iterator[None]:
    """An advisory lock on the sessions folder (best effort: none where it cannot be had)."""
    try:
        import fcntl

        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | os.O_NOFOLLOW)
    except (ImportError, OSError):
        yield
        return
    try:
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _candidates(root: Path, names: set[str]) -> list[nudges.Nudge]:
    """The new nudge files by name and time only: the ledger says the rest (never the file)."""
    found = []
    for name in names:
        with contextlib.suppress(ValueError):
            at = datetime.strptime(name[:15], nudges.NAME_STAMP)
            found.append(nudges.Nudge(nudges.nudge_dir(root) / name, at, "", ""))
    found.sort(key=lambda n: (n.at, n.name))
    return found


def _standing(root: Path, kept: list[nudges.Nudge]) -> list[tuple[str, nudges.Nudge]]:
    """Of these nudges (the ledger vouches for them), the ones whose record has not moved
    since."""
    if not kept:
        return []
    from rouse.core.cache import cached_walk
    from rouse.core.home import stamp_key_path
    from rouse.core.tree import display_ids
    from rouse.trust.stampkey import cache_secret

    tree = cached_walk(root, cache_secret(stamp_key_path()))  # the pack's cache, warm
    live = nudges.standing(tree, kept, acts.load(root))
    _fill_messages(root, tree, live)
    ids = display_ids(tree)
    return [(ids.get(n.record_dir, n.record_dir), n) for n in live]


def _fill_messages(root: Path, tree: Tree, live: list[nudges.Nudge]) -> None:
    """Each woken reminder's message, fenced when its origin is not to be trusted."""
    reminders = [n for n in live if tree.records[n.record_dir].type == "reminder"]
    if not reminders:
        return
    from rouse.core.body import message_block
    from rouse.core.home import stamp_key_path
    from rouse.trust.origins import origin_reader, quoted_origins

    origins = origin_reader(root, stamp_key_path())
    fenced = quoted_origins(origins)
    for nudge in reminders:
        record = tree.records[nudge.record_dir]
        shown, more = nudges.message(root, record)
        nudge.says = message_block(shown, more, record.rel, origins(record) in fenced)
    origins.flush()


def render(found: list[tuple[str, nudges.Nudge]], now: datetime, idle: bool = False) -> str:
    """What the prompt is given: the new wakes, and how to answer them (``idle``: what
    the Stop hook wakes an idle session with)."""
    from rouse.core.timefmt import human_age

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
    return "\n".join(lines) + "\n"


def prompt_output(kind: str, text: str) -> str:
    """Plain text for Claude Code, JSON for Codex and Gemini CLI (nothing when nothing is new)."""
    if not text:
        return ""
    if kind in ("codex", "gemini"):  # Gemini CLI's event is BeforeAgent
        event = "BeforeAgent" if kind == "gemini" else "UserPromptSubmit"
        payload = {"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}}
        return json.dumps(payload, ensure_ascii=False) + "\n"
    return text
