"""An editor saving in place never loses a line to rouse's own writers (issue 10, item 4).

Every writer — the lifecycle verbs, ``stamp``, ``remember``, the sweeper —
goes through the store's guarded rewrite: while an editor holds the file open
for writing, rouse waits; it never renames a rewrite of a half-saved file over
the editor's work. The long mixed run is ``bench/hostile_editors.py``; a short
one runs here.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import threading
import time
from datetime import datetime
from pathlib import Path

import pytest

from rouse.core import store
from rouse.records import lifecycle

ROOT = Path(__file__).resolve().parent.parent
INTENTION = "entrypoint/beliefs/motivations/intentions/example-stabilise-nightly-build"
REL = f"{INTENTION}/intention.md"


def _leases_work(path: Path) -> bool:
    """Read leases are what lets rouse see an editor holding the file open."""
    import fcntl

    fd = os.open(path, os.O_RDONLY)
    try:
        store._sigio_handled()
        fcntl.fcntl(fd, store.F_SETLEASE, fcntl.F_RDLCK)
        fcntl.fcntl(fd, store.F_SETLEASE, fcntl.F_UNLCK)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


@pytest.fixture
def memory(tmp_path: Path) -> Path:
    done = subprocess.run(
        [sys.executable, "-m", "rouse", "init", "--no-key", str(tmp_path)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    root = tmp_path / "memory"
    if not _leases_work(root / REL):
        pytest.skip("this file system has no read leases: rouse falls back to re-read-and-compare")
    return root


def _save_in_place(path: Path, hold: float, extra: str, started: threading.Event) -> None:
    """An editor that saves in place: open for writing, truncate, wait, write it all back."""
    with open(path, "r+") as handle:
        text = handle.read()
        handle.seek(0)
        handle.truncate()
        handle.flush()
        started.set()
        time.sleep(hold)  # the file is empty on disk and still open for writing
        handle.write(text + extra)


def test_move_waits_for_an_editor_saving_in_place(memory: Path) -> None:
    path = memory / REL
    before = path.read_text()
    started = threading.Event()
    editor = threading.Thread(target=_save_in_place, args=(path, 0.4, "editor line\n", started))
    editor.start()
    assert started.wait(5)
    moved = subprocess.run(
        [sys.executable, "-m", "rouse", "--memory", str(memory), "move",
         "example-stabilise-nightly-build", "--note", "move note"],
        capture_output=True,
        text=True,
    )  # fmt: skip
    editor.join()
    after = path.read_text()
    assert moved.returncode == 0, moved.stderr
    for line in before.splitlines():
        if not line.startswith("last-moved:"):
            assert line in after.splitlines(), f"lost {line!r}"
    assert "editor line" in after
    assert "move note" in after
    assert "last-moved:" in after


@pytest.mark.parametrize("verb", ["close", "snooze", "stamp"])
def test_every_writer_waits_for_an_editor(memory: Path, verb: str) -> None:
    path = memory / REL
    before = path.read_text()
    started = threading.Event()
    editor = threading.Thread(target=_save_in_place, args=(path, 0.4, "editor line\n", started))
    editor.start()
    assert started.wait(5)
    args = {
        "close": ["close", "example-stabilise-nightly-build", "--dropped", "no longer needed"],
        "snooze": ["snooze", "example-stabilise-nightly-build", "--for", "2h", "--note", "later"],
        "stamp": ["stamp", "--origin", "owner", str(path)],
    }[verb]
    env = {**os.environ, "ROUSE_STAMP_KEY": str(memory.parent / "no-key")}
    done = subprocess.run(
        [sys.executable, "-m", "rouse", "--memory", str(memory), *args],
        capture_output=True,
        text=True,
        env=env,
    )
    editor.join()
    after = path.read_text()
    assert done.returncode == 0, done.stderr
    assert "editor line" in after
    assert "closes-when:" in after and "status:" in after
    body = before.split("---\n", 2)[2]
    assert body.strip().splitlines()[0] in after


def test_a_writer_off_the_main_thread_is_guarded_too(memory: Path) -> None:
    """The MCP server's tools may run on worker threads, where SIGIO cannot be set."""
    store.prepare_leases()  # what `rouse mcp` does at start-up, on the main thread
    path = memory / REL
    started = threading.Event()
    editor = threading.Thread(target=_save_in_place, args=(path, 0.4, "editor line\n", started))
    editor.start()
    assert started.wait(5)
    errors: list[BaseException] = []

    def tool() -> None:
        try:
            now = datetime.now().replace(second=0, microsecond=0)
            lifecycle.move(memory, "example-stabilise-nightly-build", now, "from a thread")
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    worker = threading.Thread(target=tool)
    worker.start()
    worker.join()
    editor.join()
    assert errors == []
    after = path.read_text()
    assert "editor line" in after and "from a thread" in after and "closes-when:" in after


def _hostile_module():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location(
        "hostile_editors", ROOT / "bench" / "hostile_editors.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_short_mixed_run_loses_no_line(tmp_path: Path) -> None:
    """Sweeper, movers, `new`, an appending and a truncating editor, for a few seconds."""
    result = _hostile_module().run_once(tmp_path, seconds=4.0)
    assert result["editor_lines"] > 0 and result["move_notes"] > 0
    assert result["sweeps"] > 0 and result["news"] > 0
    assert result["lost"] == [], result["lost"][:10]
    assert result["damaged"] == []
