"""opencode wired by rouse, proven with the real client (issue 21, item 5).

opencode (``opencode-ai`` from npm, installed by ``make clients``) runs in a
wired project against the loopback stand-in model server, configured as an
OpenAI-compatible provider in the user's ``opencode.json``. What the model
was sent is then read directly: the pack in the system prompt of every
request, once, a fresh one for a resumed session, one line saying why when
rouse cannot be started, nothing once unwired, and a wake delivered while a
session is open (``opencode serve``, three prompts) reaching the next prompt
once.

Offline: ``OPENCODE_DISABLE_MODELS_FETCH`` keeps opencode from fetching its
model catalogue, and npm's ``offline`` setting (``npm_config_offline``) has
the plugin package opencode installs into ``.opencode/`` at start fail at
once from the empty cache instead of reaching the registry (opencode logs it
and goes on: rouse's plugin needs nothing installed).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from clients_support import BIN, CLIENTS, PACK_HEADER, WOKE, Machine, Model, deliver_a_wake
from conftest import NOW
from rouse.agents import hook_commands, opencode, wire
from rouse.records.scaffold import init

#: The tests that run the real opencode (the file's others need neither node nor npm).
real_client = pytest.mark.skipif(
    not (shutil.which("node") and shutil.which("npm")),
    reason="node and npm are not on this machine: the real opencode cannot run",
)

OPENCODE = BIN / "opencode"
SKILL = "Read and keep the agent's rouse memory"  # the skill's description, as listed


# -- what `rouse wire --opencode` writes ---------------------------------------


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    init(root / "memory", NOW, examples=False)
    (root / "AGENTS.md").write_text("# Agents\n\nOur own words.\n")
    return root


def test_wire_opencode_lays_the_plugin_once_and_the_agents_block_says_so(
    project: Path, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    first = wire.wire(project / "memory", home=home, executable="/opt/x/bin/rouse", opencode=True)
    plugin = project / opencode.OPENCODE_PLUGIN
    assert f"wrote {plugin} (opencode plugin)" in first.done
    text = plugin.read_text()
    assert text.startswith(opencode.HEAD)
    # the project's file is committed: rouse by name, the tree from the project
    assert 'const TREE = "memory"' in text and "const PINNED = null" in text
    assert "/opt/x" not in text and str(tmp_path) not in text
    assert any(".opencode/.gitignore" in line for line in first.printed)
    agents = (project / "AGENTS.md").read_text()
    assert agents.startswith("# Agents\n\nOur own words.\n")
    assert "In opencode the memory pack arrives at session start by itself (a plugin)" in agents

    again = wire.wire(project / "memory", home=home, executable="/opt/x/bin/rouse", opencode=True)
    assert f"unchanged: {plugin} (opencode plugin)" in again.done
    assert not any(".opencode/.gitignore" in line for line in again.printed)

    wire.wire(project / "memory", home=home, codex_hooks=True)  # AGENTS.md is Codex's too
    both = "In Codex the memory pack arrives at session start by itself (a SessionStart hook), "
    assert both + "and in opencode (a plugin)" in (project / "AGENTS.md").read_text()


def test_the_global_trees_plugin_pins_rouse_and_names_the_tree_whole(tmp_path: Path) -> None:
    home = tmp_path / "home"
    tree = home / ".rouse"
    init(tree, NOW, examples=False)
    wire.wire(tree, home=home, executable="/opt/x/bin/rouse", opencode=True)
    text = (home / opencode.GLOBAL_PLUGIN).read_text()  # personal: it may pin this machine's
    assert 'const PINNED = "/opt/x/bin/rouse"' in text
    assert f"const TREE = {json.dumps(str(tree.resolve()))}" in text
    assert "const GLOBAL = true" in text


def test_wire_remove_takes_out_rouses_plugin_and_nothing_else(
    project: Path, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    wire.wire(project / "memory", home=home, opencode=True)
    plugins = project / opencode.OPENCODE_PLUGIN
    other = plugins.parent / "mine.js"
    other.write_text("export const Mine = async () => ({})\n")
    done = wire.wire(project / "memory", home=home, remove=True).done
    assert f"removed {plugins} (opencode plugin)" in done
    assert not plugins.exists() and other.exists()  # the folder stays with the user's plugin
    assert "rouse" not in (project / "AGENTS.md").read_text()

    plugins.write_text("// a rouse.js of the user's own\n")  # not rouse's: it stays
    again = wire.wire(project / "memory", home=home, remove=True).done
    assert again == [f"nothing of rouse's is wired for {(project / 'memory').resolve()}"]
    assert plugins.exists()


@pytest.mark.skipif(not shutil.which("node"), reason="node is not on this machine")
def test_both_plugins_are_javascript_modules_node_parses(project: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    global_tree = home / ".rouse"
    init(global_tree, NOW, examples=False)
    for tree in (project / "memory", global_tree):
        wire.wire(tree, home=home, executable="/opt/x/bin/rouse", opencode=True)
    for path in (project / opencode.OPENCODE_PLUGIN, home / opencode.GLOBAL_PLUGIN):
        module = tmp_path / "check.mjs"
        shutil.copy(path, module)
        done = subprocess.run(["node", "--check", str(module)], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr


@pytest.mark.skipif(not shutil.which("node"), reason="node is not on this machine")
@pytest.mark.parametrize("name", ["mem__GLOBAL__x", "a__CANNOT_RUN__b", "x__TREE__y__WAIT_MS__"])
def test_placeholders_in_a_trees_name_are_the_trees_name(tmp_path: Path, name: str) -> None:
    """Issue 31, item 20: the plugin's placeholders are filled in one pass, so a tree
    whose name holds one is named as it is, and node parses the plugin."""
    project = tmp_path / "proj"
    init(project / name, NOW, examples=False)
    wire.wire(project / name, home=tmp_path / "home", opencode=True)
    text = (project / opencode.OPENCODE_PLUGIN).read_text()
    assert f"const TREE = {json.dumps(name)} //" in text
    module = tmp_path / "check.mjs"
    shutil.copy(project / opencode.OPENCODE_PLUGIN, module)
    done = subprocess.run(["node", "--check", str(module)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


# -- the real opencode ---------------------------------------------------------


@pytest.fixture
def model() -> Iterator[Model]:
    server = Model()
    yield server
    server.close()


class OpencodeMachine(Machine):
    """A machine whose opencode talks to the stand-in, and to nothing else."""

    def __init__(self, tmp: Path, model: Model) -> None:
        super().__init__(tmp, model)
        config = self.home / ".config" / "opencode"
        config.mkdir(parents=True)
        provider = {
            "npm": "@ai-sdk/openai-compatible",
            "name": "stand-in",
            "options": {"baseURL": f"{model.url}/v1", "apiKey": "dummy"},
            "models": {"m": {"name": "m"}},
        }
        settings = {"provider": {"standin": provider}, "model": "standin/m", "autoupdate": False}
        (config / "opencode.json").write_text(json.dumps(settings))

    def env(self) -> dict[str, str]:
        return {
            **super().env(),
            "OPENCODE_DISABLE_MODELS_FETCH": "1",
            "OPENCODE_DISABLE_AUTOUPDATE": "1",
            "npm_config_offline": "true",
        }


@pytest.fixture
def machine(tmp_path: Path, model: Model) -> OpencodeMachine:
    if not OPENCODE.exists():
        pytest.fail(f"opencode is not installed in {CLIENTS}: run `make clients`")
    return OpencodeMachine(tmp_path, model)


def turns(machine: Machine, since: int = 0) -> list[dict[str, Any]]:
    """The bodies of the agent's own requests since ``since`` (with tools: not the
    session-title request opencode sends its small model beside them)."""
    return [
        r["body"]
        for r in machine.model.requests[since:]
        if r["path"].endswith("/chat/completions") and r["body"].get("tools")
    ]


def packs_in_system(body: dict[str, Any]) -> list[str]:
    """The system messages of one request that hold a pack."""
    return [
        str(m["content"])
        for m in body["messages"]
        if m["role"] == "system" and PACK_HEADER in str(m["content"])
    ]


def run(machine: Machine, cwd: Path, *extra: str) -> dict[str, Any]:
    """One `opencode run` session; the body of its last agent request."""
    before = len(machine.model.requests)
    machine.run([str(OPENCODE), "run", *extra, "hi"], cwd)
    asked = turns(machine, before)
    assert asked, "opencode sent the model nothing"
    return asked[-1]


@real_client
def test_opencode_gets_one_pack_in_its_system_prompt_from_the_project_or_the_global_tree(
    machine: OpencodeMachine, tmp_path: Path
) -> None:
    machine.rouse_on_path = True  # .opencode/plugins/rouse.js is the project's: rouse by name
    machine.wire(machine.global_tree, opencode=True)  # ~/.config/opencode/plugins/rouse.js
    machine.wire(opencode=True)
    plugin = machine.project / opencode.OPENCODE_PLUGIN
    assert str(tmp_path) not in plugin.read_text()  # committed: no path of this machine

    sent = run(machine, machine.project)
    (pack,) = packs_in_system(sent)  # the global plugin gave way to the project's
    assert "PROJECT-MARK" in pack and "GLOBAL-MARK" not in json.dumps(sent)
    assert json.dumps(sent).count(PACK_HEADER) == 1  # nowhere else either
    assert json.dumps(sent).count(SKILL) == 1  # .claude/skills and .agents/skills: one skill
    # opencode put its plugin package's files in .opencode/ and keeps them out of git
    ignored = (machine.project / ".opencode" / ".gitignore").read_text().split()
    assert {"node_modules", "package.json", "package-lock.json"} <= set(ignored)

    # outside the project only the user's plugin runs: the global pack
    (pack,) = packs_in_system(run(machine, machine.elsewhere))
    assert "GLOBAL-MARK" in pack

    # a teammate's clone on another path: the same files, its own tree, nothing edited
    clone = tmp_path / "teammate"
    ignore = shutil.ignore_patterns(*opencode.INSTALLED, ".gitignore", ".rouse")
    shutil.copytree(machine.project, clone, symlinks=True, ignore=ignore)
    (clone / "memory" / "entrypoint" / "beliefs" / "belief-clone.md").write_text("CLONE-MARK\n")
    (pack,) = packs_in_system(run(machine, clone))
    assert "CLONE-MARK" in pack and "GLOBAL-MARK" not in pack


@real_client
def test_opencode_says_why_without_rouse_then_packs_the_resumed_session_then_none_unwired(
    machine: OpencodeMachine,
) -> None:
    machine.wire(opencode=True)
    sent = run(machine, machine.project)  # no rouse on PATH: one line in its place says so
    said = [m["content"] for m in sent["messages"] if m["role"] == "system"]
    assert said[1:] == [hook_commands.CANNOT_RUN_SHARED] and PACK_HEADER not in json.dumps(sent)

    # rouse on PATH, the same session resumed (--continue, a new opencode process): its pack
    machine.rouse_on_path = True
    sent = run(machine, machine.project, "--continue")
    (pack,) = packs_in_system(sent)
    assert "PROJECT-MARK" in pack and hook_commands.CANNOT_RUN_SHARED not in json.dumps(sent)
    assert [m["content"] for m in sent["messages"]].count("hi") == 2  # the same session

    wire.wire(machine.project / "memory", home=machine.home, remove=True)
    assert not (machine.project / opencode.OPENCODE_PLUGIN).exists()
    sent = run(machine, machine.project)
    assert PACK_HEADER not in json.dumps(sent) and SKILL not in json.dumps(sent)


class Server:
    """`opencode serve` (what its TUI and editor clients talk to): one open session."""

    def __init__(self, machine: Machine) -> None:
        self.proc = subprocess.Popen(
            [str(OPENCODE), "serve", "--port", "0"],
            cwd=machine.project,
            env=machine.env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        self.guard = threading.Timer(120, self.proc.kill)  # a hung server fails, never hangs
        self.guard.start()
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if "listening on " in line:
                self.url = line.split("listening on ", 1)[1].strip()
                break
        else:
            raise AssertionError("opencode serve never said where it listens")

    def call(self, path: str, body: dict[str, Any]) -> Any:
        request = urllib.request.Request(
            self.url + path,
            data=json.dumps(body).encode(),
            headers={"content-type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=60) as answer:
            return json.load(answer)

    def close(self) -> None:
        self.guard.cancel()
        self.proc.terminate()
        self.proc.wait(timeout=30)
        assert self.proc.stdout is not None
        self.proc.stdout.close()


@real_client
def test_opencode_gets_a_wake_between_two_prompts_at_the_second_only(
    machine: OpencodeMachine,
) -> None:
    machine.rouse_on_path = True
    machine.wire(opencode=True)
    server = Server(machine)
    try:
        session = server.call("/session", {})["id"]

        def say(text: str) -> dict[str, Any]:
            before = len(machine.model.requests)
            server.call(f"/session/{session}/message", {"parts": [{"type": "text", "text": text}]})
            (sent,) = turns(machine, before)
            assert len(packs_in_system(sent)) == 1  # every request: the session's one pack
            return sent

        first = say("first")
        assert WOKE not in json.dumps(first)  # nothing delivered yet: nothing added

        deliver_a_wake(machine)
        second = say("second")
        assert json.dumps(second).count(WOKE) == 1 and "reminder/call-bank" in json.dumps(second)
        assert packs_in_system(second) == packs_in_system(first)  # the pack is not made again

        third = say("third")
        assert json.dumps(third).count(WOKE) == 1  # the second prompt's, in the history
    finally:
        server.close()
