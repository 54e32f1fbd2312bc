"""Hold under attack, round four (issue 31): the sweeper's ledger and its stamps.

- 1: a record whose ``swept:`` stamp is lost after a delivered wake is never
  silenced: the stamp is re-derived from the ledger and the record wakes again
  at its next step; ``check`` warns about the damaged stamp.
- 10: one damaged ledger row (JSON nested 1,000 deep) is skipped and reported;
  ``rouse log`` answers, the sweep goes on and exits 0, the record's wake is
  made again by the clock.
- 11: ``rouse log`` on a ledger that is garbage or a directory says so.

Real ``rouse`` processes on real trees; the ledger is forged with sqlite3.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from datetime import datetime, timedelta
from pathlib import Path

from conftest import INTENTIONS, REMINDERS, MakeTree

I1 = f"{INTENTIONS}/i1/intention.md"


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


def answered(done: subprocess.CompletedProcess[str]) -> None:
    assert "internal error" not in done.stderr, done.stderr
    assert "Traceback" not in done.stderr, done.stderr


def intention(make_tree: MakeTree) -> Path:
    """An open intention last moved 2026-03-02 09:00 (stale after 2h: due at 11:00)."""
    return make_tree(
        {I1: "---\nstatus: open\nlast-moved: 2026-03-02 09:00\ncloses-when: it ships\n---\nbody\n"}
    )


def nudge_files(tree: Path) -> list[Path]:
    return sorted((tree / ".rouse" / "nudges").glob("*.md"))


def ledger(tree: Path) -> sqlite3.Connection:
    return sqlite3.connect(tree / ".rouse" / "ledger.sqlite3")


# -- item 1: a lost `swept:` never silences the record ------------------------------


def drop_line(path: Path, key: str, replacement: str | None = None) -> None:
    lines = path.read_text().splitlines(keepends=True)
    kept = [line for line in lines if not line.startswith(f"{key}:")]
    assert len(kept) == len(lines) - 1, f"no {key}: line in {path}"
    if replacement is not None:
        kept.insert(1, f"{key}: {replacement}\n")
    path.write_text("".join(kept))


def test_a_lost_swept_stamp_wakes_the_record_again(make_tree: MakeTree) -> None:
    tree = intention(make_tree)
    first = rouse(tree, "sweep", "--once", "--now", "2026-03-02 11:00")
    assert first.returncode == 0, first.stderr
    assert len(nudge_files(tree)) == 1
    record = tree / I1
    assert "swept: 2026-03-02 11:00" in record.read_text()
    drop_line(record, "swept")  # an agent rewrote the header; a restore from git
    check = rouse(tree, "check", "--now", "2026-03-02 13:00")
    answered(check)
    assert "without 'swept:'" in check.stdout + check.stderr, check.stdout
    again = rouse(tree, "sweep", "--once", "--now", "2026-03-02 14:00", "-v")
    answered(again)
    assert again.returncode == 0, again.stderr
    # woken again, as the clock says it is due (a new wake: the next step's)
    assert len(nudge_files(tree)) == 2, again.stderr
    text = record.read_text()
    assert "swept: 2026-03-02 14:00" in text and "nudges: 2" in text
    # and it settles: the next tick, before the next step, sends nothing more
    quiet = rouse(tree, "sweep", "--once", "--now", "2026-03-02 14:30")
    assert quiet.returncode == 0, quiet.stderr
    assert len(nudge_files(tree)) == 2


def test_an_unreadable_swept_stamp_is_rederived_and_named_by_check(
    make_tree: MakeTree,
) -> None:
    tree = intention(make_tree)
    assert rouse(tree, "sweep", "--once", "--now", "2026-03-02 11:00").returncode == 0
    record = tree / I1
    drop_line(record, "swept", "soon")
    check = rouse(tree, "check", "--now", "2026-03-02 11:30")
    answered(check)
    assert re.search(r"swept.*soon|soon.*swept", check.stdout + check.stderr), check.stdout
    # before the next step (11:00 + 2h) nothing is sent, but the stamp comes back
    early = rouse(tree, "sweep", "--once", "--now", "2026-03-02 11:30")
    assert early.returncode == 0, early.stderr
    assert len(nudge_files(tree)) == 1
    assert "swept: 2026-03-02 11:00" in record.read_text()
    # at the next step it wakes again
    later = rouse(tree, "sweep", "--once", "--now", "2026-03-02 13:05")
    assert later.returncode == 0, later.stderr
    assert len(nudge_files(tree)) == 2


# -- items 10 and 17: one damaged row never stops the rest ---------------------------

NESTED = "[" * 1000 + "]" * 1000


def test_a_row_nested_1000_deep_is_skipped_said_and_its_wake_made_again(
    make_tree: MakeTree,
) -> None:
    tree = intention(make_tree)
    failed = rouse(
        tree, "sweep", "--once", "--now", "2026-03-02 11:00", "--sink", "exec", "--", "false"
    )
    assert failed.returncode == 1, failed.stderr  # the wake is owed (pending) in the ledger
    with ledger(tree) as db:
        db.execute("UPDATE outbox SET wake = ? WHERE kind = 'wake'", (NESTED,))
    for args in (("log",), ("log", "--json")):
        shown = rouse(tree, *args)
        answered(shown)
        assert shown.returncode == 0, shown.stderr
        assert "damaged" in shown.stderr and "skipped" in shown.stderr, shown.stderr
    assert rouse(tree, "log", "--json").stdout.strip() == "[]"
    swept = rouse(tree, "sweep", "--once", "--now", "2026-03-02 11:05")
    answered(swept)
    assert swept.returncode == 0, swept.stderr
    assert "damaged" in swept.stderr
    assert len(nudge_files(tree)) == 1  # the clock made the record's wake again: sent
    assert "swept: 2026-03-02 11:05" in (tree / I1).read_text()
    again = rouse(tree, "sweep", "--once", "--now", "2026-03-02 11:10")
    answered(again)
    assert again.returncode == 0, again.stderr
    assert len(nudge_files(tree)) == 1
    shown = rouse(tree, "log")
    assert shown.returncode == 0 and "delivered" in shown.stdout, shown.stdout
    assert "damaged" not in shown.stderr  # the row was written again as rouse writes it


def test_one_trees_damaged_row_never_stops_deliver_for_the_others(
    pg_dsn: str, tmp_path: Path
) -> None:
    from test_fleet_deliver import deliver, environment, execute, new_tree, queue, rows

    bad, good = new_tree(), new_tree()
    bad_ids = queue(pg_dsn, bad, 2)
    good_ids = queue(pg_dsn, good, 2)
    execute(pg_dsn, "UPDATE outbox SET wake = %s WHERE id = %s", NESTED, min(bad_ids + good_ids))
    out = tmp_path / "out"
    out.mkdir()
    for _ in range(2):  # a second run finds nothing owed: the damaged row was set aside
        done = deliver(
            "--ledger", pg_dsn, "--sink", "exec", "--once", "--batch", "1",
            "--", "sh", "-c", 'cat > "$OUT/$ROUSE_WAKE_ID.txt"',
            env=environment(OUT=str(out)),
        )  # fmt: skip
        answered(done)
        assert done.returncode == 0, done.stderr
    sent = sorted(path.stem for path in out.glob("*.txt"))
    damaged = min(bad_ids + good_ids)
    assert sent == sorted(i for i in bad_ids + good_ids if i != damaged)
    states = {row["id"]: row["state"] for row in rows(pg_dsn)}
    assert states[damaged] == "withdrawn"  # set aside: the sweeper's clock makes it again


# -- item 11: `rouse log` says when the ledger cannot be read -------------------------


def test_log_says_a_garbage_or_directory_ledger_is_unreadable(make_tree: MakeTree) -> None:
    tree = intention(make_tree)
    state = tree / ".rouse"
    state.mkdir(exist_ok=True)
    path = state / "ledger.sqlite3"
    empty = rouse(tree, "log")  # no ledger yet: nothing to show, and that is fine
    assert empty.returncode == 0 and empty.stdout == "", empty.stderr
    path.write_bytes(b"this is not a database, it is garbage\n" * 20)
    for spoiled in ("garbage", "directory"):
        if spoiled == "directory":
            path.unlink()
            path.mkdir()
        for args in (("log",), ("log", "--json")):
            shown = rouse(tree, *args)
            answered(shown)
            assert shown.returncode != 0, (spoiled, shown.stdout)
            assert "ledger.sqlite3" in shown.stderr, shown.stderr
            assert "directory" in shown.stderr or "not an SQLite" in shown.stderr, shown.stderr


# -- item 6: a ledger made by many processes at once -----------------------------------

#: ``rouse ARGS…`` in a process that waits for a go-file first, so all start at once
AT_ONCE = """
import sys, time
from pathlib import Path
go = Path(sys.argv[1])
while not go.exists():
    time.sleep(0.001)
sys.argv = ["rouse", *sys.argv[2:]]
from rouse.cli.main import run
run()
"""


def test_workers_started_at_once_on_a_tree_with_no_ledger_all_work(
    make_tree: MakeTree, tmp_path: Path
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROUSE_")}
    env["ROUSE_STAMP_KEY"] = str(tmp_path / "no-key")
    for attempt in range(3):  # each a tree with no ledger yet
        tree = make_tree(
            {I1: "---\nstatus: open\nlast-moved: 2026-03-02 09:00\n---\n"}, name=f"t{attempt}"
        )
        go = tmp_path / f"go-{attempt}"
        work = ("work", "--once", "--jobs", "2", "--run", "exec", "--", "true")
        started = [
            subprocess.Popen(
                [sys.executable, "-c", AT_ONCE, str(go), "--memory", str(tree), *work],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(6)
        ]
        go.touch()
        for process in started:
            _out, err = process.communicate(timeout=120)
            assert "internal error" not in err, err
            assert process.returncode == 0, err
        with ledger(tree) as db:
            (version,) = db.execute("PRAGMA user_version").fetchone()
            assert version > 0 and db.execute("SELECT COUNT(*) FROM outbox").fetchone() == (0,)


# -- item 7: tells never delay a wake or a shutdown ------------------------------------


class SilentServer:
    """A loopback HTTP server that takes every connection and never answers."""

    def __init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0), backlog=256)
        self.url = f"http://127.0.0.1:{self.server.getsockname()[1]}/"
        self.held: list[socket.socket] = []
        self.thread = threading.Thread(target=self._take, daemon=True)
        self.thread.start()

    def _take(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                self.held.append(self.server.accept()[0])

    def close(self) -> None:
        self.server.close()
        for connection in self.held:
            connection.close()


def test_owed_tells_never_make_a_wake_late_and_sigterm_ends_the_sweeper(
    make_tree: MakeTree, tmp_path: Path
) -> None:
    from rouse.sweep.telling import tell

    tree = intention(make_tree)
    made = datetime.now().replace(second=0, microsecond=0)
    for n in range(90):
        tell(tree, "i1", f"message {n}", made)
    silent = SilentServer()
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROUSE_")}
    env["ROUSE_STAMP_KEY"] = str(tmp_path / "no-key")
    log = tmp_path / "sweep.log"
    with log.open("wb") as out:
        sweeper = subprocess.Popen(
            [sys.executable, "-m", "rouse", "--memory", str(tree), "sweep", "--every", "1",
             "--timeout", "1", "--notify", "webhook", silent.url, "--sink", "file"],
            env=env, stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while len(silent.held) < 2:  # the sweeper is busy with the tells
            assert sweeper.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)
        due = f"{REMINDERS}/r1/reminder.md"
        past = (made - timedelta(hours=1)).strftime("%Y-%m-%d %H:%M")
        make_tree({due: f"---\nstatus: pending\ndue: {past}\n---\nCall back.\n"})
        written = time.monotonic()
        while not any("r1" in path.name for path in nudge_files(tree)):
            assert sweeper.poll() is None, log.read_text()
            # one slice of tells (and the send under way) at most, then the next tick's wake
            assert time.monotonic() - written < 15, log.read_text()
            time.sleep(0.05)
        assert len(silent.held) < 90  # the tells did not all go first
        sweeper.send_signal(signal.SIGTERM)
        stopped = time.monotonic()
        sweeper.wait(timeout=30)
        assert time.monotonic() - stopped < 10, log.read_text()  # a send's timeout, no more
        assert sweeper.returncode == 0, log.read_text()
    finally:
        if sweeper.poll() is None:
            sweeper.kill()
            sweeper.wait()
        silent.close()


# -- item 14: a late sweeper is late whatever its state file claims ---------------------


def test_status_check_is_late_after_four_days_whatever_the_interval_claims(
    make_tree: MakeTree,
) -> None:
    import json

    tree = intention(make_tree)
    ticked = rouse(tree, "sweep", "--once", "--every", "60", "--now", "2026-03-02 11:00")
    assert ticked.returncode == 0, ticked.stderr
    state = tree / ".rouse" / "sweep.json"
    data = json.loads(state.read_text())
    well = rouse(tree, "status", "--check", "--now", "2026-03-02 11:01")
    assert well.returncode == 0, well.stderr
    for claimed in (1e6, 86400 * 30):
        data["interval"] = claimed
        state.write_text(json.dumps(data))
        late = rouse(tree, "status", "--check", "--now", "2026-03-06 11:00")
        answered(late)
        assert late.returncode == 1, (claimed, late.stderr)
        assert "the sweeper is late" in late.stderr, late.stderr
    # a day is the longest interval `rouse sweep --every` takes: three of them are allowed
    data["interval"] = 1e6
    state.write_text(json.dumps(data))
    fine = rouse(tree, "status", "--check", "--now", "2026-03-04 11:00")
    assert fine.returncode == 0, fine.stderr


# -- item 16: a DSN's password never printed, whatever it holds --------------------------

SECRET_PART = "cd-S3cret"
#: passwords libpq takes that hold a tab (raw or percent-encoded), in the user info or
#: the query; port 1 on loopback: nothing listens, so every verb says it cannot reach it
TABBED_DSNS = (
    f"postgresql://u:ab\t{SECRET_PART}@127.0.0.1:1/db",
    f"postgresql://u:ab%09{SECRET_PART}@127.0.0.1:1/db",
    f"postgresql://u@127.0.0.1:1/db?password=ab\t{SECRET_PART}",
    f"postgresql://u@127.0.0.1:1/db?connect_timeout=2&password=ab%09{SECRET_PART}&x=1",
)


def test_redact_hides_a_password_with_a_tab_in_every_spelling() -> None:
    from rouse.fleet.pg import redact, scrub

    for dsn in TABBED_DSNS:
        assert SECRET_PART not in redact(dsn), dsn
        said = f'lost {dsn}: invalid token "ab\t{SECRET_PART}" near ab\\t{SECRET_PART}'
        assert SECRET_PART not in scrub(said, dsn), dsn
        assert "127.0.0.1:1" in redact(dsn)  # where it is stays said


def test_no_verb_prints_a_tabbed_password_when_the_ledger_is_unreachable(
    make_tree: MakeTree,
) -> None:
    tree = intention(make_tree)
    verbs = (
        ("sweep", "--once"),
        ("status",),
        ("log",),
        ("fleet", "status"),
        ("fleet", "due"),
        ("fleet", "recall", "ships"),
        ("deliver", "--once", "--sink", "stdout"),
    )
    for dsn in TABBED_DSNS[:3]:
        for verb in verbs:
            try:
                done = subprocess.run(
                    [sys.executable, "-m", "rouse", "--memory", str(tree), *verb, "--ledger", dsn],
                    env={**os.environ, "ROUSE_STAMP_KEY": str(tree.parent / "no-key")},
                    capture_output=True,
                    text=True,
                    timeout=10,
                )
                said = done.stdout + done.stderr
            except subprocess.TimeoutExpired as waited:  # deliver waits for its database
                said = f"{waited.stdout or b''!r}{waited.stderr or b''!r}"
            assert "127.0.0.1" in said, (verb, said)
            assert SECRET_PART not in said, (verb, dsn, said)
