"""Agent runs (issue 13, item 2): ``rouse sweep --run claude|codex|exec -- CMD…``.

The agent is a stand-in executable on PATH (a real process): it records its
argv, stdin, working directory and environment, and depending on
``STANDIN_MODE`` answers by calling ``rouse move``, says nothing, fails,
hangs with a child, or floods its output.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import sqlite3
import stat
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest

from conftest import INTENTIONS, NOW, MakeTree, ago, stamp
from rouse.cli.main import main
from rouse.pack.build import build_pack
from rouse.runs import presets
from rouse.state import sweeper
from rouse.sweep import ledger

SLUGS = ("alpha", "beta")
CLIENTS = Path(__file__).resolve().parent.parent / ".venv" / "clients" / "node_modules" / ".bin"

STANDIN = """#!{python}
import json, os, subprocess, sys, time
seen = os.environ["STANDIN_DIR"]
n = len([p for p in os.listdir(seen) if p.startswith("argv")])
prompt = sys.stdin.read()
with open(os.path.join(seen, f"argv{{n}}.json"), "w") as out:
    json.dump({{"argv": sys.argv, "cwd": os.getcwd(), "stdin": prompt,
               "env": {{k: v for k, v in os.environ.items() if k.startswith("ROUSE_")}}}}, out)
mode = os.environ.get("STANDIN_MODE", "silent")
if mode == "answer":
    memory = os.environ["ROUSE_MEMORY"]
    for line in prompt.splitlines():
        if line.startswith("at: "):
            subprocess.run([sys.executable, "-m", "rouse", "--memory", memory, "move",
                            line[4:], "--note", "done by the stand-in"], check=True)
elif mode == "fail":
    print("the agent could not start")
    sys.exit(3)
elif mode == "hang":
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    open(os.path.join(seen, "child.pid"), "w").write(str(child.pid))
    time.sleep(60)
elif mode == "loud":
    sys.stdout.write("x" * 200_000 + "\\nTHE END\\n")
print(json.dumps({{"type": "result", "result": "stand-in done"}}))
"""


@pytest.fixture
def tree(make_tree: MakeTree) -> Path:
    moved = stamp(ago(hours=3))
    return make_tree(
        {
            f"{INTENTIONS}/{slug}/intention.md": f"""
            ---
            status: open
            opened: {moved}
            last-moved: {moved}
            closes-when: it ships
            ---
            Do {slug}.
            """
            for slug in SLUGS
        }
    )


@pytest.fixture
def standin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``claude``, ``codex`` and ``agent`` on PATH, all the stand-in; returns where it records."""
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
    return seen


def calls(seen: Path) -> list[dict[str, object]]:
    found = sorted(seen.glob("argv*.json"), key=lambda p: int(p.stem[4:]))
    return [json.loads(p.read_text()) for p in found]


def sweep(root: Path, *args: str, at: timedelta = timedelta(0)) -> int:
    return main(["--memory", str(root), "--now", stamp(NOW + at), "sweep", "--once", *args])


def dead(pid: int) -> bool:
    """Gone, or a zombie nobody has reaped yet (SIGKILL lands asynchronously: wait ≤ 10s)."""
    for _ in range(200):
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.05)
    return False


def runs(root: Path) -> list[dict[str, object]]:
    with ledger.Ledger(root) as db:
        return db.runs()


def test_claude_preset_one_run_in_the_project_dir_that_answers(
    tree: Path, standin: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("STANDIN_MODE", "answer")
    assert sweep(tree, "--run", "claude", "--", "--permission-mode", "acceptEdits") == 0
    (call,) = calls(standin)  # one run for the whole digest
    argv = call["argv"]
    assert isinstance(argv, list)
    assert argv[1:] == ["-p", "--output-format", "json", "--permission-mode", "acceptEdits"]
    assert call["cwd"] == str(tree.parent)  # the tree's project directory
    text = str(call["stdin"])
    assert text.startswith("rouse woke you: 2 record(s)")
    assert f"rouse --memory {tree} move" in text and "say why" in text
    entries = ledger.recent(tree)
    assert {e.state for e in entries} == {"delivered"}
    for entry in entries:
        assert entry.id in text
    env = call["env"]
    assert isinstance(env, dict)
    assert env["ROUSE_MEMORY"] == str(tree) and set(env["ROUSE_WAKE_IDS"].split()) == {
        e.id for e in entries
    }
    (row,) = runs(tree)
    assert row["state"] == "answered" and row["answered"] == 2 and row["exit"] == 0
    capsys.readouterr()
    assert main(["--memory", str(tree), "log"]) == 0
    out = capsys.readouterr().out
    assert f"run {row['id']}: exit 0 after" in out and f".rouse/runs/{row['id']}.log" in out


def test_codex_preset_reads_the_prompt_from_stdin(
    tree: Path, standin: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert sweep(tree, "--run", "codex", "--", "--sandbox", "workspace-write") == 0
    (call,) = calls(standin)
    assert call["argv"][1:] == ["exec", "--sandbox", "workspace-write", "-"]  # type: ignore[index]


def test_exit_0_without_moving_is_ran_not_answered_and_escalates(
    tree: Path, standin: Path, tmp_path: Path
) -> None:
    inbox = tmp_path / "owner.txt"
    page = tmp_path / "page"
    page.write_text(f"#!/bin/sh\ncat >> {inbox}\n")
    page.chmod(0o755)
    # a preset run takes no command, so the one after -- is the escalation's
    options = ("--run", "claude", "--escalate-after", "2", "--escalate", "exec", "--", str(page))
    assert sweep(tree, *options) == 0
    assert [r["state"] for r in runs(tree)] == ["not answered"]
    entries = ledger.recent(tree)
    assert {e.state for e in entries} == {"delivered"}  # not retried as failed
    # each wake stays woken: its receipt is a nudge file saying the run did not answer it
    for entry in entries:
        assert (entry.receipt or "").startswith(".rouse/nudges/")
        assert "ended without answering it" in (tree / (entry.receipt or "")).read_text()
    assert not inbox.exists()
    assert sweep(tree, *options, at=timedelta(hours=2)) == 0  # woken again: 2 nudges
    assert [r["state"] for r in runs(tree)] == ["not answered", "not answered"]
    assert inbox.read_text().count("To the owner of the memory") == 2  # one per record


def test_a_failed_run_is_retried_as_a_unit(
    tree: Path, standin: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STANDIN_MODE", "fail")
    assert sweep(tree, "--run", "exec", "--", "agent") == 1
    assert {e.state for e in ledger.recent(tree)} == {"pending"}
    assert [(r["state"], r["exit"]) for r in runs(tree)] == [("failed", 3)]
    monkeypatch.setenv("STANDIN_MODE", "answer")
    assert sweep(tree, "--run", "exec", "--", "agent", at=timedelta(seconds=30)) == 1  # backoff
    assert len(calls(standin)) == 1
    assert sweep(tree, "--run", "exec", "--", "agent", at=timedelta(minutes=1)) == 0
    first, second = calls(standin)
    assert first["env"]["ROUSE_WAKE_ID"] == second["env"]["ROUSE_WAKE_ID"]  # type: ignore[index]
    assert {e.state for e in ledger.recent(tree)} == {"delivered"}


def test_one_run_at_a_time_per_tree(tree: Path, standin: Path) -> None:
    lock = tree / ".rouse" / sweeper.RUN_LOCK
    lock.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock, os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # a run is live
        assert sweep(tree, "--run", "exec", "--", "agent") == 0  # waiting is not failing
        assert calls(standin) == []
        entries = ledger.recent(tree)
        assert {e.state for e in entries} == {"held"}
        assert all("a run is still live" in (e.error or "") for e in entries)
    finally:
        os.close(fd)
    assert sweep(tree, "--run", "exec", "--", "agent", at=timedelta(minutes=1)) == 0
    assert len(calls(standin)) == 1
    assert {e.state for e in ledger.recent(tree)} == {"delivered"}


def test_over_the_budget_wakes_wait_and_everyone_says_so(
    tree: Path, standin: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = ("--run", "exec", "--max-runs", "1/day", "--", "agent")
    assert sweep(tree, *run) == 0
    assert sweep(tree, *run, at=timedelta(hours=2)) == 0  # due again, but the budget is spent
    assert len(calls(standin)) == 1
    waiting = [e for e in ledger.recent(tree) if e.state == "held"]
    assert len(waiting) == 2
    assert all("the run budget (1/day) is spent" in (e.error or "") for e in waiting)
    later = NOW + timedelta(hours=3)
    spent = sweeper.run_budget_spent(tree, later)
    assert spent is not None and spent["until"] == NOW + timedelta(days=1)
    warnings = build_pack(tree, later, probes_enabled=False).data["warnings"]
    assert any("run budget (1/day) is spent" in w for w in warnings)
    capsys.readouterr()
    main(["--memory", str(tree), "log"])
    assert "the run budget (1/day) is spent" in capsys.readouterr().out
    assert sweep(tree, *run, at=timedelta(days=1, minutes=1)) == 0  # a day later: it runs
    assert len(calls(standin)) == 2
    assert sweeper.run_budget_spent(tree, NOW + timedelta(days=1, minutes=2)) is None


def test_the_timeout_kills_the_whole_process_group(
    tree: Path, standin: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STANDIN_MODE", "hang")
    assert sweep(tree, "--run", "exec", "--run-timeout", "1s", "--", "agent") == 1
    child = int((standin / "child.pid").read_text())
    assert dead(child)  # the agent's own child went with it: the whole group was killed
    (row,) = runs(tree)
    assert row["state"] == "failed" and row["exit"] is None
    log = (tree / f".rouse/runs/{row['id']}.log").read_text()
    assert "exit: killed (its process group) at the deadline" in log
    assert {e.state for e in ledger.recent(tree)} == {"pending"}


def test_the_log_keeps_exit_duration_and_the_last_64_kib(
    tree: Path, standin: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STANDIN_MODE", "loud")
    assert sweep(tree, "--run", "exec", "--", "agent") == 0
    (row,) = runs(tree)
    data = (tree / f".rouse/runs/{row['id']}.log").read_bytes()
    head, output = data.split(b"\n---\n", 1)
    assert b"exit: 0\n" in head and b"duration: " in head and b"bytes before them discarded" in head
    assert len(output) == 64 * 1024 and output.endswith(b'"stand-in done"}\n')
    assert isinstance(row["seconds"], float)


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--run", "exec", "--max-runs", "5/week", "--", "agent"], "--max-runs"),
        (["--run", "exec", "--run-timeout", "0s", "--", "agent"], "--run-timeout"),
        (["--run", "exec", "--run-timeout", "2d", "--", "agent"], "--run-timeout"),
        (["--run", "exec"], "needs a command"),
        (["--run", "claude", "--sink", "stdout"], "drop --sink"),
        (["--max-runs", "3/day"], "are for --run"),
    ],
)
def test_bad_run_options_are_refused(
    tree: Path, capsys: pytest.CaptureFixture[str], args: list[str], says: str
) -> None:
    assert sweep(tree, *args) == 2
    err = capsys.readouterr().err
    assert says in err and err.count("\n") == 1


# -- the presets against the real CLIs' own parsers ---------------------------------


def real(name: str) -> Path:
    if not (CLIENTS / name).exists():
        pytest.skip(f"{CLIENTS / name} is missing: run `make clients` (needs node and npm)")
    return CLIENTS / name


def closed_port() -> int:
    """A loopback port nothing listens on: connecting is refused at once."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def test_the_claude_preset_runs_the_real_cli_and_fails_only_at_the_network(
    tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    claude = real("claude")
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("PATH", f"{claude.parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-dummy-key-for-a-test")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", f"http://127.0.0.1:{closed_port()}")
    monkeypatch.setenv("CLAUDE_CODE_MAX_RETRIES", "0")
    assert sweep(tree, "--run", "claude", "--run-timeout", "60s") == 1  # the run failed…
    (row,) = runs(tree)
    log = (tree / f".rouse/runs/{row['id']}.log").read_text()
    result = json.loads(log.split("\n---\n", 1)[1].strip().splitlines()[-1])
    assert result["type"] == "result"  # …but print mode, JSON output and stdin all worked:
    assert "Unable to connect to API" in result["result"]  # only the network failed
    bad = [str(claude), "-p", "--output-format", "jsonx", "--version"]  # the parser can say no
    assert subprocess.run(bad, capture_output=True, env=os.environ, timeout=60).returncode != 0


def test_the_codex_preset_parses_with_the_real_cli_and_reaches_the_network(
    tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    codex = real("codex")
    head, tail, _docs = presets.PRESETS["codex"]
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "HOME": str(home), "CODEX_HOME": str(home)}

    def parse(*extra: str) -> int:
        argv = [str(codex), *head[1:], *extra, *tail, "--help"]
        return subprocess.run(argv, capture_output=True, env=env, timeout=60).returncode

    assert parse() == 0 and parse("--skip-git-repo-check") == 0
    assert parse("--no-such-flag-for-rouse") != 0  # the parser can say no
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("PATH", f"{codex.parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-dummy-key-for-a-test")
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{closed_port()}/v1")
    code = sweep(tree, "--run", "codex", "--run-timeout", "3s", "--", "--skip-git-repo-check")
    assert code == 1
    (row,) = runs(tree)
    log = (tree / f".rouse/runs/{row['id']}.log").read_text()
    assert "exit: killed" in log  # it kept retrying the network until our deadline
    assert "connect" in log.lower() and "unexpected argument" not in log


def test_the_run_log_is_kept_in_the_state_dir(tree: Path, standin: Path) -> None:
    assert sweep(tree, "--run", "exec", "--", "agent") == 0
    (row,) = runs(tree)
    assert (tree / ".rouse" / "runs" / f"{row['id']}.log").is_file()
    with sqlite3.connect(tree / ".rouse/ledger.sqlite3") as db:
        assert db.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 1


# -- several commands in one invocation (issue 13, item 7) ----------------------------


def test_run_and_escalation_commands_in_one_invocation(
    tree: Path, standin: Path, tmp_path: Path
) -> None:
    inbox = tmp_path / "owner box.txt"  # a space: the quoted form keeps it one argument
    page = tmp_path / "page"
    page.write_text('#!/bin/sh\ncat >> "$1"\n')
    page.chmod(0o755)
    options = ("--run", "exec", "--run-cmd", "agent --from-run-cmd 'two words'")
    options += ("--escalate-after", "1", "--escalate", "exec")
    options += ("--escalate-cmd", f"{page} '{inbox}'")
    assert sweep(tree, *options) == 0
    (call,) = calls(standin)
    assert call["argv"][1:] == ["--from-run-cmd", "two words"]  # type: ignore[index]
    assert inbox.read_text().count("To the owner of the memory") == 2


def test_the_cmd_options_and_the_trailing_command_share_out(
    tree: Path, tmp_path: Path, standin: Path
) -> None:
    seen = tmp_path / "sink.txt"
    sink = tmp_path / "sink"
    sink.write_text(f'#!/bin/sh\necho "$ROUSE_WAKE_IDS" >> {seen}\n')
    sink.chmod(0o755)
    page = tmp_path / "page"
    page.write_text("#!/bin/sh\ncat > /dev/null\n")
    page.chmod(0o755)
    # --sink exec keeps the trailing command; the escalation's comes quoted
    options = ("--sink", "exec", "--escalate-after", "1", "--escalate", "exec")
    assert sweep(tree, *options, "--escalate-cmd", str(page), "--", str(sink)) == 0
    assert len(seen.read_text().splitlines()) == 2  # one per wake: no --digest
    with ledger.Ledger(tree) as db:
        assert [e["state"] for e in db.messages("escalation")] == ["delivered", "delivered"]


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (
            ["--sink", "exec", "--escalate-after", "1", "--escalate", "exec", "--", "a"],
            "--sink-cmd",
        ),
        (["--sink", "exec", "--sink-cmd", "agent 'unclosed"], "--sink-cmd"),
        (["--sink", "exec", "--sink-cmd", "   "], "--sink-cmd"),
        (["--sink", "file", "--sink-cmd", "agent"], "--sink-cmd is for --sink exec"),
        (["--sink", "exec", "--sink-cmd", "agent", "--", "other"], "after --"),
        (["--run-cmd", "agent"], "--run-cmd is for --run"),
    ],
)
def test_bad_command_forms_are_refused(
    tree: Path, capsys: pytest.CaptureFixture[str], args: list[str], says: str
) -> None:
    assert sweep(tree, *args) == 2
    err = capsys.readouterr().err
    assert says in err and err.count("\n") == 1


def test_a_run_under_sweep_now_evaluates_the_clock_at_the_tick(
    tree: Path, standin: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 18, 7b: ``sweep --once --now X --run …`` hands X to the run as ``ROUSE_NOW``,
    so the agent's own ``rouse`` commands (here its ``move``) agree with the tick."""
    monkeypatch.setenv("STANDIN_MODE", "answer")
    assert sweep(tree, "--run", "exec", "--", "agent") == 0
    (call,) = calls(standin)
    env = call["env"]
    assert isinstance(env, dict)
    assert env["ROUSE_NOW"] == stamp(NOW)
    for slug in SLUGS:  # the stand-in's `rouse move` stamped the tick's instant
        text = (tree / INTENTIONS / slug / "intention.md").read_text()
        assert f"last-moved: {stamp(NOW)}" in text
    (row,) = runs(tree)
    assert row["state"] == "answered" and row["answered"] == 2


def test_a_run_under_the_wall_clock_gets_no_rouse_now(tree: Path, standin: Path) -> None:
    assert main(["--memory", str(tree), "sweep", "--once", "--run", "exec", "--", "agent"]) == 0
    (call,) = calls(standin)
    env = call["env"]
    assert isinstance(env, dict)
    assert "ROUSE_NOW" not in env and env["ROUSE_MEMORY"] == str(tree)
