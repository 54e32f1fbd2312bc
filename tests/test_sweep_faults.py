"""Fault tests: what the sweeper promises when things go wrong (issue 4, §5).

- an agent rewriting a record's body while the sweeper stamps it, hundreds of
  times: every body line survives;
- a sweeper killed with SIGKILL mid-send: after a restart the same wake (same
  id) is delivered;
- a sink failing for a while, then recovering: the wake arrives, once, and no
  record is stamped without a delivery;
- a nagging reminder's whole life, driven with --now;
- one sweeper per tree, SIGTERM finishing the wake in flight, and the loop
  waking early for the next due instant.

Each test prints its counts (run with ``-s`` to see them).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from conftest import INTENTIONS, REMINDERS, stamp
from rouse.core.header import parse_header
from rouse.sweep.build import Parts
from rouse.sweep.sinks import FileSink
from rouse.sweep.tick import Sweeper
from test_sinks import SECRET, Server, server  # noqa: F401  (the loopback server fixture)

T0 = datetime(2026, 3, 14, 12, 0)
SHIP = f"{INTENTIONS}/ship"


def rouse(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith("ROUSE_")}
    full.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "rouse", *args], env=full, capture_output=True, text=True, timeout=60
    )


def spawn(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith("ROUSE_")}
    full.update(env or {})
    return subprocess.Popen(
        [sys.executable, "-m", "rouse", *args],
        env=full,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for(check: Callable[[], bool], timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            pytest.fail("timed out waiting")
        time.sleep(0.02)


def fields(path: Path) -> dict[str, str]:
    return parse_header(path.read_bytes()).fields


def write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"))
    return path


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "memory"
    write(
        root,
        f"{SHIP}/intention.md",
        f"""
        ---
        status: open
        opened: {stamp(T0 - timedelta(days=1))}
        last-moved: {stamp(T0 - timedelta(hours=3))}
        closes-when: the release is tagged
        ---
        Ship the release.
        """,
    )
    return root


@pytest.fixture
def reap() -> Iterator[list[int]]:
    """Pids of stray processes a test made (sleepers orphaned by a SIGKILL): killed after."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)


# -- an agent editing while the sweeper stamps ----------------------------------------

AGENT = """
import os, random, sys, time
path, stop, out, mode = sys.argv[1:5]
n = 0
while not os.path.exists(stop):
    with open(path, "rb") as handle:
        data = handle.read()
    data += f"agent line {n}\\n".encode()
    if mode == "in-place":          # truncate and write, like most editors and agent tools
        with open(path, "wb") as handle:
            handle.write(data)
    else:                           # write a temp file and rename it over
        temp = f"{path}.agent-{n}.tmp"
        with open(temp, "wb") as handle:
            handle.write(data)
        os.replace(temp, path)
    n += 1
    time.sleep(random.uniform(0, 0.01))
with open(out, "w") as handle:
    handle.write(str(n))
"""


@pytest.mark.parametrize("mode", ["in-place", "rename"])
def test_every_body_line_survives_hundreds_of_stamps(tmp_path: Path, mode: str) -> None:
    root = tmp_path / "memory"
    record = write(
        root,
        f"{SHIP}/intention.md",
        f"---\nstatus: open\nopened: {stamp(T0)}\nstale-after: 15m\n---\nThe body.\n",
    )
    stop, out = tmp_path / "stop", tmp_path / "count"
    agent = subprocess.Popen([sys.executable, "-c", AGENT, str(record), str(stop), str(out), mode])
    ticks, stamped, deferred = 300, 0, 0
    logs: list[str] = []
    try:
        with Sweeper(root, Parts(FileSink(root)), log=logs.append) as sweeper:
            for k in range(ticks):  # every tick comes 16 minutes later: due every time
                report = sweeper.tick(T0 + timedelta(minutes=16 * (k + 1)))
                stamped += report.stamped
    finally:
        stop.touch()
        agent.wait(timeout=30)
    deferred = sum("not yet stamped" in line for line in logs)
    written = int(out.read_text())
    body = record.read_text()
    lines = set(body.splitlines())  # (one pass: a substring search per line was quadratic)
    lost = [n for n in range(written) if f"agent line {n}" not in lines]
    print(
        f"\n[{mode}] ticks={ticks} stamps={stamped} deferred={deferred} "
        f"agent_writes={written} lines_lost={len(lost)}"
    )
    assert lost == []
    assert "The body.\n" in body
    assert stamped >= 100  # hundreds of stamps landed while the agent kept writing
    assert written >= 100


# -- SIGKILL mid-send ---------------------------------------------------------------

RECEIVER = """
import os, sys, time
log, block, pids = sys.argv[1:4]
text = sys.stdin.read()
with open(log, "a") as handle:
    handle.write(os.environ["ROUSE_WAKE_ID"] + "\\n")
if os.path.exists(block):
    with open(pids, "a") as handle:
        handle.write(f"{os.getpid()}\\n")
    time.sleep(60)
"""


def test_a_sweeper_killed_mid_send_resends_the_same_wake(
    tree: Path, tmp_path: Path, reap: list[int]
) -> None:
    log, block, pids = tmp_path / "received", tmp_path / "block", tmp_path / "pids"
    block.touch()
    command = [sys.executable, "-c", RECEIVER, str(log), str(block), str(pids)]
    args = ["--memory", str(tree), "sweep", "--once", "--now", stamp(T0), "--sink", "exec"]
    kills = 3
    for kill in range(1, kills + 1):
        sweeper = spawn(*args, "--timeout", "120", "--", *command)
        wait_for(lambda k=kill: pids.exists() and len(pids.read_text().split()) == k)  # type: ignore[misc]
        sweeper.send_signal(signal.SIGKILL)
        sweeper.communicate(timeout=10)
        reap.extend(int(p) for p in pids.read_text().split())
        assert "swept" not in fields(tree / f"{SHIP}/intention.md")  # never stamped unsent
    block.unlink()
    done = rouse(*args, "--timeout", "30", "--", *command)
    assert done.returncode == 0, done.stderr
    received = log.read_text().split()
    print(f"\nkills={kills} sends={len(received)} distinct_ids={len(set(received))} lost=0")
    assert len(received) == kills + 1 and len(set(received)) == 1
    header = fields(tree / f"{SHIP}/intention.md")
    assert header["nudges"] == "1" and header["swept"] == stamp(T0)
    (entry,) = json.loads(rouse("--memory", str(tree), "log", "--json").stdout)
    assert entry["id"] == received[0] and entry["state"] == "delivered"
    assert entry["attempts"] == kills + 1


# -- a sink that fails, then recovers --------------------------------------------------


def test_a_failing_webhook_gets_the_wake_once_it_recovers(
    tree: Path,
    server: Server,  # noqa: F811
) -> None:
    server.fail_first = 3
    env = {"ROUSE_WEBHOOK_SECRET": SECRET}
    record = tree / f"{SHIP}/intention.md"
    ticks = [0, 0.5, 1, 2, 3, 5, 7, 8]  # minutes after T0
    codes = []
    for minute in ticks:
        at = T0 + timedelta(minutes=minute)
        done = rouse(
            "--memory", str(tree), "sweep", "--once", "--now", at.strftime("%Y-%m-%d %H:%M:%S"),
            "--sink", "webhook", f"{server.url}/flaky", "--timeout", "5",
            env=env,
        )  # fmt: skip
        codes.append(done.returncode)
        hits = len(server.hits("/flaky"))
        if hits <= 3:
            assert "swept" not in fields(record), "stamped without a delivery"
    # sends at +0, +1m, +3m (fail ×3), +7m (lands); none at +0.5, +2, +5, +8
    assert codes == [1, 1, 1, 1, 1, 1, 0, 0]
    hits = server.hits("/flaky")
    assert len(hits) == 4
    ids = {h.headers["webhook-id"] for h in hits}
    bodies = {json.loads(h.body)["id"] for h in hits}
    assert len(ids) == 1 and ids == bodies
    from standardwebhooks.webhooks import Webhook

    assert Webhook(SECRET).verify(hits[-1].body, hits[-1].headers)["record"] == "intention/ship"
    header = fields(record)
    assert header["nudges"] == "1" and header["swept"] == stamp(T0 + timedelta(minutes=7))
    print(f"\nfailures=3 sends={len(hits)} distinct_ids={len(ids)} stamps=1 lost=0")


# -- a nagging reminder's whole life ----------------------------------------------------


def test_a_nagging_reminder_whole_life_through_the_cli(tmp_path: Path) -> None:
    root = tmp_path / "memory"
    due = datetime(2026, 3, 14, 9, 0)
    rel = f"{REMINDERS}/pay-rent/reminder.md"
    opened = stamp(due - timedelta(days=1))
    write(
        root,
        rel,
        f"---\nstatus: pending\nopened: {opened}\ndue: {stamp(due)}\nnag: 10m\n---\nRent.\n",
    )
    fires, at, steps = [], due, []
    for n in range(1, 11):
        fires.append(at)
        step = min(max(10 * 2 ** (n - 1), 15), 24 * 60)
        steps.append(step)
        at += timedelta(minutes=step)
    assert steps[:4] == [15, 20, 40, 80]

    def sweep_at(when: datetime) -> None:
        done = rouse("--memory", str(root), "sweep", "--once", "--now", stamp(when))
        assert done.returncode == 0, done.stderr

    nudges = root / ".rouse/nudges"
    for n, when in enumerate(fires, start=1):
        sweep_at(when - timedelta(minutes=1))
        assert len(list(nudges.glob("*.md"))) == n - 1
        sweep_at(when)
        assert len(list(nudges.glob("*.md"))) == n
        header = fields(root / rel)
        assert header["fires"] == str(n)
    sweep_at(fires[-1] + timedelta(days=7))
    texts = [p.read_text() for p in sorted(nudges.glob("*.md"))]
    assert len(texts) == 10
    assert all(t.startswith("reminder/pay-rent — due") for t in texts)
    assert all(f"first set {stamp(due)}" in t for t in texts)
    assert "last nudge" in texts[-1] and not any("last nudge" in t for t in texts[:-1])
    header = fields(root / rel)
    assert header["status"] == "expired" and header["ended"] == "max-fires"
    assert header["set"] == stamp(due) and header["fires"] == "10"
    print(f"\nfires at +{[int((f - due).total_seconds() // 60) for f in fires]} minutes")


# -- one sweeper per tree; signals; the loop's timing ------------------------------------


def test_a_second_sweeper_refuses_at_once(tree: Path) -> None:
    loop = spawn("--memory", str(tree), "sweep", "--every", "3600")
    try:
        wait_for(lambda: (tree / ".rouse/sweep.json").exists())
        start = time.monotonic()
        second = rouse("--memory", str(tree), "sweep", "--once")
        assert time.monotonic() - start < 10
        assert second.returncode == 2
        assert "another sweeper is already running" in second.stderr
        assert f"pid {loop.pid}" in second.stderr
        status = json.loads(rouse("--memory", str(tree), "status", "--json").stdout)
        assert status["sweeper"]["pid"] == loop.pid and status["sweeper"]["running"] is True
        assert status["sweeper"]["interval"] == 3600
    finally:
        loop.send_signal(signal.SIGTERM)
        loop.communicate(timeout=20)
    assert loop.returncode == 0
    again = rouse("--memory", str(tree), "sweep", "--once", "--now", stamp(T0))
    assert again.returncode == 0, again.stderr  # the lock went with the process


def test_sigterm_right_after_the_lock_is_taken_is_a_clean_stop(tree: Path) -> None:
    """A SIGTERM that lands while the sweeper starts (lock taken, ledger and watcher
    opening) stops it cleanly: exit 0, the watcher's socket gone. Five starts."""
    lock = tree / ".rouse/sweep.lock"
    for _ in range(5):
        loop = spawn("--memory", str(tree), "sweep", "--every", "3600")
        try:
            deadline = time.monotonic() + 30
            while f'"pid": {loop.pid}' not in (lock.read_text() if lock.exists() else ""):
                assert loop.poll() is None and time.monotonic() < deadline
                time.sleep(0.0005)
            loop.send_signal(signal.SIGTERM)  # as soon as it holds the lock
            _, err = loop.communicate(timeout=30)
        finally:
            if loop.poll() is None:
                loop.kill()
                loop.communicate()
        assert loop.returncode == 0, err
        assert not (tree / ".rouse/fsmon.sock").exists()


SLOW = """
import os, sys, time
marker, out = sys.argv[1:3]
open(marker, "w").close()
time.sleep(1.0)
with open(out, "w") as handle:
    handle.write(os.environ["ROUSE_WAKE_ID"])
"""


def test_sigterm_finishes_the_wake_in_flight_then_exits_0(tree: Path, tmp_path: Path) -> None:
    marker, out = tmp_path / "started", tmp_path / "delivered"
    loop = spawn(
        "--memory", str(tree), "--now", stamp(T0), "sweep", "--every", "3600",
        "--sink", "exec", "--", sys.executable, "-c", SLOW, str(marker), str(out),
    )  # fmt: skip
    wait_for(marker.exists)
    loop.send_signal(signal.SIGTERM)
    _, err = loop.communicate(timeout=30)
    assert loop.returncode == 0, err
    assert out.read_text()  # the command ran to its end
    assert fields(tree / f"{SHIP}/intention.md")["nudges"] == "1"
    (entry,) = json.loads(rouse("--memory", str(tree), "log", "--json").stdout)
    assert entry["state"] == "delivered" and entry["id"] == out.read_text()


def test_the_loop_wakes_early_for_the_next_due_instant(tmp_path: Path) -> None:
    root = tmp_path / "memory"
    write(
        root,
        f"{REMINDERS}/standup/reminder.md",
        "---\nopened: 2026-03-13 09:00\ndue: 2026-03-14 09:00\n---\nStand up.\n",
    )
    loop = spawn("--memory", str(root), "sweep", "--every", "3600", "--now", "2026-03-14 08:59:57")
    try:
        start = time.monotonic()
        wait_for(lambda: any((root / ".rouse/nudges").glob("*.md")), timeout=30)
        waited = time.monotonic() - start
    finally:
        loop.send_signal(signal.SIGINT)
        loop.communicate(timeout=20)
    assert loop.returncode == 0
    print(f"\nfired {waited:.1f}s after start, due 3s after start, tick every 3600s")
    assert waited < 15  # seconds, not the hour-long tick
    (name,) = [p.name for p in (root / ".rouse/nudges").glob("*.md")]
    assert name.startswith("20260314-0900")


def test_sweep_once_on_the_example_tree_then_log_and_status(tmp_path: Path) -> None:
    assert rouse("init", "--no-key", str(tmp_path), "--now", "2026-03-14 12:00").returncode == 0
    root = tmp_path / "memory"
    done = rouse("--memory", str(root), "sweep", "--once", "--now", "2099-01-02 09:00")
    assert done.returncode == 0, done.stderr
    assert "2 delivered" in done.stderr
    names = sorted(p.name for p in (root / ".rouse/nudges").glob("*.md"))
    assert names == [
        "20990102-090000-reminder-example-renew-the-tls-certificate.md",
        "20990102-090000-task-example-bisect-the-flaky-test.md",
    ]
    text = (root / ".rouse/nudges" / names[0]).read_text()
    assert text.startswith(
        "reminder/example-renew-the-tls-certificate — due yesterday\n"
        "at: inventory/reminders/example-renew-the-tls-certificate\n"
    )
    log = rouse("--memory", str(root), "log")
    assert log.returncode == 0 and log.stdout.count("delivered") == 2
    entries = json.loads(rouse("--memory", str(root), "log", "--json", "--limit", "1").stdout)
    assert len(entries) == 1 and set(entries[0]) >= {"id", "record", "reason", "sink", "state"}
    status = json.loads(rouse("--memory", str(root), "status", "--json").stdout)
    assert status["last_tick"].startswith("2099-01-02T09:00:00")  # ISO 8601 with offset
    assert status["ledger"]["delivered"] == 2 and status["ledger"]["pending"] == 0
    again = rouse("--memory", str(root), "sweep", "--once", "--now", "2099-01-02 09:00")
    assert again.returncode == 0 and again.stderr == ""  # an idle tick is silent


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--sink", "exec"], "needs a command"),
        (["--sink", "webhook"], "exactly one URL"),
        (["--every", "0"], "--every must be positive"),
        (["--quiet", "late"], "HH:MM-HH:MM"),
    ],
)
def test_bad_sweep_arguments_exit_2(tree: Path, args: list[str], message: str) -> None:
    done = rouse("--memory", str(tree), "sweep", "--once", *args)
    assert done.returncode == 2
    assert message.split(" must")[0] in done.stderr


def test_bad_webhook_secret_exits_2(tree: Path) -> None:
    done = rouse(
        "--memory", str(tree), "sweep", "--once", "--sink", "webhook", "http://127.0.0.1:9/",
        env={"ROUSE_WEBHOOK_SECRET": "not-a-secret!"},
    )  # fmt: skip
    assert done.returncode == 2 and "ROUSE_WEBHOOK_SECRET" in done.stderr


def test_log_on_a_tree_that_never_swept(tree: Path) -> None:
    done = rouse("--memory", str(tree), "log", "--json")
    assert done.returncode == 0 and json.loads(done.stdout) == []
    assert not (tree / ".rouse/ledger.sqlite3").exists()
