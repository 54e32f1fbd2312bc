"""The tree's git: its own repository when it is laid, and whether a file is tracked.

``rouse init`` gives a new tree a repository of its own (one commit), unless it
sits in one already or git is missing; ``rouse promote`` moves a tracked file
with ``git mv`` (:mod:`rouse.records.promoting`). Each step says what it did
rather than fail: a tree without git is a tree all the same.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path


def own_repository(target: Path) -> str:
    """Give the tree its own repository, unless it sits in one already or git is missing."""
    git = shutil.which("git")
    if git is None:
        return "git not found: the tree has no repository"
    inside = subprocess.run(
        [git, "rev-parse", "--is-inside-work-tree"],
        cwd=target.parent,
        capture_output=True,
        text=True,
        check=False,
    )
    if inside.returncode == 0 and inside.stdout.strip() == "true":
        return (
            "the tree sits inside an existing git work tree: no repository made, nothing committed"
        )
    identity = ["-c", "user.name=rouse", "-c", "user.email=rouse@localhost"]
    configured = subprocess.run(
        [git, "config", "user.email"], cwd=target, capture_output=True, check=False
    )
    steps = [
        [git, "init", "-q"],
        [git, "add", "-A"],
        [
            git,
            *([] if configured.returncode == 0 else identity),
            "commit",
            "-q",
            "-m",
            "rouse init",
        ],
    ]
    for step in steps:
        done = subprocess.run(step, cwd=target, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            return (
                f"git {step[-1]} failed ({done.stderr.strip()}): the tree is laid but not committed"
            )
    return "made the tree's own git repository (one commit)"


def tracked(root: Path, rel: str) -> bool:
    """Whether git tracks ``rel`` in the repository ``root`` sits in (False without git)."""
    git = shutil.which("git")
    if git is None:
        return False
    found = subprocess.run(
        [git, "ls-files", "--error-unmatch", "--", rel], cwd=root, capture_output=True, check=False
    )
    return found.returncode == 0
