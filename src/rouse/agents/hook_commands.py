"""The commands rouse's hooks run, and how to know one when it is in a file (SPEC §11).

A hook's command pins the tree (:func:`tree_arg`) and, when it is personal and
this rouse is a stable install (:func:`stable_executable`), the rouse that wired
it; it exits 0 on every path, saying in one line why when rouse cannot start.
:func:`is_ours` knows every shape of command rouse has written, and nothing a
user wrote. Where the commands go is :mod:`rouse.agents.settings_hooks`'s.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rouse.agents.hookio import context_json
from rouse.agents.wiring import Wiring

#: The SessionStart sources each agent documents (Claude Code: startup, resume,
#: clear, compact, and fork since 2.1.214; Codex: startup, resume, clear): a fresh pack after each.
MATCHERS = {"claude": "startup|resume|clear|compact|fork", "codex": "startup|resume|clear"}
SESSION_START = "SessionStart"
#: At each prompt the same command hands the open session the wakes it has not
#: seen (it reads the event from its input); neither agent matches on this event.
PROMPT = "UserPromptSubmit"
#: Claude Code only: when a turn ends the same command waits, in the background
#: (``asyncRewake``), for the next wake of the idle session; SessionEnd ends that wait.
STOP = "Stop"
SESSION_END = "SessionEnd"
#: Gemini CLI's name for the moment after a prompt is submitted, before the model plans.
BEFORE_AGENT = "BeforeAgent"
#: ... and for the moment its agent has answered, before the turn ends (the promise check).
AFTER_AGENT = "AfterAgent"
EVENTS = (SESSION_START, PROMPT, STOP, SESSION_END, BEFORE_AGENT, AFTER_AGENT)
#: The second Stop hook (issue 33): run before the turn ends, it may continue the turn once
#: about a promise without a record (``--no-promises`` leaves it out). Not an event's name.
PROMISES = "Stop:promises"
#: one shell word as :func:`hook_command` writes it: bare, single-quoted (``shlex.quote``,
#: a quote inside as ``'"'"'``) or double-quoted (``"$CLAUDE_PROJECT_DIR/…"``)
_WORD = r"""(?:'[^']*'(?:"'"'[^']*')*|"(?:[^"\\]|\\.)*"|[^\s'"]+)"""
#: exactly a command rouse writes (:func:`hook_command`, and the shapes of earlier
#: versions: no pinned rouse, no ``--memory``, no ``--hook``, no fallback): a user's own
#: command that runs ``rouse pack`` another way (``my-wrapper && rouse pack …``) is not ours
_OUR_HOOK_RE = re.compile(
    rf"""(?:R={_WORD}; \[ -x "\$R" \] \|\| R=rouse; "\$R"|rouse) pack"""
    rf"(?: --memory {_WORD})?(?: --hook (?:claude|codex|gemini|cursor))?(?: --promises)?"
    r"(?: \|\| (?:true|exit \$\(\( \$\? == 2 \? 2 : 0 \)\)"
    rf"|echo {_WORD}|printf '%s\\n' {_WORD}))?"
)

#: What a hook prints when it cannot start rouse at all (the pinned path is
#: gone and there is no ``rouse`` on PATH): one line instead of nothing.
CANNOT_RUN = (
    "rouse: no memory pack this session: this hook could not start rouse (it is neither "
    "where `rouse wire` found it nor on PATH): reinstall rouse, then run `rouse wire` again"
)
#: The same line for a hook in a file meant to be committed, which calls rouse by name only.
CANNOT_RUN_SHARED = (
    "rouse: no memory pack this session: this project's hook runs `rouse`, which is not on "
    "PATH here: install it where the agent can find it (in a clone of rouse: pipx install .)"
)


def _unstable(path: str, roots: Sequence[str]) -> bool:
    """A path that may vanish: under a temp directory or a cache (``pipx run``, ``uvx``)."""
    candidates = {os.path.abspath(path), os.path.realpath(path)}
    caches = (".cache", "Caches", "__pycache__")
    if any(part in caches for candidate in candidates for part in Path(candidate).parts):
        return True
    try:
        return any(
            os.path.commonpath([candidate, os.path.abspath(root)]) == os.path.abspath(root)
            for candidate in candidates
            for root in roots
        )
    except ValueError:  # paths on different drives (Windows): not under that root
        return False


def stable_executable(
    argv0: str | None = None, on_path: str | None = None, unstable: Sequence[str] | None = None
) -> str | None:
    """The absolute path of the ``rouse`` that runs now, when it is a stable install.

    The script this process was started as, else the ``rouse`` on PATH; never
    one under a temp directory or a cache, which may be gone by the next
    session. Symlinks are kept (``~/.local/bin/rouse`` outlives a reinstall).
    """
    argv0 = sys.argv[0] if argv0 is None else argv0
    on_path = shutil.which("rouse") if on_path is None else on_path
    roots = [tempfile.gettempdir(), "/tmp", "/var/tmp"] if unstable is None else unstable
    candidates = [argv0] if Path(argv0).name in ("rouse", "rouse.exe") else []
    candidates += [on_path] if on_path else []
    for candidate in candidates:
        path = os.path.abspath(candidate)
        if os.path.isfile(path) and os.access(path, os.X_OK) and not _unstable(path, roots):
            return path
    return None


#: The variable each agent sets to the project's directory in a hook's environment.
PROJECT_DIR = {"claude": "CLAUDE_PROJECT_DIR", "gemini": "GEMINI_PROJECT_DIR"}


def tree_arg(w: Wiring, kind: str) -> str:
    """How a hook's command names the tree, as a shell word.

    The global tree by its absolute path (it lives in personal files only). A
    project's tree by its path from the project, never this machine's: under
    the agent's project variable where it has one (``$CLAUDE_PROJECT_DIR``,
    ``$GEMINI_PROJECT_DIR``), else as it stands (Codex, Cursor), which the hook
    resolves from the session's directory up (:func:`rouse.agents.hookio.hook_memory`).
    """
    if w.project is None:
        return shlex.quote(str(w.tree))
    variable = PROJECT_DIR.get(kind)
    if variable is None:
        return shlex.quote(w.tree_ref)
    ref = w.tree_ref.replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$")
    ref = ref.replace("`", "\\`")
    if kind == "gemini":
        # Gemini CLI writes the project's path, shell-quoted, in place of a bare
        # $GEMINI_PROJECT_DIR; inside these double quotes its quotes would be kept (a path
        # with a space then names no folder). It leaves ${…} alone: the shell expands it.
        return f'"${{{variable}}}/{ref}"'
    return f'"${variable}/{ref}"'


def hook_command(
    w: Wiring,
    kind: str,
    executable: str | None = None,
    event: str = SESSION_START,
    shared: bool = False,
) -> str:
    """The hook's command: it pins this tree (and, when given and personal, this rouse).

    ``R=/path/to/rouse; [ -x "$R" ] || R=rouse; "$R" pack …``: the install that
    wired it, else whatever ``rouse`` is on PATH, else (at session start) one
    line saying why there is no pack; at a prompt, nothing. A ``shared``
    command (a file meant to be committed) carries no path of this machine:
    it calls ``rouse`` by name. It exits 0 on every path.
    """
    run = f"pack --memory {tree_arg(w, kind)} --hook {kind}"
    run += " --promises" if event == PROMISES else ""
    if executable and not shared:
        head = f'R={shlex.quote(executable)}; [ -x "$R" ] || R=rouse; "$R" {run}'
    else:
        head = f"rouse {run}"
    cannot = CANNOT_RUN_SHARED if shared else CANNOT_RUN
    if event == STOP:
        # exit 2 wakes the model with the wake on stderr; anything else (rouse missing
        # included) must not, so it becomes 0
        fallback = "exit $(( $? == 2 ? 2 : 0 ))"
    elif event in (PROMPT, SESSION_END, PROMISES):  # (PROMISES: exit 2 would block the stop)
        fallback = "true"  # the session start said it once; not again at every prompt
    elif kind != "claude":  # the agents that read JSON: the line, in their JSON
        payload = context_json(kind, cannot) or ""
        fallback = "printf '%s\\n' " + shlex.quote(payload.rstrip("\n"))
    else:
        fallback = "echo " + shlex.quote(cannot)
    return f"{head} || {fallback}"


def is_ours(hook: Any) -> bool:
    """Whether a hook entry is one rouse wrote (its whole command, nothing around it)."""
    return isinstance(hook, dict) and bool(_OUR_HOOK_RE.fullmatch(str(hook.get("command", ""))))
