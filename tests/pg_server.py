"""A real PostgreSQL for the tests: started by the suite itself, or named by ROUSE_TEST_PG.

``PgServer.start()`` lays a cluster in a fresh folder of its own under the
system's temporary directory (never under pytest's basetemp: pytest makes that
0700 again when another test process starts, and the server's own user must
reach it), with the binaries of the ``pgserver`` wheel (a dev dependency: no
root, no system service; as root it runs the server as an unprivileged
``pgserver`` user, as that package does), and listens on a Unix socket only.
``close_all()`` stops them and removes their folders when the session ends. ``stop()`` and ``restart()`` let a fault test
take the database away mid-tick. ``ROUSE_TEST_PG=postgresql://…`` points the
suite at an existing server instead (tests that stop the server start their
own private one either way).

Each test gets a database of its own (``new_database()``).
"""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import tempfile
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

ENV = "ROUSE_TEST_PG"
PREFIX = "rouse-test-pg-"
_numbers = itertools.count(1)
_started: list[PgServer] = []


def _reap_orphans() -> None:
    """Stop and remove the servers of test processes that were killed before their
    clean-up ran (each folder names its owner's pid): they would run on for ever."""
    import signal

    for folder in Path(tempfile.gettempdir()).glob(PREFIX + "*"):
        try:
            owner = int((folder / "owner").read_text())
            os.kill(owner, 0)
            continue  # its owner runs: not ours to touch
        except ProcessLookupError:
            pass
        except (OSError, ValueError):
            continue  # no owner written (yet, or by an older suite)
        try:
            postmaster = int((folder / "pg" / "postmaster.pid").read_text().split()[0])
            os.kill(postmaster, signal.SIGQUIT)  # immediate shutdown
        except (OSError, ValueError, IndexError):
            pass
        shutil.rmtree(folder, ignore_errors=True)


class PgServer:
    def __init__(
        self, base_dsn: str, *, handle: object | None = None, folder: Path | None = None
    ) -> None:
        self.base_dsn = base_dsn
        self.handle = handle  # the pgserver server when we started it
        self.folder = folder  # and the folder it lives in

    @classmethod
    def start(cls) -> PgServer:
        import warnings

        with warnings.catch_warnings():  # platformdirs warns of a missing XDG_RUNTIME_DIR
            warnings.simplefilter("ignore")
            import pgserver

        _reap_orphans()
        folder = Path(tempfile.mkdtemp(prefix=PREFIX))
        (folder / "owner").write_text(str(os.getpid()))
        server = pgserver.get_server(folder / "pg", cleanup_mode="delete")
        made = cls(server.get_uri(), handle=server, folder=folder)
        _started.append(made)
        return made

    @staticmethod
    def close_all() -> None:
        """Stop every server this process started and remove its folder (the suite calls
        it when the session ends: pytest-xdist's workers may not live to run atexit)."""
        while _started:
            _started.pop().close()

    def close(self) -> None:
        handle: Any = self.handle
        if handle.cleanup_mode is None and (self._pgdata / "postmaster.pid").exists():
            self._pg_ctl("-w", "-m", "fast", "stop")  # a test stopped and restarted it
        handle.cleanup_mode = "delete"
        handle.cleanup()
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)

    @classmethod
    def from_env(cls) -> PgServer | None:
        dsn = os.environ.get(ENV)
        return cls(dsn) if dsn else None

    # -- databases --------------------------------------------------------------

    def dsn(self, database: str) -> str:
        parts = urlsplit(self.base_dsn)
        return urlunsplit(parts._replace(path="/" + quote(database)))

    def admin(self, sql: str) -> None:
        import psycopg

        with psycopg.connect(self.base_dsn, autocommit=True) as conn:
            conn.execute(sql)

    def new_database(self) -> str:
        """A fresh, empty database on this server: its DSN."""
        name = f"rouse_test_{os.getpid()}_{next(_numbers)}_{uuid.uuid4().hex[:6]}"
        self.admin(f'CREATE DATABASE "{name}"')
        return self.dsn(name)

    # -- taking it away ---------------------------------------------------------

    @property
    def _pgdata(self) -> Path:
        assert self.handle is not None, "only a server the suite started can be stopped"
        return Path(self.handle.pgdata)  # type: ignore[attr-defined]

    def _pg_ctl(self, *args: str) -> None:
        from pgserver._commands import POSTGRES_BIN_PATH

        user = getattr(self.handle, "system_user", None)
        subprocess.run(
            [str(POSTGRES_BIN_PATH / "pg_ctl"), "-D", str(self._pgdata), *args],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            user=user,
            timeout=60,
        )

    def stop(self) -> None:
        """Stop the server now (fast shutdown: clients are cut off mid-statement)."""
        self._pg_ctl("-w", "-m", "fast", "stop")
        # pgserver's own clean-up at exit would stop it again (and complain): it is ours now
        self.handle.cleanup_mode = None  # type: ignore[union-attr]

    def restart(self) -> None:
        """Start it again on the same socket, after ``stop()``."""
        socket_dir = self._socket_dir()
        self._pg_ctl(
            "-w",
            "-o",
            '-h ""',
            "-o",
            f"-k {socket_dir}",
            "-l",
            str(self._pgdata / "log"),
            "start",
        )

    def _socket_dir(self) -> str:
        query = urlsplit(self.base_dsn).query
        for part in query.split("&"):
            if part.startswith("host="):
                return part[len("host=") :]
        raise AssertionError(f"no socket directory in {self.base_dsn}")
