"""The code before a change, for a benchmark to time beside the code as it is.

:func:`checkout` exports a git revision's ``src/`` into a scratch directory (``git
archive``: no worktree registered, nothing in the repository touched); :func:`compiled`
byte-compiles a ``src/`` as an install is (under PYTHONDONTWRITEBYTECODE, or after an
edit, each timed process would otherwise compile the modules again, and the bench would
measure that); :func:`env_for` is the environment that runs this interpreter's
``rouse`` script on a ``src/``. Both sides load alike: the checkout's own ``src/``
(``HERE``) goes first on ``PYTHONPATH`` too, not last through the editable install.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
#: this checkout's source: "the code as it is"
HERE = REPO / "src"


def checkout(ref: str, into: Path) -> Path:
    """``ref``'s ``src/`` under ``into``, compiled; returns that ``src`` directory."""
    revision = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--verify", f"{ref}^{{commit}}"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    archive = into / f"{revision[:12]}.tar"
    subprocess.run(
        ["git", "-C", str(REPO), "archive", "--output", str(archive), revision, "src"],
        check=True,
    )
    target = into / revision[:12]
    with tarfile.open(archive) as tar:
        tar.extractall(target, filter="data")
    archive.unlink()
    return compiled(target / "src")


def compiled(source: Path) -> Path:
    """``source`` (a ``src`` directory) with its ``rouse`` byte-compiled; returns it."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(source / "rouse")], check=True)
    return source


def env_for(source: Path) -> dict[str, str]:
    """The environment a timed run gets: ``source`` first on the path."""
    return {**os.environ, "PYTHONPATH": str(source)}


def describe(ref: str) -> str:
    """``ref`` and the commit it names, for the report."""
    done = subprocess.run(
        ["git", "-C", str(REPO), "log", "-1", "--format=%h %s", ref],
        capture_output=True,
        text=True,
    )
    return f"{ref} ({done.stdout.strip()[:72]})"
