"""What ``rouse check`` says with a stamp key (issue 31, item 15): a rejected
``.rouse/cache/origins.json`` is named, and every context file the pack
quarantines gets a vouching command of its own. Real ``rouse`` processes.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import BELIEFS, MakeTree

PERSONA = "persona.md"
BELIEF = f"{BELIEFS}/belief-small-steps.md"


@pytest.fixture
def tree(make_tree: MakeTree) -> Path:
    return make_tree(
        {
            PERSONA: "---\norigin: owner\n---\nTerse.\n",  # typed by hand: not signed
            BELIEF: "---\norigin: system\n---\nSmall reversible steps.\n",
            f"{BELIEFS}/belief-plain.md": "---\n---\nNo origin at all.\n",
        }
    )


def check(root: Path, key_path: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROUSE_")}
    env["ROUSE_STAMP_KEY"] = str(key_path)
    return subprocess.run(
        [sys.executable, "-m", "rouse", "--memory", str(root), "check"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def test_a_nested_json_bomb_in_the_origins_cache_is_named(tree: Path, key_path: Path) -> None:
    (tree / ".rouse/cache").mkdir(parents=True)
    bomb = "[" * 50_000 + "]" * 50_000
    (tree / ".rouse/cache/origins.json").write_text(f'{{"version": 1, "entries": {{"x": {bomb}}}}}')
    said = check(tree, key_path)
    assert ".rouse/cache/origins.json" in said.stdout + said.stderr
    assert "internal error" not in said.stderr


def test_each_quarantined_context_file_gets_its_own_vouching_command(
    tree: Path, key_path: Path
) -> None:
    said = check(tree, key_path)
    text = said.stdout + said.stderr
    for rel in (PERSONA, BELIEF, f"{BELIEFS}/belief-plain.md"):
        lines = [line for line in text.splitlines() if line.startswith(f"warn: {rel}")]
        assert lines, (rel, text)
        assert any(f"rouse stamp --origin owner {rel}" in line for line in lines), lines
