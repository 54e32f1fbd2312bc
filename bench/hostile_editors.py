"""Editors that save in place, racing every rouse writer: is any line lost?

One run, for ``--seconds``, on a fresh ``rouse init`` tree:

- a sweeper: ``rouse sweep --once`` again and again, each at a later ``--now``,
  so every tick stamps every record;
- two movers: ``rouse move A|B --note <marker>``, in turn;
- ``rouse new task … --under`` both records, again and again;
- an appending editor on record A: open for append, write one line, close;
- a truncating editor on record B: open, read, truncate, pause, write it all
  back with one more line, close — holding the file open for writing the
  whole time, as an editor saving in place does.

Then every line an editor wrote and every note a mover was told landed
(exit 0) must be in the files, and every header must still hold its status,
opened and closes-when. Prints lines written, lines lost and damage per run.

    python bench/hostile_editors.py [--runs 3] [--seconds 40]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

A = "example-stabilise-nightly-build"
B = "trunc-target"
START = datetime(2099, 1, 1, 0, 0)


def _rouse(memory: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ROUSE_STAMP_KEY": str(memory.parent / "no-key"), "ROUSE_PROBES": "off"}
    return subprocess.run(
        [sys.executable, "-m", "rouse", "--memory", str(memory), *args],
        capture_output=True,
        text=True,
        env=env,
    )


def _record_file(memory: Path, slug: str) -> Path:
    found = list(memory.glob(f"entrypoint/**/{slug}/intention.md"))
    assert len(found) == 1, found
    return found[0]


def run_once(workdir: Path, seconds: float) -> dict[str, Any]:
    """One mixed run; returns counts and whatever was lost or damaged."""
    done = subprocess.run(
        [sys.executable, "-m", "rouse", "init", str(workdir), "--no-examples"],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise SystemExit(done.stderr)
    memory = workdir / "memory"
    for slug in (A, B):
        made = _rouse(memory, "new", "intention", slug, "--set", f"closes-when={slug} is done")
        if made.returncode != 0:
            raise SystemExit(made.stderr)
    file_a, file_b = _record_file(memory, A), _record_file(memory, B)
    stop = threading.Event()
    lock = threading.Lock()
    result: dict[str, Any] = {
        "editor_lines": 0,
        "move_notes": 0,
        "moves_refused": 0,
        "sweeps": 0,
        "news": 0,
    }
    expected: dict[str, list[str]] = {str(file_a): [], str(file_b): []}

    def count(key: str, path: Path | None = None, marker: str | None = None) -> None:
        with lock:
            result[key] += 1
            if path is not None and marker is not None:
                expected[str(path)].append(marker)

    def sweeper() -> None:
        step = 0
        while not stop.is_set():
            when = START + timedelta(hours=3 * step)
            _rouse(memory, "sweep", "--once", "--now", when.strftime("%Y-%m-%d %H:%M"))
            step += 1
            count("sweeps")

    def mover(number: int) -> None:
        n = 0
        while not stop.is_set():
            slug, path = (A, file_a) if n % 2 == 0 else (B, file_b)
            marker = f"<mover{number}-{n}>"
            moved = _rouse(memory, "move", slug, "--note", marker)
            if moved.returncode == 0:
                count("move_notes", path, marker)
            else:
                count("moves_refused")
            n += 1

    def newer() -> None:
        n = 0
        while not stop.is_set():
            under = A if n % 2 == 0 else B
            if _rouse(memory, "new", "task", f"t{n}", "--under", under).returncode == 0:
                count("news")
            n += 1

    def appending_editor() -> None:
        n = 0
        while not stop.is_set():
            marker = f"<append-{n}>"
            with open(file_a, "a") as handle:
                handle.write(marker + "\n")
            count("editor_lines", file_a, marker)
            n += 1
            time.sleep(0.005)

    def truncating_editor() -> None:
        n = 0
        while not stop.is_set():
            marker = f"<trunc-{n}>"
            with open(file_b, "r+") as handle:
                text = handle.read()
                handle.seek(0)
                handle.truncate()
                handle.flush()
                time.sleep(0.002)
                handle.write(text + marker + "\n")
            count("editor_lines", file_b, marker)
            n += 1
            time.sleep(0.01)

    workers = [
        threading.Thread(target=target, args=args)
        for target, args in (
            (sweeper, ()),
            (mover, (1,)),
            (mover, (2,)),
            (newer, ()),
            (appending_editor, ()),
            (truncating_editor, ()),
        )
    ]
    for worker in workers:
        worker.start()
    time.sleep(seconds)
    stop.set()
    for worker in workers:
        worker.join()
    lost: list[str] = []
    damaged: list[str] = []
    for path in (file_a, file_b):
        text = path.read_text()
        lost += [f"{path.parent.name}: {m}" for m in expected[str(path)] if m not in text]
        for key in ("status:", "opened:", "closes-when:"):
            if key not in text.split("---", 2)[1]:
                damaged.append(f"{path.parent.name}: no {key[:-1]}")
        damaged += [str(p.name) for p in path.parent.glob("*.conflict-*")]
    result["lost"] = lost
    result["damaged"] = damaged
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=40.0)
    args = parser.parse_args()
    total_lost = 0
    print(f"{args.runs} run(s) of {args.seconds:g}s: sweeper + 2 movers + new + 2 editors")
    for run in range(1, args.runs + 1):
        with tempfile.TemporaryDirectory() as tmp:
            got = run_once(Path(tmp), args.seconds)
        total_lost += len(got["lost"])
        print(
            f"run {run}: editor lines {got['editor_lines']}, move notes {got['move_notes']} "
            f"(refused {got['moves_refused']}), sweeps {got['sweeps']}, new {got['news']} — "
            f"lines lost {len(got['lost'])}, damaged {len(got['damaged'])}"
        )
        for line in (got["lost"] + got["damaged"])[:10]:
            print(f"    {line}")
    print(f"lines lost in all: {total_lost}")


if __name__ == "__main__":
    main()
