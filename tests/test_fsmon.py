"""The sweeper keeps the tree's state hot (issue 24, item 4): a real ``rouse sweep``
watches the tree, the pack asks it what changed since the cache's token, and
re-stats only that. The pack through the watcher must print exactly what a
pack from the files alone prints; anything the pack cannot trust — no
watcher, a dead one, a link, a file, a server that hangs, lies or babbles —
means the walk it makes without one."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from unittest import mock

import pytest

from conftest import INTENTIONS, NOTES, OLD, MakeTree, set_mtime, stamp
from rouse.cache import fsmon
from rouse.cache.walk import HeaderCache
from rouse.core.inotify import IN_Q_OVERFLOW
from rouse.sweep.watch import TreeWatcher
from rouse.trust.stampkey import cache_secret

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux's")

#: the sweeper's clock and the pack's: nothing is due, so the sweeper writes nothing
SWEEP_NOW = "2020-01-01 00:30"
PACK_NOW = "2020-01-01 01:00"


def settle(root: Path) -> None:
    """Every file and directory back to ``OLD``: old enough for the cache to keep."""
    for directory, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".rouse"]
        for name in files:
            set_mtime(Path(directory) / name, OLD)
        set_mtime(Path(directory), OLD)


@pytest.fixture
def env(key_path: Path) -> dict[str, str]:
    found = {k: v for k, v in os.environ.items() if not k.startswith("ROUSE_")}
    found["ROUSE_STAMP_KEY"] = str(key_path)
    return found


@pytest.fixture
def tree(make_tree: MakeTree) -> Path:
    files = {
        "persona.md": "---\norigin: owner\n---\nTerse.\n",
        f"{NOTES}/n1.md": "---\nkeywords: alpha\n---\nA note.\n",
        f"{NOTES}/deep/n2/note.md": "---\nkeywords: beta\n---\nAnother.\n",
    }
    for index in range(12):
        files[f"{INTENTIONS}/i{index:02}/intention.md"] = (
            f"---\nstatus: open\nlast-moved: {stamp(OLD)}\nkeywords: k{index:02}\n---\nBody.\n"
        )
        files[f"{INTENTIONS}/i{index:02}/t{index:02}/task.md"] = "---\nstatus: open\n---\nDo.\n"
    root = make_tree(files)
    (root / ".rouse" / "cache").mkdir(parents=True)
    settle(root)
    return root


def pack(root: Path, env: dict[str, str], timeout: float = 60) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "rouse", "--memory", str(root), "--now", PACK_NOW, "pack", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def fresh_pack(root: Path, env: dict[str, str]) -> str:
    """The pack from the files alone (no cache: nothing for a watcher to vouch for)."""
    (root / ".rouse" / "cache" / "walk.json").unlink(missing_ok=True)
    (root / ".rouse" / "cache" / "snapshot.json").unlink(missing_ok=True)
    return pack(root, env)


def saved_token(root: Path) -> str | None:
    data = (root / ".rouse" / "cache" / "walk.json").read_bytes()
    token = json.loads(data.partition(b"\n")[2]).get("token")
    return token if isinstance(token, str) else None


@pytest.fixture
def sweeper(tree: Path, env: dict[str, str]) -> Iterator[subprocess.Popen[bytes]]:
    sweep = ["sweep", "--sink", "file", "--every", "3600", "--now", SWEEP_NOW]
    proc = subprocess.Popen(
        [sys.executable, "-m", "rouse", "--memory", str(tree), *sweep],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    sock = tree / ".rouse" / fsmon.SOCKET
    deadline = time.monotonic() + 30
    while not sock.exists():
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        assert time.monotonic() < deadline, "the sweeper never made its socket"
        time.sleep(0.05)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=30)
        if proc.stderr:
            proc.stderr.close()


def _edit(path: Path, old: str, new: str, *, keep_times: bool = False) -> None:
    info = path.stat()
    path.write_text(path.read_text().replace(old, new))
    if keep_times:
        os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))
    else:
        set_mtime(path, OLD)


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    set_mtime(path, OLD)


INT = INTENTIONS
N2 = f"{NOTES}/deep/n2/note.md"  # its keywords are in the pack's index
EDITS: list[tuple[str, Callable[[Path], None]]] = [
    (
        "an edited header",
        lambda r: _edit(r / f"{INT}/i01/intention.md", "status: open", "status: done"),
    ),
    # the same size, the mtime put back: only the watcher (and the ctime) can tell
    ("same size and mtime", lambda r: _edit(r / N2, "beta", "zeta", keep_times=True)),
    ("a new record", lambda r: _write(r / f"{INT}/new/intention.md", "---\nstatus: open\n---\n")),
    (
        "a new nested dir",
        lambda r: _write(r / f"{INT}/i03/t03/sub/task.md", "---\nstatus: open\n---\n"),
    ),
    ("a deleted record", lambda r: shutil.rmtree(r / f"{INT}/i04")),
    ("a moved record", lambda r: (r / f"{INT}/i05").rename(r / f"{INT}/i06/i05")),
    ("a renamed file", lambda r: (r / f"{NOTES}/n1.md").rename(r / f"{NOTES}/n1b.md")),
    (
        "a new note",
        lambda r: _write(r / f"{NOTES}/deep/n3.md", "---\nkeywords: gamma\n---\nNew.\n"),
    ),
    ("a deleted task", lambda r: (r / f"{INT}/i07/t07/task.md").unlink()),
]


def test_the_watched_walk_asks_and_stats_nothing_unchanged(
    tree: Path, env: dict[str, str], key_path: Path, sweeper: subprocess.Popen[bytes]
) -> None:
    pack(tree, env)  # asks with no token: walks, and keeps the watcher's token
    pack(tree, env)  # (racy listings settled)
    assert saved_token(tree) is not None
    cache = HeaderCache(tree, cache_secret(key_path))
    cache.walk()
    assert cache.changed == set()  # the watcher answered: nothing changed
    assert cache.listed == 0 and cache.misses == 0 and cache.hits == 27
    _edit(tree / f"{INT}/i02/intention.md", "k02", "z99", keep_times=True)
    cache = HeaderCache(tree, cache_secret(key_path))
    cache.walk()
    assert cache.changed == {f"{INT}/i02/intention.md"}
    assert cache.missed == [f"{INT}/i02/intention.md"]


def test_the_snapshot_stands_on_the_watchers_word(
    tree: Path, env: dict[str, str], key_path: Path, sweeper: subprocess.Popen[bytes]
) -> None:
    from rouse.cache import snapshot

    pack(tree, env)
    pack(tree, env)  # (racy listings settled: kept)
    secret = cache_secret(key_path)
    when = datetime.strptime(PACK_NOW, "%Y-%m-%d %H:%M")
    real_lstat = os.lstat

    def no_stat_in_the_tree(path: object, *args: object, **kwargs: object) -> os.stat_result:
        if str(path).startswith(f"{tree}/") and ".rouse" not in str(path):
            raise AssertionError(f"stat'ed {path}")
        return real_lstat(path, *args, **kwargs)  # type: ignore[arg-type]

    with mock.patch("os.lstat", no_stat_in_the_tree):  # the watcher vouches: no stat made
        assert snapshot.load(tree, secret, True, when, "pack") is not None
    _edit(tree / N2, "beta", "zeta", keep_times=True)
    # it names the change: the stats are made
    with mock.patch("os.lstat", no_stat_in_the_tree), pytest.raises(AssertionError):
        snapshot.load(tree, secret, True, when, "pack")
    assert snapshot.load(tree, secret, True, when, "pack") is None
    watched = pack(tree, env)
    assert "zeta" in watched and watched == fresh_pack(tree, env)


@pytest.mark.parametrize("what", [name for name, _ in EDITS])
def test_the_pack_through_the_watcher_is_the_pack_from_the_files(
    tree: Path, env: dict[str, str], sweeper: subprocess.Popen[bytes], what: str
) -> None:
    pack(tree, env)
    pack(tree, env)
    before = saved_token(tree)
    assert before is not None
    dict(EDITS)[what](tree)
    watched = pack(tree, env)
    assert saved_token(tree) not in (None, before)  # asked, answered, saved at the new token
    assert watched == fresh_pack(tree, env)
    assert pack(tree, env) == watched  # and again, from what that pack kept


def test_every_edit_in_turn_then_the_sweeper_killed(
    tree: Path, env: dict[str, str], sweeper: subprocess.Popen[bytes]
) -> None:
    pack(tree, env)
    for _, edit in EDITS:
        edit(tree)
        assert pack(tree, env) == fresh_pack(tree, env)
    sweeper.send_signal(signal.SIGKILL)  # its socket stays behind, and nobody answers
    sweeper.wait(timeout=30)
    assert (tree / ".rouse" / fsmon.SOCKET).exists()
    _edit(tree / N2, "zeta", "qeta", keep_times=True)
    watched = pack(tree, env)
    assert "qeta" in watched
    assert watched == fresh_pack(tree, env)


def test_a_stopped_sweeper_removes_its_socket(tree: Path, sweeper: subprocess.Popen[bytes]) -> None:
    sweeper.send_signal(signal.SIGTERM)
    assert sweeper.wait(timeout=30) == 0
    assert not (tree / ".rouse" / fsmon.SOCKET).exists()


# -- what the pack must not trust ---------------------------------------------


class Liar:
    """A unix socket server that answers "nothing changed" (or whatever ``answer``
    makes of the request) — believed, it would hide every edit."""

    def __init__(self, path: Path, answer: Callable[[bytes, str | None], bytes | None]):
        self.path = path
        self.answer = answer
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(str(path))
        self.server.listen(8)
        self.held: list[socket.socket] = []
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            data = b""
            while b"\n" not in data:
                chunk = conn.recv(1024)
                if not chunk:
                    break
                data += chunk
            parts = data.partition(b"\n")[0].split(b" ")
            token = None if parts[-1] == b"-" else parts[-1].decode()
            reply = self.answer(parts[2] if len(parts) == 4 else b"", token)
            if reply is None:
                self.held.append(conn)  # hang: never answer, never close
                continue
            conn.sendall(reply)
            conn.close()

    def close(self) -> None:
        self.server.close()
        for conn in self.held:
            conn.close()


def bound(sock: Path) -> str:
    """What the real watcher of ``sock``'s tree binds its replies to (a liar that
    knows it: the strongest one)."""
    return fsmon.binding(os.stat(sock.parent), os.lstat(sock))


Answerer = Callable[[bytes, str | None], bytes | None]


def nothing_changed(secret: bytes | None, sock: Path) -> Answerer:
    def answer(nonce: bytes, since: str | None) -> bytes:
        said = ("liar:1", None if since is None else [])
        return fsmon.reply(secret, nonce, since, said, bound(sock))

    return answer


HOSTILE: dict[str, Callable[[bytes | None, Path], Answerer]] = {
    "a bad MAC": lambda secret, sock: nothing_changed(b"not the key", sock),
    "no MAC": lambda secret, sock: nothing_changed(None, sock),
    "garbage": lambda secret, sock: lambda nonce, since: b"\x00\xffrouse-fsmon 1 zz\n{[",
    "a replayed token": lambda secret, sock: (
        lambda nonce, since: fsmon.reply(secret, nonce, "liar:0", ("liar:1", []), bound(sock))
    ),
    "another nonce": lambda secret, sock: (
        lambda nonce, since: fsmon.reply(secret, b"0" * 32, since, ("liar:1", []), bound(sock))
    ),
    "another tree": lambda secret, sock: (
        lambda nonce, since: fsmon.reply(secret, nonce, since, ("liar:1", []), bound(sock.parent))
    ),
    "a hang": lambda secret, sock: lambda nonce, since: None,
}


def _primed(tree: Path, env: dict[str, str], secret: bytes | None) -> None:
    """A cache saved at a token of an honest-looking server (the liar, keyed)."""
    sock = tree / ".rouse" / fsmon.SOCKET
    liar = Liar(sock, nothing_changed(secret, sock))
    try:
        pack(tree, env)
        pack(tree, env)
        assert saved_token(tree) == "liar:1"
        # the liar, believed, hides an edit
        _edit(tree / N2, "beta", "weta", keep_times=True)
        assert "weta" not in pack(tree, env)
        _edit(tree / N2, "weta", "beta", keep_times=True)
    finally:
        liar.close()
        sock.unlink()


@pytest.mark.parametrize("what", ["a symlink", "a regular file", *HOSTILE])
def test_an_answer_the_pack_cannot_trust_means_a_walk(
    tree: Path, env: dict[str, str], key_path: Path, tmp_path: Path, what: str
) -> None:
    secret = cache_secret(key_path)
    _primed(tree, env, secret)
    sock = tree / ".rouse" / fsmon.SOCKET
    liar = None
    if what == "a symlink":  # to a server that would lie well
        liar = Liar(tmp_path / "elsewhere.sock", nothing_changed(secret, sock))
        sock.symlink_to(tmp_path / "elsewhere.sock")
    elif what == "a regular file":
        sock.write_bytes(b"rouse-fsmon 1 -\n{}")
    else:
        liar = Liar(sock, HOSTILE[what](secret, sock))
    try:
        _edit(tree / N2, "beta", "weta", keep_times=True)
        started = time.monotonic()
        watched = pack(tree, env, timeout=20)
        assert time.monotonic() - started < 15  # a hang costs the deadline, not the pack
        assert "weta" in watched
        assert watched == fresh_pack(tree, env)
    finally:
        if liar is not None:
            liar.close()


# -- the watcher's own bookkeeping ---------------------------------------------


def test_a_kernel_queue_overflow_means_everything(tree: Path) -> None:
    scratch = tree / "inventory" / "scratch"
    scratch.mkdir()
    watcher = TreeWatcher(tree, None, limit=10**9)  # nothing forgotten but by the kernel
    assert watcher.open()
    try:
        token, _ = watcher.changes_since(None)
        for index in range(10_000):  # more events than the kernel queues (16384)
            os.close(os.open(scratch / f"f{index}", os.O_WRONLY | os.O_CREAT))
        assert watcher.changes_since(token)[1] is None
        settled, _ = watcher.changes_since(None)
        (tree / f"{INT}/i00/t00/task.md").write_text("---\nstatus: done\n---\n")
        assert watcher.changes_since(settled)[1] == [f"{INT}/i00/t00/task.md"]
    finally:
        watcher.close()


def test_more_changes_than_it_keeps_and_a_simulated_overflow(tree: Path) -> None:
    watcher = TreeWatcher(tree, None, limit=3)
    assert watcher.open()
    try:
        token, _ = watcher.changes_since(None)
        for index in range(2):
            (tree / f"{INT}/i{index:02}/intention.md").write_text("---\nstatus: done\n---\n")
        later, paths = watcher.changes_since(token)
        assert paths == [f"{INT}/i00/intention.md", f"{INT}/i01/intention.md"]
        for index in range(2, 6):
            (tree / f"{INT}/i{index:02}/intention.md").write_text("---\nstatus: done\n---\n")
        assert watcher.changes_since(token)[1] is None  # forgotten: walk
        assert watcher.changes_since(later)[1] is None
        now, _ = watcher.changes_since(None)
        assert watcher.changes_since(now)[1] == []
        watcher.events(struct.pack("iIII", -1, IN_Q_OVERFLOW, 0, 0))  # as the kernel says it
        assert watcher.changes_since(now)[1] is None
        assert watcher.changes_since("another:0")[1] is None  # another instance's token
    finally:
        watcher.close()


def test_only_the_trees_owner_can_ask(tree: Path, sweeper: subprocess.Popen[bytes]) -> None:
    """The socket is made 0600 (its umask at bind, not a chmod after), the owner's."""
    info = (tree / ".rouse" / fsmon.SOCKET).lstat()
    assert (info.st_mode & 0o777, info.st_uid) == (0o600, os.getuid())


def test_the_sweepers_own_ticks_see_through_the_watcher(tree: Path, env: dict[str, str]) -> None:
    """A reminder made due by a same-size edit with its mtime put back is delivered
    by the next tick: the sweeper's walks ask its watcher too, in process."""
    reminder = tree / "inventory" / "reminders" / "call" / "reminder.md"
    _write(reminder, "---\nstatus: pending\ndue: 2099-01-01 00:10\n---\nCall Bob.\n")
    settle(tree)
    sweep = ["sweep", "--sink", "file", "--every", "1", "--now", SWEEP_NOW]
    proc = subprocess.Popen(
        [sys.executable, "-m", "rouse", "--memory", str(tree), *sweep],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    nudges = tree / ".rouse" / "nudges"
    try:
        deadline = time.monotonic() + 30
        while not (tree / ".rouse" / fsmon.SOCKET).exists():
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.05)
        time.sleep(2.5)  # a few ticks: the cache is warm, at the watcher's token
        assert not list(nudges.glob("*reminder-call*"))
        _edit(reminder, "2099-01-01", "2020-01-01", keep_times=True)
        deadline = time.monotonic() + 30
        while not list(nudges.glob("*reminder-call*")):
            assert time.monotonic() < deadline, "the tick never saw the edit"
            time.sleep(0.1)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)


# -- the watcher cannot blind (issue 31, items 8 and 9) --------------------------


def _relay(to: Path) -> Callable[[bytes, str | None], bytes | None]:
    """Pass each question on to the real watcher's socket ``to``, and its reply back."""

    def answer(nonce: bytes, since: str | None) -> bytes:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.connect(str(to))
            conn.sendall(fsmon.request(nonce, since))
            chunks = []
            while chunk := conn.recv(65536):
                chunks.append(chunk)
        return b"".join(chunks)

    return answer


def test_another_trees_watcher_relayed_is_not_believed(
    tree: Path, sweeper: subprocess.Popen[bytes], tmp_path: Path, env: dict[str, str]
) -> None:
    """Tree B's socket passes questions on to tree A's real watcher, keyed with the
    same stamp key: its replies are MACed, but for A's tree and A's socket."""
    other = tmp_path / "other" / "memory"
    shutil.copytree(tree, other, ignore=shutil.ignore_patterns(fsmon.SOCKET, "*.json", "*.db"))
    settle(other)
    sock = other / ".rouse" / fsmon.SOCKET
    relay = Liar(sock, _relay(tree / ".rouse" / fsmon.SOCKET))
    try:
        pack(other, env)
        pack(other, env)
        _edit(other / N2, "beta", "weta", keep_times=True)
        watched = pack(other, env)
        assert "weta" in watched
    finally:
        relay.close()
    assert saved_token(other) is None  # no token of A's was ever taken for B's


def test_a_token_ahead_of_the_watchers_counter_is_a_miss(tree: Path) -> None:
    """Without a key a token can be forged (the snapshot is not MACed): one from the
    future must not make the watcher say "nothing changed" ever after."""
    watcher = TreeWatcher(tree, None)
    assert watcher.open()
    try:
        watcher.changes_since(None)
        forged = f"{watcher.nonce}:999999999999"
        assert watcher.changes_since(forged)[1] is None
        (tree / f"{INT}/i00/t00/task.md").write_text("---\nstatus: done\n---\n")
        assert watcher.changes_since(forged)[1] is None
    finally:
        watcher.close()


def test_sweep_once_never_trusts_the_socket_for_its_own_walk(tree: Path) -> None:
    """A same-uid fake socket saying "nothing changed" (no key: nothing to MAC with)
    must not make cron's ``sweep --once`` walk nothing."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROUSE_")}
    env["ROUSE_STAMP_KEY"] = str(tree.parent / "no-key")
    sock = tree / ".rouse" / fsmon.SOCKET
    liar = Liar(sock, nothing_changed(None, sock))
    once = [sys.executable, "-m", "rouse", "--memory", str(tree), "sweep", "--once"]
    once += ["--sink", "file", "--now", SWEEP_NOW]
    try:
        subprocess.run(once, env=env, check=True, capture_output=True)
        subprocess.run(once, env=env, check=True, capture_output=True)
        reminder = tree / "inventory" / "reminders" / "call" / "reminder.md"
        _write(reminder, "---\nstatus: pending\ndue: 2020-01-01 00:10\n---\nCall Bob.\n")
        subprocess.run(once, env=env, check=True, capture_output=True)
    finally:
        liar.close()
    assert list((tree / ".rouse" / "nudges").glob("*reminder-call*"))
