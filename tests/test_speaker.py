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


@pytest.mark.parametrize(
    "args",
    [
        ["--origin", "owner", REL],
        ["--origin", "system", REL],
        ["--changed", "--yes"],
        ["--upgrade"],
    ],
    ids=["owner", "system", "changed", "upgrade"],
)
def test_stamp_never_vouches_inside_a_session(keyed: tuple[Path, Path], args: list[str]) -> None:
    root, key = keyed
    assert without_terminal(_remind(), _env(root, key)).returncode == 0  # signed agent
    before = (root / REL).read_bytes()
    argv = [sys.executable, "-m", "rouse", "stamp", *args]
    done = without_terminal(argv, _env(root, key, CURSOR_AGENT="1"))
    assert done.returncode == 2
    assert "refused inside an agent session ($CURSOR_AGENT is set)" in done.stderr
    assert (root / REL).read_bytes() == before


def test_stamp_as_the_agent_still_works_inside_a_session(keyed: tuple[Path, Path]) -> None:
    root, key = keyed
    assert without_terminal(_remind("--origin", "owner"), _env(root, key)).returncode == 0
    argv = [sys.executable, "-m", "rouse", "stamp", "--origin", "agent", "--if-changed", REL]
    done = without_terminal(argv, _env(root, key, CLAUDECODE="1"))
    assert done.returncode == 0, done.stderr
    assert signed_as(root, key) == ("owner", "verified")  # --if-changed kept it


def test_an_owners_reminder_is_followed_in_the_pack_and_both_hooks(
    keyed: tuple[Path, Path],
) -> None:
    root, key = keyed  # a one-shot reminder typed by the owner, due, swept, then shown
    due = "2026-03-14 12:00"
    env = _env(root, key)
    made = in_terminal(
        [sys.executable, "-m", "rouse", "remind", "pay-rent", "--due", due, "--now", due,
         "--body", "Pay the rent today"],
        env,
    )  # fmt: skip
    assert made.returncode == 0, made.stdout
    start = '{"session_id": "s", "hook_event_name": "SessionStart", "cwd": "/"}'
    hook = [sys.executable, "-m", "rouse", "pack", "--hook", "claude"]
    subprocess.run(
        [*hook, "--now", due], input=start, env=env, capture_output=True, text=True, check=True
    )
    swept = without_terminal(
        [sys.executable, "-m", "rouse", "sweep", "--once", "--now", due, "-q"], env
    )
    assert swept.returncode == 0, swept.stderr
    packed = without_terminal(
        [sys.executable, "-m", "rouse", "pack", "--now", "2026-03-14 12:01"], env
    )
    said = packed.stdout.split("pay-rent", 1)[1]
    assert "says: Pay the rent today" in said
    assert "untrusted" not in said.split("\n\n", 1)[0]
    event = '{"session_id": "s", "hook_event_name": "UserPromptSubmit", "cwd": "/"}'
    prompt = subprocess.run(
        [*hook, "--now", "2026-03-14 12:02"], input=event, env=env, capture_output=True, text=True
    )
    assert "says: Pay the rent today" in prompt.stdout
    assert "untrusted" not in prompt.stdout
    # the Stop hook wakes an idle session with the same text as the prompt hook's
    from datetime import datetime

    from rouse.agents import prompt_hook

    os.environ["ROUSE_STAMP_KEY"] = str(key)  # (the autouse fixture restores it)
    found, _ = prompt_hook.take_new(root, "idle")
    assert found, "the idle session was given no wake"
    idle = prompt_hook.render(found, datetime(2026, 3, 14, 12, 3), idle=True)
    assert "says: Pay the rent today" in idle
    assert "untrusted" not in idle and "not signed" not in idle


def test_wire_offers_claude_code_the_rule_that_hides_the_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rouse.agents import wire

    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("ROUSE_STAMP_KEY", str(home / ".config/rouse/stamp.key"))
    tree = tmp_path / "proj" / "memory"
    init(tree, NOW, examples=False)
    done = wire.wire(tree, home=home, claude_hooks=True, executable="")
    text = "\n".join(done.printed)
    assert '"Read(~/.config/rouse/**)"' in text and '"denyRead"' in text
    settings = (tmp_path / "proj" / ".claude" / "settings.local.json").read_text()
    assert "denyRead" not in settings  # offered, never written


def test_what_an_mcp_tool_writes_signs_agent(
    keyed: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    from rouse.agents.mcp_tools import Tools

    root, key = keyed
    monkeypatch.setenv("ROUSE_STAMP_KEY", str(key))
    tools = Tools(root, now=lambda: NOW, key_path=key)
    tools.add("reminder", "call-bank", fields={"due": "+2h"}, body="Call the bank")
    assert signed_as(root, key) == ("agent", "verified")
    tools.remember("setup", "How the machine is set up.", keywords="setup")
    loaded = stampkey.load_key(key)
    assert loaded is not None and loaded.secret is not None
    note = "inventory/notes/setup.md"
    assert stampkey.verify(loaded.secret, note, (root / note).read_bytes()) == (
        "agent",
        "verified",
    )
