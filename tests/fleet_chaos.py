"""The fleet under fire: trees × sweepers × workers on one PostgreSQL, with random SIGKILLs.

Used by ``tests/test_fleet_faults.py`` (short runs, asserted) and
``bench/fleet_faults.py`` (a minute or more, printed). Everything is real: each
tree is a git repository cloned twice, each clone has its own ``rouse sweep
--ledger DSN --plan-only`` process (one leads, one stands by), and delivery
workers (``rouse deliver --sink exec``) run a command that appends the wake's
id, its record, the worker's pid and the time to a file: one line per
successful delivery. Records come due before and during the run; the
chaos loop kills a random sweeper or worker with SIGKILL every ``kill_every``
seconds (and starts it again), then stops killing and lets the fleet settle.

The result counts what arrived: every due reminder must arrive (lost: 0), and a
wake id that arrived twice is a duplicate. At-least-once allows a duplicate
only when its first sender was killed after its sink succeeded and before the
ledger recorded it; ``duplicates_unexplained`` counts the duplicates whose first
sender (that very worker process) was not killed between the two arrivals.
"""

from __future__ import annotations

import itertools
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from rouse.core import procs

ROUSE = [sys.executable, "-m", "rouse"]
#: The exec sink's deadline, and a worker's claim lease (it must outlast a send).
SEND_TIMEOUT = 3
WORKER_LEASE = 10


@dataclass
class Arrival:
    id: str
    path: str
    pid: int
    at: float


#: The exec sink's command: one line per delivery, appended (one short write: atomic).
SEND = 'printf "%s %s %s %s\\n" "$ROUSE_WAKE_ID" "$ROUSE_PATH" "$PPID" "$EPOCHREALTIME" >> "$1"'


def arrivals(sent: Path) -> list[Arrival]:
    found = []
    if sent.exists():
        for line in sent.read_text().splitlines():
            wake_id, path, pid, at = line.split()
            found.append(Arrival(wake_id, path, int(pid), float(at)))
    return found


@dataclass
class Result:
    seconds: float
    trees: int
    due: int
    delivered: int
    kills: int
    duplicates: int
    duplicates_unexplained: int
    lost: list[str]
    unstamped: list[str]

    def line(self) -> str:
        return (
            f"{self.seconds:.0f}s, {self.trees} trees: {self.kills} kills, {self.due} wakes due, "
            f"{self.delivered} delivered, {self.duplicates} duplicates by id "
            f"({self.duplicates_unexplained} without a kill in between), "
            f"{len(self.lost)} lost, {len(self.unstamped)} clones left unstamped"
        )


def _run(argv: list[str], env: dict[str, str]) -> None:
    subprocess.run(argv, env=env, check=True, capture_output=True, text=True, timeout=60)


def _stamp(at: datetime) -> str:
    return at.strftime("%Y-%m-%d %H:%M")


class Fleet:
    def __init__(
        self,
        where: Path,
        dsn: str,
        *,
        trees: int = 3,
        sweepers_per_tree: int = 2,
        workers: int = 2,
        reminders: int = 10,
        lease: float = 2.0,
        seed: int | None = None,
    ) -> None:
        self.where = where
        self.dsn = dsn
        self.trees = trees
        self.sweepers_per_tree = sweepers_per_tree
        self.workers = workers
        self.reminders = reminders
        self.lease = lease
        self.random = random.Random(seed)
        self.env = {**os.environ, "ROUSE_LEDGER": dsn, "ROUSE_PROBES": "off"}
        self.env.pop("ROUSE_NOW", None)
        self.env.pop("ROUSE_HOME", None)
        self.sent = where / "sent.log"
        self.clones: list[list[Path]] = []
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.logs = where / "logs"
        self.expected: set[str] = set()  # "tree-index/record path"
        self.kills: list[tuple[int, float]] = []  # (pid, wall-clock time)
        self.added = 0

    # -- setting up -------------------------------------------------------------

    def lay(self) -> None:
        self.logs.mkdir(parents=True, exist_ok=True)
        past = datetime.now() - timedelta(hours=1)
        for t in range(self.trees):
            origin = self.where / f"origin{t}" / "memory"
            _run([*ROUSE, "init", "--no-key", "--no-examples", str(origin.parent)], self.env)
            for r in range(self.reminders):
                self._remind(origin, f"t{t}-r{r}", past)
            subprocess.run(["git", "add", "-A"], cwd=origin, check=True, capture_output=True)
            subprocess.run(
                ["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "due"],
                cwd=origin,
                check=True,
                capture_output=True,
            )
            clones = []
            for c in range(self.sweepers_per_tree):
                clone = self.where / f"tree{t}-clone{c}"
                subprocess.run(
                    ["git", "clone", "-q", str(origin), str(clone)], check=True, capture_output=True
                )
                clones.append(clone)
            self.clones.append(clones)

    def _remind(self, tree: Path, slug: str, due: datetime) -> None:
        _run(
            [*ROUSE, "--memory", str(tree), "remind", slug, "--due", _stamp(due), "--body", slug],
            self.env,
        )
        self.expected.add(f"inventory/reminders/{slug}")

    def add_due_record(self) -> None:
        """A reminder due now, written into every clone of one tree (as a git pull would)."""
        t = self.random.randrange(self.trees)
        slug = f"t{t}-late{self.added}"
        self.added += 1
        first = self.clones[t][0]
        self._remind(first, slug, datetime.now() - timedelta(minutes=1))
        source = first / "inventory" / "reminders" / slug
        for other in self.clones[t][1:]:
            shutil.copytree(source, other / "inventory" / "reminders" / slug)

    # -- the processes ----------------------------------------------------------

    def _start(self, name: str) -> None:
        kind, _, rest = name.partition(":")
        if kind == "sweep":
            t, c = (int(x) for x in rest.split("/"))
            argv = [
                *ROUSE,
                "--memory",
                str(self.clones[t][c]),
                "sweep",
                "--plan-only",
                "--every",
                "0.5",
                "--lease",
                str(self.lease),
                "-q",
            ]
        else:
            argv = [
                *ROUSE,
                "deliver",
                "--sink",
                "exec",
                "--every",
                "0.5",
                "--lease",
                str(WORKER_LEASE),
                "--timeout",
                str(SEND_TIMEOUT),
                "-q",
                "--",
                "bash",
                "-c",
                SEND,
                "send",
                str(self.sent),
            ]
        log = (self.logs / f"{name.replace(':', '-').replace('/', '-')}.log").open("ab")
        parent = os.getpid()
        procs.prepare()  # (ctypes looked up before the fork)
        self.procs[name] = subprocess.Popen(
            argv,
            env=self.env,
            stdout=log,
            stderr=log,
            start_new_session=True,
            # dies with this test run even when it is killed before stop_all
            preexec_fn=lambda: procs.die_with_parent(parent) or os._exit(1),
        )
        log.close()

    def names(self) -> list[str]:
        sweepers = [
            f"sweep:{t}/{c}" for t in range(self.trees) for c in range(self.sweepers_per_tree)
        ]
        return sweepers + [f"deliver:{w}" for w in range(self.workers)]

    def start_all(self) -> None:
        for name in self.names():
            self._start(name)

    def kill(self, name: str) -> None:
        proc = self.procs[name]
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            self.kills.append((proc.pid, time.time()))
            proc.wait()

    def stop_all(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.procs.values():
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()

    # -- the run ----------------------------------------------------------------

    def chaos(self, seconds: float, kill_every: float = 1.5, add_every: float = 4.0) -> None:
        end = time.monotonic() + seconds
        next_add = time.monotonic() + add_every
        while time.monotonic() < end:
            time.sleep(self.random.uniform(0.5, 1.5) * kill_every)
            victim = self.random.choice(self.names())
            self.kill(victim)
            time.sleep(self.random.uniform(0, 0.5))
            self._start(victim)
            if time.monotonic() >= next_add:
                self.add_due_record()
                next_add += add_every
            for name, proc in self.procs.items():  # anything that died on its own comes back
                if proc.poll() is not None:
                    self._start(name)

    def settle(self, within: float) -> None:
        """Wait (killing nothing) until every expected wake arrived, or ``within`` seconds."""
        end = time.monotonic() + within
        while time.monotonic() < end:
            if not self.missing():
                return
            time.sleep(0.25)

    def missing(self) -> list[str]:
        arrived = {a.path for a in arrivals(self.sent)}
        return sorted(self.expected - arrived)

    def unstamped(self) -> list[str]:
        """Clones whose files still say something is due (each clone stamps its own files)."""
        left = []
        for clones in self.clones:
            for clone in clones:
                shown = subprocess.run(
                    [*ROUSE, "--memory", str(clone), "due", "--json"],
                    env=self.env,
                    capture_output=True,
                    text=True,
                    check=True,
                )
                if json.loads(shown.stdout):
                    left.append(clone.name)
        return left

    def result(self, seconds: float) -> Result:
        got = arrivals(self.sent)
        by_id: dict[str, list[Arrival]] = {}
        for arrival in got:
            by_id.setdefault(arrival.id, []).append(arrival)
        duplicates = unexplained = 0
        for sends in by_id.values():
            for first, again in itertools.pairwise(sends):
                duplicates += 1
                killed = any(
                    pid == first.pid and first.at <= at <= again.at for pid, at in self.kills
                )
                if not killed:
                    unexplained += 1
        return Result(
            seconds=seconds,
            trees=self.trees,
            due=len(self.expected),
            delivered=len({a.path for a in got} & self.expected),
            kills=len(self.kills),
            duplicates=duplicates,
            duplicates_unexplained=unexplained,
            lost=self.missing(),
            unstamped=self.unstamped(),
        )


def run(where: Path, dsn: str, seconds: float, *, seed: int | None = None) -> Result:
    fleet = Fleet(where, dsn, seed=seed)
    fleet.lay()
    fleet.start_all()
    try:
        fleet.chaos(seconds)
        fleet.settle(within=60)
        # the standbys stamp their clones from the ledger's rows: give them a few ticks
        end = time.monotonic() + 20
        while fleet.unstamped() and time.monotonic() < end:
            time.sleep(0.5)
    finally:
        fleet.stop_all()
    return fleet.result(seconds)
