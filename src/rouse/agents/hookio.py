"""What every hook shares: the limits an agent puts on a hook's output, the session's
JSON on stdin, the output each agent reads, the tree a hook's ``--memory`` names, and
whether a hook for the global tree gives way to the project's own.

Below :mod:`rouse.agents.hook` (which dispatches on the event) and the pieces it
loads (:mod:`~rouse.agents.settings_hooks`, :mod:`~rouse.agents.giveway`), so
none of them imports the dispatcher. Light: on every hook's start-up path.
"""

from __future__ import annotations

import os
import select
import sys
import time

from rouse.core.home import TREE_MARKS, explicit_tree, joined, pure, surely_local
from rouse.state.files import Damaged, decode, suppress

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any, BinaryIO, TextIO

HOOK_LIMIT = 10_000  # Claude Code's cap on hook output (Codex's is the hook's own: 10,000 tokens)
HOOK_MAX_CHARS = 9_000  # what the pack is asked to fit, leaving room to spare
HOOK_WALL = HOOK_LIMIT - 100  # what it may never pass (whole context files give way)
STDIN_WAIT = 0.25  # seconds to wait for more of the hook's input before giving up
#: seconds the whole input may take: a writer that trickles it is not waited for longer
STDIN_DEADLINE = 2.0
#: how deep the hook's input may nest (the agents' inputs are a few levels deep)
STDIN_DEPTH = 32
STDIN_MOST = 1 << 20


def utf16_units(text: str) -> int:
    """How JavaScript (Claude Code) counts a string's length."""
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


#: How each agent counts the hook's text against its limit. Codex counts bytes / 4 as
#: tokens against the hook's ``additionalContextLimit``, which rouse sets to 10,000 when it
#: wires the hook: 10,000 characters fit at any width, so the pack is fitted in characters.
MEASURES: dict[str, Callable[[str], int]] = {"claude": utf16_units, "codex": len}


def cap(text: str, limit: int = HOOK_LIMIT, measure: Callable[[str], int] = len) -> str:
    """``text`` within ``limit``, cut at a line end and saying so (the pack should fit)."""
    if measure(text) <= limit:
        return text
    tail = "… (cut to fit the hook limit: run `rouse pack` for the rest)\n"
    room = limit - measure(tail)
    kept: list[str] = []
    used = 0
    for line in text.splitlines(keepends=True):
        used += measure(line)
        if used > room:
            break
        kept.append(line)
    return "".join(kept) + tail


def context_json(kind: str, text: str, event: str = "SessionStart") -> str | None:
    """``text`` as the JSON an agent reads context from, or None for plain stdout (Claude).

    Codex and Gemini CLI: ``hookSpecificOutput.additionalContext`` with the event's
    name; Cursor's ``sessionStart``: ``additional_context``.
    """
    import json

    payload: dict[str, Any]
    if kind in ("codex", "gemini"):
        payload = {"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}}
    elif kind == "cursor":
        payload = {"additional_context": text}
    else:
        return None
    return json.dumps(payload, ensure_ascii=False) + "\n"


def prompt_output(kind: str, text: str) -> str:
    """What a prompt hook prints: plain text for Claude Code, JSON for Codex and Gemini CLI
    (whose event is BeforeAgent); nothing when nothing is new."""
    if not text or kind not in ("codex", "gemini"):
        return text
    return context_json(kind, text, "BeforeAgent" if kind == "gemini" else "UserPromptSubmit") or ""


def hook_output(kind: str, text: str) -> str:
    """What a SessionStart hook prints: plain text for Claude, JSON for the others."""
    text = cap(text, HOOK_LIMIT, MEASURES.get(kind, len))
    wrapped = context_json(kind, text)
    if wrapped is not None:
        return wrapped
    return text if text.endswith("\n") else text + "\n"


# -- the hook's input ---------------------------------------------------------


def read_session(stream: TextIO | BinaryIO | None = None) -> dict[str, Any]:
    """The JSON object the agent writes to a hook's stdin, or {} (never blocks long).

    Agents write it at once and close the pipe; a terminal, a closed stdin or
    a pipe nobody writes to gives {} after at most :data:`STDIN_WAIT`.
    """
    stream = sys.stdin if stream is None else stream
    chunks: list[bytes] = []
    try:
        if stream is None or stream.isatty():
            return {}
        fd = stream.fileno()
        size = 0
        end = time.monotonic() + STDIN_DEADLINE
        while size < STDIN_MOST:
            left = min(STDIN_WAIT, end - time.monotonic())
            if left <= 0:
                return {}  # trickled past the deadline: no session, but still the pack
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                break
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except (OSError, ValueError, AttributeError):
        return {}
    data = b"".join(chunks) or b"{}"
    try:  # bounded: nesting that would exhaust the parser is refused before it is parsed
        value = decode(data, max_depth=STDIN_DEPTH)
    except Damaged:
        return {}
    return value if isinstance(value, dict) else {}


def hook_memory(memory: str | None, session: Mapping[str, Any]) -> str | None:
    """The tree a hook's ``--memory`` names; a relative one is the project's.

    A hook in a file committed with the project names its tree by its path
    from the project (``--memory memory``), never by this machine's. The
    agent starts the hook in the session's directory and says which that is
    (``cwd``; Cursor: ``workspace_roots``), which may be below the project's
    root: the tree is the nearest such path that is a rouse tree, from there
    up, as git finds ``.git``. Absolute paths are taken as given. (Spelled as
    pathlib spells ``Path(folder) / memory``, without importing it.)
    """
    if not memory or os.path.isabs(os.path.expanduser(memory)):
        return memory
    starts: list[str] = []
    cwd = session.get("cwd")
    if isinstance(cwd, str) and os.path.isabs(cwd):
        starts.append(cwd)
    roots = session.get("workspace_roots")
    if isinstance(roots, list):
        starts += [r for r in roots if isinstance(r, str) and os.path.isabs(r)]
    with suppress(OSError):
        starts.append(os.getcwd())
    for start in starts:
        folder = pure(start)
        while True:
            found = joined(folder, memory)
            if any(os.path.isfile(joined(found, m)) for m in TREE_MARKS):
                return found
            lead = "//" if folder.startswith("//") else "/"
            parent = lead + folder[len(lead) :].rpartition("/")[0]
            if parent == folder:
                break
            folder = parent
    return memory  # the lookup then says, from here, that it is missing


def gives_way(
    kind: str, memory: str | None, session: Mapping[str, Any], env: Mapping[str, str]
) -> bool:
    """Whether this hook should print nothing: it serves the global tree and the
    session's project has its own rouse hook for the same agent (the inner tree wins);
    see :mod:`rouse.agents.giveway`, not imported for a tree that is surely not global."""
    root = explicit_tree(memory, env)
    if root is not None and surely_local(root):
        return False
    from rouse.agents import giveway

    return giveway.gives_way(kind, memory, session, env)
