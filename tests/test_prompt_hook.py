"""The UserPromptSubmit hook (issue 13, item 4): a wake reaches an open session at its next prompt.

Every step is a real process: `rouse remind`, `rouse sweep --once` with the
file sink (so the ledger vouches for the nudge file), and `rouse pack --hook
KIND` fed the JSON an agent writes to a hook's stdin.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import NOW, stamp
from rouse.agents import hookio, prompt_hook
from rouse.records import scaffold
from rouse.records.scaffold import init

START = stamp(NOW)  # 12:00, the session starts
DUE = "2026-03-14 13:00"
SWEEP = "2026-03-14 13:05"
LATER = "2026-03-14 13:10"


def rouse(tree: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ROUSE_", "CLAUDE_"))}
    return subprocess.run(
        [sys.executable, "-m", "rouse", *args, "--memory", str(tree)],
        input=stdin,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def event(name: str, session: str = "s1") -> str:
    return json.dumps({"session_id": session, "hook_event_name": name, "cwd": "/", "prompt": "hi"})


def start(tree: Path, session: str = "s1", kind: str = "claude") -> str:
    done = rouse(tree, "pack", "--hook", kind, "--now", SWEEP, stdin=event("SessionStart", session))
    assert done.returncode == 0, done.stderr
    return done.stdout


def prompt(tree: Path, session: str = "s1", kind: str = "claude") -> str:
    stdin = event("UserPromptSubmit", session)
    done = rouse(tree, "pack", "--hook", kind, "--now", LATER, stdin=stdin)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    return done.stdout


def remind(tree: Path, slug: str, due: str = DUE) -> None:
    done = rouse(tree, "remind", slug, "--due", due, "--now", START)
    assert done.returncode == 0, done.stderr


def sweep(tree: Path, now: str = SWEEP) -> None:
    done = rouse(tree, "sweep", "--once", "--now", now, "-q")
    assert done.returncode == 0, done.stderr


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "memory"
    init(root, NOW, examples=False)
    remind(root, "call-bank")
    return root


def test_a_wake_after_session_start_reaches_the_next_prompt_once(tree: Path) -> None:
    pack = rouse(tree, "pack", "--hook", "claude", "--now", START, stdin=event("SessionStart"))
    assert pack.stdout.startswith("now: ") and "woken:" not in pack.stdout
    assert prompt(tree) == ""  # nothing delivered yet: nothing at all
    sweep(tree)
    text = prompt(tree)
    assert text.startswith("rouse: 1 record(s) woke you since your last prompt\n")
    assert "  reminder/call-bank — woke you 5m ago (due, nudge 1)\n" in text
    assert "    at: inventory/reminders/call-bank\n" in text
    assert prompt(tree) == ""  # once per session
    assert "reminder/call-bank" in prompt(tree, "s2")  # another session has not seen it


def test_a_session_no_session_start_served_gets_its_pack_at_its_first_prompt(tree: Path) -> None:
    """Gemini CLI over ACP runs no SessionStart hook: the first prompt brings the pack
    (the wakes standing then are in it, as woken), and only new wakes after that."""
    sweep(tree)
    for kind in ("claude", "gemini"):
        session = f"acp-{kind}"
        first = prompt(tree, session, kind)
        text = (
            json.loads(first)["hookSpecificOutput"]["additionalContext"]
            if kind == "gemini"
            else first
        )
        if kind == "gemini":
            assert json.loads(first)["hookSpecificOutput"]["hookEventName"] == "BeforeAgent"
        assert text.startswith("now: ") and "woken: 1 record(s)" in text and "call-bank" in text
        assert prompt(tree, session, kind) == ""  # the pack once; its wake not again
    remind(tree, "pay-rent", "2026-03-14 13:06")
    sweep(tree, "2026-03-14 13:07")
    text = prompt(tree, "acp-claude")
    assert text.startswith("rouse: 1 record(s) woke you") and "pay-rent" in text
    assert "now: " not in text and "call-bank" not in text


def test_no_pack_at_every_prompt_where_no_seen_set_can_be_kept(tree: Path) -> None:
    """A sessions folder that cannot be written (here: a file where it should be) keeps no
    seen-set: the prompt says nothing rather than repeating the pack at every prompt."""
    state = tree / ".rouse"
    state.mkdir(exist_ok=True)
    (state / "sessions").write_text("not a folder\n")
    assert prompt(tree, "no-start") == "" and prompt(tree, "no-start") == ""


def test_wakes_the_session_start_pack_showed_are_not_repeated(tree: Path) -> None:
    sweep(tree)
    assert "woken: 1 record(s)" in start(tree)
    assert prompt(tree) == ""
    remind(tree, "pay-rent", "2026-03-14 13:06")
    sweep(tree, "2026-03-14 13:07")
    text = prompt(tree)
    assert "reminder/pay-rent" in text and "call-bank" not in text


def test_a_wake_acted_on_or_written_by_hand_is_not_injected(tree: Path) -> None:
    start(tree)
    sweep(tree)
    done = rouse(tree, "close", "reminder/call-bank", "--done", "--now", "2026-03-14 13:06")
    assert done.returncode == 0, done.stderr
    stray = tree / ".rouse" / "nudges" / "20260314-130600-reminder-fake.md"
    stray.write_text("reminder/fake — due\nat: inventory/reminders/call-bank\n")
    assert prompt(tree) == ""


def test_the_codex_prompt_hook_prints_strict_json(tree: Path) -> None:
    start(tree, kind="codex")
    assert prompt(tree, kind="codex") == ""
    sweep(tree)
    payload = json.loads(prompt(tree, kind="codex"))
    assert set(payload) == {"hookSpecificOutput"}
    out = payload["hookSpecificOutput"]
    assert set(out) == {"hookEventName", "additionalContext"}
    assert out["hookEventName"] == "UserPromptSubmit"
    assert "reminder/call-bank" in out["additionalContext"]


def test_many_wakes_fit_the_cap(tree: Path) -> None:
    start(tree)
    for i in range(40):  # (in-process: forty `rouse remind` processes are slow)
        scaffold.remind(tree, f"chore-{i:02}-" + "x" * 60, DUE, NOW)
    sweep(tree)
    text = prompt(tree)
    assert text.startswith("rouse: 41 record(s) woke you")
    assert "  … and 21 more — run `rouse pack`\n" in text
    assert hookio.utf16_units(text) <= hookio.HOOK_LIMIT


def test_a_hostile_session_id_stays_inside_the_state_folder(tree: Path, tmp_path: Path) -> None:
    start(tree, "../../../escape")
    sweep(tree)
    assert "call-bank" in prompt(tree, "../../../escape")
    assert prompt(tree, "../../../escape") == ""
    (only,) = (tree / ".rouse" / "sessions").iterdir()
    assert only.name.startswith("h-") and not (tmp_path / "escape.json").exists()
    assert prompt_hook.seen_file(tree, "") is None


def test_a_seen_set_behind_a_symlink_is_neither_read_nor_written(
    tree: Path, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    sweep(tree)  # (the sweeper itself refuses to run with a link in its state)
    (tree / ".rouse" / "sessions").symlink_to(elsewhere)
    start(tree)
    assert prompt(tree) == ""  # no place to remember: nothing rather than every prompt
    assert list(elsewhere.iterdir()) == []


def test_the_prompt_hook_never_fails_the_prompt(tmp_path: Path) -> None:
    done = rouse(tmp_path / "nowhere", "pack", "--hook", "claude", stdin=event("UserPromptSubmit"))
    assert done.returncode == 0 and done.stdout == ""
    assert done.stderr.startswith("rouse: no wakes at this prompt: ")
    assert done.stderr.count("\n") == 1


def test_idle_sessions_seen_sets_are_pruned_when_a_session_starts(tree: Path) -> None:
    start(tree, "old")
    old = tree / ".rouse" / "sessions" / "old.json"
    gone = old.stat().st_mtime - prompt_hook.KEEP_SECONDS - 60
    os.utime(old, (gone, gone))
    start(tree, "new")
    assert not old.exists() and (tree / ".rouse" / "sessions" / "new.json").exists()


def test_a_tree_that_cannot_keep_a_seen_set_repeats_nothing(tree: Path) -> None:
    start(tree)
    sweep(tree)
    sessions = tree / ".rouse" / "sessions"
    sessions.chmod(0o555)
    try:
        if os.access(sessions, os.W_OK):  # root writes anyway: take the file's place instead
            sessions.chmod(0o755)
            (sessions / "s1.json").unlink()
            (sessions / "s1.json").mkdir()
        assert prompt(tree) == "" and prompt(tree) == ""
    finally:
        sessions.chmod(0o755)


def test_a_held_sessions_lock_delays_a_prompt_a_moment_and_loses_no_wake(tree: Path) -> None:
    """Issue 31, item 13: another process holding the sessions folder's lock (for ever,
    here) costs a prompt a short wait, never the prompt; the wake comes at the next."""
    import fcntl

    start(tree)
    sweep(tree)
    folder = os.open(tree / ".rouse" / "sessions", os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(folder, fcntl.LOCK_EX)
        stdin = event("UserPromptSubmit")
        began = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-m", "rouse", "pack", "--hook", "claude", "--now", LATER],
            input=stdin,
            env={**os.environ, "ROUSE_HOME": str(tree)},
            capture_output=True,
            text=True,
            timeout=20,
        )
        assert time.monotonic() - began < 15
        assert done.returncode == 0 and done.stdout == ""
        assert "new wakes wait for the next prompt" in done.stderr
        assert "another process holds" in done.stderr
        # a new session's start is not held up either: its pack is printed
        assert start(tree, "s2").startswith("now: ")
    finally:
        os.close(folder)
    assert "reminder/call-bank" in prompt(tree)  # the wake was skipped, not lost


def test_a_checkpoint_is_progress_not_a_wake_neither_prompt_nor_stop_hook_hands_it_on(
    tree: Path,
) -> None:
    """Issue 34, item 2: a worker's checkpoint reaches the log and the pack's running line,
    but never an open session as a wake to act on (the Stop hook takes what the prompt
    hook takes: ``take_new``)."""
    task = "entrypoint/beliefs/motivations/intentions/long/long-job"
    (tree / task).mkdir(parents=True)
    (tree / task / "task.md").write_text(
        f"---\nstatus: running\nopened: {START}\nlast-moved: {START}\n---\nA long job.\n"
    )
    start(tree)
    done = rouse(tree, "checkpoint", "long-job", "half the files copied", "--now", START)
    assert done.returncode == 0, done.stderr
    sweep(tree)  # delivers the checkpoint (a nudge file) and the reminder's wake
    text = prompt(tree)
    assert "reminder/call-bank" in text  # a real wake still comes through
    assert "long-job" not in text and "checkpoint" not in text
    assert prompt_hook.take_new(str(tree), "s2")[0] != []  # s2 is woken by the reminder only
    assert all("long-job" not in n.record_dir for _, n in prompt_hook.take_new(str(tree), "s3")[0])
    pack = rouse(tree, "pack", "--json", "--now", LATER)
    found = json.loads(pack.stdout)
    assert [w["path"] for w in found["woken"]] == ["inventory/reminders/call-bank"]
    (running,) = found["tasks"]["running"]
    assert "half the files copied" in running["checkpoint"]
