"""The UserPromptSubmit hook's latency (issue 13, item 4): measures and prints; asserts nothing.

On the SPEC §12 tree (bench/generate.py, ~3,600 files) after one `rouse sweep
--once` has delivered every due record to the file sink (~1,100 nudge files,
all vouched for by the ledger), each as a process, the way an agent runs it:

- python:        `python -c pass`, the floor any Python hook pays;
- session start: the SessionStart hook (the pack, and the session's seen-set);
- prompt, idle:  the prompt hook with nothing new — what almost every prompt
                 costs (a listing of .rouse/nudges and the seen-set, no output);
- prompt, 1 new: one wake the session has not seen (the ledger, a warm walk);
- prompt, all:   a session with no seen-set at all, shown every standing wake.

Each figure is the median of --runs runs (default 15). Run:
`.venv/bin/python bench/prompt_hook_bench.py [--scale 1] [--runs 15]`.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from generate import generate

NOW = datetime(2026, 3, 16, 12, 0)
STAMP = "%Y-%m-%d %H:%M"


def rouse_command() -> list[str]:
    """The installed ``rouse`` script next to this Python (what `rouse wire` pins)."""
    script = Path(sys.executable).parent / "rouse"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "rouse"]


def hook(root: Path, event: str, session: str) -> tuple[float, str]:
    stdin = json.dumps({"session_id": session, "hook_event_name": event, "cwd": str(root)})
    command = [*rouse_command(), "pack", "--memory", str(root), "--hook", "claude"]
    command += ["--now", NOW.strftime(STAMP)]
    start = time.perf_counter()
    done = subprocess.run(command, input=stdin, capture_output=True, text=True, check=False)
    took = time.perf_counter() - start
    assert done.returncode == 0 and not done.stderr, done.stderr
    return took, done.stdout


def median(runs: int, once: Callable[[], float]) -> float:
    return statistics.median(once() for _ in range(runs))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--scale", type=int, default=1)
    parser.add_argument("--runs", type=int, default=15)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch) / "memory"
        files = generate(root, options.scale, now=NOW)
        sweep = ["sweep", "--once", "-q", "--now", NOW.strftime(STAMP)]
        swept = subprocess.run(
            [*rouse_command(), "--memory", str(root), *sweep],
            capture_output=True,
            text=True,
            check=False,
        )
        assert swept.returncode == 0, swept.stderr
        nudges = sorted(p.name for p in (root / ".rouse" / "nudges").glob("*.md"))
        print(f"§12 tree ×{options.scale}: {files} .md files, {len(nudges)} nudge files")
        rows: list[tuple[str, float]] = []

        def python() -> float:
            start = time.perf_counter()
            subprocess.run([sys.executable, "-c", "pass"], check=True)
            return time.perf_counter() - start

        rows.append(("python -c pass", median(options.runs, python)))
        rows.append(
            (
                "session start (the pack)",
                median(options.runs, lambda: hook(root, "SessionStart", "s")[0]),
            )
        )
        idle = [hook(root, "UserPromptSubmit", "s") for _ in range(options.runs)]
        assert all(out == "" for _, out in idle), "the idle prompt hook printed something"
        rows.append(("prompt, nothing new", statistics.median(t for t, _ in idle)))

        seen = root / ".rouse" / "sessions" / "s.json"

        def one_new() -> float:
            seen.write_text(json.dumps({"seen": nudges[:-1]}))
            took, out = hook(root, "UserPromptSubmit", "s")
            assert out.startswith("rouse: 1 record(s) woke you"), out[:200]
            return took

        rows.append(("prompt, one new wake", median(options.runs, one_new)))

        def every() -> float:
            seen.unlink(missing_ok=True)
            took, out = hook(root, "UserPromptSubmit", "s")
            assert out.startswith("rouse: "), out[:200]
            return took

        rows.append(("prompt, no seen-set (all)", median(options.runs, every)))
        for name, seconds in rows:
            print(f"  {name:<30}{seconds * 1000:>8.1f} ms  (median of {options.runs})")


if __name__ == "__main__":
    main()
