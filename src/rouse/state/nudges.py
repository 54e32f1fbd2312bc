"""Nudge files: wakes delivered to the file sink, in ``.rouse/nudges/``.

The sweeper writes them; the pack opens with the ones whose wake the agent
has not answered (:func:`acted_since`). rouse's own writes (swept, nudges,
reviewed, fires, set, a re-armed due, fired, expired) never count as the
agent acting, and creating a record never answers its own wake.
"""

from __future__ import annotations

import os
from datetime import datetime, timedelta
from pathlib import Path

from rouse.core import body, header, layout, levels, statedir
from rouse.core.errors import HeaderError
from rouse.core.timefmt import parse_stamp
from rouse.core.tree import Record, Tree
from rouse.core.value import Value
from rouse.state import acts
from rouse.state import sweeper as sweepstate
from rouse.state.files import NUDGES_DIR

DIR = NUDGES_DIR
NAME_STAMP = "%Y%m%d-%H%M%S"
#: Statuses only the agent (or the task worker, for a task) writes when it ends a record.
AGENT_ENDINGS = frozenset({"done", "dropped", "abandoned", "cancelled", "failed", "promoted"})
MAX_NUDGE_BYTES = 64 * 1024
#: Wake reasons that are news, not a call to act: a task's checkpoint is progress for
#: whoever asked (its log, the pack's running line, a worker's ``--sink``); its nudge
#: file never stands as a wake (:func:`standing`), so no hook hands it to a session.
PROGRESS = frozenset({"checkpoint"})
#: The reason of a wake about a note whose probes read differently now
#: (:mod:`rouse.sweep.drifting`): it names a note, not a record.
DRIFTED = "drifted"


class Nudge(Value):
    __slots__ = ("path", "at", "record_dir", "title", "reason", "number", "says")
    _fields = __slots__

    def __init__(
        self,
        path: Path | None,
        at: datetime,
        record_dir: str,
        title: str,
        reason: str = "",
        number: int = 0,
    ):
        self.path = path  # the nudge file (None: a fired reminder found in the tree)
        self.at = at  # the wake's time (the tick's now), from the file name
        self.record_dir = record_dir  # the record path named by its ``at:`` line
        self.title = title  # the wake's first line (its ages as they were then)
        self.reason = reason  # stale, review, due, nag, expire (from the ledger)
        self.number = number  # the nudge number (from the ledger)
        #: a reminder's message as text lines (``body.message_block``), once a reader
        #: that shows it has filled it in
        self.says: list[str] = []

    @property
    def name(self) -> str:
        """The nudge file's name ('' for a fired reminder found in the tree)."""
        return self.path.name if self.path is not None else ""


def nudge_dir(root: Path) -> Path:
    return root / layout.STATE_DIR / DIR


def file_name(now: datetime, kind: str, slug: str, number: int = 1) -> str:
    """``<YYYYmmdd-HHMMSS>-<type>-<slug>[-N].md``: the one place the name is made."""
    suffix = "" if number <= 1 else f"-{number}"
    if kind not in layout.RECORD_TYPES:
        kind = "wake"
    if not layout.SLUG_RE.match(slug):  # bounded: never too long, never a path or a voice
        import hashlib

        digest = hashlib.sha256(slug.encode("utf-8", "surrogateescape")).hexdigest()[:12]
        slug = f"{layout.suggest_slug(slug)[:60]}-{digest}"
    return f"{now.strftime(NAME_STAMP)}-{kind}-{slug}{suffix}.md"


def read_nudges(root: Path) -> list[Nudge]:
    """Every undelivered-to-the-agent nudge file (not yet archived), oldest first."""
    found: list[Nudge] = []
    if statedir.path_problem(root, DIR, directory=True) is not None:
        return found  # behind a link: not state rouse wrote (check and the pack say so)
    try:
        entries = list(os.scandir(nudge_dir(root)))
    except OSError:
        return found
    for entry in entries:
        if not entry.name.endswith(".md") or not entry.is_file(follow_symlinks=False):
            continue
        try:
            at = datetime.strptime(entry.name[:15], NAME_STAMP)
            with open(entry.path, "rb") as handle:
                head = handle.read(MAX_NUDGE_BYTES).decode("utf-8", "replace")
        except (ValueError, OSError):
            continue
        lines = head.splitlines()
        record_dir = next((ln[4:].strip() for ln in lines[:4] if ln.startswith("at: ")), "")
        if lines and record_dir:
            found.append(Nudge(Path(entry.path), at, record_dir, lines[0]))
    found.sort(key=lambda n: (n.at, n.name))
    return found


def waiting(root: Path) -> bool:
    """Is there a nudge file not yet archived, or anything that is not one (what
    :func:`read_nudges` reads: no snapshot stands for the pack then)?"""
    try:
        with os.scandir(nudge_dir(root)) as entries:
            return any(True for _ in entries)
    except OSError:
        return statedir.path_problem(root, DIR, directory=True) is not None


def note_answered(tree: Tree, rel: str, at: datetime, done: acts.Acts) -> bool:
    """Is a wake made at ``at`` about the drift of the note ``rel`` answered? When
    the note is gone, was reviewed at or after the wake (``rouse review`` notes the act,
    to the second), or its file changed in a later second (rewritten). Nothing is
    stamped in a note for its wake."""
    note = next((n for n in tree.notes if n.rel == rel), None)
    if note is None:
        return True
    act = done.get(note.rel)
    if act is not None and act >= at.replace(microsecond=0):
        return True
    return note.mtime >= at + timedelta(seconds=1)


def acted_since(record: Record, when: datetime, done: acts.Acts, reason: str = "") -> bool:
    """Is the wake made at ``when`` for ``record`` answered (SPEC §5)?

    Answered when, after the wake: the record ended (or, an action, was
    judged); a one-shot reminder was re-armed to a later ``due``; a rouse verb
    acted on the record at or after the wake (``done``, from
    :func:`rouse.state.acts.load`: to the second); or a hand edit stamped
    ``last-moved`` in a later minute than the wake's. Stamps have minute
    resolution, so a ``last-moved`` in the wake's own minute (a record made
    in that minute, say) is not an answer: creation never answers its wake.
    ``reason`` is the wake's (``''``: not known): the re-arm answers only a
    one-shot reminder's own wake (``due``), not a given-up ``tell``, say.
    """
    status = levels.status_of(record)
    if status in AGENT_ENDINGS:
        return True
    if record.type == "action" and not levels.is_open(record) and levels.known_status(record):
        return True  # judged: a known outcome closes it for the clock
    # a one-shot's wake: a nag's next step, a repeating reminder's next occurrence
    # (``every:``) are rouse's own writes
    rearms_itself = levels.is_nagging(record) or levels.is_repeating(record)
    rearmable = reason in ("", "due") and not rearms_itself
    if record.type == "reminder" and status == "pending" and rearmable:
        due = stamp_of(record, "due")
        if due is not None and due > when:
            return True  # re-armed by the agent
    act = done.get(record.dir)
    if act is not None and act >= when.replace(microsecond=0):
        return True
    moved = stamp_of(record, "last-moved")
    return moved is not None and moved > when.replace(second=0, microsecond=0)


def stamp_of(record: Record, key: str) -> datetime | None:
    """The stamp in the record's field ``key``; None when absent or unreadable."""
    try:
        return parse_stamp(record.get(key) or "")
    except ValueError:
        return None


def fired_at(record: Record) -> datetime | None:
    """When a one-shot reminder at ``fired`` fired (its ``fired:``, else its mtime),
    or None for any other record: such a reminder waits for its answer."""
    if record.type != "reminder" or levels.is_nagging(record):
        return None
    if levels.status_of(record) != "fired":
        return None
    return stamp_of(record, "fired") or record.mtime.replace(microsecond=0)


def any_fired(tree: Tree) -> bool:
    """Is a one-shot reminder of ``tree`` at ``fired`` (:func:`fired_at`)?"""
    return any(fired_at(r) is not None for r in tree.records.values() if r.type == "reminder")


def rel_of(nudge: Nudge) -> str:
    """The nudge file's tree-relative path: what the ledger keeps as its receipt."""
    return f"{layout.STATE_DIR}/{DIR}/{nudge.name}"


def vouched(root: Path, found: list[Nudge]) -> tuple[list[Nudge], list[Nudge]]:
    """Split nudge files into those the ledger says rouse wrote (their record and
    title taken from the ledger, not the file) and the rest."""
    known = sweepstate.vouched_nudges(root, [rel_of(n) for n in found])
    kept: list[Nudge] = []
    strays: list[Nudge] = []
    for nudge in found:
        row = known.get(rel_of(nudge))
        if row is None:
            strays.append(nudge)
        else:
            kept.append(Nudge(nudge.path, nudge.at, *row))
    return kept, strays


def standing(tree: Tree, found: list[Nudge], done: acts.Acts) -> list[Nudge]:
    """Of ``found`` (oldest first), the latest nudge per record whose wake is not answered
    (news of :data:`PROGRESS` is no wake)."""
    latest: dict[str, Nudge] = {}
    for nudge in found:
        if nudge.reason not in PROGRESS:
            latest[nudge.record_dir] = nudge
    live = []
    for nudge in latest.values():
        if nudge.reason == DRIFTED:
            if not note_answered(tree, nudge.record_dir, nudge.at, done):
                live.append(nudge)
            continue
        record = tree.records.get(nudge.record_dir)
        if record is not None and not acted_since(record, nudge.at, done, nudge.reason):
            live.append(nudge)
    live.sort(key=lambda n: (n.at, n.record_dir))
    return live


def woken(
    root: Path, tree: Tree, secret: bytes | None = None, now: datetime | None = None
) -> list[Nudge]:
    """What woke the agent and is not answered yet, one entry per record, oldest first.

    The latest nudge file per record, of those the ledger vouches for (see
    :func:`vouched`); and every one-shot reminder at ``fired`` whose wake is
    not answered, with or without a nudge file (a webhook or a run delivered
    it, or its nudge file was archived): a fired reminder stays in front of
    the agent until it is set done, dropped or re-armed, or a verb acts on it.
    Such an entry has no ``path`` of a nudge file (``None``).
    """
    found = vouched(root, read_nudges(root))[0]
    fired = [
        (r, at)
        for r in tree.records.values()
        if r.type == "reminder" and (at := fired_at(r)) is not None  # (the type: thousands)
    ]
    if not found and not fired:
        return []
    done = acts.load(root, secret, now)  # (the stamp key's secret: acts.json is MACed)
    live = standing(tree, found, done)
    shown = {n.record_dir for n in live}
    for record, at in fired:
        if record.dir not in shown and not acted_since(record, at, done, "due"):
            live.append(Nudge(None, at, record.dir, "", "due", 1))
    live.sort(key=lambda n: (n.at, n.record_dir))
    return live


def message(root: Path, record: Record) -> tuple[list[str], int]:
    """A reminder's message (:func:`rouse.core.body.message_of`) read from its file;
    nothing for another record, or a file that cannot be read now."""
    if record.type != "reminder":
        return [], 0
    try:
        data = header.read_capped(root / record.rel, body.MAX_MESSAGE_BYTES)
        _, text = header.split(data, record.rel)
    except (OSError, HeaderError):
        return [], 0
    return body.message_of(text)
