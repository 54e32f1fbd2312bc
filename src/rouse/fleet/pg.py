"""PostgreSQL for the fleet: the DSN, the connection, the SQL dialect, and what views share.

:class:`PgDatabase` is shaped like :class:`rouse.sweep.ledger.outbox.Database`: the
ledger's portable SQL (``?`` placeholders) runs on it unchanged. The connection
is in autocommit, as the SQLite ledger's is, and made at the first statement
(so a sweeper or a worker started while the database is down starts all the
same, and meets the outage at its first tick); a broken connection (the server
restarted, the network dropped) is dropped and made again on the next call, and
the error in between is a :class:`LedgerUnreachable`, so a tick that meets it
ends and its wakes stay owed.

A DSN's password never reaches a message: :func:`redact` hides it in every form
libpq reads (``user:PASSWORD@`` in a URL, ``?password=`` in its query, a
``password=`` of key=value text), and the driver's errors are scrubbed too.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import fields
from datetime import datetime
from typing import TYPE_CHECKING, Any

from rouse.core.errors import UsageError
from rouse.core.extras import install_hint
from rouse.core.timefmt import iso_stamp

if TYPE_CHECKING:
    import psycopg

#: The environment variable that names the ledger when ``--ledger`` is not given.
LEDGER_ENV = "ROUSE_LEDGER"
_SCHEMES = ("postgresql://", "postgres://")
#: Seconds to wait for a connection before the ledger counts as unreachable.
CONNECT_TIMEOUT = 10


class LedgerUnreachable(UsageError):
    """The database cannot be reached now (exit 2 from a verb): try again later."""


def chosen_dsn(given: str | None) -> str | None:
    """The ledger DSN: ``--ledger`` if given, else ``ROUSE_LEDGER``; None for the SQLite ledger.

    Anything that is not a ``postgresql://`` URL is refused (exit 2), so a typo
    never silently means "the local ledger".
    """
    dsn = given if given is not None else os.environ.get(LEDGER_ENV) or None
    if dsn is None:
        return None
    if not dsn.startswith(_SCHEMES):
        source = "--ledger" if given is not None else LEDGER_ENV
        raise UsageError(
            f"{source} must be a postgresql:// URL (e.g. postgresql://rouse@db.example/rouse), "
            f"got {_kind(dsn)} (not shown: it may hold a password)"
        )
    return dsn


def _kind(text: str) -> str:
    """What a value that is not a postgresql:// URL looks like, without echoing it."""
    scheme = re.match(r"([A-Za-z][A-Za-z0-9+.-]*)://", text)
    if scheme:
        return f"a {scheme.group(1)}:// URL"
    if "=" in text:
        return "key=value text"
    return "something else"


#: ``user:PASSWORD@`` in a URL (libpq reads the user info up to the first ``@`` or ``/``)
_USERINFO = re.compile(r"(://[^:/@\s]*):\S*@")  # to the last @: a password may hold / or @
#: ``password=…`` (a URL's query, or key=value text, quoted or not; ``sslpassword`` too)
_PASSWORD = re.compile(r"(password\s*=\s*)('(?:[^'\\]|\\.)*'?|[^\s&]*)", re.IGNORECASE)


def redact(dsn: str) -> str:
    """``dsn`` (or any text quoting one) without its password, for messages."""
    text = _hide(dsn, dsn)  # whole passwords first (a tab, a space, a raw %), then the shapes
    return _PASSWORD.sub(r"\1***", _USERINFO.sub(r"\1:***@", text))


def _hide(text: str, dsn: str) -> str:
    """``text`` with every spelling of ``dsn``'s passwords replaced, longest first."""
    for word in sorted(passwords(dsn), key=len, reverse=True):
        text = text.replace(word, "***")
    return text


def passwords(dsn: str) -> set[str]:
    """Every spelling of the passwords ``dsn`` carries (as written, percent-decoded, and
    escaped as a message may quote it: a tab as ``\\t``), so that a driver's message
    quoting a piece of one (libpq: ``invalid percent-encoded token: "50%off-S3cr3t"``)
    can be scrubbed too.

    Read by hand, not by ``urlsplit`` (which drops tabs and line breaks): the user
    info as libpq reads it (to the first ``@``, with no ``/`` before it) and to the
    authority's last ``@``; a query's ``password=`` (and ``sslpassword=``) to its ``&``.
    """
    from urllib.parse import unquote

    found: set[str] = set()
    rest = dsn.partition("://")[2]
    first_at, first_slash = rest.find("@"), rest.find("/")
    infos = [rest.split("/", 1)[0].rpartition("@")[0]]
    if first_at >= 0 and not 0 <= first_slash < first_at:
        infos.append(rest[:first_at])
    found |= {info.partition(":")[2] for info in infos if ":" in info}
    for pair in rest.partition("?")[2].split("&"):
        key, equals, value = pair.partition("=")
        if equals and key.strip().lower() in ("password", "sslpassword"):
            found.add(value)
    for match in _PASSWORD.finditer(dsn):
        found.add(match.group(2).strip("'"))
    found |= {unquote(word) for word in found}
    found |= {word.encode("unicode_escape").decode("ascii") for word in found}
    return {word for word in found if len(word) >= 3}


def scrub(text: str, dsn: str) -> str:
    """``text`` (a driver's message) without ``dsn``'s password in any spelling."""
    return redact(_hide(text.replace(dsn, redact(dsn)), dsn))


def _psycopg() -> Any:
    try:
        import psycopg
    except ImportError:
        raise UsageError(
            f"a postgresql:// ledger needs psycopg, the pg extra: {install_hint('pg')}"
        ) from None
    return psycopg


class Row(dict[str, Any]):
    """A row readable by column name or by position, as ``sqlite3.Row`` is."""

    def __getitem__(self, key: str | int) -> Any:
        if isinstance(key, int):
            return list(self.values())[key]
        return super().__getitem__(key)


def _rows(cursor: Any) -> Any:
    names = [column.name for column in cursor.description or ()]

    def make(values: Sequence[Any]) -> Row:
        return Row(zip(names, values, strict=True))

    return make


def translate(sql: str) -> str:
    """The ledger's SQL for psycopg: ``?`` placeholders become ``%s``."""
    return sql.replace("%", "%%").replace("?", "%s")


class PgDatabase:
    """One connection to the fleet's database, made again when it breaks."""

    def __init__(self, dsn: str, *, application: str = "rouse"):
        self.dsn = dsn
        self.where = redact(dsn)
        self.application = application
        self._conn: psycopg.Connection[Any] | None = None  # made at the first statement
        #: the database has answered once (a connection was made)
        self.reached = False

    def connection(self) -> psycopg.Connection[Any]:
        """The live connection, connecting (again) if there is none."""
        if self._conn is not None and not self._conn.closed and not self._conn.broken:
            return self._conn
        psycopg = _psycopg()
        self.close()
        try:
            self._conn = psycopg.connect(
                self.dsn,
                autocommit=True,
                row_factory=_rows,
                connect_timeout=CONNECT_TIMEOUT,
                application_name=self.application,
            )
        except psycopg.Error as exc:
            raise LedgerUnreachable(
                f"cannot reach the ledger at {self.where}: {self._said(exc)}"
            ) from None
        assert self._conn is not None
        self.reached = True
        return self._conn

    def execute(self, sql: str, parameters: Sequence[Any] = (), /) -> Any:
        conn = self.connection()
        with self._losing(conn):
            return conn.execute(translate(sql), tuple(parameters))

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Statements inside run as one transaction (committed at the end, or rolled back)."""
        conn = self.connection()
        with self._losing(conn), conn.transaction():
            yield

    @contextmanager
    def _losing(self, conn: psycopg.Connection[Any]) -> Iterator[None]:
        """A connection that broke inside is dropped, and the error is a LedgerUnreachable."""
        psycopg = _psycopg()
        try:
            yield
        except psycopg.OperationalError as exc:
            if conn.broken or conn.closed:
                self.close()
                raise LedgerUnreachable(
                    f"lost the ledger at {self.where}: {self._said(exc)}"
                ) from None
            raise

    def _said(self, exc: BaseException) -> str:
        """The driver's first line about ``exc``, with the DSN (and any password) scrubbed."""
        text = str(exc).strip()
        return scrub(text.splitlines()[0] if text else type(exc).__name__, self.dsn)

    def close(self) -> None:
        if self._conn is not None:
            with suppress(Exception):  # closing a broken connection may fail: it is gone
                self._conn.close()
            self._conn = None


def local_time(value: datetime | None) -> datetime | None:
    """An aware instant (a TIMESTAMPTZ) as the naive local time the rest of rouse uses."""
    return None if value is None else value.astimezone().replace(tzinfo=None)


def only_trees(trees: list[str] | None, column: str) -> tuple[str, tuple[Any, ...]]:
    """The ``WHERE`` clause's part (and its parameters) that keeps ``column`` to ``trees``."""
    if trees is None:
        return "", ()
    return f" AND {column} = ANY(?)", (trees,)


def as_json(item: Any, **renamed: str) -> dict[str, Any]:
    """A view's dataclass as JSON carries it: its fields in order (a field ``renamed``
    under its new key), times as ISO 8601 with the offset."""
    found = {}
    for name in (f.name for f in fields(item)):
        value = getattr(item, name)
        found[renamed.get(name, name)] = iso_stamp(value) if isinstance(value, datetime) else value
    return found
