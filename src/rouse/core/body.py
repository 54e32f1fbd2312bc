"""A record's body: the part its author wrote, and the log rouse's verbs append.

Notes and reasons that arrive through rouse's verbs (``move --note``,
``snooze --note``, ``close`` reasons, their MCP twins) go under one marker
line at the end of the body, a heading that reads naturally in markdown::

    ## Log <!-- rouse:log -->
    - 2026-03-14 12:00: drafted the release notes

Everything above the marker is the authored part: what a signature covers,
what a reminder's wake delivers, where probe blocks are read. The log is the
agent's notes: shown apart, never signed, never a source of probes.
"""

from __future__ import annotations

LOG_MARKER = "<!-- rouse:log -->"
LOG_HEADING = f"## Log {LOG_MARKER}"
_MARKER = LOG_MARKER.encode()
_HEADING = LOG_HEADING.encode()


def split_log(body: bytes) -> tuple[bytes, bytes]:
    """``(authored, log)``: the body above the marker line, and the lines below it."""
    at = body.find(_MARKER)
    while at >= 0:
        start = body.rfind(b"\n", 0, at) + 1
        end = body.find(b"\n", at)
        end = len(body) if end < 0 else end + 1
        if body[start:end].strip() == _HEADING:
            return body[:start], body[end:]
        at = body.find(_MARKER, at + 1)
    return body, b""


def authored(body: bytes) -> bytes:
    """The authored part as a signature sees it: trailing blank space is not content,
    so rouse may add a newline before the log without costing an origin."""
    return split_log(body)[0].rstrip(b" \t\r\n")


def log_entries(body: bytes) -> list[str]:
    """The log's lines (blank lines dropped), oldest first."""
    log = split_log(body)[1].decode("utf-8", "replace")
    return [line.strip() for line in log.splitlines() if line.strip()]


def append_log(data: bytes, body_start: int, line: str) -> bytes:
    """``data`` (a whole file whose body starts at ``body_start``) with ``line``
    appended to its log, the marker written first if the body has none."""
    newline = b"\r\n" if b"\r\n" in data[:200] else b"\n"
    entry = line.encode("utf-8") + newline
    head, body = data[:body_start], data[body_start:]
    if split_log(body)[0] != body:  # the marker is there: append below it
        return (data if data.endswith(b"\n") else data + newline) + entry
    if head and not head.endswith(b"\n"):
        head += newline
    kept = body.rstrip(b" \t\r\n")
    gap = newline * 2 if kept else b""
    return head + kept + gap + LOG_HEADING.encode() + newline + entry


# -- a reminder's message, as the pack and the session hooks quote it ----------

#: A message is quoted whole while it has at most this many lines and characters;
#: past that, its first lines (never a line cut) and where to read the rest.
MESSAGE_LINES = 6
MESSAGE_CHARS = 600
MAX_MESSAGE_BYTES = 64 * 1024


def message_of(body: bytes) -> tuple[list[str], int]:
    """A reminder's message: the first lines of the body's authored part that fit
    (:data:`MESSAGE_LINES`, :data:`MESSAGE_CHARS`, whole lines only) and how many
    lines are left out. A first line too long to quote leaves every line out."""
    text = split_log(body)[0].decode("utf-8", "replace").strip("\n").rstrip()
    lines = text.splitlines()
    shown: list[str] = []
    used = 0
    for line in lines:
        if len(shown) >= MESSAGE_LINES or used + len(line) > MESSAGE_CHARS:
            break
        shown.append(line.rstrip())
        used += len(line)
    while shown and not shown[-1].strip():
        shown.pop()
    return shown, len(lines) - len(shown)


# -- a task's checkpoints (rouse checkpoint), as the worker and the pack read them --

#: How a checkpoint line reads in the log, after its date: ``checkpoint: TEXT``.
CHECKPOINT = "checkpoint: "


def checkpoints(body: bytes) -> list[str]:
    """The checkpoints a task's body reports in its log, oldest first (``<date>: TEXT``)."""
    found = []
    for entry in log_entries(body):
        date, sep, text = entry.lstrip("- ").partition(": ")
        if sep and text.startswith(CHECKPOINT):
            found.append(f"{date}: {text[len(CHECKPOINT) :]}")
    return found
