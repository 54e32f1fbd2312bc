"""The code before a change, for a benchmark to time beside the code as it is.

:func:`checkout` exports a git revision's ``src/`` into a scratch directory (``git
archive``: no worktree registered, nothing in the repository touched) and compiles it
to bytecode, as an install is; :func:`env_for` is the environment that runs this
interpreter's ``rouse`` script on that source instead (``PYTHONPATH`` comes before the
editable install's path).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


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
    source = target / "src"
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(source / "rouse")], check=True)
    return source


def env_for(source: Path | None) -> dict[str, str]:
    """The environment a timed run gets: as it is, or with ``source`` first on the path."""
    env = dict(os.environ)
    if source is not None:
        env["PYTHONPATH"] = str(source)
    return env


def describe(ref: str) -> str:
    """``ref`` and the commit it names, for the report."""
    done = subprocess.run(
        ["git", "-C", str(REPO), "log", "-1", "--format=%h %s", ref],
        capture_output=True,
        text=True,
    )
    return f"{ref} ({done.stdout.strip()[:72]})"
