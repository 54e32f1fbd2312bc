"""Making things: ``init`` (the tree and its examples), ``new`` and ``remind``.

The fields they are given are checked in :mod:`rouse.records.inputs`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from rouse.core import layout
from rouse.core.errors import UsageError
from rouse.core.home import is_tree
from rouse.core.identity import ensure_tree_id
from rouse.core.levels import LEVELS
from rouse.core.recurrence import next_after, parse_every
from rouse.core.store import LEFTOVER_IGNORE
from rouse.core.timefmt import format_stamp
from rouse.core.tree import Record, Tree, walk
from rouse.records.inputs import check_body, readable_header, validate_fields
from rouse.records.repository import own_repository
from rouse.trust import stamp as stamping
from rouse.trust.stamp import SigningStore
from rouse.trust.stampkey import StampKey, init_key, load_key

SKELETON = Path(__file__).parent / "skeleton"
EMPTY_DIRS = (layout.INTENTIONS, layout.PLUGINS, layout.NOTES, layout.REMINDERS, layout.BACKLOG)
AGENT_LINE = (
    "At the start of every session run `rouse pack` and treat its output as your memory; "
    "before writing memory, read {instructions}."
)
CONTEXT_TYPES = ("persona", "belief", "motivation")
NEW_TYPES = (*layout.RECORD_TYPES, *CONTEXT_TYPES, "note")
#: Fields a new file of each type should have filled in before it is useful.
WANTED = {
    "intention": ("closes-when",),
    "goal": ("success-when",),
    "reminder": ("due",),
    "note": ("keywords",),
}
#: The ladder: the types of record each type may nest under (``--under``).
#: Nothing nests under a reminder or a backlog item, and a backlog item nests
#: under nothing (``promote --under`` gives it a parent as it becomes an intention).
PARENTS: dict[str, tuple[str, ...]] = {
    "intention": ("intention",),
    "goal": ("intention", "goal"),
    "action": ("intention", "goal", "action"),
    "task": ("intention", "goal", "action", "task"),
    "reminder": ("intention", "goal", "action", "task"),
    "backlog": (),
}
#: Where a file that never nests lives (``--under`` is refused for it).
FLAT_HOMES = {
    "persona": "at the tree's root (persona.md)",
    "belief": f"in {layout.BELIEFS}/",
    "motivation": f"in {layout.MOTIVATIONS}/",
    "note": f"in {layout.NOTES}/ (group notes in folders there by hand)",
}
#: What ``new persona`` writes when no body is given: header comments (never packed)
#: say what the file is for; the body is a usable persona to keep or rewrite.
PERSONA_COMMENTS = (
    "# persona.md: how the agent talks and works. Its body opens every pack,",
    "# before the beliefs. Keep it to a few lines of voice and manner: facts go",
    "# in beliefs, work in intentions. Edit the body below; delete the file for none.",
)
PERSONA_BODY = """\
I speak plainly and briefly: the answer first, the reasoning after if it helps.
I say what I do not know and how I would find out, rather than guess.
I ask before anything that cannot be undone, and say what I changed when I am done.
"""


def article(noun: str) -> str:
    """``an intention``, ``a goal``, ``a backlog item``: a type named in a sentence."""
    noun = "backlog item" if noun == "backlog" else noun
    return f"an {noun}" if noun[:1] in "aeiou" else f"a {noun}"


def either(nouns: Sequence[str]) -> str:
    """``an intention, a goal or an action``."""
    named = [article(noun) for noun in nouns]
    return named[0] if len(named) == 1 else f"{', '.join(named[:-1])} or {named[-1]}"


@dataclass
class Created:
    path: Path
    rel: str  # the file written, tree-relative
    todo: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # lines for the user (stdout)
    warnings: list[str] = field(default_factory=list)  # written, but say this (stderr)
    kind: str = ""
    record: str | None = None  # the record's id (type/slug); None for other files
    dir: str = ""  # the record's path (its directory); the file for other files
    fields: dict[str, str] = field(default_factory=dict)  # the header as written


# -- init ---------------------------------------------------------------------


def init(
    target: Path,
    now: datetime,
    *,
    examples: bool = True,
    stamp_key: StampKey | None = None,
    new_key: Path | None = None,
) -> Created:
    """Lay a new tree at ``target``: examples, .gitignore, and its own git repo.

    With a stamp key, the example files' ``origin: system`` is signed. With none
    and ``new_key``, the key is made there first (outside the tree: refused inside),
    so the tree has provenance from its first file.
    """
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        if target.is_dir() and not is_tree(target):
            raise UsageError(
                f"{target} already exists and is not a rouse tree (no entrypoint/rouse.md): "
                "refusing to write into it — give `rouse init` another DIR"
            )
        raise UsageError(f"{target} already exists: refusing to lay a tree over it")
    made = None
    if stamp_key is None and new_key is not None:
        made = init_key(new_key, [target])  # refused inside the tree, before anything is laid
        stamp_key = load_key(made)
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
    # rouse's state, and a writer's copy left by a writer killed mid-write
    ignored = f"{layout.STATE_DIR}/\n{LEFTOVER_IGNORE}\n"
    (target / ".gitignore").write_text(ignored, "utf-8")
    ensure_tree_id(target)  # committed with the tree, so its clones are one tree
    result = Created(target, ".")
    if made is not None:
        result.notes.append(
            f"made a stamp key at {made} (mode 600): what rouse writes is signed with who "
            "wrote it — keep the key out of the agent's reach (docs/provenance.md)"
        )
    if stamp_key is not None and examples:  # nothing to sign without the examples
        result.notes.append(_sign_examples(target, stamp_key))
    result.notes.append(own_repository(target))
    return result


def _sign_examples(target: Path, key: StampKey) -> str:
    if key.secret is None:
        return f"the stamp key {key.path} {key.problem}: the example files are unsigned"
    laid = sorted(p.relative_to(target).as_posix() for p in target.rglob("*.md"))
    count = stamping.sign_laid_files(target, key, laid)
    return f"signed the origin of {count} example file(s) with the stamp key {key.path}"


# -- new ----------------------------------------------------------------------


def new(
    root: Path,
    kind: str,
    slug: str | None,
    now: datetime,
    *,
    under: str | None = None,
    fields: Mapping[str, str] | None = None,
    body: str = "",
    origin: str | None = None,
) -> Created:
    """Write a new record, context file or note with the right header.

    ``origin``: who is speaking (:mod:`rouse.trust.speaker`); with a stamp key the
    file is signed with it. None writes no origin (a library caller that has no speaker).

    Refused, with nothing written: an unknown type or field key, a reminder
    without a ``due``, ``under`` on a file that does not nest or a parent the
    ladder does not allow (:data:`PARENTS`). A record whose slug another record
    has is written, with a warning saying how to refer to each.
    """
    if kind not in NEW_TYPES:
        raise UsageError(f"unknown type {kind!r}: use one of {', '.join(NEW_TYPES)}")
    if under is not None and kind in FLAT_HOMES:
        raise UsageError(
            f"--under is for records: {article(kind)} does not nest, it lives {FLAT_HOMES[kind]}"
        )
    given = validate_fields(fields or {}, now)
    if given.get("supersedes") and kind not in ("note", *layout.CONTEXT_TYPES):
        raise UsageError(
            f"only a note or a context file supersedes another: {article(kind)} cannot"
        )
    if kind == "reminder" and not given.get("due"):
        raise UsageError(
            "a reminder needs a due: `rouse remind SLUG --due WHEN`, or `--set due=WHEN` "
            "(WHEN is 'YYYY-MM-DD HH:MM' or +INTERVAL, e.g. +2h)"
        )
    check_body(body)
    start: dict[str, str]
    warnings: list[str] = []
    record: str | None = None
    if kind == "persona":
        rel, start = layout.PERSONA, {}
    elif slug is None:
        raise UsageError(f"`rouse new {kind}` needs a slug, e.g. `rouse new {kind} my-{kind}`")
    else:
        layout.validate_slug(slug)
        rel, start, warnings = _placement(root, kind, slug, under, now)
        if kind in layout.RECORD_TYPES:
            record = f"{kind}/{slug}"
    start.update(given)
    text, notes = _first_text(root, kind, rel, start, body)
    store = SigningStore(root, origin=origin)
    with store.lock():
        path = store.create(rel, text)
    todo = [key for key in WANTED.get(kind, ()) if not start.get(key)]
    if kind == "reminder" and not body.strip():
        # its body is what the wake delivers: without one it says nothing
        todo.append("the message (the body: what to tell the human)")
    where = rel.rpartition("/")[0] if record is not None else rel
    return Created(path, rel, todo, notes, warnings, kind, record, where, start)


def _first_text(
    root: Path, kind: str, rel: str, start: dict[str, str], body: str
) -> tuple[str, list[str]]:
    """A new file's text (its header, then ``body``), and what to write in it: a persona
    without a body starts from ours, its lines commented; a context file asks for one."""
    head = readable_header(start, rel)
    if kind == "persona" and not body.strip():
        head = head[:4] + "".join(f"{line}\n" for line in PERSONA_COMMENTS) + head[4:]
        return head + PERSONA_BODY, [
            "edit its body: it opens every pack (the lines there now are a start, not a must); "
            f"then `rouse stamp --origin owner {root / rel}` marks it as yours"
        ]
    asked = kind in CONTEXT_TYPES and not body.strip()
    notes = ["write its body: one short ground truth, shown in every pack"] if asked else []
    return head + (body if body.endswith("\n") or not body else body + "\n"), notes


def _placement(
    root: Path, kind: str, slug: str, under: str | None, now: datetime
) -> tuple[str, dict[str, str], list[str]]:
    """Where a new file goes, the header it starts with, and warnings about it."""
    if kind == "belief":
        return f"{layout.BELIEFS}/{layout.BELIEF_PREFIX}{slug}.md", {}, []
    if kind == "motivation":  # keywords: what `pack --query` judges it by (empty: never thinned)
        return f"{layout.MOTIVATIONS}/{layout.MOTIVATION_PREFIX}{slug}.md", {"keywords": ""}, []
    if kind == "note":
        return f"{layout.NOTES}/{slug}.md", {"updated": format_stamp(now), "keywords": ""}, []
    tree = walk(root)
    if under is not None:
        home = check_parent(kind, tree.resolve(under))
    elif kind in layout.DEFAULT_HOME:
        home = layout.DEFAULT_HOME[kind]
    else:
        raise UsageError(
            f"{article(kind)} lives under a record: give --under REF ({either(PARENTS[kind])})"
        )
    fields = {"status": LEVELS[kind].states[0], "opened": format_stamp(now)}
    if kind != "backlog":  # a backlog item is never swept: it carries no clock
        fields["last-moved"] = format_stamp(now)
    for key in WANTED.get(kind, ()):
        fields.setdefault(key, "")
    directory = f"{home}/{slug}"
    return f"{directory}/{kind}.md", fields, _same_slug(tree, kind, slug, directory)


def check_parent(kind: str, parent: Record) -> str:
    """The directory a new ``kind`` nests in under ``parent``, or a UsageError saying why not."""
    legal = PARENTS[kind]
    if parent.type in legal:
        return parent.dir
    if kind == "backlog":
        raise UsageError(
            f"{article(kind)} lives in {layout.BACKLOG}/ and nests under nothing: write it "
            "there, then `rouse promote SLUG --under REF` makes it an intention under REF"
        )
    rule = f"{article(kind)} nests under {either(legal)}"
    if kind in layout.DEFAULT_HOME:
        rule += f", or in {layout.DEFAULT_HOME[kind]}/ without --under"
    if not any(parent.type in parents for parents in PARENTS.values()):
        raise UsageError(
            f"{parent.dir} is {article(parent.type)}: nothing nests under "
            f"{article(parent.type)} ({rule})"
        )
    raise UsageError(f"{parent.dir} is {article(parent.type)}: {rule}")


def _same_slug(tree: Tree, kind: str, slug: str, directory: str) -> list[str]:
    """A warning when other records already have ``slug``: how to refer to each from now on."""
    others = sorted((r for r in tree.records.values() if r.slug == slug), key=lambda r: r.dir)
    if not others:
        return []
    paths = [*(r.dir for r in others), directory]
    ids = [*(r.id for r in others), f"{kind}/{slug}"]
    by_id = f", or by type/slug ({', '.join(ids)})" if len(set(ids)) == len(ids) else ""
    return [
        f"the slug '{slug}' is also used by {', '.join(r.dir for r in others)}: "
        f"`{slug}` alone is now ambiguous, so refer to each by its path "
        f"({', '.join(paths)}){by_id}"
    ]


def first_due_of(every: str, now: datetime) -> str:
    """A new series' first due (the rule's first occurrence after ``now``), as a stamp."""
    try:
        rule = parse_every(every)
    except ValueError as exc:
        raise UsageError(f"bad every: {exc}") from None
    first = next_after(rule, now, now)  # (an interval: now + it)
    if first is None:
        raise UsageError(f"every {every!r} has no occurrence after now")
    return format_stamp(first)


def remind(
    root: Path,
    slug: str,
    due: str | None,
    now: datetime,
    *,
    nag: str | None = None,
    body: str = "",
    every: str | None = None,
    until: str | None = None,
    origin: str | None = None,
) -> Created:
    """Shorthand for a reminder: ``due`` is any CLI time (a stamp, ``+2h``, ``mon 9am``).

    With ``every`` it repeats (docs/clock.md "Repeating reminders"); without a
    ``due``, its first due is the rule's first occurrence after ``now``.
    """
    fields: dict[str, str] = {}
    if until and not every:
        raise UsageError("--until ends a series: give --every RULE too (or --due for a one-shot)")
    if every and not due:
        due = first_due_of(every, now)
    if not due:
        raise UsageError("a reminder needs --due WHEN, or --every RULE to start a series")
    fields["due"] = due
    if nag:
        fields["nag"] = nag
    if every:
        fields["every"] = every.strip()
    if until:
        fields["until"] = until
    created = new(root, "reminder", slug, now, fields=fields, body=body, origin=origin)
    line = f"due {created.fields.get('due', '')}"
    if every:
        line += f", then every {every.strip()}"
        if until:
            line += f" until {created.fields.get('until', '')}"
    created.notes.insert(0, line)
    return created
