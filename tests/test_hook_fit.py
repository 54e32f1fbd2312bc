"""The hook never cuts what it promises whole (issue 12, item 5).

``rouse pack --hook claude|codex`` must fit the agent's hard limit on hook
output (Claude Code: 10,000 characters; Codex: the hook's own ``additionalContextLimit``
of 10,000 tokens counted as bytes / 4, which ``rouse wire`` sets, so 10,000
characters of any script; past them each tool swaps the text for a preview).
When the context layers alone are over it, whole context files are kept in
order and the rest are named by path under a loud first line; the due
section keeps its first entries; no line is ever cut.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import BELIEFS, INTENTIONS, NOW, MakeTree, stamp
from rouse.agents import hook, wire
from rouse.pack.build import build_pack

WHEN = stamp(NOW)


def belief(i: int, filler: str = "x") -> str:
    """A belief of many whole sentences, each tagged with its belief's number."""
    lines = [f"Sentence {j} of belief {i:02}: " + filler * 90 + "." for j in range(14)]
    return "\n".join(lines) + "\n"


def big_tree(make_tree: MakeTree, filler: str = "x") -> Path:
    files = {f"{BELIEFS}/belief-b{i:02}.md": belief(i, filler) for i in range(12)}
    files.update(
        {f"{INTENTIONS}/i{i:03d}/intention.md": "---\nstatus: open\n---\n" for i in range(60)}
    )
    return make_tree(files)


def rouse(root: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ROUSE_", "CLAUDE_"))}
    env["ROUSE_STAMP_KEY"] = str(root.parent / "no-key")
    done = subprocess.run(
        [sys.executable, "-m", "rouse", "--memory", str(root), "--now", WHEN, *args],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def assert_whole(out: str, full: str, filler: str = "x") -> list[int]:
    """Every belief is whole or named by path; the kept ones come first, in order."""
    kept = []
    for i in range(12):
        sentences = [line for line in belief(i, filler).splitlines() if line]
        present = [s for s in sentences if s in out]
        assert present in ([], sentences), f"belief {i} is cut: {len(present)} of 14 lines"
        if present:
            kept.append(i)
        else:
            assert f"{BELIEFS}/belief-b{i:02}.md" in out, f"belief {i} is neither shown nor named"
    assert kept == list(range(len(kept))), kept
    # nothing is cut mid-line: every line is a whole line of the unfitted pack, or one
    # of the lines fitting adds (the warning, the files left out, the counts)
    added = ("WARNING", "  … and ", "not listed:", "belief [")
    full_lines = set(full.splitlines())
    for line in out.splitlines():
        assert line in full_lines or line.startswith(added), f"cut or unknown line: {line!r}"
    return kept


def test_claude_hook_keeps_context_files_whole_and_names_the_rest(make_tree: MakeTree) -> None:
    root = big_tree(make_tree)
    full = rouse(root, "pack", "--max-chars", "10000000")
    assert len(full) > 2 * hook.HOOK_LIMIT
    out = rouse(root, "pack", "--hook", "claude")
    assert len(out) <= hook.HOOK_LIMIT
    kept = assert_whole(out, full)
    assert 1 <= len(kept) < 12
    first = out.splitlines()[0]
    assert first.startswith("WARNING") and f"{12 - len(kept)} of 12 context files" in first
    # the due section keeps its first entries, and says how many more there are
    shown = [line for line in out.splitlines() if line.startswith("  intention/")]
    assert len(shown) >= 3
    assert f"  … and {60 - len(shown)} more — rouse due" in out
    # warnings are never cut, and come last
    warning = next(line for line in full.splitlines() if "context layers are" in line)
    assert warning in out and out.index("warnings:") > out.index("not listed:")


def test_codex_hook_fits_characters_within_the_limit_it_sets(make_tree: MakeTree) -> None:
    root = big_tree(make_tree, filler="я")  # two bytes a character (three for CJK)
    full = rouse(root, "pack", "--max-chars", "10000000")
    payload = json.loads(rouse(root, "pack", "--hook", "codex"))
    context = payload["hookSpecificOutput"]["additionalContext"]
    # the hook's additionalContextLimit (tokens, counted as bytes / 4) holds it whole
    assert len(context) <= hook.HOOK_LIMIT < len(context.encode("utf-8"))
    assert len(context.encode("utf-8")) / 4 <= wire.CODEX_CONTEXT_LIMIT
    in_codex = assert_whole(context, full, "я")
    claude = rouse(root, "pack", "--hook", "claude")  # the same characters as Claude Code's
    assert len(assert_whole(claude, full, "я")) == len(in_codex) >= 2


def test_a_plain_pack_keeps_the_first_due_entries_and_every_belief(make_tree: MakeTree) -> None:
    root = big_tree(make_tree)
    pack = build_pack(root, NOW, max_chars=2000, probes_enabled=False)
    shown = [line for line in pack.text.splitlines() if line.startswith("  intention/")]
    assert len(shown) >= 3
    assert all(s in pack.text for i in range(12) for s in belief(i).splitlines())
    assert "exceed --max-chars 2000" in pack.text


def test_cap_cuts_at_a_line_end() -> None:
    text = "".join(f"line {i:05}\n" for i in range(3000))
    capped = hook.cap(text)
    assert len(capped) <= hook.HOOK_LIMIT
    body, tail = capped.rsplit("\n…", 1)
    assert all(line in text.splitlines() for line in body.splitlines())
    assert "run `rouse pack` for the rest" in tail
