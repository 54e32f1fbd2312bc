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
from rouse.agents.wiring import Wired, Wiring, remove_own, update_file

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


def unwire(w: Wiring) -> Wired:
    result = Wired()
    remove_hooks(w, result)
    settings_hooks.unwire_cursor_hooks(w, result)
    unwire_opencode(w, result)
    remove_blocks(w, result)
    if w.project is not None:
        rule = w.project / CURSOR_RULE
        remove_own(rule, lambda t: t.startswith(CURSOR_RULE_HEAD), "Cursor rule", result, False)
    remove_skills(w, result)
    if not result.done:
        result.done.append(f"nothing of rouse's is wired for {w.tree}")
    return result
