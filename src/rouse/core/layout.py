"""The tree's fixed paths and naming rules, in one place."""

from __future__ import annotations

import re

from rouse.core.errors import UsageError
from rouse.core.home import STATE_DIR as STATE_DIR  # (defined there: the hooks read it)

ENTRYPOINT = "entrypoint"
PERSONA = "persona.md"
INSTRUCTIONS = "entrypoint/rouse.md"
BELIEFS = "entrypoint/beliefs"
MOTIVATIONS = "entrypoint/beliefs/motivations"
INTENTIONS = "entrypoint/beliefs/motivations/intentions"
PLUGINS = "entrypoint/plugins"
INVENTORY = "inventory"
NOTES = "inventory/notes"
PROBES = "inventory/probes.md"
REMINDERS = "inventory/reminders"
BACKLOG = "inventory/backlog"

BELIEF_PREFIX = "belief-"
MOTIVATION_PREFIX = "motivation-"
NOTE_FILE = "note.md"

RECORD_TYPES = ("intention", "goal", "action", "task", "reminder", "backlog")
CONTEXT_TYPES = ("persona", "belief", "motivation")

#: Fields only rouse writes; verbs taking fields from a user or model refuse them.
MACHINE_FIELDS = frozenset(
    {
        *("swept", "nudges", "reviewed", "fires", "set", "fired", "ended"),
        *("origin", "origin-turn", "origin-sig", "promoted", "was"),
        *("started", "worker", "attempts"),  # the task worker's (rouse work)
        "forgotten",  # rouse forget's tombstone stamp
    }
)

#: Every header key rouse reads on some kind of file (docs/header.md names each
#: one's reader). There is no free-form metadata: writers refuse any other key
#: and `check` warns about one in a file.
KNOWN_KEYS = frozenset(
    {
        *("status", "opened", "last-moved", "stale-after", "review-every"),
        *("closes-when", "success-when", "outcome", "cancel", "snoozed-until"),
        *("waiting-on", "falsifiers", "model", "reasoning", "repo", "category"),
        *("due", "nag", "backoff", "max-fires", "expires", "channel"),
        *("every", "until"),  # a repeating reminder's rule and its end
        *("keywords", "probes", "updated"),
        "supersedes",  # a note or context file that replaces another (core.supersession)
        *MACHINE_FIELDS,
    }
)

#: The header keys that hold a time: ``check`` reads each as a stamp (all but
#: ``cancel``, where any word calls a task off), a verb given one takes people's words
#: (``+2d``, ``mon 9am``) and writes a stamp, ``--json`` gives it in ISO 8601.
STAMP_KEYS = frozenset(
    {
        *("opened", "last-moved", "swept", "reviewed", "due", "expires", "fired", "set"),
        *("updated", "promoted", "snoozed-until", "started", "until", "forgotten", "cancel"),
    }
)
#: The header keys that hold a duration (``--json``: seconds).
INTERVAL_KEYS = frozenset({"stale-after", "review-every", "nag"})

#: Where a new record of each type goes when no ``--under`` is given.
DEFAULT_HOME = {
    "intention": INTENTIONS,
    "reminder": REMINDERS,
    "backlog": BACKLOG,
}

# \Z, not $: a $ would also match before a final newline ("nl\n" is no slug)
SLUG_RE = re.compile(r"^[a-z0-9][a-z0-9-]{0,79}\Z")
#: A header key as the reader takes it (any case; written lowercase).
KEY_RE = re.compile(r"^[A-Za-z][A-Za-z0-9-]*\Z")
#: A key a writer accepts from a user or a model: lowercase kebab-case only.
FIELD_KEY_RE = re.compile(r"^[a-z][a-z0-9-]*\Z")


def suggest_slug(text: str) -> str:
    """A legal slug close to ``text`` (for error messages)."""
    slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:80].strip("-")
    return slug or "my-slug"


def validate_slug(slug: str) -> str:
    """Return ``slug`` if legal, else raise a UsageError with a suggestion."""
    if SLUG_RE.fullmatch(slug):
        return slug
    raise UsageError(
        f"bad slug {slug!r}: use 1-80 lowercase letters, digits and '-', "
        f"not starting with '-' (try {suggest_slug(slug)!r})"
    )


#: the longest directory name a record (or anything under one) may have
MAX_NAME = 80
#: characters no name may hold besides C0/C1 controls: line breaks and bidi controls
_INVISIBLE = frozenset(
    "\u2028\u2029\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\ufeff"
)


def _bad_char(char: str) -> bool:
    code = ord(char)
    return code < 32 or 127 <= code < 160 or 0xD800 <= code < 0xE000 or char in _INVISIBLE


def name_problem(name: str, directory: bool = True) -> str | None:
    """Why a directory (or, ``directory=False``, a ``.md`` file) with this name cannot be
    tracked: its name is not UTF-8 (the walk decodes with surrogate escapes), holds a
    control character, or (a directory) is over :data:`MAX_NAME` characters. Such a name
    never reaches text output raw (see :func:`shown`)."""
    if name.isascii() and name.isprintable() and (not directory or len(name) <= MAX_NAME):
        return None  # (the fast path: every name rouse itself would write)
    if any(0xDC80 <= ord(c) <= 0xDCFF for c in name):
        return "its name is not valid UTF-8"
    if any(_bad_char(c) for c in name):
        return "its name holds a control character"
    if directory and len(name) > MAX_NAME:
        return f"its name is over {MAX_NAME} characters"
    return None


def shown(text: str, lines: bool = False) -> str:
    """``text`` safe to print: control characters (C0, C1, DEL: ESC, BEL, NUL…), line
    breaks, bidi controls and bytes that were not UTF-8 become escapes (``\\n``,
    ``\\x1b``, ``\\xff``, ``\\u202e``); a backslash is doubled only when something
    else was escaped. ``lines``: text of many lines, whose newlines and tabs stay.

    The one rule for every text rouse prints or writes that it did not make itself
    (a header's value, a log line written by hand, a run's message, a webhook's reply).
    """
    probe = text.replace("\n", "").replace("\t", "") if lines else text
    if probe.isprintable():  # (C speed: what is printable holds nothing to escape)
        return text
    keep = "\n\t" if lines else ""
    if not any(_bad_char(c) and c not in keep for c in probe):
        return text
    out = []
    for char in text.replace("\\", "\\\\"):
        code = ord(char)
        if 0xDC80 <= code <= 0xDCFF:
            out.append(f"\\x{code - 0xDC00:02x}")  # a byte that was not UTF-8
        elif _bad_char(char) and char not in keep:
            out.append(
                char.encode("unicode_escape").decode("ascii") if code < 0xD800 else f"\\u{code:04x}"
            )
        else:
            out.append(char)
    return "".join(out)


#: The mark of ``rouse init``'s examples: a record whose own name (its directory, or a
#: context file's name after ``belief-``/``motivation-``) starts with it illustrates the
#: tree and is never work (``rouse work`` does not run an example task).
EXAMPLE_PREFIX = "example-"


def is_example(rel_dir: str) -> bool:
    """True if the record at ``rel_dir`` (tree-relative) is one of init's examples."""
    name = rel_dir.rstrip("/").rpartition("/")[2].removesuffix(".md")
    for prefix in (BELIEF_PREFIX, MOTIVATION_PREFIX):
        name = name.removeprefix(prefix)
    return name.startswith(EXAMPLE_PREFIX)


def record_type_of(filename: str) -> str | None:
    """``intention.md`` → ``intention``; anything else → None."""
    stem, dot, ext = filename.rpartition(".")
    if dot and ext == "md" and stem in RECORD_TYPES:
        return stem
    return None


def is_inside(rel: str, ancestor: str) -> bool:
    """True if ``rel`` is ``ancestor`` or below it (tree-relative paths)."""
    return rel == ancestor or rel.startswith(ancestor + "/")
