"""``rouse wire --remove``: every piece ``rouse wire`` laid, taken back out.

Our block from ``CLAUDE.md`` / ``AGENTS.md`` (the rest of each file kept),
our hooks from every settings scope rouse writes for this tree (other hooks
and settings kept; a file left with nothing else, ``{}``, is removed, and its
folder when that is empty), and the files that are rouse's
own: the Cursor rule, the opencode plugin and the skills. Idempotent: a second run finds nothing
and says so.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from rouse.agents import settings_hooks
from rouse.agents.hook_commands import EVENTS
from rouse.agents.instructions import CURSOR_RULE, remove_blocks
from rouse.agents.opencode import unwire_opencode
from rouse.agents.skills import remove_skills
from rouse.agents.wiring import Wired, Wiring, read_text, update_file

#: The first lines of the Cursor rule rouse writes (how it knows the file is its own).
CURSOR_RULE_HEAD = "---\ndescription: rouse memory"


def hook_files(w: Wiring) -> list[Path]:
    """Every settings file this tree's hooks may sit in."""
    return [
        *settings_hooks.claude_paths(w),
        settings_hooks.codex_path(w),
        settings_hooks.gemini_path(w),
    ]


def remove_hooks(w: Wiring, result: Wired) -> None:
    # every file is read and checked first: a broken one stops the run, nothing changed
    loaded = {p: settings_hooks.load_json(p) for p in hook_files(w) if p.exists()}
    for path, data in loaded.items():
        if not settings_hooks.has_our_hook(path, EVENTS):
            continue
        left = settings_hooks.remove_session_hook(data, str(path))
        if left:
            update_file(path, settings_hooks.dump(left), "rouse hooks")
            result.done.append(f"removed the rouse hooks from {path}")
            continue
        path.unlink()  # it held our hooks and nothing else: rouse's own file, not left as {}
        with contextlib.suppress(OSError):
            path.parent.rmdir()  # (only when nothing else is in .codex/, .gemini/…)
        result.done.append(f"removed {path} (it held only the rouse hooks)")


def remove_rule(w: Wiring, result: Wired) -> None:
    if w.project is None:
        return
    path = w.project / CURSOR_RULE
    try:
        ours = path.is_file() and read_text(path).startswith(CURSOR_RULE_HEAD)
    except (OSError, UnicodeDecodeError):
        ours = False
    if ours:
        path.unlink()
        result.done.append(f"removed {path} (Cursor rule)")


def unwire(w: Wiring) -> Wired:
    result = Wired()
    remove_hooks(w, result)
    settings_hooks.unwire_cursor_hooks(w, result)
    unwire_opencode(w, result)
    remove_blocks(w, result)
    remove_rule(w, result)
    remove_skills(w, result)
    if not result.done:
        result.done.append(f"nothing of rouse's is wired for {w.tree}")
    return result
