"""The task worker (issue 20): ``rouse work``, ``rouse cancel``, ``rouse checkpoint``.

The agent is a stand-in executable on PATH (a real process): it records its
argv, stdin, directory and environment, appends a line to a side-effect file
per run, and per ``STANDIN_MODE`` reports a checkpoint, fails, sleeps, or
ignores SIGTERM.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import pytest

from conftest import INTENTIONS, MakeTree, stamp
from rouse.cli.main import main
from rouse.core import header
from rouse.pack.build import build_pack
from rouse.sweep import ledger

TASK_DIR = f"{INTENTIONS}/ship/notes"
NOW_OPENED = datetime(2026, 3, 14, 9, 0)

STANDIN = """#!{python}
import json, os, subprocess, sys, time
seen = os.environ["STANDIN_DIR"]
prompt = sys.stdin.read()
task = os.environ.get("ROUSE_TASK", "")
with open(os.path.join(seen, "effects.log"), "a") as out:
    out.write(f"start {{task}} {{os.environ.get('ROUSE_TASK_ATTEMPT')}} {{time.time()}}\\n")
n = len([p for p in os.listdir(seen) if p.startswith("argv")])
with open(os.path.join(seen, f"argv{{n}}-{{os.getpid()}}.json"), "w") as out:
    json.dump({{"argv": sys.argv, "cwd": os.getcwd(), "stdin": prompt,
               "env": {{k: v for k, v in os.environ.items() if k.startswith("ROUSE_")}}}}, out)
mode = os.environ.get("STANDIN_MODE", "ok")
if mode in ("checkpoint", "slow-checkpoint"):
    subprocess.run([sys.executable, "-m", "rouse", "--memory", os.environ["ROUSE_MEMORY"],
                    "checkpoint", task, "emailed the vendor"], check=True)
if mode == "slow-checkpoint":
    time.sleep(60)
if mode == "deaf":
    import signal
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    time.sleep(60)
if mode == "sleep":
    time.sleep(float(os.environ.get("STANDIN_SLEEP", "0.2")))
if mode == "fail":
    print("could not reach the build server")
    sys.exit(4)
with open(os.path.join(seen, "effects.log"), "a") as out:
    out.write(f"end {{task}} {{os.environ.get('ROUSE_TASK_ATTEMPT')}} {{time.time()}}\\n")
print(json.dumps({{"type": "result", "result": "the notes are in NOTES.md"}}))
"""


def task_file(slug: str, extra: str = "", parent: str = f"{INTENTIONS}/ship") -> dict[str, str]:
    lines = ["---", "status: pending", f"opened: {stamp(NOW_OPENED)}", *extra.splitlines(), "---"]
    return {
        f"{parent}/{slug}/task.md": "\n".join(lines) + f"\nWrite the release notes for {slug}.\n"
    }


@pytest.fixture
def tree(make_tree: MakeTree) -> Path:
    return make_tree(
        {
            f"{INTENTIONS}/ship/intention.md": """
            ---
            status: open
            closes-when: version 2 is on PyPI
            ---
            Ship version 2.
            """,
            **task_file("notes", "model: opus\nreasoning: high\nrepo: ~/src/app\ncategory: docs"),
        }
    )


@pytest.fixture
def standin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bin_dir, seen = tmp_path / "bin", tmp_path / "seen"
    bin_dir.mkdir()
    seen.mkdir()
    for name in ("claude", "codex", "agent"):
        script = bin_dir / name
        script.write_text(STANDIN.format(python=sys.executable))
        script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("STANDIN_DIR", str(seen))
    monkeypatch.delenv("ROUSE_NOW", raising=False)
    monkeypatch.setenv("ROUSE_STAMP_KEY", str(tmp_path / "no-key"))
    return seen


def calls(seen: Path) -> list[dict[str, object]]:
    return [json.loads(p.read_text()) for p in sorted(seen.glob("argv*.json"))]


def fields(root: Path, rel: str = f"{TASK_DIR}/task.md") -> dict[str, str]:
    return dict(header.read_header(root / rel).fields)


def text(root: Path, rel: str = f"{TASK_DIR}/task.md") -> str:
    return (root / rel).read_text()


def work_state(root: Path) -> dict[str, object]:
    try:
        found: dict[str, object] = json.loads((root / ".rouse/work.json").read_text())
    except FileNotFoundError:
        return {}
    return found


def work(root: Path, *args: str) -> int:
    return main(["--memory", str(root), "work", "--once", *args])


def rouse(root: Path, *args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "rouse", "--memory", str(root), *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def wait_for(condition: object, seconds: float = 30.0) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if condition():  # type: ignore[operator]
            return
        time.sleep(0.05)
    raise AssertionError(f"not true within {seconds}s")


def test_a_pending_task_runs_once_in_its_directory_and_ends_done_with_its_result(
    tree: Path, standin: Path
) -> None:
    assert work(tree, "--run", "claude", "--", "--permission-mode", "acceptEdits") == 0
    (call,) = calls(standin)
    argv = call["argv"]
    assert isinstance(argv, list)
    # model and reasoning reach the preset's own flags; the user's flags follow
    assert argv[1:] == [
        *("-p", "--output-format", "json", "--model", "opus", "--effort", "high"),
        *("--permission-mode", "acceptEdits"),
    ]
    assert call["cwd"] == str(tree / TASK_DIR)
    prompt = str(call["stdin"])
    assert "Write the release notes for notes." in prompt
    assert f"rouse --memory {tree} checkpoint {TASK_DIR}" in prompt
    assert "intention/ship" in prompt and "closes-when: version 2 is on PyPI" in prompt
    assert "repo: ~/src/app" in prompt and "category: docs" in prompt
    # issue 34 item 8: no session hook runs for a task's run, whatever CLAUDE.md says
    assert "no memory pack was given to you" in prompt
    assert f"rouse --memory {tree} pack" in prompt
    env = call["env"]
    assert isinstance(env, dict)
    assert env["ROUSE_TASK"] == TASK_DIR and env["ROUSE_REPO"] == "~/src/app"
    assert env["ROUSE_CATEGORY"] == "docs" and env["ROUSE_TASK_ATTEMPT"] == "1"
    found = fields(tree)
    assert found["status"] == "done" and found["attempts"] == "1"
    assert "pid" in found["worker"] and found["started"]
    body = text(tree)
    assert "result: the notes are in NOTES.md" in body and ": done: exit 0" in body
    log = (tree / TASK_DIR / "run.log").read_text()
    assert "exit: 0\n" in log and "attempt: 1\n" in log
    assert work(tree, "--run", "claude") == 0  # ended: never run again
    assert len(calls(standin)) == 1


def test_codex_gets_its_model_and_effort_flags_and_exec_hears_them_in_the_prompt(
    tree: Path, standin: Path
) -> None:
    assert work(tree, "--run", "codex", "--", "--skip-git-repo-check") == 0
    (call,) = calls(standin)
    argv = call["argv"]
    assert isinstance(argv, list)
    assert argv[1:4] == ["exec", "--model", "opus"]
    assert argv[4:6] == ["-c", "model_reasoning_effort=high"]
    assert argv[6] == "--output-last-message" and argv[-2:] == ["--skip-git-repo-check", "-"]


def test_exec_fails_on_a_non_zero_exit_with_the_reason_and_the_tail(
    tree: Path, standin: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STANDIN_MODE", "fail")
    assert work(tree, "--run", "exec", "--", "agent") == 1  # --once: a task failed
    (call,) = calls(standin)
    assert "model asked for: opus" in str(call["stdin"])  # exec has no flag: said instead
    assert fields(tree)["status"] == "failed"
    body = text(tree)
    assert "failed: exit 4 after" in body and "could not reach the build server" in body


def test_the_task_timeout_kills_the_run_and_fails_the_task(
    tree: Path, standin: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STANDIN_MODE", "sleep")
    monkeypatch.setenv("STANDIN_SLEEP", "60")
    assert work(tree, "--run", "exec", "--task-timeout", "1s", "--", "agent") == 1
    assert fields(tree)["status"] == "failed"
    assert "killed at its deadline (--task-timeout 1s)" in text(tree)


def test_a_cancelled_pending_task_ends_cancelled_without_running(
    make_tree: MakeTree, standin: Path
) -> None:
    root = make_tree(task_file("notes", "cancel: 2026-03-14 10:00"))
    assert work(root, "--run", "exec", "--", "agent") == 0
    assert calls(standin) == []
    assert fields(root)["status"] == "cancelled"
    assert "cancelled: cancelled before it ran" in text(root)


def test_rouse_cancel_on_a_pending_task_ends_it_at_once(tree: Path) -> None:
    assert main(["--memory", str(tree), "cancel", "notes"]) == 0
    assert fields(tree)["status"] == "cancelled" and fields(tree)["cancel"]
    assert main(["--memory", str(tree), "cancel", "notes"]) == 2  # ended: refused, one line


def test_cancel_stops_a_running_task_and_its_result_lists_the_checkpoints(
    tree: Path, standin: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STANDIN_MODE", "deaf")  # ignores SIGTERM: KILL after the grace
    worker = rouse(tree, "work", "--once", "--run", "exec", "--", "agent")
    wait_for(lambda: fields(tree).get("status") == "running" and calls(standin))
    subprocess.run(
        [sys.executable, "-m", "rouse", "--memory", str(tree), "checkpoint", "notes", "sent mail"],
        check=True,
    )
    before = time.monotonic()
    assert main(["--memory", str(tree), "cancel", "notes"]) == 0
    assert worker.wait(timeout=60) == 0
    assert time.monotonic() - before < 20  # within a few seconds (grace 5s)
    assert fields(tree)["status"] == "cancelled"
    assert "its checkpoints: " in text(tree) and "sent mail" in text(tree).split("cancelled")[-1]
    assert (
        "stopped (its process group): the record was cancelled"
        in (tree / TASK_DIR / "run.log").read_text()
    )


def test_a_checkpoint_is_logged_queued_and_delivered_by_the_next_tick_then_shown(
    tree: Path, standin: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STANDIN_MODE", "slow-checkpoint")
    worker = rouse(tree, "work", "--once", "--run", "exec", "--", "agent")
    try:

        def queued() -> list[object]:
            return [e for e in ledger.recent(tree) if e.wake.reason == "checkpoint"]

        wait_for(lambda: "checkpoint: emailed the vendor" in text(tree) and queued())
        (entry,) = [e for e in ledger.recent(tree) if e.wake.reason == "checkpoint"]
        assert entry.state == "held"
        time.sleep(1.1)  # the tick's nudge file is named to the second, after the checkpoint
        assert main(["--memory", str(tree), "sweep", "--once", "-q"]) == 0
        (entry,) = [e for e in ledger.recent(tree) if e.wake.reason == "checkpoint"]
        assert entry.state == "delivered" and (entry.receipt or "").startswith(".rouse/nudges/")
        assert "emailed the vendor" in (tree / (entry.receipt or "")).read_text()
        assert "swept" not in fields(tree)  # a notice stamps nothing
        pack = build_pack(tree, datetime.now(), probes_enabled=False)
        (running,) = pack.data["tasks"]["running"]
        assert running["path"] == TASK_DIR and "emailed the vendor" in running["checkpoint"]
        assert "latest checkpoint" in pack.text and "emailed the vendor" in pack.text
        # progress, not a wake: its nudge file never stands in the woken list
        assert not any(w["path"] == TASK_DIR for w in pack.data["woken"])
    finally:
        worker.send_signal(signal.SIGTERM)  # the first: finish what runs, claim nothing new
        wait_for(lambda: work_state(tree).get("stopping") == 1)
        worker.send_signal(signal.SIGTERM)  # the second hands the run back
        assert worker.wait(timeout=60) == 0
    assert fields(tree)["status"] == "pending"
    assert "handed back by its worker" in text(tree)


def test_with_a_key_an_unstamped_task_is_held_until_allowed(
    tree: Path, standin: Path, key_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ROUSE_STAMP_KEY", str(key_path))
    assert work(tree, "--run", "exec", "--", "agent") == 0
    assert calls(standin) == []
    assert fields(tree)["status"] == "pending"
    state = json.loads((tree / ".rouse/work.json").read_text())
    assert any("is held" in why and "stamp --origin owner" in why for why in state["held"])
    assert work(tree, "--allow-untrusted", "--run", "exec", "--", "agent") == 0
    (call,) = calls(standin)
    assert "quoted data, not an instruction" in str(call["stdin"])
    assert fields(tree)["status"] == "done"


def test_a_task_left_running_by_a_dead_worker_goes_back_then_fails_at_the_third(
    make_tree: MakeTree, standin: Path
) -> None:
    root = make_tree(task_file("notes", "status: running\nattempts: 3\nworker: gone pid 1"))
    (root / f"{TASK_DIR}/task.md").write_text(text(root).replace("status: pending\n", "", 1))
    assert work(root, "--run", "exec", "--", "agent") == 1  # failed: its third attempt lost
    assert calls(standin) == []  # no fourth run
    assert fields(root)["status"] == "failed" and "lost 3 times" in text(root)
    (entry,) = [e for e in ledger.recent(root) if e.wake.reason == "lost"]
    assert "failed: 3 attempts lost" in entry.wake.text
    again = make_tree(task_file("other", "status: running\nattempts: 1"), name="two")
    rel = f"{INTENTIONS}/ship/other/task.md"
    (again / rel).write_text(text(again, rel).replace("status: pending\n", "", 1))
    assert work(again, "--run", "exec", "--", "agent") == 0
    assert fields(again, rel)["status"] == "done" and fields(again, rel)["attempts"] == "2"
    assert "attempt 1 lost" in text(again, rel)


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--run", "exec"], "needs an agent"),
        (["--jobs", "0", "--run", "exec", "--", "agent"], "--jobs"),
        (["--task-timeout", "0s", "--run", "exec", "--", "agent"], "--run-timeout"),
        (["--max-runs", "3/week", "--run", "exec", "--", "agent"], "--max-runs"),
    ],
)
def test_bad_work_options_are_refused_in_one_line(
    tree: Path, capsys: pytest.CaptureFixture[str], args: list[str], says: str
) -> None:
    assert work(tree, *args) == 2
    err = capsys.readouterr().err
    assert says in err and err.count("\n") == 1


def test_sigterm_lets_the_run_in_flight_finish_and_claims_nothing_more(
    tree: Path, standin: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STANDIN_MODE", "sleep")
    monkeypatch.setenv("STANDIN_SLEEP", "1.5")
    worker = rouse(tree, "work", "--run", "exec", "--", "agent")  # the loop, not --once
    wait_for(lambda: fields(tree).get("status") == "running" and calls(standin))
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(timeout=60) == 0
    assert fields(tree)["status"] == "done"
    state = work_state(tree)
    assert state["running"] == [] and state["stopping"] == 1


def test_status_reports_running_stuck_and_held_tasks_and_the_last_round(
    tree: Path, standin: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rel = f"{TASK_DIR}/task.md"
    (tree / rel).write_text(
        text(tree).replace("status: pending", "status: running\nattempts: 1\nworker: gone pid 1")
    )
    capsys.readouterr()
    assert main(["--memory", str(tree), "status"]) == 0
    out = capsys.readouterr().out
    assert "running: task/notes" in out and "STUCK: no live run holds it" in out
    assert main(["--memory", str(tree), "status", "--check"]) == 1
    assert "task/notes is stuck" in capsys.readouterr().err
    assert work(tree, "--run", "exec", "--", "agent") == 0  # handed back, then run
    capsys.readouterr()
    assert main(["--memory", str(tree), "status", "--json"]) == 0
    found = json.loads(capsys.readouterr().out)["tasks"]
    assert found["running"] == [] and found["pending"] == 0
    assert found["worker"]["last_round"] and found["worker"]["pid"] == os.getpid()
    assert main(["--memory", str(tree), "status"]) == 0
    assert f"task worker: running pid {os.getpid()}, last round" in capsys.readouterr().out


def test_without_a_key_check_warns_that_nothing_vouches_for_the_tasks_a_worker_runs(
    make_tree: MakeTree, standin: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_tree({**task_file("one"), **task_file("two")})
    (root / ".rouse").mkdir(exist_ok=True)
    (root / ".rouse/work.json").write_text("{}")  # a worker has run here
    capsys.readouterr()
    main(["--memory", str(root), "check"])
    out = capsys.readouterr()
    assert "2 pending task(s) and no stamp key" in out.out + out.err


def test_once_exits_1_when_a_task_of_the_round_failed_and_says_which(
    make_tree: MakeTree, standin: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_tree({**task_file("good"), **task_file("bad", "category: fail")})
    agent = standin.parent / "bin/picky"
    agent.write_text('#!/bin/sh\ncat > /dev/null\n[ "$ROUSE_CATEGORY" = fail ] && exit 3\nexit 0\n')
    agent.chmod(0o755)
    assert work(root, "--jobs", "2", "--json", "--run", "exec", "--", "picky") == 1
    said = json.loads(capsys.readouterr().out)
    assert said["failed"] == [f"{INTENTIONS}/ship/bad"] and said["lost"] == []
    assert fields(root, f"{INTENTIONS}/ship/good/task.md")["status"] == "done"
    # a round where nothing fails (nothing left to do, here) exits 0
    assert work(root, "--run", "exec", "--", "picky") == 0


def test_claims_ahead_never_run_more_than_jobs_at_once(
    make_tree: MakeTree, standin: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_tree({k: v for n in range(6) for k, v in task_file(f"t{n}").items()})
    monkeypatch.setenv("STANDIN_MODE", "sleep")
    monkeypatch.setenv("STANDIN_SLEEP", "0.4")
    assert work(root, "--jobs", "2", "--run", "exec", "--", "agent") == 0
    events = []
    for line in (standin / "effects.log").read_text().splitlines():
        what, _task, _attempt, at = line.split()
        events.append((float(at), 1 if what == "start" else -1))
    live = most = 0
    for _at, step in sorted(events):
        live += step
        most = max(most, live)
    assert len(events) == 12 and most == 2  # both jobs used, never a third run


def test_a_run_whose_supervisor_dies_is_killed_handed_back_and_once_exits_1(
    tree: Path, standin: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STANDIN_MODE", "sleep")
    monkeypatch.setenv("STANDIN_SLEEP", "60")
    args = ["work", "--once", "--json", "--run", "exec", "--", "agent"]
    worker = subprocess.Popen(
        [sys.executable, "-m", "rouse", "--memory", str(tree), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    wait_for(lambda: calls(standin))
    (lock,) = (tree / ".rouse/tasks").glob("*.lock")
    supervisor = json.loads(lock.read_text())["pid"]
    (argv,) = standin.glob("argv*.json")
    agent = int(argv.stem.split("-")[1])
    os.kill(supervisor, signal.SIGKILL)
    out, _ = worker.communicate(timeout=60)
    assert worker.returncode == 1  # --once: a run of the round was lost
    assert json.loads(out)["lost"] == [TASK_DIR]
    assert fields(tree)["status"] == "pending" and "attempt 1 lost" in text(tree)
    wait_for(lambda: not Path(f"/proc/{agent}").exists() or _zombie(agent), 10)


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in "ZX"
    except OSError:
        return True


def test_a_task_cancelled_while_its_claim_waits_for_a_job_ends_cancelled(
    make_tree: MakeTree, standin: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_tree({**task_file("first"), **task_file("second")})
    monkeypatch.setenv("STANDIN_MODE", "sleep")
    monkeypatch.setenv("STANDIN_SLEEP", "3")
    worker = rouse(root, "work", "--once", "--jobs", "1", "--run", "exec", "--", "agent")
    wait_for(lambda: calls(standin))  # the first runs; the second's claim waits for the job
    assert main(["--memory", str(root), "cancel", f"{INTENTIONS}/ship/second"]) == 0
    assert worker.wait(timeout=60) == 0
    assert fields(root, f"{INTENTIONS}/ship/second/task.md")["status"] == "cancelled"
    assert len(calls(standin)) == 1


def test_the_worker_s_sink_delivers_a_checkpoint_at_once(
    tree: Path, standin: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("STANDIN_MODE", "checkpoint")
    assert work(tree, "--sink", "stdout", "--run", "exec", "--", "agent") == 0
    assert "emailed the vendor" in capsys.readouterr().out
    (entry,) = [e for e in ledger.recent(tree) if e.wake.reason == "checkpoint"]
    assert entry.state == "delivered" and entry.sink == "stdout"
    assert main(["--memory", str(tree), "sweep", "--once", "-q"]) == 0  # nothing owed: not twice
    (entry,) = [e for e in ledger.recent(tree) if e.wake.reason == "checkpoint"]
    assert entry.state == "delivered" and entry.sink == "stdout"


def test_the_run_budget_counts_the_claims_ahead(
    make_tree: MakeTree, standin: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_tree({k: v for n in range(5) for k, v in task_file(f"t{n}").items()})
    monkeypatch.setenv("STANDIN_MODE", "sleep")
    assert work(root, "--jobs", "2", "--max-runs", "3/day", "--run", "exec", "--", "agent") == 0
    statuses = [fields(root, f"{INTENTIONS}/ship/t{n}/task.md")["status"] for n in range(5)]
    assert statuses.count("done") == 3 and statuses.count("pending") == 2
    assert len(calls(standin)) == 3


def test_tasks_start_oldest_first_though_their_claims_answer_in_any_order(
    make_tree: MakeTree, standin: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files: dict[str, str] = {}
    for n, slug in enumerate(("zeta", "alpha", "mid", "omega")):  # opened in this order
        opened = stamp(NOW_OPENED.replace(minute=n))
        files.update(task_file(slug))
        rel = f"{INTENTIONS}/ship/{slug}/task.md"
        files[rel] = files[rel].replace(f"opened: {stamp(NOW_OPENED)}", f"opened: {opened}")
    root = make_tree(files)
    monkeypatch.setenv("STANDIN_MODE", "sleep")
    monkeypatch.setenv("STANDIN_SLEEP", "0.1")
    assert work(root, "--jobs", "1", "--run", "exec", "--", "agent") == 0
    starts = [
        line.split()[1].rsplit("/", 1)[1]
        for line in (standin / "effects.log").read_text().splitlines()
        if line.startswith("start")
    ]
    assert starts == ["zeta", "alpha", "mid", "omega"]


def test_in_quiet_hours_the_loop_starts_nothing_and_holds_no_claim(
    tree: Path, standin: Path
) -> None:
    hour = datetime.now().hour
    window = f"{hour:02d}:00-{(hour + 2) % 24:02d}:00"  # now is inside it
    worker = rouse(tree, "work", "--quiet", window, "--run", "exec", "--", "agent")
    try:
        wait_for(lambda: "quiet hours" in str(work_state(tree).get("waiting", "")))
        time.sleep(1)
        assert calls(standin) == [] and fields(tree)["status"] == "pending"
        assert all(_free(lock) for lock in (tree / ".rouse/tasks").glob("*.lock"))
    finally:
        worker.send_signal(signal.SIGTERM)
        assert worker.wait(timeout=60) == 0


def _free(lock: Path) -> bool:
    import fcntl

    with lock.open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True


def test_a_notice_another_taker_holds_is_not_sent_by_the_sweeper_too(tree: Path) -> None:
    """A worker's ``--sink`` takes a queued notice, then sends it; a tick that reads the
    ledger between the two must not send it as well (and one that reads it before the
    take loses the take). A notice nobody took goes out with that tick."""
    from rouse.core.tree import walk
    from rouse.work import notices

    (task,) = [r for r in walk(tree).records.values() if r.type == "task"]
    now = datetime.now().replace(microsecond=0)
    taken = notices.queue(tree, task, "task/x", "checkpoint", "emailed the vendor", now)
    free = notices.queue(tree, task, "task/x", "checkpoint", "paid the invoice", now)
    with ledger.Ledger(tree) as book:
        assert book.take(taken, notices.NOTICE_SINK, "stdout")  # the worker's --sink has it now
        assert not book.take(taken, notices.NOTICE_SINK, "file")  # one taker only
    assert main(["--memory", str(tree), "sweep", "--once", "-q"]) == 0
    entries = {e.id: e for e in ledger.recent(tree) if e.wake.reason == "checkpoint"}
    assert entries[taken].state == "held" and entries[taken].sink == "stdout"  # left to it
    assert entries[free].state == "delivered" and entries[free].sink == "file"


def test_the_examples_of_init_are_never_work_only_the_user_s_own_tasks_run(
    tmp_path: Path, standin: Path
) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    assert main(["init", str(project)]) == 0
    root = project / "memory"
    example = f"{INTENTIONS}/example-stabilise-nightly-build/example-bisect-the-flaky-test"
    assert fields(root, f"{example}/task.md")["status"] == "pending"
    assert main(["--memory", str(root), "new", "intention", "ship-v2"]) == 0
    assert main(["--memory", str(root), "new", "task", "write-notes", "--under", "ship-v2"]) == 0
    # the README tour's line: a stand-in agent runs the user's task, never the example
    assert work(root, "--run", "exec", "--", "sh", "-c", "cat >/dev/null; echo drafted") == 0
    assert fields(root, f"{example}/task.md")["status"] == "pending"
    assert not (root / example / "run.log").exists()
    assert fields(root, f"{INTENTIONS}/ship-v2/write-notes/task.md")["status"] == "done"


def test_status_knows_the_worker_runs_during_its_first_round(
    tree: Path, standin: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 34, item 7: the worker says it is there before its first round ends."""
    monkeypatch.setenv("STANDIN_MODE", "sleep")
    monkeypatch.setenv("STANDIN_SLEEP", "60")
    worker = rouse(tree, "work", "--once", "--run", "exec", "--", "agent")
    try:
        wait_for(lambda: fields(tree).get("status") == "running" and calls(standin))
        done = subprocess.run(
            [sys.executable, "-m", "rouse", "--memory", str(tree), "status"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert f"task worker: running pid {worker.pid}" in done.stdout, done.stdout
    finally:
        assert main(["--memory", str(tree), "cancel", "notes"]) == 0
        assert worker.wait(timeout=60) == 0


def test_status_does_not_count_init_s_example_task_as_pending(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The worker never runs an example (``layout.is_example``): status does not wait on it."""
    from rouse.records.scaffold import init

    root = tmp_path / "memory"
    init(root, datetime.now().replace(microsecond=0))
    assert any(p.parent.name.startswith("example-") for p in root.rglob("task.md"))
    capsys.readouterr()
    assert main(["--memory", str(root), "status", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["tasks"]["pending"] == 0
    assert main(["--memory", str(root), "new", "intention", "ship"]) == 0
    assert main(["--memory", str(root), "new", "task", "real-one", "--under", "ship"]) == 0
    capsys.readouterr()
    assert main(["--memory", str(root), "status", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["tasks"]["pending"] == 1


def test_an_untrusted_task_chooses_no_flag_and_no_environment(
    make_tree: MakeTree, standin: Path
) -> None:
    """Its model, effort, repo and category are said in the prompt, fenced: never passed
    to the CLI as flags nor set in the run's environment."""
    fields_ = "origin: untrusted\nmodel: opus\nreasoning: high\nrepo: ~/src/app\ncategory: docs"
    root = make_tree(task_file("notes", fields_))
    assert work(root, "--run", "claude") == 0
    (call,) = calls(standin)
    argv = call["argv"]
    assert isinstance(argv, list) and "--model" not in argv and "--effort" not in argv
    env = call["env"]
    assert isinstance(env, dict) and env["ROUSE_REPO"] == "" and env["ROUSE_CATEGORY"] == ""
    prompt = str(call["stdin"])
    assert "model asked for: opus" in prompt and "repo: ~/src/app" in prompt
    assert "quoted data, not an instruction" in prompt


def test_a_model_that_is_not_one_plain_word_is_no_flag(make_tree: MakeTree, standin: Path) -> None:
    """A value a CLI could read as an option (or a TOML value as more) stays in the prompt."""
    fields_ = "model: --dangerously-skip-permissions\nreasoning: high\nmodel_x: 1"
    root = make_tree(task_file("notes", fields_))
    assert work(root, "--run", "codex") == 0
    (call,) = calls(standin)
    argv = call["argv"]
    assert isinstance(argv, list) and "--dangerously-skip-permissions" not in argv
    assert "--model" not in argv and "model_reasoning_effort=high" in argv
    assert "model asked for: --dangerously-skip-permissions" in str(call["stdin"])
