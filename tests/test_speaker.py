"""Who is speaking (issue 29 item 1): rouse decides the origin a writing verb signs with.

A person at a terminal (``script -qc`` gives the verb a real pseudo-terminal) signs
``owner``; the same verb under any agent client's marker, or with no terminal at all,
signs ``agent``; ``--origin`` says otherwise only outside an agent session, where
inside one only ``untrusted`` is allowed.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import NOW
from rouse.core.errors import UsageError
from rouse.records.scaffold import init
from rouse.trust import stampkey
from rouse.trust.speaker import AGENT_MARKERS, ROUSE_MARKER, marked, speaker

REL = "inventory/reminders/call-bank/reminder.md"


@pytest.fixture
def keyed(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "memory"
    init(root, NOW, examples=False)
    key = stampkey.init_key(tmp_path / "keys" / "stamp.key")
    return root, key


def _env(root: Path, key: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROUSE_")}
    for name, _ in AGENT_MARKERS:  # the test itself may run inside an agent session
        env.pop(name, None)
    env.update(ROUSE_HOME=str(root), ROUSE_STAMP_KEY=str(key), **extra)
    return env


def _remind(*extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "rouse",
        "remind",
        "call-bank",
        "--due",
        "+2h",
        "--body",
        "Call the bank about the card",
        *extra,
    ]


def in_terminal(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` with a pseudo-terminal on its standard streams, as a person would."""
    command = shlex.join(argv)
    return subprocess.run(
        ["script", "-qec", command, "/dev/null"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def without_terminal(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, env=env, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL
    )


def signed_as(root: Path, key: Path) -> tuple[str, str]:
    loaded = stampkey.load_key(key)
    assert loaded is not None and loaded.secret is not None
    return stampkey.verify(loaded.secret, REL, (root / REL).read_bytes())


def test_an_owner_at_a_terminal_signs_owner(keyed: tuple[Path, Path]) -> None:
    root, key = keyed
    done = in_terminal(_remind(), _env(root, key))
    assert done.returncode == 0, done.stdout + done.stderr
    assert signed_as(root, key) == ("owner", "verified")
    check = without_terminal([sys.executable, "-m", "rouse", "check"], _env(root, key))
    assert REL not in check.stdout + check.stderr


@pytest.mark.parametrize("marker", [name for name, _ in AGENT_MARKERS])
def test_each_agent_marker_signs_agent_even_at_a_terminal(
    keyed: tuple[Path, Path], marker: str
) -> None:
    root, key = keyed
    done = in_terminal(_remind(), _env(root, key, **{marker: "1"}))
    assert done.returncode == 0, done.stdout + done.stderr
    assert signed_as(root, key) == ("agent", "verified")


def test_no_terminal_and_no_marker_signs_agent(keyed: tuple[Path, Path]) -> None:
    root, key = keyed
    done = without_terminal(_remind(), _env(root, key))
    assert done.returncode == 0, done.stderr
    assert signed_as(root, key) == ("agent", "verified")


def test_a_script_may_say_owner_outside_a_session(keyed: tuple[Path, Path]) -> None:
    root, key = keyed
    done = without_terminal(_remind("--origin", "owner"), _env(root, key))
    assert done.returncode == 0, done.stderr
    assert signed_as(root, key) == ("owner", "verified")


def test_origin_owner_inside_a_session_is_refused(keyed: tuple[Path, Path]) -> None:
    root, key = keyed
    done = in_terminal(_remind("--origin", "owner"), _env(root, key, CLAUDECODE="1"))
    assert done.returncode == 2
    assert "--origin owner is refused inside an agent session" in done.stdout + done.stderr
    assert "$CLAUDECODE" in done.stdout + done.stderr
    assert not (root / REL).exists()


def test_origin_untrusted_inside_a_session_is_a_downgrade(keyed: tuple[Path, Path]) -> None:
    root, key = keyed
    done = in_terminal(_remind("--origin", "untrusted"), _env(root, key, GEMINI_CLI="1"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert signed_as(root, key) == ("untrusted", "verified")


def test_without_a_key_nothing_is_signed(tmp_path: Path) -> None:
    root = tmp_path / "memory"
    init(root, NOW, examples=False)
    done = in_terminal(_remind(), _env(root, tmp_path / "no.key"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "origin" not in (root / REL).read_text()


def test_the_rule_itself() -> None:
    assert speaker({}, terminal=True) == "owner"
    assert speaker({}, terminal=False) == "agent"
    assert speaker({"CLAUDECODE": "1"}, terminal=True) == "agent"
    assert speaker({"CLAUDECODE": "0"}, terminal=True) == "owner"  # a marker switched off
    assert speaker({}, terminal=False, asked="system") == "system"
    assert speaker({"CODEX_THREAD_ID": "t-1"}, terminal=True, asked="agent") == "agent"
    with pytest.raises(UsageError, match="refused inside an agent session"):
        speaker({"OPENCODE": "1"}, terminal=True, asked="system")
    with pytest.raises(UsageError, match="unknown origin class"):
        speaker({}, terminal=True, asked="unknown")
    assert marked({"PATH": "/bin"}) == {"PATH": "/bin", ROUSE_MARKER: "1"}
