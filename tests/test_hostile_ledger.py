"""Hold under attack, round three (issue 22, items 4, 10 and 12): what the ledger and a
run's prompt hand back can never name a path, stop a tick, or swell without bound.

- 4: an id read back from a ledger names nothing unless it is one rouse makes
  (``[A-Za-z0-9_-]+``): a forged ``wakes.digest`` of ``../../x`` never makes a run
  log outside the tree.
- 10: one damaged ``wakes`` row is skipped (and said once): the tick delivers the
  rest, ``rouse log`` answers.
- 12: an agent run's prompt is capped; the wakes past the cap are named and counted.

Real ``rouse`` processes; the ledger is forged with the standard sqlite3 module.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest

from conftest import INTENTIONS, NOW, MakeTree, stamp
from rouse.records.scaffold import init
from rouse.sweep.runner import PROMPT_CHARS


def rouse(tree: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROUSE_")}
    env["ROUSE_STAMP_KEY"] = str(tree.parent / "no-key")
    return subprocess.run(
        [sys.executable, "-m", "rouse", "--memory", str(tree), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def stale(make_tree: MakeTree, count: int, body: str = "") -> Path:
    files = {
        f"{INTENTIONS}/job-{n}/intention.md": (
            f"---\nstatus: open\nlast-moved: {stamp(NOW - timedelta(hours=3))}\n"
            f"closes-when: job {n} ships\n---\n{body}\n"
        )
        for n in range(count)
    }
    return make_tree(files)


def agent(tmp_path: Path, name: str, code: int = 0, keep: Path | None = None) -> Path:
    script = tmp_path / name
    saving = f"cat > {keep}\n" if keep is not None else "cat > /dev/null\n"
    script.write_text(f"#!/bin/sh\n{saving}exit {code}\n")
    script.chmod(0o755)
    return script


def ledger(tree: Path) -> sqlite3.Connection:
    return sqlite3.connect(tree / ".rouse" / "ledger.sqlite3")


def test_a_forged_digest_id_never_names_a_path(make_tree: MakeTree, tmp_path: Path) -> None:
    tree = stale(make_tree, 2)
    failing = agent(tmp_path, "fails", code=3)
    done = rouse(tree, "sweep", "--once", "--now", stamp(NOW), "--run", "exec", "--", str(failing))
    assert done.returncode == 1  # the run failed: its wakes are owed, with their digest
    with ledger(tree) as db:
        db.execute("UPDATE outbox SET digest = '../../../escaped' WHERE kind = 'wake'")
    ok = agent(tmp_path, "answers")
    later = stamp(NOW + timedelta(minutes=5))
    done = rouse(tree, "sweep", "--once", "--now", later, "--run", "exec", "--", str(ok))
    assert done.returncode == 0, done.stderr
    assert not list(tmp_path.rglob("*escaped*"))  # no run log outside the tree (nor in it)
    logs = sorted(p.name for p in (tree / ".rouse" / "runs").glob("*.log"))
    assert len(logs) == 2 and all(name.startswith("r") for name in logs)


def test_one_damaged_row_never_stops_a_tick_nor_the_log(
    make_tree: MakeTree, tmp_path: Path
) -> None:
    tree = stale(make_tree, 2)
    failing = agent(tmp_path, "fails", code=1)
    sink = ("--sink", "exec", "--sink-cmd", str(failing))
    assert rouse(tree, "sweep", "--once", "--now", stamp(NOW), *sink).returncode == 1
    with ledger(tree) as db:
        (first,) = db.execute(
            "SELECT id FROM outbox WHERE kind = 'wake' ORDER BY id LIMIT 1"
        ).fetchone()
        db.execute("UPDATE outbox SET wake = 'not json at all' WHERE id = ?", (first,))
    ok = agent(tmp_path, "delivers")
    later = stamp(NOW + timedelta(minutes=5))
    done = rouse(tree, "sweep", "--once", "--now", later, "--sink", "exec", "--sink-cmd", str(ok))
    assert "skipped the damaged ledger row" in done.stderr and "Traceback" not in done.stderr
    with ledger(tree) as db:
        states = dict(db.execute("SELECT id, state FROM outbox WHERE kind = 'wake'").fetchall())
    assert [state for wake, state in states.items() if wake != first] == ["delivered"]
    log = rouse(tree, "log")
    assert log.returncode in (0, 1) and "internal error" not in log.stderr, log.stderr


def test_a_runs_prompt_is_capped_and_names_the_rest(make_tree: MakeTree, tmp_path: Path) -> None:
    tree = stale(make_tree, 150, body="x" * 4000)  # ~600 KB of wakes
    prompt = tmp_path / "prompt.txt"
    keeper = agent(tmp_path, "keeps", keep=prompt)
    done = rouse(tree, "sweep", "--once", "--now", stamp(NOW), "--run", "exec", "--", str(keeper))
    assert done.returncode == 0, done.stderr
    text = prompt.read_text()
    assert len(text) < PROMPT_CHARS + 20_000  # the cap, the named rest and the preamble
    assert "more wake(s) not shown here" in text
    shown = text.count("=== wake ")
    named = [line for line in text.splitlines() if line.startswith("- intention/job-")]
    assert shown + len(named) == 150 and shown >= 1


@pytest.mark.parametrize(
    "password", ["50%off-S3cr3t", "pass word-S3cr3t", "a%2Fb-S3cr3t"], ids=["raw%", "space", "%2F"]
)
def test_a_dsn_password_never_reaches_a_message(tmp_path: Path, password: str) -> None:
    """Issue 22, item 8: libpq's own error text quotes pieces of the DSN (``invalid
    percent-encoded token: "50%off-S3cr3t"``); every path out scrubs each spelling."""
    tree = tmp_path / "memory"
    init(tree, NOW, examples=False)
    dsn = f"postgresql://rouse:{password}@127.0.0.1:1/db?connect_timeout=1"
    for verb in (["status"], ["log"], ["fleet", "status"], ["sweep", "--once"]):
        done = rouse(tree, *verb, "--ledger", dsn)
        said = done.stdout + done.stderr
        assert done.returncode != 0 and "ledger" in said, said
        assert "S3cr3t" not in said and password not in said, said


# -- item 11: the hook's input and settings files, bounded ------------------------


def test_a_hook_fed_nesting_or_a_trickle_still_prints_the_pack(tmp_path: Path) -> None:
    tree = tmp_path / "memory"
    init(tree, NOW, examples=False)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ROUSE_", "CLAUDE_"))}
    command = [sys.executable, "-m", "rouse", "--memory", str(tree), "pack", "--hook", "claude"]
    nested = subprocess.run(
        command, input="[" * 100_000, env=env, capture_output=True, text=True, timeout=60
    )
    assert nested.returncode == 0 and nested.stdout.startswith("now: "), nested.stderr
    trickle = subprocess.Popen(
        [sys.executable, "-c", "import sys, time\nfor _ in range(200):\n"
         "    sys.stdout.write('{'); sys.stdout.flush(); time.sleep(0.2)"],
        stdout=subprocess.PIPE,
    )  # fmt: skip
    assert trickle.stdout is not None
    started = time.monotonic()
    try:
        fed = subprocess.run(
            command, stdin=trickle.stdout, env=env, capture_output=True, text=True, timeout=60
        )
    finally:
        trickle.kill()
        trickle.wait()
        trickle.stdout.close()
    assert fed.returncode == 0 and fed.stdout.startswith("now: "), fed.stderr
    assert time.monotonic() - started < 20  # not the trickle's 40 s


def test_wire_refuses_a_settings_file_nested_too_deep(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    init(project / "memory", NOW, examples=False)
    settings = project / ".claude" / "settings.local.json"
    settings.parent.mkdir(parents=True)
    settings.write_text('{"a": ' * 5000 + "1" + "}" * 5000)
    before = settings.read_bytes()
    done = rouse(project / "memory", "wire", "--claude-hooks")
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "settings.local.json" in done.stderr and len(done.stderr.splitlines()) == 1
    assert settings.read_bytes() == before


# -- item 13: making a key never quarantines what you wrote, silently -----------------


def test_init_key_lists_what_it_quarantines_and_vouches_when_asked(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROUSE_")}

    def run(key: Path, tree: Path, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "rouse", "--memory", str(tree), *args],
            env={**env, "ROUSE_STAMP_KEY": str(key)},
            capture_output=True,
            text=True,
            timeout=60,
        )

    for name, vouch in (("listed", False), ("vouched", True)):
        tree = tmp_path / name / "memory"
        init(tree, NOW, examples=False)
        key = tmp_path / name / "key" / "stamp.key"
        assert run(key, tree, "new", "belief", "mine", "--body", "I wrote this.").returncode == 0
        flags = ("--vouch-existing",) if vouch else ()
        made = run(key, tree, "stamp", "--init-key", *flags)
        assert made.returncode == 0, made.stderr
        assert "quarantined from now on" in made.stdout
        assert "entrypoint/beliefs/belief-mine.md" in made.stdout
        pack = run(key, tree, "pack")
        checked = run(key, tree, "check")
        if vouch:
            assert "I wrote this." in pack.stdout  # the owner's, signed: injected
            assert "quarantined" not in checked.stdout
        else:
            assert "rouse stamp --origin owner" in made.stdout
            assert "I wrote this." not in pack.stdout  # held back, and check says so:
            assert "quarantined: the pack leaves this belief out" in checked.stdout
            assert "rouse stamp --origin owner entrypoint/beliefs/belief-mine.md" in checked.stdout


def test_the_pack_says_when_the_ledger_is_garbage_or_a_directory(tmp_path: Path) -> None:
    """Issue 22, item 10: a ledger that cannot be one is said by the pack, as by status."""
    for name, make in (
        ("garbage", lambda p: p.write_bytes(b"not a database at all, just bytes" * 10)),
        ("directory", lambda p: p.mkdir()),
    ):
        tree = tmp_path / name / "memory"
        init(tree, NOW, examples=False)
        (tree / ".rouse").mkdir(exist_ok=True)
        make(tree / ".rouse" / "ledger.sqlite3")
        pack = rouse(tree, "pack")
        assert pack.returncode == 0, pack.stderr
        warned = pack.stdout.split("warnings:", 1)[-1]
        assert ".rouse/ledger.sqlite3 " in warned and "move it aside" in warned, pack.stdout
