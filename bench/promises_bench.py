"""The promise matcher against its labelled corpus (issue 33): precision and recall.

Each line of ``tests/data/promises_corpus.jsonl`` is one turn: what the user
wrote, the agent's final answer, and whether the turn holds a promise that
should become a record. :func:`rouse.agents.promises.find` reads each turn as
the Stop hook does; this prints precision and recall, lists every miss and
every false alarm, and exits 1 when a target is missed (targets: precision
≥ 0.95, recall ≥ 0.8). tests/test_promises.py asserts the same targets.
Run: ``.venv/bin/python bench/promises_bench.py``.
"""

from __future__ import annotations

import json
import sys
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
    return 0 if precision >= PRECISION and recall >= RECALL else 1


if __name__ == "__main__":
    sys.exit(main())
