"""The pack benchmark (SPEC §12): rouse pack against a bare walk, side by side.

Generates the §12 tree (and a 10× one) under a temporary directory, then times
as separate processes, interleaved in one run:
  - bare:   a Python walk that stats every .md file and reads its first 512 bytes
  - first:  `rouse pack` with no cache in .rouse/
  - warm:   `rouse pack` again, cache in place
  - due:    `rouse due` (cache in place)
  - status: `rouse status` (cache in place)
  - watched: `rouse pack`, cache in place, on a twin tree a long-running
    `rouse sweep` watches (Linux; issue 24, item 4), after a pack that built
    the cache at the watcher's token ("watched first")
and prints medians (wall and CPU: on a loaded machine the CPU column says what
each run itself cost) and the ratios of the wall medians against the targets
(issue 24): warm ≤ 0.8× bare, first ≤ 1.5× bare, due and status ≤ 1.1× warm.
It exits 1 when a target is missed, so a regression is seen; it is a
benchmark, not a timed test.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from generate import generate

BARE = """
import os, sys
for directory, _, files in os.walk(sys.argv[1]):
    for name in files:
        if name.endswith(".md"):
            path = os.path.join(directory, name)
            os.stat(path)
            with open(path, "rb") as handle:
                handle.read(512)
"""
COMMANDS = ("bare", "first", "warm", "due", "status")
#: (what, against, at most): each target is one ratio of medians
TARGETS = (
    ("warm", "bare", 0.8),
    ("first", "bare", 1.5),
    ("due", "warm", 1.1),
    ("status", "warm", 1.1),
)


def _cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def timed(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system) of one run."""
    cpu, start = _cpu(), time.perf_counter()
    subprocess.run(
        command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env
    )
    return time.perf_counter() - start, _cpu() - cpu


def rouse_command() -> list[str]:
    """What an agent's hook runs: the installed ``rouse`` script beside this
    interpreter (``python -m rouse`` also imports runpy, ~9 ms more), else -m."""
    script = Path(sys.executable).parent / "rouse"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "rouse"]


def _verbs(rouse: list[str], root: Path, prefix: str = "") -> dict[str, list[str]]:
    memory = [*rouse, "--memory", str(root)]
    return {
        f"{prefix}first": [*memory, "pack"],
        f"{prefix}warm": [*memory, "pack"],
        f"{prefix}due": [*memory, "due"],
        f"{prefix}status": [*memory, "status"],
    }


def watching(rouse: list[str], root: Path) -> subprocess.Popen[bytes]:
    """A long-running sweeper on ``root`` whose clock stands before the tree was
    made (nothing comes due, so it writes nothing), once its watcher answers."""
    sweep = ["sweep", "--sink", "file", "--every", "3600", "--now", "2000-01-01 00:00"]
    proc = subprocess.Popen(
        [*rouse, "--memory", str(root), *sweep],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    sock = root / ".rouse" / "fsmon.sock"
    deadline = time.monotonic() + 120
    while not sock.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit("the watching sweeper did not start")
        time.sleep(0.1)
    time.sleep(2)  # its first tick
    return proc


def measure(
    roots: list[Path],
    runs: int,
    rouse: list[str],
    against: list[str] | None,
    watched: Path | None = None,
) -> dict[str, float]:
    """Medians of ``runs`` interleaved rounds; with ``against``, another rouse (the
    code before a change, say) runs the same verbs on a twin tree in the same rounds;
    with ``watched``, the pack on a tree a sweeper watches, in the same rounds."""
    env = dict(os.environ)
    commands = {"bare": [sys.executable, "-c", BARE, str(roots[0])], **_verbs(rouse, roots[0])}
    if against is not None:
        commands.update(_verbs(against, roots[1], "before "))
    if watched is not None:
        commands["watched first"] = [*rouse, "--memory", str(watched), "pack"]
        commands["watched"] = commands["watched first"]
    names = list(commands)
    samples: dict[str, list[float]] = {name: [] for name in names}
    cpu: dict[str, list[float]] = {name: [] for name in names}
    for _ in range(runs):
        for root in roots:
            shutil.rmtree(root / ".rouse", ignore_errors=True)
        if watched is not None:  # (its .rouse/ holds the sweeper's lock and socket)
            (watched / ".rouse" / "cache" / "walk.json").unlink(missing_ok=True)
        for name in names:  # interleaved: each run times every command once, in turn
            wall, used = timed(commands[name], env)
            samples[name].append(wall)
            cpu[name].append(used)
    found = {name: statistics.median(values) for name, values in samples.items()}
    found.update({f"{name} cpu": statistics.median(values) for name, values in cpu.items()})
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--scales", type=int, nargs="+", default=[1, 10])
    parser.add_argument(
        "--rouse", help="the command to run rouse as (default: the rouse script beside python)"
    )
    parser.add_argument(
        "--no-watch",
        action="store_true",
        help="leave out the pack on a tree a running sweeper watches (Linux only anyway)",
    )
    parser.add_argument(
        "--against",
        metavar="CMD",
        help="another rouse to time in the same rounds, on a twin tree (a before/after table)",
    )
    args = parser.parse_args()
    rouse = args.rouse.split() if args.rouse else rouse_command()
    against = args.against.split() if args.against else None
    results: dict[int, dict[str, float]] = {}
    missed: list[str] = []
    print(f"rouse runs as: {' '.join(rouse)} --memory TREE VERB")
    with tempfile.TemporaryDirectory(prefix="rouse-bench-") as scratch:
        for scale in args.scales:
            roots = [Path(scratch) / f"x{scale}{twin}" / "memory" for twin in ("", "-twin")]
            now = datetime.now().replace(second=0, microsecond=0)
            files = generate(roots[0], scale, now)
            if against is not None:
                generate(roots[1], scale, now)
            watch = not args.no_watch and sys.platform.startswith("linux")
            watched = Path(scratch) / f"x{scale}-watched" / "memory"
            sweeper = None
            if watch:
                generate(watched, scale, now)
            time.sleep(2.5)  # past the caches' racy window: "warm" means warm
            try:
                if watch:
                    sweeper = watching(rouse, watched)
                found = measure(roots, args.runs, rouse, against, watched if watch else None)
            finally:
                if sweeper is not None:
                    sweeper.terminate()
                    sweeper.wait(timeout=60)
            results[scale] = found
            print(f"\n§12 tree ×{scale}: {files} .md files, median of {args.runs} runs")
            print(f"  {'':<8}{'seconds':>9}{'vs bare':>9}{'vs warm':>9}{'cpu s':>9}{'vs bare':>9}")
            for name in COMMANDS:
                value, used = found[name], found[f"{name} cpu"]
                print(
                    f"  {name:<8}{value:>9.3f}{value / found['bare']:>8.2f}×"
                    f"{value / found['warm']:>8.2f}×{used:>9.3f}"
                    f"{used / found['bare cpu']:>8.2f}×"
                )
            if watch:
                value, used = found["watched"], found["watched cpu"]
                print(
                    f"  {'watched':<8}{value:>9.3f}{value / found['bare']:>8.2f}×"
                    f"{value / found['warm']:>8.2f}×{used:>9.3f}"
                    f"{used / found['bare cpu']:>8.2f}×  (a sweeper watching; first "
                    f"{found['watched first']:.3f})"
                )
            if against is not None:
                print(f"  before: {' '.join(against)}")
                for name in COMMANDS[1:]:
                    value, used = found[f"before {name}"], found[f"before {name} cpu"]
                    print(
                        f"  {name:<8}{value:>9.3f}{value / found['bare']:>8.2f}×"
                        f"{value / found['before warm']:>8.2f}×{used:>9.3f}"
                        f"{used / found['bare cpu']:>8.2f}×"
                    )
            for what, base, most in TARGETS:
                ratio = found[what] / found[base]
                verdict = "ok" if ratio <= most else "MISSED"
                print(f"  target {what} ≤ {most}× {base}: {ratio:.2f}× {verdict}")
                if ratio > most:
                    missed.append(f"×{scale} {what}/{base} {ratio:.2f} > {most}")
    if 1 in results and 10 in results:
        print("\ngrowth ×1 → ×10 (wall time ratio):")
        for name in COMMANDS:
            print(f"  {name:<8}{results[10][name] / results[1][name]:>9.2f}×")
    if missed:
        print(f"\ntargets missed: {'; '.join(missed)}")
        return 1
    print("\nevery target met")
    return 0


if __name__ == "__main__":
    sys.exit(main())
