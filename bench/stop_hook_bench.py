"""The Stop hook's waiter (issue 18, item 5): measures and prints; asserts nothing.

- idle CPU: one waiter (`rouse pack --hook claude` fed a Stop event) left
  waiting with nothing to wake it for --idle seconds (default 60), with
  inotify and with the slow poll: the CPU time /proc says it spent from its
  registration to a second before its maximum wait (so its exit is left
  out; /proc counts in clock ticks, 10 ms here), and its total from wait4.
- delivery → request: the real Claude Code (`make clients`), offline, in a
  wired project against the tests' loopback stand-in model server, one
  stream-json session sitting idle; --runs times (default 10) a reminder is
  made and `rouse sweep --once` delivers it, and the delay is from the nudge
  file's mtime (the delivery) to the stand-in server receiving the request
  that carries the wake. Prints the median, min and max. Skipped, saying
  why, when Claude Code is not installed.

Run: `.venv/bin/python bench/stop_hook_bench.py [--idle 60] [--runs 10]` (Linux).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
STAMP = "%Y-%m-%d %H:%M"


def rouse() -> list[str]:
    script = Path(sys.executable).parent / "rouse"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "rouse"]


def run(*args: str, **kw: Any) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([*rouse(), *args], capture_output=True, text=True, timeout=120, **kw)
    if done.returncode != 0:
        raise SystemExit(f"rouse {' '.join(args)}: {done.stderr.strip()}")
    return done


def wait_registered(path: Path, not_pid: int = 0, timeout: float = 60) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            pid = int(json.loads(path.read_text())["pid"])
            if pid != not_pid:
                return pid
        except (OSError, ValueError, KeyError):
            pass
        time.sleep(0.01)
    raise SystemExit(f"no waiter registered in {path}")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def idle_cpu(seconds: float, watch: str) -> tuple[float, float]:
    """(CPU seconds while waiting, CPU seconds in all) of one waiter left idle."""
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp) / "memory"
        run("init", str(tree.parent), "--no-examples")
        stop = json.dumps({"session_id": "bench", "hook_event_name": "Stop", "cwd": tmp})
        env = {**os.environ, "ROUSE_STOP_WAIT": str(seconds), "ROUSE_STOP_WATCH": watch}
        proc = subprocess.Popen(
            [*rouse(), "pack", "--hook", "claude", "--memory", str(tree)],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=env,
            text=True,
        )
        assert proc.stdin is not None
        proc.stdin.write(stop)
        proc.stdin.close()
        wait_registered(tree / ".rouse" / "sessions" / "bench.waiter")
        begun = time.monotonic()
        at_rest = cpu_seconds(proc.pid)
        time.sleep(max(seconds - 1.0, 0.0))  # the idle time measured (its last second spared)
        idle = cpu_seconds(proc.pid) - at_rest
        print(f"  ({watch}: sampled over {time.monotonic() - begun:.1f} s)", file=sys.stderr)
        _, _, usage = os.wait4(proc.pid, 0)
        proc.returncode = 0
        return idle, usage.ru_utime + usage.ru_stime


def delays(runs: int) -> list[float] | str:
    """Seconds from each wake's delivery to the stand-in server's request carrying it."""
    from test_clients import BIN, Model

    if not (BIN / "claude").exists():
        return f"Claude Code is not installed in {BIN.parent.parent}: run `make clients`"
    from rouse.agents import wire

    model = Model()
    heard: list[float] = []

    class Stamped(list[dict[str, Any]]):
        def append(self, item: dict[str, Any]) -> None:
            heard.append(time.time())
            super().append(item)

    model.requests = Stamped()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            home, project = Path(tmp) / "home", Path(tmp) / "proj"
            for folder in (home, project):
                folder.mkdir()
                subprocess.run(["git", "init", "-q"], cwd=folder, check=True)
            tree = project / "memory"
            run("init", str(project), "--no-examples")
            wire.wire(tree, home=home, executable=rouse()[0], claude_hooks=True)
            env = {
                "HOME": str(home),
                "PATH": "/usr/bin:/bin",
                "LANG": "C.UTF-8",
                "ANTHROPIC_API_KEY": "sk-ant-dummy",
                "ANTHROPIC_BASE_URL": model.url,
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
                "DISABLE_AUTOUPDATER": "1",
            }
            args = [str(BIN / "claude"), "-p", "--input-format", "stream-json"]
            args += ["--output-format", "stream-json", "--verbose"]
            claude = subprocess.Popen(
                args,
                cwd=project,
                env=env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
            )
            assert claude.stdin is not None and claude.stdout is not None

            def turn() -> str:
                assert claude.stdout is not None
                session = ""
                while True:
                    line = claude.stdout.readline()
                    if not line:
                        raise SystemExit("claude ended its output")
                    event = json.loads(line) if line.startswith("{") else {}
                    session = event.get("session_id", session)
                    if event.get("type") == "result":
                        return str(session)

            message = {"type": "user", "message": {"role": "user", "content": "hi"}}
            claude.stdin.write(json.dumps(message) + "\n")
            claude.stdin.flush()
            session = turn()
            registration = tree / ".rouse" / "sessions" / f"{session}.waiter"
            pid = 0
            found: list[float] = []
            for number in range(runs):
                pid = wait_registered(registration, pid)
                wall = datetime.now().replace(second=0, microsecond=0)
                slug = f"bench-{number}"
                due = (wall - timedelta(minutes=30)).strftime(STAMP)
                made = (wall - timedelta(hours=1)).strftime(STAMP)
                run("remind", slug, "--due", due, "--now", made, "--memory", str(tree))
                asked = len(heard)
                run("sweep", "--once", "-q", "--now", wall.strftime(STAMP), "--memory", str(tree))
                turn()  # the turn the wake started
                (nudge,) = (tree / ".rouse" / "nudges").glob(f"*-reminder-{slug}.md")
                if len(heard) != asked + 1 or slug not in json.dumps(model.requests[-1]["body"]):
                    raise SystemExit("the stand-in server did not get exactly one wake request")
                found.append(heard[asked] - nudge.stat().st_mtime)
            claude.stdin.close()
            claude.wait(timeout=60)
            claude.stdout.close()
            return found
    finally:
        model.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--idle", type=float, default=60.0, help="seconds left idle")
    parser.add_argument("--runs", type=int, default=10, help="wakes delivered to Claude Code")
    args = parser.parse_args()
    for watch in ("inotify", "poll"):
        idle, total = idle_cpu(args.idle, watch)
        print(
            f"idle CPU ({watch}): {idle * 1000:.0f} ms in {args.idle - 1:.0f} s of waiting "
            f"({total * 1000:.0f} ms in all, start-up included)"
        )
    found = delays(args.runs)
    if isinstance(found, str):
        print(f"delivery → request: skipped: {found}")
        return
    print(
        f"delivery → request (real Claude Code, {len(found)} wakes): median "
        f"{statistics.median(found) * 1000:.0f} ms (min {min(found) * 1000:.0f}, "
        f"max {max(found) * 1000:.0f})"
    )


if __name__ == "__main__":
    main()
