"""Shared test helpers: a fixed ``NOW`` and a ``make_tree`` fixture.

``make_tree({"entrypoint/beliefs/belief-x.md": "...", ...})`` writes the files
under ``tmp_path/memory`` (creating directories), sets every file's mtime to
``OLD`` so mtime never matters unless a test wants it, and returns the root.

- ``str`` values are dedented (``textwrap.dedent``) and lose one leading
  newline, so a test can write an indented triple-quoted literal header;
  ``bytes`` values are written exactly as given.
- A path ending in ``/`` makes an empty directory.
- Calling it again with the same ``name`` adds files to the same tree.
- ``mtime=`` sets a different instant for the files written by that call.

Helpers importable from tests (``from conftest import NOW, OLD, set_mtime``):
``NOW`` (the fixed "now"), ``OLD`` (the default mtime), ``set_mtime``,
``stamp`` (a datetime as a header stamp) and ``INTENTIONS`` etc. (the tree's
fixed directories, as strings).

The session runs with a HOME of its own in a temporary directory (``SESSION_HOME``),
and the suite's PostgreSQL (``pg_server``) is one per test process: ``pytest -n 2``
(pytest-xdist) runs it in two processes that share nothing.
"""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
import textwrap
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime, timedelta
from pathlib import Path

import pytest

#: The fixed instant every clock test evaluates at (a Saturday), local time.
NOW = datetime(2026, 3, 14, 12, 0)
#: The mtime every file made by ``make_tree`` gets unless told otherwise.
OLD = datetime(2020, 1, 1, 0, 0)

BELIEFS = "entrypoint/beliefs"
MOTIVATIONS = "entrypoint/beliefs/motivations"
INTENTIONS = "entrypoint/beliefs/motivations/intentions"
PLUGINS = "entrypoint/plugins"
NOTES = "inventory/notes"
REMINDERS = "inventory/reminders"
BACKLOG = "inventory/backlog"

MakeTree = Callable[..., Path]

#: The session's own HOME, set before any test runs: whatever a test or a rouse it starts
#: reads or writes under ``~`` lands here, never in the developer's own home (a stray
#: ``~/.config/rouse/stamp.key`` once broke the suite), and two test processes (``pytest
#: -n``) never share one. The XDG folders are unset, so they too are under this HOME, or
#: under the HOME a test gives a rouse it starts; XDG_RUNTIME_DIR is the session's own.
#: A subprocess env built from os.environ inherits all this.
SESSION_HOME = Path(tempfile.mkdtemp(prefix="rouse-test-home-")).resolve()
os.environ["HOME"] = str(SESSION_HOME)
for _name in ("XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME"):
    os.environ.pop(_name, None)
(SESSION_HOME / "run").mkdir(mode=0o700)
os.environ["XDG_RUNTIME_DIR"] = str(SESSION_HOME / "run")
# again at exit, after pgserver's own clean-up (registered later, so run earlier), which
# takes a lock file under XDG_RUNTIME_DIR
atexit.register(shutil.rmtree, SESSION_HOME, ignore_errors=True)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    pg = sys.modules.get("pg_server")
    if pg is not None:
        pg.PgServer.close_all()
    shutil.rmtree(SESSION_HOME, ignore_errors=True)


@pytest.fixture
def no_stamp_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Origins read as written: no stamp key from the machine running the tests (a test
    module asks for it with ``pytestmark = pytest.mark.usefixtures("no_stamp_key")``)."""
    monkeypatch.setenv("ROUSE_STAMP_KEY", str(tmp_path / "no-such-key"))


def stamp(value: datetime) -> str:
    """A datetime written the way rouse writes stamps (local minutes)."""
    return value.strftime("%Y-%m-%d %H:%M")


def set_mtime(path: Path, when: datetime) -> None:
    """Set a file's atime and mtime to the local naive instant ``when``."""
    seconds = when.timestamp()
    os.utime(path, (seconds, seconds), follow_symlinks=False)


def ago(**delta: float) -> datetime:
    """``NOW`` minus a timedelta given as keyword arguments (``ago(hours=2)``)."""
    return NOW - timedelta(**delta)


def write_tree(root: Path, files: Mapping[str, str | bytes], mtime: datetime | None = OLD) -> Path:
    """Write ``files`` under ``root`` (see the module docstring) and return ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    for rel, content in files.items():
        if rel.startswith("/") or ".." in Path(rel).parts:
            raise ValueError(f"make_tree paths are tree-relative: {rel!r}")
        target = root / rel
        if rel.endswith("/"):
            target.mkdir(parents=True, exist_ok=True)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            text = textwrap.dedent(content)
            if text.startswith("\n"):
                text = text[1:]
            target.write_bytes(text.encode("utf-8"))
        if mtime is not None:
            set_mtime(target, mtime)
    return root


@pytest.fixture
def now() -> datetime:
    return NOW


@pytest.fixture
def make_tree(tmp_path: Path) -> MakeTree:
    def make(
        files: Mapping[str, str | bytes] | None = None,
        *,
        name: str = "memory",
        mtime: datetime | None = OLD,
    ) -> Path:
        return write_tree(tmp_path / name, files or {}, mtime)

    return make


@pytest.fixture
def local_tz(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str], None]]:
    """Switch the process's time zone (``TZ`` + ``time.tzset``); restored afterwards."""
    import time

    def use(zone: str) -> None:
        monkeypatch.setenv("TZ", zone)
        time.tzset()

    try:
        yield use
    finally:
        monkeypatch.undo()
        time.tzset()


@pytest.fixture(autouse=True)
def _no_real_stamp_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test starts with ``$ROUSE_STAMP_KEY`` at a path of its own where no key is
    (beside its ``tmp_path``, outside any tree): ``rouse init`` makes a key when there is
    none, and a test must never make one in the real ``~/.config`` nor read the
    developer's own. A test that wants a key sets the variable itself (or makes one)."""
    import hashlib  # (a neutral name: the test's own name would show in messages)

    name = hashlib.sha256(str(tmp_path).encode()).hexdigest()[:16]
    monkeypatch.setenv("ROUSE_STAMP_KEY", str(tmp_path.parent / f"key-{name}" / "stamp.key"))
    from rouse.trust.speaker import AGENT_MARKERS

    for name, _ in AGENT_MARKERS:  # the suite may itself run inside an agent session
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def key_path(tmp_path: Path) -> Path:
    """A fresh stamp key outside any tree (``tmp_path/keys/stamp.key``)."""
    from rouse.trust import stampkey

    path = tmp_path / "keys" / "stamp.key"
    stampkey.init_key(path)
    return path


# -- a real PostgreSQL (the fleet) ------------------------------------------------


@pytest.fixture(scope="session")
def pg_server() -> Iterator[object]:
    """The suite's PostgreSQL: ``ROUSE_TEST_PG`` if set, else one started here (pgserver;
    one per test process)."""
    from pg_server import PgServer

    found = PgServer.from_env()
    if found is not None:
        yield found
        return
    yield PgServer.start()


@pytest.fixture
def pg_dsn(pg_server: object) -> str:
    """A fresh, empty database on the suite's server, for one test."""
    from pg_server import PgServer

    assert isinstance(pg_server, PgServer)
    return pg_server.new_database()
