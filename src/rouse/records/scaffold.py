"""Making things: ``init`` (the tree and its examples), ``new`` and ``remind``."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from rouse.core import layout
from rouse.core.clock import LEVELS
from rouse.core.errors import UsageError
from rouse.core.header import format_header
from rouse.core.store import Store
from rouse.core.timefmt import format_stamp, parse_interval, parse_when
from rouse.core.tree import walk
from rouse.trust import stamp as stamping
from rouse.trust.stampkey import StampKey

SKELETON = Path(__file__).parent / "skeleton"
EMPTY_DIRS = (layout.INTENTIONS, layout.PLUGINS, layout.NOTES, layout.REMINDERS, layout.BACKLOG)
AGENT_LINE = (
    "At the start of every session run `rouse pack` and treat its output as your memory; "
    "before writing memory, read {instructions}."
)
CONTEXT_TYPES = ("persona", "belief", "motivation")
NEW_TYPES = (*layout.RECORD_TYPES, *CONTEXT_TYPES, "note")
STAMP_KEYS = frozenset({"opened", "last-moved", "due", "expires", "updated", "cancel"})
INTERVAL_KEYS = frozenset({"stale-after", "review-every", "nag"})
#: Fields a new file of each type should have filled in before it is useful.
WANTED = {
    "intention": ("closes-when",),
    "goal": ("success-when",),
    "reminder": ("due",),
    "note": ("keywords",),
}


@dataclass
class Created:
    path: Path
    rel: str
    todo: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


# -- init ---------------------------------------------------------------------


def init(
    target: Path, now: datetime, *, examples: bool = True, stamp_key: StampKey | None = None
) -> Created:
    """Lay a new tree at ``target``: examples, .gitignore, and its own git repo.

    With a stamp key, the example files' ``origin: system`` is signed.
    """
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise UsageError(f"{target} already exists: refusing to lay a tree over it")
    target.mkdir(parents=True, exist_ok=True)
    stamp = format_stamp(now)
    for directory in EMPTY_DIRS:
        (target / directory).mkdir(parents=True, exist_ok=True)
    for source in sorted(SKELETON.rglob("*")):
        rel = source.relative_to(SKELETON).as_posix()
        if source.is_dir() or (not examples and rel != layout.INSTRUCTIONS):
            continue
        destination = target / rel
        destination.parent.mkdir(parents=True, exist_ok=True)
        destination.write_text(source.read_text("utf-8").replace("{{now}}", stamp), "utf-8")
    for directory in EMPTY_DIRS:
        path = target / directory
        if not any(path.iterdir()):
            (path / ".gitkeep").touch()
    (target / ".gitignore").write_text(f"{layout.STATE_DIR}/\n", "utf-8")
    result = Created(target, ".")
    if stamp_key is not None:
        result.notes.append(_sign_examples(target, stamp_key))
    result.notes.append(_git_init(target))
    return result


def _sign_examples(target: Path, key: StampKey) -> str:
    if key.secret is None:
        return f"the stamp key {key.path} {key.problem}: the example files are unsigned"
    laid = sorted(p.relative_to(target).as_posix() for p in target.rglob("*.md"))
    count = stamping.sign_laid_files(target, key, laid)
    return f"signed the origin of {count} example file(s) with the stamp key {key.path}"


def _git_init(target: Path) -> str:
    """Give the tree its own repository, unless it sits in one already or git is missing."""
    git = shutil.which("git")
    if git is None:
        return "git not found: the tree has no repository"
    inside = subprocess.run(
        [git, "rev-parse", "--is-inside-work-tree"],
        cwd=target.parent,
        capture_output=True,
        text=True,
        check=False,
    )
    if inside.returncode == 0 and inside.stdout.strip() == "true":
        return (
            "the tree sits inside an existing git work tree: no repository made, nothing committed"
        )
    identity = ["-c", "user.name=rouse", "-c", "user.email=rouse@localhost"]
    configured = subprocess.run(
        [git, "config", "user.email"], cwd=target, capture_output=True, check=False
    )
    steps = [
        [git, "init", "-q"],
        [git, "add", "-A"],
        [
            git,
            *([] if configured.returncode == 0 else identity),
            "commit",
            "-q",
            "-m",
            "rouse init",
        ],
    ]
    for step in steps:
        done = subprocess.run(step, cwd=target, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            return (
                f"git {step[-1]} failed ({done.stderr.strip()}): the tree is laid but not committed"
            )
    return "made the tree's own git repository (one commit)"


# -- new ----------------------------------------------------------------------


def parse_assignments(pairs: list[str], now: datetime) -> dict[str, str]:
    """``k=v`` strings from a user or model → fields; machine fields are refused."""
    fields: dict[str, str] = {}
    for pair in pairs:
        key, eq, value = pair.partition("=")
        key = key.strip().lower()
        if not eq or not layout.KEY_RE.match(key):
            raise UsageError(f"bad --set {pair!r}: use key=value with a key like closes-when")
        fields[key] = value.strip()
    return validate_fields(fields, now)


def validate_fields(fields: Mapping[str, str], now: datetime) -> dict[str, str]:
    """Refuse machine fields and multi-line values; normalise stamps and intervals."""
    clean: dict[str, str] = {}
    for key, value in fields.items():
        if key in layout.MACHINE_FIELDS:
            raise UsageError(f"'{key}' is a machine field: only rouse writes it")
        if "\n" in value or "\r" in value:
            raise UsageError(f"the value of '{key}' must be one line")
        try:
            if key in STAMP_KEYS and value:
                value = format_stamp(parse_when(value, now))
            elif key in INTERVAL_KEYS and value:
                parse_interval(value)
        except ValueError as exc:
            raise UsageError(f"bad value for '{key}': {exc}") from None
        clean[key] = value
    return clean


def _record_fields(kind: str, now: datetime) -> dict[str, str]:
    stamp = format_stamp(now)
    fields = {"status": LEVELS[kind].states[0], "opened": stamp}
    if kind != "backlog":  # a backlog item is never swept: it carries no clock
        fields["last-moved"] = stamp
    return fields


def new(
    root: Path,
    kind: str,
    slug: str | None,
    now: datetime,
    *,
    under: str | None = None,
    fields: Mapping[str, str] | None = None,
    body: str = "",
) -> Created:
    """Write a new record, context file or note with the right header."""
    if kind not in NEW_TYPES:
        raise UsageError(f"unknown type {kind!r}: use one of {', '.join(NEW_TYPES)}")
    given = validate_fields(fields or {}, now)
    header: dict[str, str]
    if kind == "persona":
        rel, header = layout.PERSONA, {}
    elif slug is None:
        raise UsageError(f"`rouse new {kind}` needs a slug, e.g. `rouse new {kind} my-{kind}`")
    else:
        layout.validate_slug(slug)
        rel, header = _placement(root, kind, slug, under, now)
    header.update(given)
    text = format_header(header) + (body if body.endswith("\n") or not body else body + "\n")
    store = Store(root)
    with store.lock():
        path = store.create(rel, text)
    todo = [key for key in WANTED.get(kind, ()) if not header.get(key)]
    return Created(path, rel, todo)


def _placement(
    root: Path, kind: str, slug: str, under: str | None, now: datetime
) -> tuple[str, dict[str, str]]:
    """Where a new file goes and the header it starts with."""
    if kind == "belief":
        return f"{layout.BELIEFS}/{layout.BELIEF_PREFIX}{slug}.md", {}
    if kind == "motivation":
        return f"{layout.MOTIVATIONS}/{layout.MOTIVATION_PREFIX}{slug}.md", {}
    if kind == "note":
        return f"{layout.NOTES}/{slug}.md", {"updated": format_stamp(now), "keywords": ""}
    if under is not None:
        parent = walk(root).resolve(under)
        if parent.type == "backlog":
            raise UsageError(f"{parent.dir} is a backlog item: nothing nests under backlog")
        home = parent.dir
    elif kind in layout.DEFAULT_HOME:
        home = layout.DEFAULT_HOME[kind]
    else:
        raise UsageError(f"a {kind} lives under a record: give --under REF (an intention or goal)")
    fields = _record_fields(kind, now)
    for key in WANTED.get(kind, ()):
        fields.setdefault(key, "")
    return f"{home}/{slug}/{kind}.md", fields


def remind(
    root: Path, slug: str, due: str, now: datetime, *, nag: str | None = None, body: str = ""
) -> Created:
    """Shorthand for a reminder: ``due`` is a stamp or ``+2h``."""
    fields = {"due": due}
    if nag:
        fields["nag"] = nag
    return new(root, "reminder", slug, now, fields=fields, body=body)
