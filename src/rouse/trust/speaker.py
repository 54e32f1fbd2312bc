"""Who is speaking: the origin a writing verb signs what it writes with.

rouse decides it, nobody types it: ``owner`` for a person at a terminal with no
agent session around it, ``agent`` inside an agent session (the markers the
agent clients put in the environment of the commands they run, and
:data:`ROUSE_MARKER`, which rouse sets for every child of its hooks, runs and
MCP server), and ``agent`` too with no terminal and no marker (a script, a cron
job). ``--origin`` may say otherwise outside an agent session; inside one it may
only lower the trust to ``untrusted``. This module is pure: the caller hands it
the environment and whether the standard streams are a terminal (the CLI is
what reads them). See docs/provenance.md.
"""

from __future__ import annotations

from collections.abc import Mapping

from rouse.core.errors import UsageError

#: The marker rouse sets in the environment of what its hooks, runs and MCP server start.
ROUSE_MARKER = "ROUSE_AGENT"

#: Environment variables that say "a command run by an agent", with the client that sets
#: each (docs/provenance.md cites where each is documented).
AGENT_MARKERS: tuple[tuple[str, str], ...] = (
    (ROUSE_MARKER, "rouse (its hooks, runs and MCP server)"),
    ("CLAUDECODE", "Claude Code"),
    ("CLAUDE_CODE_CHILD_SESSION", "Claude Code"),
    ("CODEX_THREAD_ID", "Codex"),
    ("CODEX_SANDBOX", "Codex"),
    ("GEMINI_CLI", "Gemini CLI"),
    ("OPENCODE", "opencode"),
    ("CURSOR_AGENT", "Cursor"),
    ("AGENT", "an agent (the shared AGENT convention; opencode sets it)"),
)

#: Trust order, highest first (``unknown`` is below all of them: no reading).
TRUST = ("owner", "system", "agent", "untrusted")


def session_marker(env: Mapping[str, str]) -> str | None:
    """The first agent marker set in ``env`` (a value other than empty, ``0`` or ``false``),
    or None outside any agent session."""
    for name, _ in AGENT_MARKERS:
        value = (env.get(name) or "").strip().lower()
        if value and value not in ("0", "false"):
            return name
    return None


def speaker(env: Mapping[str, str], terminal: bool, asked: str | None = None) -> str:
    """The origin a writing verb run with ``env`` signs with.

    ``terminal``: a terminal is on the verb's standard streams. ``asked``: the
    ``--origin`` given, if any — refused inside an agent session unless it is
    ``untrusted`` (or ``agent``, which says nothing new).
    """
    marker = session_marker(env)
    if asked is not None:
        asked = asked.strip().lower()
        if asked not in TRUST:  # (``unknown`` is no reading: never said)
            raise UsageError(f"unknown origin class {asked!r}: use one of {', '.join(TRUST)}")
        if marker is not None and asked not in ("agent", "untrusted"):
            raise UsageError(
                f"--origin {asked} is refused inside an agent session (${marker} is set): "
                "what an agent writes signs as agent; only --origin untrusted (for text "
                "pasted from elsewhere) lowers it. The owner says otherwise from a terminal "
                "of their own"
            )
        return asked
    if marker is not None:
        return "agent"
    return "owner" if terminal else "agent"


def vouching(env: Mapping[str, str], what: str) -> None:
    """Refuse ``what`` (a ``rouse stamp`` that vouches: an origin above ``agent``,
    ``--changed``, ``--upgrade``, ``--vouch-existing``) inside an agent session."""
    marker = session_marker(env)
    if marker is not None:
        raise UsageError(
            f"{what} is refused inside an agent session (${marker} is set): vouching is "
            "the owner's, from a terminal of their own, outside the agent"
        )


def lower(first: str, second: str) -> str | None:
    """The less trusted of two origins; None when either is not a signed class
    (``unknown``: nothing to keep)."""
    if first not in TRUST or second not in TRUST:
        return None
    return TRUST[max(TRUST.index(first), TRUST.index(second))]


def marked(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` with rouse's own marker set: for every child of a hook, a run or the MCP
    server, so that what it writes signs as ``agent``."""
    return {**env, ROUSE_MARKER: "1"}
