"""Control characters never reach a terminal raw, nor a record (issue 31, item 18).

ESC/OSC/BEL sequences, a right-to-left override (U+202E), C1 controls and NUL
come from what rouse does not write itself: a hand-edited header (a
``channel:``), a checkpoint written into a task's log by hand, a webhook's
reply, a run's final message. Every text output escapes them (``\\x1b``);
nothing rouse writes into a record holds them. Real processes throughout.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from conftest import INTENTIONS, REMINDERS, MakeTree
from rouse.core.layout import shown

EVIL = "\x1b]0;owned\x07\x1b[2J\u202e\x9b"
RAW = ("\x1b", "\x07", "\u202e", "\x9b", "\x00")
#: a task running, with a checkpoint written into its log by hand
RUNNING = (
    "---\nstatus: running\nstarted: 2026-03-14 10:00\nattempts: 1\n---\nShip it.\n\n"
    f"## Log <!-- rouse:log -->\n- 2026-03-14 10:05: checkpoint: sent {EVIL} mail\n"
)
REMINDER = f"---\nstatus: pending\nchannel: ph{EVIL}one\ndue: 2020-01-01 09:00\n---\nPay.\n"


def rouse(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROUSE_")}
    env["ROUSE_STAMP_KEY"] = str(root.parent / "no-key")
    return subprocess.run(
        [sys.executable, "-m", "rouse", "--memory", str(root), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def assert_clean(text: str) -> None:
    found = [repr(c) for c in RAW if c in text]
    assert found == [], f"raw control characters {found} in: {text!r}"


@pytest.fixture
def tree(make_tree: MakeTree) -> Path:
    return make_tree(
        {
            f"{INTENTIONS}/ship/intention.md": "---\nstatus: open\n---\nShip.\n",
            f"{INTENTIONS}/ship/go/task.md": RUNNING,
            f"{REMINDERS}/pay/reminder.md": REMINDER,
        }
    )


def test_the_one_function_escapes_and_keeps_what_is_text() -> None:
    assert shown(f"a{EVIL}b\x00") == "a\\x1b]0;owned\\x07\\x1b[2J\\u202e\\x9bb\\x00"
    assert shown("two\nlines\tand é", lines=True) == "two\nlines\tand é"
    assert shown("two\nlines\x1b", lines=True) == "two\nlines\\x1b"
    assert shown("plain") == "plain"


def test_the_packs_running_line_explain_and_due_escape_them(tree: Path) -> None:
    pack = rouse(tree, "pack")
    assert pack.returncode == 0, pack.stderr
    assert "running: " in pack.stdout and "\\x1b]0;owned" in pack.stdout
    assert_clean(pack.stdout)
    for args in (["explain", "reminder/pay"], ["due"], ["pack", "--json"]):
        done = rouse(tree, *args)
        assert_clean(done.stdout + done.stderr)


def test_a_hand_written_channel_is_escaped_in_the_log_and_kept_out_of_the_record(
    tree: Path,
) -> None:
    told = rouse(tree, "tell", "reminder/pay", "hello")
    assert told.returncode == 0, told.stderr
    assert_clean(told.stdout + told.stderr)
    assert_clean((tree / REMINDERS / "pay/reminder.md").read_text().split("---", 2)[2])
    for args in (["log"], ["log", "--json"], ["explain", "reminder/pay"]):
        done = rouse(tree, *args)
        assert done.returncode == 0, done.stderr
        assert_clean(done.stdout + done.stderr)


@pytest.fixture
def hostile_webhook() -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            body = f"no {EVIL} way".encode()
            self.send_response(500)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/hook"
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_a_webhooks_reply_is_escaped_in_the_log(tree: Path, hostile_webhook: str) -> None:
    swept = rouse(tree, "sweep", "--once", "--sink", "webhook", hostile_webhook)
    assert_clean(swept.stdout + swept.stderr)
    done = rouse(tree, "log")
    assert "error: " in done.stdout, done.stdout
    assert_clean(done.stdout)


def test_a_runs_final_message_writes_no_control_character_into_the_task(
    make_tree: MakeTree,
) -> None:
    root = make_tree(
        {
            f"{INTENTIONS}/ship/intention.md": "---\nstatus: open\n---\nShip.\n",
            f"{INTENTIONS}/ship/go/task.md": "---\nstatus: pending\n---\nShip it.\n",
        }
    )
    script = r"cat > /dev/null; printf 'done\000 \033[31mred\033]0;t\007 \342\200\256x\n'"
    done = rouse(root, "work", "--once", "--run", "exec", "--", "sh", "-c", script)
    assert done.returncode == 0, done.stderr
    assert_clean(done.stdout + done.stderr)
    text = (root / INTENTIONS / "ship/go/task.md").read_text()
    assert "result: done" in text and "red" in text
    assert_clean(text)
