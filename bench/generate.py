"""Generate the SPEC §12 benchmark tree (and multiples of it).

At scale 1: 2,000 intentions, 1,000 tasks under half of them, 500 notes with
varied ages and origins, 50 reminders, 20 beliefs, 10 motivations — about
3,600 markdown files. Stamps are relative to ``now`` so that well over
1,100 records are due.
"""

from __future__ import annotations

import argparse
import os
import random
from datetime import datetime, timedelta
from pathlib import Path

INTENTIONS = "entrypoint/beliefs/motivations/intentions"
ORIGINS = ("owner", "system", "agent", "untrusted", "unknown")
WORDS = [
    "deploy",
    "staging",
    "postgres",
    "migration",
    "backup",
    "restore",
    "cache",
    "build",
    "nightly",
    "flaky",
    "latency",
    "billing",
    "invoice",
    "customer",
    "onboarding",
    "docs",
    "release",
    "rollback",
    "schema",
    "index",
    "queue",
    "worker",
    "cron",
    "alert",
    "pager",
    "dashboard",
    "budget",
    "review",
    "security",
    "token",
]


def _stamp(value: datetime) -> str:
    return value.strftime("%Y-%m-%d %H:%M")


def _write(path: Path, fields: dict[str, str], body: str, mtime: datetime | None = None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    head = "".join(f"{key}: {value}\n" for key, value in fields.items())
    path.write_text(f"---\n{head}---\n{body}\n", encoding="utf-8")
    if mtime is not None:
        seconds = mtime.timestamp()
        os.utime(path, (seconds, seconds))


def generate(root: Path, scale: int = 1, now: datetime | None = None, seed: int = 12) -> int:
    """Write the tree under ``root`` (which must not exist); return the file count."""
    rng = random.Random(seed)
    now = now or datetime.now().replace(second=0, microsecond=0)
    root.mkdir(parents=True)
    (root / "entrypoint").mkdir()
    (root / "entrypoint/rouse.md").write_text("# instructions\n" + "guidance line\n" * 100)
    count = 1
    for i in range(20 * scale):
        words = " ".join(rng.sample(WORDS, 12))
        _write(
            root / f"entrypoint/beliefs/belief-b{i:05d}.md",
            {"origin": "owner"},
            f"Belief {i}: {words}.",
        )
        count += 1
    for i in range(10 * scale):
        _write(
            root / f"entrypoint/beliefs/motivations/motivation-m{i:05d}.md",
            {"keywords": ", ".join(rng.sample(WORDS, 3)), "origin": "owner"},
            f"Signal {i}: {' '.join(rng.sample(WORDS, 10))}.",
        )
        count += 1
    for i in range(2000 * scale):
        moved = now - timedelta(hours=rng.randint(3, 24 * 20))
        directory = root / INTENTIONS / f"i{i:06d}"
        _write(
            directory / "intention.md",
            {
                "status": "open" if i % 10 else "done",
                "opened": _stamp(moved - timedelta(days=3)),
                "last-moved": _stamp(moved),
                "closes-when": f"the {rng.choice(WORDS)} check passes for item {i}",
                "origin": rng.choice(ORIGINS[:3]),
            },
            f"Intention {i}: {' '.join(rng.sample(WORDS, 20))}.\n" * 3,
        )
        count += 1
        if i % 2 == 0:
            task_moved = now - timedelta(hours=rng.randint(1, 60))
            _write(
                directory / f"t{i:06d}" / "task.md",
                {
                    "status": "pending",
                    "opened": _stamp(task_moved),
                    "last-moved": _stamp(task_moved),
                },
                f"Task for {i}.",
            )
            count += 1
    for i in range(500 * scale):
        age = timedelta(hours=rng.choice((1, 5, 20, 30, 50, 200, 900)))
        _write(
            root / f"inventory/notes/n{i:05d}.md",
            {
                "updated": _stamp(now - age),
                "keywords": ", ".join(rng.sample(WORDS, 4)),
                "origin": rng.choice(ORIGINS),
            },
            f"Note {i}: {' '.join(rng.sample(WORDS, 25))}.\n" * 4,
            mtime=now - age,
        )
        count += 1
    for i in range(50 * scale):
        due = now + timedelta(hours=rng.randint(-48, 48))
        fields = {
            "status": "pending",
            "due": _stamp(due),
            "opened": _stamp(now - timedelta(days=5)),
        }
        if i % 3 == 0:
            fields["nag"] = "30m"
        _write(root / f"inventory/reminders/r{i:05d}/reminder.md", fields, f"Remind {i}.")
        count += 1
    return count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("root", type=Path)
    parser.add_argument("--scale", type=int, default=1)
    args = parser.parse_args()
    print(f"wrote {generate(args.root, args.scale)} files under {args.root}")


if __name__ == "__main__":
    main()
