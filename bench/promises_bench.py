"""The promise matcher against its labelled corpus (issue 33): precision and recall.

Each line of ``tests/data/promises_corpus.jsonl`` is one turn: what the user
wrote, the agent's final answer, and whether the turn holds a promise that
should become a record. :func:`rouse.agents.promises.find` reads each turn as
the Stop hook does; this prints precision and recall, lists every miss and
every false alarm, and exits 1 when a target is missed (targets: precision
≥ 0.95, recall ≥ 0.8). tests/test_promises.py asserts the same targets.
With ``--cost`` it also times the hook itself, as Claude Code runs it (the
installed ``rouse`` script beside this interpreter, the Stop input on stdin, a
transcript on disk) against ``python -c pass``: medians of 20 runs each,
interleaved, for a turn with nothing to say (target ≤ 1.5×), a turn whose words
hold a cue but no promise (the phrases are read), and one that asks.
Run: ``.venv/bin/python bench/promises_bench.py [--cost]``.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

from rouse.agents.promises import find

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "data" / "promises_corpus.jsonl"
PRECISION, RECALL = 0.95, 0.8


def load(path: Path = CORPUS) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


def score(turns: list[dict[str, object]]) -> tuple[float, float, list[str], list[str]]:
    """(precision, recall, the missed turns, the false alarms)."""
    missed, alarms, hits = [], [], 0
    for turn in turns:
        found = find(str(turn["user"]), str(turn["agent"]))
        if turn["promise"] and found is not None:
            hits += 1
        elif turn["promise"]:
            missed.append(f"{turn['user']!r} / {turn['agent']!r}")
        elif found is not None:
            alarms.append(f"{found.origin}: {found.said!r}")
    promised = sum(1 for turn in turns if turn["promise"])
    precision = hits / (hits + len(alarms)) if hits + len(alarms) else 1.0
    recall = hits / promised if promised else 1.0
    return precision, recall, missed, alarms


def _transcript(folder: Path, prompt: str) -> Path:
    log = folder / f"t{abs(hash(prompt))}.jsonl"
    at = datetime.now().astimezone().isoformat()
    entry = {"type": "user", "uuid": "u1", "timestamp": at}
    entry["message"] = {"role": "user", "content": prompt}
    log.write_text(json.dumps(entry) + "\n")
    return log


def hook_cost(runs: int = 20) -> bool:
    """Time the hook against ``python -c pass``; True when the quiet turn is within 1.5×."""
    from rouse.records.scaffold import init

    script = Path(sys.executable).parent / "rouse"
    with tempfile.TemporaryDirectory() as folder:
        tree = Path(folder) / "memory"
        init(tree, datetime.now().replace(microsecond=0), examples=False)
        old = time.time() - 3600
        for path in tree.rglob("*"):
            os.utime(path, (old, old))
        turns = {
            "nothing to say": ("Fix the typo in the README.", "Fixed the typo."),
            "a cue, no promise": ("How does it work?", "I'll explain: each wake is read once."),
            "asks": ("Remind me to renew the cert on Friday.", "Sure."),
        }
        commands: dict[str, tuple[list[str], str]] = {
            "python -c pass": ([sys.executable, "-c", "pass"], "")
        }
        for name, (prompt, answer) in turns.items():
            data = {"session_id": f"s-{len(commands)}", "hook_event_name": "Stop"}
            data |= {"transcript_path": str(_transcript(Path(folder), prompt))}
            data |= {"last_assistant_message": answer, "stop_hook_active": False}
            argv = [str(script), "pack", "--memory", str(tree), "--hook", "claude", "--promises"]
            commands[name] = (argv, json.dumps(data))
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ROUSE_", "CLAUDE_"))}
        times: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(runs):
            for name, (argv, stdin) in commands.items():
                start = time.perf_counter()
                subprocess.run(
                    argv, input=stdin, env=env, capture_output=True, text=True, check=True
                )
                times[name].append(time.perf_counter() - start)
    floor = statistics.median(times["python -c pass"])
    for name, taken in times.items():
        median = statistics.median(taken)
        print(f"{name:>18}: {1000 * median:6.1f} ms median of {runs} ({median / floor:.2f}×)")
    return statistics.median(times["nothing to say"]) <= 1.5 * floor


def main() -> int:
    turns = load()
    precision, recall, missed, alarms = score(turns)
    promised = sum(1 for turn in turns if turn["promise"])
    print(f"turns: {len(turns)} ({promised} with a promise, {len(turns) - promised} without)")
    print(f"precision: {precision:.3f} (target ≥ {PRECISION})")
    print(f"recall:    {recall:.3f} (target ≥ {RECALL})")
    for line in missed:
        print(f"  missed: {line}")
    for line in alarms:
        print(f"  false alarm: {line}")
    fast = hook_cost() if "--cost" in sys.argv[1:] else True
    return 0 if precision >= PRECISION and recall >= RECALL and fast else 1


if __name__ == "__main__":
    sys.exit(main())
