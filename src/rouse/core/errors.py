"""The exception hierarchy: every user-facing error says where and what to do.

``RouseError`` means the verb ran and found a problem (exit 1);
``UsageError`` means bad arguments or environment (exit 2).
"""

from __future__ import annotations


class RouseError(Exception):
    """The verb ran and found a problem (exit code 1)."""

    exit_code = 1

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None):
        self.message = message
        self.path = path
        self.line = line
        super().__init__(self.render())

    def render(self) -> str:
        if self.path is None:
            return self.message
        where = self.path if self.line is None else f"{self.path}:{self.line}"
        return f"{where}: {self.message}"


class UsageError(RouseError):
    """Bad arguments, no tree, a refused slug or field (exit code 2)."""

    exit_code = 2


class TooNew(UsageError):
    """A ledger whose schema is newer than this rouse knows: refused, never touched (exit 2)."""


class HeaderError(RouseError):
    """A header that cannot be read (unterminated, not UTF-8, not a file)."""


class ChangedUnderfoot(RouseError):
    """A file changed between our read and our write; the caller retries."""
