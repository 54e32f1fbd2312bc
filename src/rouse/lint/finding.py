"""The small helpers every lint rule uses (a finding is :class:`rouse.trust.origins.Finding`)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from rouse.core.header import read_capped
from rouse.core.tree import File, Problem, Tree
from rouse.trust.origins import Finding

Level = Literal["error", "warn"]
MAX_CHECK_BYTES = 8 * 1024 * 1024


def article(noun: str) -> str:
    return f"an {noun}" if noun[:1] in "aeiou" else f"a {noun}"


def error_finding(problem: Problem, fix: str = "") -> Finding:
    message = f"{problem.message} — {fix}" if fix else problem.message
    return Finding("error", problem.path, message, problem.line)


def read_bytes(tree: Tree, file: File) -> bytes | Finding:
    try:
        return read_capped(Path(tree.root) / file.rel, MAX_CHECK_BYTES + 1)
    except OSError as exc:
        return Finding(
            "error", file.rel, f"cannot read: {exc.strerror} — check the file's permissions"
        )
