"""The instructions rouse puts where agents read them (SPEC §11; docs/wiring.md).

The marked block in ``CLAUDE.md`` / ``AGENTS.md`` (spliced between our markers,
everything else kept; the files are never created), the Cursor rule that carries the
same guidance, and the rouse skill (``SKILL.md``): loaded on demand, so the how-to of
writing memory lives there instead of in the pack, whose budget goes to the memory
itself. The skill is rouse's own: wiring again replaces it whole.
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

from rouse.agents.opencode import has_plugin
from rouse.agents.settings_hooks import hooked_agent
from rouse.agents.wiring import Wired, Wiring, read_text, remove_own, update_file
from rouse.core import layout
from rouse.core.errors import RouseError
from rouse.records.scaffold import AGENT_LINE
from rouse.trust import fence

BEGIN = "<!-- rouse:begin (written by `rouse wire`; edits inside are replaced) -->"
END = "<!-- rouse:end -->"
_BEGIN_RE = re.compile(r"^<!-- rouse:begin\b.*-->\s*$", re.MULTILINE)
_END_RE = re.compile(r"^<!-- rouse:end -->\s*$", re.MULTILINE)
INSTRUCTION_FILES = ("CLAUDE.md", "AGENTS.md", "GEMINI.md")
CURSOR_RULE = ".cursor/rules/rouse.mdc"
#: The first lines of the Cursor rule rouse writes (how it knows the file is its own).
CURSOR_RULE_HEAD = "---\ndescription: rouse memory"
NAME = "rouse"
#: Where each agent looks for skills, from the project root (or the home directory).
SKILL_DIRS = {"Claude Code": ".claude/skills", "Codex": ".agents/skills"}
MARK = "<!-- written by `rouse wire`: edits here are replaced; `rouse wire --remove` removes it -->"
#: The agents that read AGENTS.md and may get the pack by themselves: what brings it to each.
BY_ITSELF = {"Codex": "a SessionStart hook", "opencode": "a plugin"}


def _hooked(w: Wiring, name: str) -> str | None:
    """The agent(s) whose hook or plugin delivers the pack to readers of ``name``."""
    hooked = hooked_agent(w, name)
    if name == "AGENTS.md" and has_plugin(w):
        return "opencode" if hooked is None else f"{hooked} and opencode"
    return hooked


def _memory_flag(w: Wiring) -> str:
    """`` --memory TREE`` unless a plain ``rouse`` in the project root finds the tree itself."""
    if w.project is not None and w.tree_ref == "memory":
        return ""
    return f" --memory {shlex.quote(w.tree_ref)}"


def _pack_cmd(w: Wiring) -> str:
    return f"rouse pack{_memory_flag(w)}"


def instruction_line(w: Wiring) -> str:
    """The line ``rouse init`` suggests, for this tree (the same sentence, the same words)."""
    instructions = f"`{os.path.join(w.tree_ref, layout.INSTRUCTIONS)}`"
    return AGENT_LINE.replace("`rouse pack`", f"`{_pack_cmd(w)}`").format(instructions=instructions)


def block_lines(w: Wiring, hooked: str | None = None) -> list[str]:
    """The guidance between the markers. ``hooked`` names the agent whose hook delivers the pack."""
    instructions = f"`{os.path.join(w.tree_ref, layout.INSTRUCTIONS)}`"
    if hooked in ("Claude Code", "Gemini CLI"):
        first = (
            "- The memory pack arrives at the start of every session by itself (a SessionStart "
            f"hook runs `{_pack_cmd(w)}`): treat it as your memory and do not run it again; "
            f"before writing memory, read {instructions}."
        )
    elif hooked is not None and set(names := hooked.split(" and ")) <= set(BY_ITSELF):
        lead, *more = names
        said = f"In {lead} the memory pack arrives at session start by itself ({BY_ITSELF[lead]})"
        said += "".join(f", and in {name} ({BY_ITSELF[name]})" for name in more)
        first = (
            f"- {said}: treat it as your memory and do not run it again. "
            "Any other agent: " + instruction_line(w)
        )
    else:
        first = "- " + instruction_line(w)
    where = "the global tree" if w.project is None else f"`{w.tree_ref}/`"
    return [
        "## Memory (rouse)",
        "",
        f"Your memory is {where}: plain markdown files with a small header, kept by rouse; "
        f"{instructions} explains the tree, the header, the clock and the verbs.",
        "",
        first,
        f"- To find something the pack does not show, run `rouse recall QUERY{_memory_flag(w)}`.",
    ]


def render_block(w: Wiring, hooked: str | None = None) -> str:
    return "\n".join([BEGIN, *block_lines(w, hooked), END]) + "\n"


def splice_block(text: str, block: str, where: str, newline: str = "\n") -> str:
    """``text`` with our marked block replaced (or appended); everything else kept."""
    begins, ends = list(_BEGIN_RE.finditer(text)), list(_END_RE.finditer(text))
    if not begins and not ends:
        if not text or text.endswith(newline * 2):
            return text + block
        return text + (newline if text.endswith(newline) else newline * 2) + block
    if len(begins) != 1 or len(ends) != 1 or ends[0].start() < begins[0].start():
        raise RouseError(
            f"{where}: the rouse markers are unbalanced (one '<!-- rouse:begin' line, then one "
            "'<!-- rouse:end -->' line); fix or remove them by hand, then run `rouse wire` again"
        )
    end = ends[0].end()
    if text[end:].startswith(newline):
        end += len(newline)
    return text[: begins[0].start()] + block + text[end:]


def cut_block(text: str, where: str, newline: str = "\n") -> str:
    """``text`` without our marked block (and the blank line it was set apart by)."""
    if not _BEGIN_RE.search(text) and not _END_RE.search(text):
        return text
    kept = splice_block(text, "\x00", where, newline)
    head, _, tail = kept.partition("\x00")
    if head.endswith(newline * 2) and (not tail or tail.startswith(newline)):
        head = head[: -len(newline)]
    if not tail:
        head = head.rstrip("\r\n") + newline if head.strip() else ""
    return head + tail


def _present(w: Wiring) -> list[tuple[str, Path]]:
    """The instruction files in the project root, by name (the global tree has none)."""
    if w.project is None:
        return []
    paths = [(name, w.project / name) for name in INSTRUCTION_FILES]
    return [(name, path) for name, path in paths if path.is_file()]


def check_blocks(w: Wiring) -> None:
    """Refuse (RouseError) before anything is written when an instruction file's markers
    are unbalanced (one quoting ``<!-- rouse:end -->``, say): ``wire`` and ``wire
    --remove`` check here first, so a refusal leaves every file as it was."""
    for _, path in _present(w):
        splice_block(read_text(path), "", str(path))


def remove_blocks(w: Wiring, result: Wired) -> None:
    """Take our block out of the instruction files that have one; everything else kept."""
    for _, path in _present(w):
        old = read_text(path)
        newline = "\r\n" if "\r\n" in old else "\n"
        text = cut_block(old, str(path), newline)
        if text != old:
            result.done.append(update_file(path, text, "rouse block removed"))


def wire_blocks(w: Wiring, result: Wired) -> None:
    """Put the block in CLAUDE.md / AGENTS.md where they exist; never create them."""
    if w.project is None:
        result.printed += [
            f"The global tree {w.tree} has no project root. Put this block in your agent's "
            "global instruction file (for example ~/.claude/CLAUDE.md, ~/.codex/AGENTS.md or "
            "~/.config/opencode/AGENTS.md):",
            "",
            render_block(w).rstrip("\n"),
        ]
        return
    found = _present(w)
    for name, path in found:
        old = read_text(path)
        newline = "\r\n" if "\r\n" in old else "\n"
        block = render_block(w, _hooked(w, name)).replace("\n", newline)
        text = splice_block(old, block, str(path), newline)
        result.done.append(update_file(path, text, "rouse block"))
    if not found:
        result.printed += [
            f"None of CLAUDE.md, AGENTS.md, GEMINI.md exists in {w.project}; rouse does not create "
            "them. Put this block in your agent's instruction file:",
            "",
            render_block(w).rstrip("\n"),
        ]


def wire_cursor(w: Wiring, result: Wired) -> None:
    if w.project is None:
        result.printed += [
            "Cursor has no rules file for the global tree: paste this into Cursor Settings > "
            "Rules > User Rules:",
            "",
            *block_lines(w),
        ]
        return
    head = [
        "---",
        "description: rouse memory - read the pack at session start, read the guide "
        "before writing memory",
        "globs:",
        "alwaysApply: true",
        "---",
    ]
    rule = "\n".join([*head, *block_lines(w)]) + "\n"
    result.done.append(update_file(w.project / CURSOR_RULE, rule, "Cursor rule, always applied"))


def remove_rule(w: Wiring, result: Wired) -> None:
    if w.project is not None:
        rule = w.project / CURSOR_RULE
        remove_own(rule, lambda t: t.startswith(CURSOR_RULE_HEAD), "Cursor rule", result, False)


# -- the skill ----------------------------------------------------------------


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
    memory = _memory_flag(w)
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
