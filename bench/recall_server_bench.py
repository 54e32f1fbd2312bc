"""Warm recall in a long-lived process (the MCP server): one ``Tools`` instance,
many queries, on a tree of 3,000 notes (issue 32, item 5).

Lays 3,000 notes (our own words, ``bench/generate.py``'s vocabulary), lets
the first recall build the index (vectors too, when the semantic extra is
installed), then times each mode's warm recall through one MCP ``Tools``
instance, as the server runs it:
  - alone:    no sweeper watches the tree;
  - watched:  a long-running ``rouse sweep`` watches it (Linux), so the
              server can ask it what changed instead of checking every file;
  - one edit: alone, after one note was edited between two queries.
It prints medians in milliseconds; it measures and asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from generate import WORDS
from rouse.agents.mcp_tools import Tools
from rouse.pack import semantic
from run import rouse_command, watching

QUERY = "restore the database after a failed migration"


def lay_notes(root: Path, count: int) -> None:
    rng = random.Random(32)
    notes = root / "inventory" / "notes"
    notes.mkdir(parents=True)
    (root / "entrypoint").mkdir()
    (root / "entrypoint" / "rouse.md").write_text("bench tree\n", encoding="utf-8")
    for i in range(count):
        keywords = ", ".join(rng.sample(WORDS, 2))
        body = " ".join(rng.choice(WORDS) for _ in range(60))
        text = f"---\nkeywords: {keywords}\nupdated: 2026-01-01 10:00\n---\nNote {i}: {body}.\n"
        (notes / f"note-{i:04d}.md").write_text(text, encoding="utf-8")
    past = time.time() - 60  # out of the index's "written just now" window
    for path in root.rglob("*.md"):
        os.utime(path, (past, past))


def warm(tools: Tools, mode: str, runs: int, edit: Path | None = None) -> tuple[float, float]:
    """Median wall and CPU milliseconds of a warm recall (on a loaded machine the CPU
    time says what the recall itself cost)."""
    tools.recall(QUERY, mode=mode)  # the first: builds (or catches up) the index
    times, used = [], []
    for run in range(runs):
        if edit is not None:
            with edit.open("a", encoding="utf-8") as handle:
                handle.write(f"Edited in run {run}: the rollback needs a postgres snapshot.\n")
            past = time.time() - 10  # out of the "written just now" window
            os.utime(edit, (past, past))
        started, cpu = time.perf_counter(), time.process_time()
        tools.recall(QUERY, mode=mode)
        times.append(time.perf_counter() - started)
        used.append(time.process_time() - cpu)
    return statistics.median(times) * 1000, statistics.median(used) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--notes", type=int, default=3000)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--no-watch", action="store_true", help="leave out the watched tree")
    args = parser.parse_args()
    modes = ["words", "meaning", "both"] if semantic.available() else ["words"]
    watch = not args.no_watch and sys.platform.startswith("linux")
    with tempfile.TemporaryDirectory(prefix="rouse-recall-server-") as scratch:
        root = Path(scratch) / "alone" / "memory"
        watched = Path(scratch) / "watched" / "memory"
        lay_notes(root, args.notes)
        os.environ["ROUSE_STAMP_KEY"] = str(Path(scratch) / "no-key")
        os.environ["ROUSE_PROBES"] = "off"
        results: dict[str, dict[str, tuple[float, float]]] = {}
        tools = Tools(root)
        edit = root / "inventory" / "notes" / "note-0001.md"
        for mode in modes:
            results[mode] = {
                "alone": warm(tools, mode, args.runs),
                "one edit": warm(tools, mode, args.runs, edit),
            }
        if watch:
            lay_notes(watched, args.notes)
            sweeper = watching(rouse_command(), watched)
            try:
                tools = Tools(watched)
                for mode in modes:
                    results[mode]["watched"] = warm(tools, mode, args.runs)
            finally:
                sweeper.terminate()
                sweeper.wait(timeout=60)
    print(
        f"warm recall {QUERY!r} in one process, {args.notes} notes, "
        f"median of {args.runs}: wall / CPU ms"
    )
    columns = ["alone", "watched", "one edit"] if watch else ["alone", "one edit"]
    print(f"  {'mode':<9}" + "".join(f"{c:>16}" for c in columns))
    for mode, found in results.items():
        cells = (f"{found[c][0]:.1f} / {found[c][1]:.1f}" for c in columns)
        print(f"  {mode:<9}" + "".join(f"{cell:>16}" for cell in cells))


if __name__ == "__main__":
    main()
