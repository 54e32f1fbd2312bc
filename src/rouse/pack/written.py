"""What a file says in words: the text recall indexes, searches and quotes (issue 23;
docs/recall.md). A body is split at the log marker (:mod:`rouse.core.body`); neither
part keeps markup, and a log line loses what rouse itself wrote around the agent's
words (its stamp, the verb's prefix), so ``rouse recall log``, ``dropped`` or ``2026``
never match rouse's own bookkeeping. Reading files is :mod:`rouse.pack.index`'s.
"""

from __future__ import annotations

import re

from rouse.core.body import split_log

_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.S)
_FENCE = re.compile(r"^\s*(```+|~~~+).*$")
_RULE = re.compile(r"^\s*([-*_]\s*){3,}$")
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$")
_HEADING = re.compile(r"^\s{0,3}#{1,6}(\s+|$)")
_SETEXT = re.compile(r"^\s*(=+|-+)\s*$")
_QUOTE = re.compile(r"^\s*(>\s?)+")
_BULLET = re.compile(r"^\s*([-*+]|\d{1,9}[.)])\s+(\[[ xX]\]\s+)?")
_IMAGE = re.compile(r"!\[([^\]]*)\]\(([^)\s]*)[^)]*\)")
_LINK = re.compile(r"\[([^\]]+)\]\(([^)\s]*)[^)]*\)")
_AUTOLINK = re.compile(r"<((?:https?|mailto):[^>\s]+)>")
_TAG = re.compile(r"</?[A-Za-z][A-Za-z0-9-]*(\s[^<>]*)?/?>")
# underscores stay: in `__init__` or snake_case they are the text, not emphasis
_EMPHASIS = re.compile(r"(\*{1,3}|~~|`+)")

_STAMP = r"\d{4}-\d\d-\d\d(?:[ T]\d\d:\d\d(?::\d\d)?)?"
#: The start of a log line rouse's verbs write: ``- 2026-03-14 12:00: ``.
_DATED = re.compile(rf"^\s*[-*]?\s*{_STAMP}\s*:\s*")
#: What rouse's verbs write after the stamp, before the agent's own words (if any).
ROUSE_PREFIXES = (
    rf"snoozed until {_STAMP}",
    r"snooze cleared",
    r"(?:done|dropped|abandoned|failed|cancelled|expired)(?: \(was [a-z-]+\))?",
    r"told the owner(?: via channel [^\s(]+)? \(tell [^)]*\)",
    r"moved|checkpoint|started|promoted|note|result|reviewed",
)
_PREFIX = re.compile(r"^(?:" + "|".join(ROUSE_PREFIXES) + r")(?::\s*|\s*$)")


def plain(markdown: str) -> str:
    """``markdown`` as the words a reader sees: no markup, one line per source line."""
    text = _COMMENT.sub(" ", markdown)
    lines: list[str] = []
    for line in text.splitlines():
        if _FENCE.match(line) or _RULE.match(line) or _TABLE_RULE.match(line):
            continue
        if _SETEXT.match(line) and lines and lines[-1].strip():
            continue
        line = _HEADING.sub("", line)
        line = _QUOTE.sub("", line)
        line = _BULLET.sub("", line)
        line = _IMAGE.sub(lambda m: f"{m[1]} ({m[2]})" if m[2] else m[1], line)
        line = _LINK.sub(lambda m: f"{m[1]} ({m[2]})" if m[2] and m[2] != m[1] else m[1], line)
        line = _AUTOLINK.sub(r"\1", line)
        line = _TAG.sub(" ", line)
        line = _EMPHASIS.sub("", line)
        line = line.replace("|", " ").replace("\\", "")
        lines.append(" ".join(line.split()))
    return "\n".join(lines).strip("\n")


def log_note(line: str) -> str:
    """One log line as the agent's words alone: rouse's stamp and prefix taken off."""
    dated = _DATED.match(line)
    if dated is None:
        return plain(line)  # written by hand under the log: kept, as words
    rest = line[dated.end() :].strip()
    prefix = _PREFIX.match(rest)
    if prefix is not None:
        rest = rest[prefix.end() :]
    return plain(rest)


def split(body: bytes) -> tuple[str, str]:
    """``(authored, log)`` of a body, each as plain words (see :func:`plain`)."""
    authored, log = split_log(body)
    notes = [log_note(line) for line in log.decode("utf-8", "replace").splitlines()]
    return plain(authored.decode("utf-8", "replace")), "\n".join(n for n in notes if n)
