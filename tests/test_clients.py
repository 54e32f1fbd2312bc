"""Wiring proven with the real clients (issue 12, items 4 and 10; issue 13, item 4).

Claude Code and Codex, installed from the npm registry by ``make clients``
(which ``make test`` runs first), start a session in a wired project against
a model server on the loopback interface that answers every request with
"ok" and keeps what it was sent. What the model would have read is then
checked directly: exactly one pack per session, the pack again on resume,
one line saying why when rouse cannot be started, and a wake delivered while
a session is open reaching its next prompt, once.

Everything runs under a temporary HOME, with a PATH of ``/usr/bin:/bin``
(no rouse on it), and offline. The tests are skipped only when node or npm
is missing from the machine.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from clients_support import (
    BIN,
    CLAUDE,
    CLIENTS,
    PACK_HEADER,
    WOKE,
    Machine,
    Model,
    deliver_a_wake,
)
from rouse.agents import wire

pytestmark = pytest.mark.skipif(
    not (shutil.which("node") and shutil.which("npm")),
    reason="node and npm are not on this machine: the real Claude Code and Codex cannot run",
)


@pytest.fixture
def model() -> Iterator[Model]:
    server = Model()
    yield server
    server.close()


@pytest.fixture
def machine(request: pytest.FixtureRequest, tmp_path: Path, model: Model) -> Machine:
    if not all((BIN / name).exists() for name in ("claude", "codex", "gemini")):
        pytest.fail(f"the agents' CLIs are not installed in {CLIENTS}: run `make clients`")
    made = Machine(tmp_path, model)
    release = getattr(request, "param", "pinned")  # (BOTH_CLAUDES: the pin and today's)
    made.claude = CLAUDE[release]
    if not made.claude.exists():
        pytest.fail(f"Claude Code ({release}) is not installed at {made.claude}: `make clients`")
    return made


#: Run a Claude Code test with the pinned release and with the one people run today.
BOTH_CLAUDES = pytest.mark.parametrize("machine", ["pinned", "current"], indirect=True)


# -- Claude Code --------------------------------------------------------------


def claude(machine: Machine, cwd: Path, *extra: str) -> list[dict[str, Any]]:
    """One `claude -p` session; its stream-json events."""
    args = [str(machine.claude), "-p", "hi", "--output-format", "stream-json", "--verbose"]
    done = machine.run([*args, *extra], cwd)
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def session_start_outputs(events: list[dict[str, Any]]) -> list[str]:
    return [
        str(e.get("stdout", ""))
        for e in events
        if e.get("subtype") == "hook_response" and e.get("hook_event") == "SessionStart"
    ]


@BOTH_CLAUDES
def test_claude_gets_one_pack_per_session_and_a_fresh_one_on_resume(machine: Machine) -> None:
    machine.rouse_on_path = True  # the team's .claude/settings.json calls rouse by name
    machine.wire(machine.global_tree, claude_hooks=True)  # ~/.claude/settings.json
    machine.wire(claude_hooks=True)  # .claude/settings.local.json …
    machine.wire(claude_hooks=True, shared=True)  # … moved to .claude/settings.json

    events = claude(machine, machine.project)
    packs = [o for o in session_start_outputs(events) if o.startswith("now: ")]
    assert len(packs) == 1 and "PROJECT-MARK" in packs[0]
    sent = machine.model.last()
    assert sent.count(PACK_HEADER) == 1
    assert "PROJECT-MARK" in sent and "GLOBAL-MARK" not in sent

    # --resume runs the hook again (source "resume"): a fresh pack after the old one
    # (Claude Code passes the same text only once, so the memory changes in between)
    later = machine.project / "memory" / "entrypoint" / "beliefs" / "belief-later.md"
    later.write_text("LATER-MARK\n")
    session = next(e["session_id"] for e in events if e.get("subtype") == "init")
    resumed = claude(machine, machine.project, "--resume", session)
    hooks = {e["hook_name"] for e in resumed if e.get("subtype") == "hook_response"}
    assert hooks == {"SessionStart:resume"}
    (pack,) = [o for o in session_start_outputs(resumed) if o.startswith("now: ")]
    assert "LATER-MARK" in pack
    sent = machine.model.last()
    assert sent.count(PACK_HEADER) == 2 and "LATER-MARK" in sent  # the first pack, then this

    # outside the project the user-level hook is the only one: the global pack
    claude(machine, machine.elsewhere)
    sent = machine.model.last()
    assert sent.count(PACK_HEADER) == 1 and "GLOBAL-MARK" in sent


def test_claude_says_why_when_rouse_cannot_be_started(machine: Machine, tmp_path: Path) -> None:
    gone = tmp_path / "uninstalled" / "rouse"  # where rouse was when it was wired
    machine.wire(executable=str(gone), claude_hooks=True)
    (output,) = session_start_outputs(claude(machine, machine.project))
    assert output == wire.CANNOT_RUN + "\n"
    sent = machine.model.last()
    assert wire.CANNOT_RUN in sent and "not found" not in sent


class Conversation:
    """One open `claude -p` session fed its prompts one at a time (stream-json on stdin)."""

    def __init__(self, machine: Machine, **env: str) -> None:
        args = [str(machine.claude), "-p", "--input-format", "stream-json"]
        args += ["--output-format", "stream-json", "--verbose"]
        self.proc = subprocess.Popen(
            args,
            cwd=machine.project,
            env={**machine.env(), **env},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        self.guard = threading.Timer(120, self.proc.kill)  # a hung client fails, never hangs
        self.guard.start()

    def say(self, text: str) -> list[dict[str, Any]]:
        """Send one prompt; its events, up to the turn's result."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        message = {"type": "user", "message": {"role": "user", "content": text}}
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()
        events: list[dict[str, Any]] = []
        while not events or events[-1].get("type") != "result":
            line = self.proc.stdout.readline()
            assert line, "claude closed its output before the turn ended"
            if line.startswith("{"):
                events.append(json.loads(line))
        return events

    def turn(self) -> list[dict[str, Any]]:
        """The events of a turn nobody prompted (a hook woke the model), up to its result."""
        assert self.proc.stdout is not None
        events: list[dict[str, Any]] = []
        while not events or events[-1].get("type") != "result":
            line = self.proc.stdout.readline()
            assert line, "claude closed its output before the turn ended"
            if line.startswith("{"):
                events.append(json.loads(line))
        return events

    def close(self) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.close()
        assert self.proc.wait(timeout=60) == 0
        self.guard.cancel()
        self.proc.stdout.close()


IDLE = "woke you while the session was idle"  # once in what the Stop hook wakes a session with


def waiter(machine: Machine, session: str, not_pid: int = 0) -> int:
    """The pid of the session's Stop-hook waiter, once it waits (a bounded wait)."""
    path = machine.project / "memory" / ".rouse" / "sessions" / f"{session}.waiter"
    deadline = time.monotonic() + 60
    while True:
        with contextlib.suppress(OSError, ValueError, KeyError):
            pid = int(json.loads(path.read_text())["pid"])
            if pid != not_pid:
                return pid
        assert time.monotonic() < deadline, "the Stop hook never started waiting"
        time.sleep(0.05)


@BOTH_CLAUDES
def test_an_idle_session_is_woken_by_each_wake_once_and_by_nothing_else(
    machine: Machine,
) -> None:
    machine.wire(claude_hooks=True)
    talk = Conversation(machine)
    try:
        (init,) = [e for e in talk.say("first") if e.get("subtype") == "init"]
        session = init["session_id"]
        first = waiter(machine, session)  # the turn ended: its Stop hook waits
        asked = len(machine.model.requests)

        deliver_a_wake(machine, None)  # a tick with nothing due wakes nobody …
        deliver_a_wake(machine)  # … and a delivered wake does, with no prompt sent
        talk.turn()
        assert len(machine.model.requests) == asked + 1  # one request: this wake's
        sent = machine.model.last()
        assert sent.count(IDLE) == 1 and sent.count("reminder/call-bank — ") == 1
        assert sent.count(PACK_HEADER) == 1 and WOKE not in sent

        second = waiter(machine, session, not_pid=first)  # that turn's end: a new waiter
        deliver_a_wake(machine, "pay-rent")
        talk.turn()
        assert len(machine.model.requests) == asked + 2
        sent = machine.model.last()
        assert sent.count(IDLE) == 2  # the first, in the history, and this one
        assert sent.count("reminder/pay-rent — ") == 1
        assert sent.count("reminder/call-bank — ") == 1  # never given twice

        talk.say("third")  # the prompt hook has nothing new: both were shown
        assert WOKE not in machine.model.last()
        third = waiter(machine, session, not_pid=second)
    finally:
        talk.close()
    # closing the session's input ends the waiter too: nothing is left behind
    registration = machine.project / "memory" / ".rouse" / "sessions" / f"{session}.waiter"
    assert not registration.exists()
    with pytest.raises(ProcessLookupError):
        os.kill(third, 0)


@BOTH_CLAUDES
def test_a_wake_between_two_prompts_reaches_the_second_only(machine: Machine) -> None:
    machine.wire(claude_hooks=True)
    talk = Conversation(machine, ROUSE_STOP_WAIT="off")  # no idle wake: the next prompt's
    try:
        (init,) = [e for e in talk.say("first") if e.get("subtype") == "init"]
        assert machine.model.last().count(PACK_HEADER) == 1  # the session's pack
        assert WOKE not in machine.model.last()  # nothing delivered yet: nothing injected

        deliver_a_wake(machine)

        talk.say("second")
        sent = machine.model.last()
        assert sent.count(WOKE) == 1 and "reminder/call-bank" in sent
        assert sent.count(PACK_HEADER) == 1  # the prompt hook never prints the pack

        talk.say("third")  # nothing new since: nothing more injected
        assert machine.model.last().count(WOKE) == 1  # (the second prompt's, in the history)
    finally:
        talk.close()
    # the session's transcript keeps what a hook gave the model: the wake, once
    (transcript,) = (machine.home / ".claude" / "projects").rglob(f"{init['session_id']}.jsonl")
    given = [
        entry["attachment"]
        for entry in map(json.loads, transcript.read_text().splitlines())
        if (entry.get("attachment") or {}).get("hookEvent") == "UserPromptSubmit"
    ]
    (wake,) = given
    assert wake["exitCode"] == 0 and wake["content"].startswith("rouse: 1 record(s) " + WOKE)


# -- Codex --------------------------------------------------------------------


def codex(machine: Machine, cwd: Path, *args: str) -> None:
    machine.run([str(BIN / "codex"), "exec", "--json", *args], cwd)


def trust_hooks(machine: Machine, cwd: Path) -> list[str]:
    """Trust the hooks Codex lists for ``cwd``, as its /hooks screen does (app-server)."""
    proc = subprocess.Popen(
        [str(BIN / "codex"), "app-server"],
        cwd=cwd,
        env=machine.env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    guard = threading.Timer(60, proc.kill)  # a hung server fails the test, never hangs it
    guard.start()

    def call(number: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
        assert proc.stdin is not None and proc.stdout is not None
        request = {"jsonrpc": "2.0", "id": number, "method": method, "params": params}
        proc.stdin.write(json.dumps(request) + "\n")
        proc.stdin.flush()
        while True:
            line = proc.stdout.readline()
            assert line, "codex app-server closed its output"
            answer: dict[str, Any] = json.loads(line)
            if answer.get("id") == number:
                assert "error" not in answer, answer
                return answer

    try:
        info = {"name": "rouse-tests", "title": "rouse tests", "version": "1"}
        call(1, "initialize", {"clientInfo": info, "capabilities": {"experimentalApi": True}})
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "initialized"}) + "\n")
        proc.stdin.flush()
        (listed,) = call(2, "hooks/list", {"cwds": [str(cwd)]})["result"]["data"]
        state = {h["key"]: {"trusted_hash": h["currentHash"]} for h in listed["hooks"]}
        edit = {"keyPath": "hooks.state", "value": state, "mergeStrategy": "upsert"}
        call(3, "config/batchWrite", {"edits": [edit]})
        return [str(h["command"]) for h in listed["hooks"]]
    finally:
        guard.cancel()
        proc.stdin.close()
        proc.terminate()
        proc.wait(timeout=30)
        proc.stdout.close()


def test_codex_runs_the_wired_hook_once_trusted_and_again_on_resume(machine: Machine) -> None:
    machine.rouse_on_path = True  # the repository's .codex/hooks.json calls rouse by name
    machine.wire(codex_hooks=True)  # .codex/hooks.json
    # a new hook does not run until the user trusts it (and .codex/ loads only in a
    # trusted project): the session starts without a pack, and Codex says nothing
    codex(machine, machine.project, "--trust", "hi")
    assert PACK_HEADER not in machine.model.last()

    commands = trust_hooks(machine, machine.project)  # SessionStart, UserPromptSubmit, and
    assert len(commands) == 3 and all("--hook codex" in c for c in commands)  # Stop (issue 33)
    codex(machine, machine.project, "hi")
    sent = machine.model.last()
    assert sent.count(PACK_HEADER) == 1 and "PROJECT-MARK" in sent

    codex(machine, machine.project, "resume", "--last", "again")  # source "resume"
    assert machine.model.last().count(PACK_HEADER) == 2

    # running `rouse wire` again changes nothing, so the trust Codex keeps still holds
    machine.wire(codex_hooks=True)
    codex(machine, machine.project, "hi")
    assert machine.model.last().count(PACK_HEADER) == 1


def test_codex_gets_one_pack_with_a_user_and_a_project_hook(machine: Machine) -> None:
    machine.rouse_on_path = True
    machine.wire(machine.global_tree, codex_hooks=True)  # ~/.codex/hooks.json
    machine.wire(codex_hooks=True)
    codex(machine, machine.project, "--trust", "hi")  # trust the project
    assert len(trust_hooks(machine, machine.project)) == 6  # the user's hooks and the project's

    codex(machine, machine.project, "hi")
    sent = machine.model.last()
    assert sent.count(PACK_HEADER) == 1
    assert "PROJECT-MARK" in sent and "GLOBAL-MARK" not in sent

    codex(machine, machine.elsewhere, "hi")
    sent = machine.model.last()
    assert sent.count(PACK_HEADER) == 1 and "GLOBAL-MARK" in sent


class AppServer:
    """`codex app-server` over JSON-RPC on its stdio (what its TUI and IDE clients use)."""

    def __init__(self, machine: Machine, cwd: Path) -> None:
        self.proc = subprocess.Popen(
            [str(BIN / "codex"), "app-server"],
            cwd=cwd,
            env=machine.env(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        self.guard = threading.Timer(120, self.proc.kill)  # a hung server fails, never hangs
        self.guard.start()
        self.number = 0
        info = {"name": "rouse-tests", "title": "rouse tests", "version": "1"}
        self.call("initialize", {"clientInfo": info, "capabilities": {"experimentalApi": True}})
        self.send({"jsonrpc": "2.0", "method": "initialized"})

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()

    def until(self, wanted: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        assert self.proc.stdout is not None
        while True:
            line = self.proc.stdout.readline()
            assert line, "codex app-server closed its output"
            message: dict[str, Any] = json.loads(line)
            if wanted(message):
                return message

    def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.number += 1
        number = self.number
        self.send({"jsonrpc": "2.0", "id": number, "method": method, "params": params})
        answer = self.until(lambda m: m.get("id") == number)
        assert "error" not in answer, answer
        return answer

    def turn(self, thread: str, text: str) -> None:
        self.call("turn/start", {"threadId": thread, "input": [{"type": "text", "text": text}]})
        self.until(lambda m: m.get("method") == "turn/completed")

    def close(self) -> None:
        self.guard.cancel()
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.close()
        self.proc.terminate()
        self.proc.wait(timeout=30)
        self.proc.stdout.close()


def test_codex_gets_a_wake_between_two_turns_at_the_second_only(machine: Machine) -> None:
    machine.rouse_on_path = True
    machine.wire(codex_hooks=True)
    codex(machine, machine.project, "--trust", "hi")  # trust the project, then its hooks
    assert len(trust_hooks(machine, machine.project)) == 3  # with issue 33's Stop hook
    server = AppServer(machine, machine.project)
    try:
        started = server.call("thread/start", {"cwd": str(machine.project)})
        thread = started["result"]["thread"]["id"]
        server.turn(thread, "first")
        assert machine.model.last().count(PACK_HEADER) == 1 and WOKE not in machine.model.last()
        deliver_a_wake(machine)
        server.turn(thread, "second")
        sent = machine.model.last()
        assert sent.count(WOKE) == 1 and "reminder/call-bank" in sent
        server.turn(thread, "third")
        assert machine.model.last().count(WOKE) == 1  # the second turn's, in the history
    finally:
        server.close()


def test_codex_gets_a_non_latin_pack_whole(machine: Machine) -> None:
    """~9,000 characters at two bytes each: past Codex's default 2,500 tokens (bytes / 4),
    within the hook's own additionalContextLimit, so no preview and no spill file."""
    machine.rouse_on_path = True
    words = " ".join(f"слово{i:04}" for i in range(800))  # 8,799 characters, 16,000+ bytes
    belief = machine.project / "memory" / "entrypoint" / "beliefs" / "belief-long.md"
    belief.write_text(words + "\n")
    machine.wire(codex_hooks=True)
    codex(machine, machine.project, "--trust", "hi")
    trust_hooks(machine, machine.project)
    codex(machine, machine.project, "hi")
    sent = machine.model.last()
    assert sent.count(PACK_HEADER) == 1 and words in sent
    assert not list((machine.home / ".codex").rglob("hook_outputs/*"))


SKILL = "Read and keep the agent's rouse memory"  # the skill's description, as listed


def test_claude_and_codex_list_the_rouse_skill_and_forget_it_when_removed(
    machine: Machine,
) -> None:
    machine.wire()  # the block and the skills, no hooks
    claude(machine, machine.project)
    assert machine.model.last().count(SKILL) == 1  # Claude Code: .claude/skills/rouse
    codex(machine, machine.project, "--trust", "hi")
    assert machine.model.last().count(SKILL) == 1  # Codex: .agents/skills/rouse

    wire.wire(machine.project / "memory", home=machine.home, remove=True)
    claude(machine, machine.project)
    assert SKILL not in machine.model.last()
    codex(machine, machine.project, "hi")
    assert SKILL not in machine.model.last()


# -- Gemini CLI (issue 21, item 4) ---------------------------------------------


def gemini(machine: Machine, cwd: Path, *extra: str) -> str:
    """One `gemini -p` session; what the model was sent in its last request that carries
    the prompt (Gemini CLI also asks a small model to route the request first)."""
    before = len(machine.model.requests)
    machine.run([str(BIN / "gemini"), "-p", "hi", "--output-format", "json", *extra], cwd)
    asked = [
        json.dumps(r["body"], ensure_ascii=False)
        for r in machine.model.requests[before:]
        if "generatecontent" in r["path"].lower()
    ]
    assert asked, "Gemini CLI sent the model nothing"
    return asked[-1]


def test_gemini_gets_one_pack_per_session_and_a_wake_once(machine: Machine) -> None:
    """`gemini -p` is one turn per process: a resumed session runs SessionStart again (a
    fresh pack, which lists the wake as woken); BeforeAgent then adds nothing, since that
    session has been shown it. (A wake between two prompts of one open session: the ACP
    test below.)"""
    machine.rouse_on_path = True  # .gemini/settings.json is the project's: rouse by name
    machine.wire(gemini=True)
    sent = gemini(machine, machine.project)
    assert sent.count(PACK_HEADER) == 1 and "PROJECT-MARK" in sent and WOKE not in sent

    deliver_a_wake(machine)
    for _ in range(2):  # the wake, once per session, in its pack, never again at a prompt
        sent = gemini(machine, machine.project, "--resume", "latest")
        assert sent.count(PACK_HEADER) == 1 and sent.count("reminder/call-bank") == 1
        assert WOKE not in sent


class AcpSession:
    """One open Gemini CLI session driven over ACP (`gemini --acp`: JSON-RPC on stdio),
    as an editor drives it: one process, prompts sent one at a time."""

    def __init__(self, machine: Machine) -> None:
        self.machine = machine
        self.proc = subprocess.Popen(
            [str(BIN / "gemini"), "--acp"],
            cwd=machine.project,
            env=machine.env(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        self.guard = threading.Timer(120, self.proc.kill)  # a hung client fails, never hangs
        self.guard.start()
        self.next_id = 0
        self.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        new = self.call("session/new", {"cwd": str(machine.project), "mcpServers": []})
        self.session = new["sessionId"]

    def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Send one request; its result (notifications on the way are read past)."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.next_id += 1
        request = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        while True:
            line = self.proc.stdout.readline()
            assert line, f"gemini closed its output before answering {method}"
            message = json.loads(line)
            if message.get("id") == self.next_id and "method" not in message:
                assert "error" not in message, message["error"]
                result: dict[str, Any] = message["result"]
                return result

    def say(self, text: str) -> str:
        """One prompt; what the model was sent for it (the turn, not the router's ask)."""
        before = len(self.machine.model.requests)
        prompt = [{"type": "text", "text": text}]
        done = self.call("session/prompt", {"sessionId": self.session, "prompt": prompt})
        assert done["stopReason"] == "end_turn"
        turns = [
            json.dumps(r["body"], ensure_ascii=False)
            for r in self.machine.model.requests[before:]
            if ":streamGenerateContent" in r["path"]
        ]
        assert turns, "Gemini CLI sent the model nothing for the prompt"
        return turns[-1]

    def close(self) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        finally:
            self.proc.kill()
            self.proc.wait()
            self.proc.stdout.close()
            self.guard.cancel()


def test_gemini_a_wake_between_two_prompts_of_an_open_session_reaches_the_second_only(
    machine: Machine,
) -> None:
    """In one open Gemini CLI session (ACP, as an editor runs it), which runs no
    SessionStart hook, the first prompt brings the pack (through BeforeAgent), and a wake
    delivered after it reaches the model at the second prompt, once."""
    machine.rouse_on_path = True  # .gemini/settings.json is the project's: rouse by name
    machine.wire(gemini=True)
    talk = AcpSession(machine)
    try:
        sent = talk.say("first")
        assert sent.count(PACK_HEADER) == 1 and "PROJECT-MARK" in sent and WOKE not in sent

        deliver_a_wake(machine)

        sent = talk.say("second")
        assert sent.count(WOKE) == 1 and "reminder/call-bank" in sent
        assert sent.count(PACK_HEADER) == 1  # the first prompt's, in the history

        sent = talk.say("third")  # nothing new since: nothing more injected
        assert sent.count(WOKE) == 1  # (the second prompt's, in the history)
    finally:
        talk.close()


def test_gemini_gives_the_pack_in_a_checkout_whose_path_holds_a_space(
    tmp_path: Path, model: Model
) -> None:
    """Issue 34, item 5: Gemini CLI writes its own shell-quoted path in place of a bare
    ``$GEMINI_PROJECT_DIR``; inside the hook's double quotes those quotes were kept, and a
    teammate's checkout at a path with a space got no pack."""
    machine = Machine(tmp_path / "team mate", model)
    machine.rouse_on_path = True
    machine.wire(gemini=True)
    sent = gemini(machine, machine.project)
    assert sent.count(PACK_HEADER) == 1 and "PROJECT-MARK" in sent


@BOTH_CLAUDES
def test_claude_starts_the_rouse_mcp_server_and_offers_the_model_its_tools(
    machine: Machine,
) -> None:
    """Issue 34, item 12: the MCP server, registered as `rouse wire --mcp` prints, starts
    under each release and every tool it offers reaches what the model is sent."""
    from rouse.agents.mcp import DESCRIPTIONS

    config = machine.home / "mcp.json"
    server = {
        "command": machine.rouse,
        "args": ["mcp", "--memory", str(machine.project / "memory")],
    }
    config.write_text(json.dumps({"mcpServers": {"rouse": server}}))
    # `claude -p` sends its first request before MCP servers connect unless told to wait
    machine.extra_env["MCP_CONNECTION_NONBLOCKING"] = "false"
    events = claude(machine, machine.project, "--mcp-config", str(config), "--strict-mcp-config")
    (init,) = [e for e in events if e.get("subtype") == "init"]
    servers = {s["name"]: s["status"] for s in init["mcp_servers"]}
    assert servers == {"rouse": "connected"}, init["mcp_servers"]
    asked = [r["body"] for r in machine.model.requests if "/v1/messages" in r["path"]]
    sent = [str(tool.get("name", "")) for tool in asked[-1].get("tools", [])]
    if not any(name.startswith("mcp__") for name in sent):
        # later releases defer MCP tools behind their tool search: the model finds them
        # there, so the session's list of tools is what it can reach
        sent = [str(name) for name in init["tools"]]
    offered = {n.removeprefix("mcp__rouse__") for n in sent if n.startswith("mcp__rouse__")}
    assert offered == set(DESCRIPTIONS)
