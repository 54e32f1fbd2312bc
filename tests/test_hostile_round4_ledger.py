"""Hold under attack, round four (issue 31): the sweeper's ledger and its stamps.

- 1: a record whose ``swept:`` stamp is lost after a delivered wake is never
  silenced: the stamp is re-derived from the ledger and the record wakes again
  at its next step; ``check`` warns about the damaged stamp.
- 10: one damaged ledger row (JSON nested 1,000 deep) is skipped and reported;
  ``rouse log`` answers, the sweep goes on and exits 0, the record's wake is
  made again by the clock.
- 11: ``rouse log`` on a ledger that is garbage or a directory says so.

Real ``rouse`` processes on real trees; the ledger is forged with sqlite3.
"""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

from conftest import INTENTIONS, MakeTree

I1 = f"{INTENTIONS}/i1/intention.md"


def rouse(tree: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROUSE_")}
    env["ROUSE_STAMP_KEY"] = str(tree.parent / "no-key")
    return subprocess.run(
        [sys.executable, "-m", "rouse", "--memory", str(tree), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def answered(done: subprocess.CompletedProcess[str]) -> None:
    assert "internal error" not in done.stderr, done.stderr
    assert "Traceback" not in done.stderr, done.stderr


def intention(make_tree: MakeTree) -> Path:
    """An open intention last moved 2026-03-02 09:00 (stale after 2h: due at 11:00)."""
    return make_tree(
        {I1: "---\nstatus: open\nlast-moved: 2026-03-02 09:00\ncloses-when: it ships\n---\nbody\n"}
    )


def nudge_files(tree: Path) -> list[Path]:
    return sorted((tree / ".rouse" / "nudges").glob("*.md"))


def ledger(tree: Path) -> sqlite3.Connection:
    return sqlite3.connect(tree / ".rouse" / "ledger.sqlite3")


# -- item 1: a lost `swept:` never silences the record ------------------------------


def drop_line(path: Path, key: str, replacement: str | None = None) -> None:
    lines = path.read_text().splitlines(keepends=True)
    kept = [line for line in lines if not line.startswith(f"{key}:")]
    assert len(kept) == len(lines) - 1, f"no {key}: line in {path}"
    if replacement is not None:
        kept.insert(1, f"{key}: {replacement}\n")
    path.write_text("".join(kept))


def test_a_lost_swept_stamp_wakes_the_record_again(make_tree: MakeTree) -> None:
    tree = intention(make_tree)
    first = rouse(tree, "sweep", "--once", "--now", "2026-03-02 11:00")
    assert first.returncode == 0, first.stderr
    assert len(nudge_files(tree)) == 1
    record = tree / I1
    assert "swept: 2026-03-02 11:00" in record.read_text()
    drop_line(record, "swept")  # an agent rewrote the header; a restore from git
    check = rouse(tree, "check", "--now", "2026-03-02 13:00")
    answered(check)
    assert "without 'swept:'" in check.stdout + check.stderr, check.stdout
    again = rouse(tree, "sweep", "--once", "--now", "2026-03-02 14:00", "-v")
    answered(again)
    assert again.returncode == 0, again.stderr
    # woken again, as the clock says it is due (a new wake: the next step's)
    assert len(nudge_files(tree)) == 2, again.stderr
    text = record.read_text()
    assert "swept: 2026-03-02 14:00" in text and "nudges: 2" in text
    # and it settles: the next tick, before the next step, sends nothing more
    quiet = rouse(tree, "sweep", "--once", "--now", "2026-03-02 14:30")
    assert quiet.returncode == 0, quiet.stderr
    assert len(nudge_files(tree)) == 2


def test_an_unreadable_swept_stamp_is_rederived_and_named_by_check(
    make_tree: MakeTree,
) -> None:
    tree = intention(make_tree)
    assert rouse(tree, "sweep", "--once", "--now", "2026-03-02 11:00").returncode == 0
    record = tree / I1
    drop_line(record, "swept", "soon")
    check = rouse(tree, "check", "--now", "2026-03-02 11:30")
    answered(check)
    assert re.search(r"swept.*soon|soon.*swept", check.stdout + check.stderr), check.stdout
    # before the next step (11:00 + 2h) nothing is sent, but the stamp comes back
    early = rouse(tree, "sweep", "--once", "--now", "2026-03-02 11:30")
    assert early.returncode == 0, early.stderr
    assert len(nudge_files(tree)) == 1
    assert "swept: 2026-03-02 11:00" in record.read_text()
    # at the next step it wakes again
    later = rouse(tree, "sweep", "--once", "--now", "2026-03-02 13:05")
    assert later.returncode == 0, later.stderr
    assert len(nudge_files(tree)) == 2
