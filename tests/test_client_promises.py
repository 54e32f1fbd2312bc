"""The promise check proven with the real Claude Code (issue 33, item 4).

Claude Code from npm (``make clients``) runs one `claude -p` turn in a wired
project, offline, against the loopback stand-in model (tests/clients_support.py),
which here answers from a script: plain text, or a call of its Bash tool. What
the model was sent is then checked: a promise left without a record brings
exactly one more request, carrying the reason; the model keeps it with
`rouse remind` and the session stops; a turn that already wrote its record, or
holds no promise, brings none.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from clients_support import BIN, CLIENTS, Machine, Model
from rouse.agents.promise_hook import HEAD
from rouse.core.humantime import parse_human
from rouse.core.timefmt import format_stamp

pytestmark = pytest.mark.skipif(
    not (shutil.which("node") and shutil.which("npm")),
    reason="node and npm are not on this machine: the real Claude Code cannot run",
)

PROMPT = "Remind me to renew the TLS cert on Friday at 9am."


@pytest.fixture
def model() -> Iterator[Model]:
    server = Model()
    yield server
    server.close()


@pytest.fixture
def machine(tmp_path: Path, model: Model) -> Machine:
    if not (BIN / "claude").exists():
        pytest.fail(f"Claude Code is not installed in {CLIENTS}: run `make clients`")
    machine = Machine(tmp_path, model)
    machine.rouse_on_path = True  # the model's Bash tool calls rouse by name
    machine.wire(claude_hooks=True)
    # what the set-up wrote is older than the turn: a file changed in the second before
    # the prompt would read as a record the turn kept (the check's one-second margin)
    then = time.time() - 30
    for path in (machine.project / "memory").rglob("*"):
        os.utime(path, (then, then), follow_symlinks=False)
    return machine


def remind(machine: Machine) -> dict[str, Any]:
    """The model's call of its Bash tool that keeps the promise."""
    tree = machine.project / "memory"
    command = f"rouse remind renew-tls-cert --due 'fri 9am' --memory {tree}"
    return {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": command}}


def said(body: dict[str, Any]) -> str:
    return json.dumps(body.get("messages", []), ensure_ascii=False)


def turn(machine: Machine, prompt: str) -> list[dict[str, Any]]:
    """One `claude -p` turn; the conversation's requests (the prompt in their messages)."""
    args = [str(BIN / "claude"), "-p", prompt, "--output-format", "stream-json", "--verbose"]
    machine.run([*args, "--allowedTools", "Bash"], machine.project)
    return [r["body"] for r in machine.model.requests if prompt in said(r["body"])]


def last_message(body: dict[str, Any]) -> str:
    return json.dumps(body["messages"][-1], ensure_ascii=False)


def test_a_promise_without_a_record_is_asked_about_once_then_kept(machine: Machine) -> None:
    def script(body: dict[str, Any]) -> list[dict[str, Any]]:
        if "tool_result" in last_message(body):
            return [{"type": "text", "text": "Kept: reminder/renew-tls-cert, Friday 09:00."}]
        if HEAD in last_message(body):
            return [remind(machine)]
        return [{"type": "text", "text": "Sure, I'll remind you on Friday."}]

    machine.model.script = script
    asked = turn(machine, PROMPT)
    assert len(asked) == 3  # the answer; the one more request, with the reason; the tool's
    assert [HEAD in last_message(body) for body in asked] == [False, True, False]
    reason = last_message(asked[1])
    assert reason.count(HEAD) == 1 and PROMPT in reason and "rouse remind" in reason
    assert "tool_result" in last_message(asked[2]), last_message(asked[2])  # then it stopped
    assert '"is_error": true' not in last_message(asked[2]), last_message(asked[2])
    record = (
        machine.project / "memory" / "inventory" / "reminders" / "renew-tls-cert" / "reminder.md"
    )
    due = format_stamp(parse_human("fri 9am", datetime.now()))
    assert f"due: {due}" in record.read_text()


def test_a_record_written_in_the_turn_brings_no_extra_request(machine: Machine) -> None:
    def script(body: dict[str, Any]) -> list[dict[str, Any]]:
        if "tool_result" in last_message(body):
            return [{"type": "text", "text": "Kept: I'll remind you on Friday at 9am."}]
        return [remind(machine)]

    machine.model.script = script
    asked = turn(machine, PROMPT)
    assert len(asked) == 2 and not any(HEAD in said(body) for body in asked)
    assert (
        machine.project / "memory" / "inventory" / "reminders" / "renew-tls-cert" / "reminder.md"
    ).exists()


def test_a_turn_without_a_promise_brings_no_extra_request(machine: Machine) -> None:
    machine.model.script = lambda body: [{"type": "text", "text": "The typo is fixed."}]
    asked = turn(machine, "Fix the typo in the README.")
    assert len(asked) == 1 and HEAD not in said(asked[0])


def test_wired_with_no_promises_the_turn_ends_as_it_would(machine: Machine) -> None:
    machine.wire(claude_hooks=True, promises=False)
    machine.model.script = lambda body: [{"type": "text", "text": "Sure, I'll remind you."}]
    asked = turn(machine, PROMPT)
    assert len(asked) == 1 and HEAD not in said(asked[0])


# -- Gemini CLI: the AfterAgent hook -------------------------------------------------


def gemini_turn(machine: Machine, prompt: str) -> list[str]:
    """One `gemini -p` turn; the conversation's requests (not the router's JSON-mode ones)."""
    machine.run([str(BIN / "gemini"), "-p", prompt, "--output-format", "json"], machine.project)
    bodies = [
        r["body"]
        for r in machine.model.requests
        if "generatecontent" in r["path"].lower()
        and (r["body"].get("generationConfig") or {}).get("responseMimeType") != "application/json"
    ]
    return [json.dumps(body, ensure_ascii=False) for body in bodies]


@pytest.mark.parametrize(("prompt", "asked"), [(PROMPT, 1), ("Fix the typo in the README.", 0)])
def test_gemini_is_asked_once_about_a_promise_and_never_without_one(
    machine: Machine, prompt: str, asked: int
) -> None:
    if not (BIN / "gemini").exists():
        pytest.fail(f"Gemini CLI is not installed in {CLIENTS}: run `make clients`")
    machine.wire(gemini=True)  # the stand-in answers "ok": no record is ever written
    sent = gemini_turn(machine, prompt)
    assert [HEAD in body for body in sent].count(True) == asked  # the retry, once
    assert len(sent) == 1 + asked
    if asked:
        assert PROMPT in sent[-1].split(HEAD, 1)[1]  # the reason quotes what was said


# -- Codex: its Stop hook --------------------------------------------------------------


@pytest.mark.parametrize(("prompt", "asked"), [(PROMPT, 1), ("Fix the typo in the README.", 0)])
def test_codex_is_asked_once_about_a_promise_and_never_without_one(
    machine: Machine, prompt: str, asked: int
) -> None:
    from test_clients import codex, trust_hooks

    if not (BIN / "codex").exists():
        pytest.fail(f"Codex is not installed in {CLIENTS}: run `make clients`")
    machine.wire(codex_hooks=True)  # the stand-in answers "ok": no record is ever written
    codex(machine, machine.project, "--trust", "hi")  # Codex reads .codex/ once trusted …
    assert any("--promises" in c for c in trust_hooks(machine, machine.project))  # … and hooks
    before = len(machine.model.requests)
    codex(machine, machine.project, prompt)
    sent = [json.dumps(r["body"], ensure_ascii=False) for r in machine.model.requests[before:]]
    assert [HEAD in body for body in sent].count(True) == asked  # one more request, once
    assert len(sent) == 1 + asked
    if asked:
        assert PROMPT in sent[-1].split(HEAD, 1)[1]  # the reason quotes what was said
