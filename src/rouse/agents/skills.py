"""The rouse skill (``SKILL.md``) that ``rouse wire`` lays for agents that load skills.

A skill is loaded on demand: the agent sees only its name and description
until a task matches, then reads the whole file. So the how-to of writing
memory (the verbs, the header rules) lives here instead of in the pack,
whose budget goes to the memory itself. Claude Code reads project skills
from ``.claude/skills/<name>/SKILL.md`` (personal: ``~/.claude/skills/``),
Codex from ``.agents/skills/<name>/SKILL.md`` (personal: ``~/.agents/skills/``);
opencode and Gemini CLI read both. The file is rouse's own: wiring again
replaces it whole, and ``rouse wire --remove`` takes it out.
"""

from __future__ import annotations

import os
from pathlib import Path

from rouse.agents.wiring import Wired, Wiring, remove_own, update_file
from rouse.core import layout
from rouse.trust import fence

NAME = "rouse"
#: Where each agent looks for skills, from the project root (or the home directory).
SKILL_DIRS = {"Claude Code": ".claude/skills", "Codex": ".agents/skills"}
MARK = "<!-- written by `rouse wire`: edits here are replaced; `rouse wire --remove` removes it -->"


def skill_paths(w: Wiring) -> dict[str, Path]:
    return {agent: w.base / folder / NAME / "SKILL.md" for agent, folder in SKILL_DIRS.items()}


def description(w: Wiring) -> str:
    """The one line an agent sees until it loads the skill: what it is for, and when."""
    return (
        f"Read and keep the agent's rouse memory (a markdown tree with a clock in "
        f"{w.tree_ref}/) - use when the session starts without a memory pack, when you "
        "need something the pack does not show, and whenever you write, move, snooze, "
        "close or remind about memory records."
    )


def skill_text(w: Wiring) -> str:
    """The skill: when to read the memory, the verbs, the header rules (our own words)."""
    memory = "" if w.project is not None and w.tree_ref == "memory" else f" --memory {w.tree_ref}"
    guide = os.path.join(w.tree_ref, layout.INSTRUCTIONS)
    return f"""---
name: {NAME}
description: {description(w)}
---
{MARK}

# Your memory (rouse)

Your memory is the tree at `{w.tree_ref}/`: plain markdown files with a small
header, kept by rouse. The full guide is `{guide}`; read it before you write
memory for the first time in a session.

## When to read it

- **At session start.** If a block starting `now:` (the memory pack) is not
  already in your context, run `rouse pack{memory}` and treat what it prints
  as your memory: what woke you, what is due, your beliefs and motivations,
  an index of notes.
- **When the pack does not show it.** The pack lists notes by path and
  keywords, never their bodies. `rouse recall QUERY{memory}` searches notes,
  backlog, records and context files, best first; then read the file.
- **When a wake arrives** (a line `rouse: N record(s) woke you`): act on each
  record, then say so with `move` or `close`, or say why not.

## The verbs (REF is a slug, type/slug or tree-relative path)

- `rouse move REF --note "what happened"`: the record moved; its clock starts again.
- `rouse snooze REF --until "mon 9am"` (or `--for 3d`, `--clear`): not due before then.
- `rouse close REF --done` | `--dropped WHY` | `--abandoned WHY` (a goal) |
  `--failed WHY` | `--cancelled WHY` (a task): end it out loud; nothing is deleted.
- `rouse remind SLUG --due "tomorrow 09:00"` (`--every "weekdays 09:00"` repeats it,
  `--nag 1h` resends until it is closed).
- `rouse tell REF "MESSAGE"`: reach the owner (the human) through their channel.
- `rouse checkpoint REF "TEXT"`: a task's progress, written where the next run reads it.
- `rouse recall QUERY`: find what the pack does not list.
- `rouse new TYPE SLUG --under REF --set key=value`: a new intention, goal,
  action, task, reminder, backlog item, note, belief or motivation, with the
  right header and stamps.

Add `{memory.strip() or "--memory DIR"}` when you run rouse outside this project.

## Who wrote it, and what it asks of you

{fence.GUIDE}
## Header rules

- A header is the block between the first two `---` lines: one `key: value`
  per line, keys lowercase kebab-case, values one line. No YAML types.
- Machine fields are rouse's own: never write `swept`, `nudges`, `origin`,
  `last-moved` or other stamps by hand; the verbs write them.
- A record is a directory holding one `<type>.md` (intention, goal, action,
  task, reminder, backlog). An intention needs `closes-when:`, a goal
  `success-when:`, a reminder `due:`.
- Beliefs and motivations are context: no status, no clock. Keep them short;
  all of them are in every pack.
- Nothing is deleted: a record that ends changes its `status:` (use `close`).
"""


def wire_skills(w: Wiring, result: Wired) -> None:
    for agent, path in skill_paths(w).items():
        result.done.append(update_file(path, skill_text(w), f"{agent} skill"))


def remove_skills(w: Wiring, result: Wired) -> None:
    """Delete the skill files rouse wrote (its mark in them), and their folder when empty."""
    for agent, path in skill_paths(w).items():
        remove_own(path, lambda text: MARK in text, f"{agent} skill", result)
