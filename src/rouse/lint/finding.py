"""A lint finding, and the small helpers every rule uses."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from rouse.core.header import read_capped
from rouse.core.tree import File, Problem, Tree

Level = Literal["error", "warn"]


MAX_CHECK_BYTES = 8 * 1024 * 1024


@dataclass
class Finding:
    """One lint finding. ``message`` says what is wrong and what to do."""

    level: Level
    path: str
    message: str
    line: int | None = None

    def render(self) -> str:
        where = self.path if self.line is None else f"{self.path}:{self.line}"
        return f"{self.level}: {where}: {self.message}"

    def sort_key(self) -> tuple[int, str, int, str]:
        return (0 if self.level == "error" else 1, self.path, self.line or 0, self.message)


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
