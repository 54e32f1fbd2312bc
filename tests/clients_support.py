"""What the real-client tests share (tests/test_clients.py, tests/test_client_opencode.py).

A model server on the loopback interface that answers every request with
"ok" in the shape each client asks for (Anthropic Messages, OpenAI Responses
and Chat Completions, the Gemini API) and keeps what it was sent; a machine
with a temporary HOME, a project holding a memory tree, and no rouse on
PATH unless a test puts it there; and the sweeper delivering a wake while a
session is open.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable
from datetime import datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from conftest import NOW, stamp
from rouse.agents import wire
from rouse.records.scaffold import init

ROOT = Path(__file__).resolve().parent.parent
CLIENTS = Path(os.environ.get("ROUSE_TEST_CLIENTS") or ROOT / ".venv" / "clients")
BIN = CLIENTS / "node_modules" / ".bin"
#: The Claude Code release people run today, beside the pin (the Makefile's second set).
CLIENTS_CURRENT = Path(
    os.environ.get("ROUSE_TEST_CLIENTS_CURRENT") or ROOT / ".venv" / "clients-current"
)
CLAUDE = {
    "pinned": BIN / "claude",
    "current": CLIENTS_CURRENT / "node_modules" / ".bin" / "claude",
}
PACK_HEADER = "standing truth (context layers"  # once in every pack with context
WOKE = "woke you since your last prompt"  # once in what the prompt hook injects


# -- a model server on the loopback interface ---------------------------------


class Model:
    """Answers Anthropic Messages, OpenAI Responses and Chat Completions and Gemini API
    requests with "ok"; keeps them."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        #: What a streamed Anthropic Messages request is answered with, when set: the
        #: request's body → content blocks (``text``, or ``tool_use`` with its ``input``).
        self.script: Callable[[dict[str, Any]], list[dict[str, Any]]] | None = None
        model = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                size = int(self.headers.get("content-length", 0))
                body = json.loads(self.rfile.read(size) or b"{}")
                model.requests.append({"path": self.path, "body": body})
                if ":countTokens" in self.path:  # Gemini CLI
                    return self.reply("application/json", '{"totalTokens": 1}')
                if ":streamGenerateContent" in self.path:
                    return self.reply("text/event-stream", f"data: {model.gemini()}\r\n\r\n")
                if ":generateContent" in self.path:
                    return self.reply("application/json", model.gemini(body))
                if self.path.startswith("/v1/responses"):
                    events = model.responses()
                elif self.path.endswith("/chat/completions"):  # opencode's OpenAI-compatible
                    events = model.chat(body)
                elif body.get("stream"):
                    events = model.messages(body)
                else:
                    return self.reply("application/json", json.dumps(model.message(body)))
                self.reply("text/event-stream", events)

            def do_GET(self) -> None:
                self.reply("application/json", '{"data": [], "models": []}')

            def reply(self, kind: str, text: str) -> None:
                data = text.encode()
                self.send_response(200)
                self.send_header("content-type", kind)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @staticmethod
    def message(body: dict[str, Any]) -> dict[str, Any]:
        return {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "m"),
            "content": [{"type": "text", "text": "ok"}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1},
        }

    def messages(self, body: dict[str, Any]) -> str:
        start = {**self.message(body), "content": [], "stop_reason": None}
        blocks = self.script(body) if self.script else [{"type": "text", "text": "ok"}]
        events: list[tuple[str, dict[str, Any]]] = [("message_start", {"message": start})]
        for index, block in enumerate(blocks):
            if block["type"] == "tool_use":
                head = {**block, "input": {}}
                delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
            else:
                head = {"type": "text", "text": ""}
                delta = {"type": "text_delta", "text": block["text"]}
            events += [
                ("content_block_start", {"index": index, "content_block": head}),
                ("content_block_delta", {"index": index, "delta": delta}),
                ("content_block_stop", {"index": index}),
            ]
        used = any(block["type"] == "tool_use" for block in blocks)
        end = {"stop_reason": "tool_use" if used else "end_turn"}
        events += [
            ("message_delta", {"delta": end, "usage": {"output_tokens": 1}}),
            ("message_stop", {}),
        ]
        return "".join(f"event: {k}\ndata: {json.dumps({'type': k, **v})}\n\n" for k, v in events)

    @staticmethod
    def responses() -> str:
        usage = {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2}
        item = {"type": "message", "role": "assistant", "id": "m1"}
        item["content"] = [{"type": "output_text", "text": "ok"}]
        events = [
            {"type": "response.created", "response": {"id": "r1"}},
            {"type": "response.output_item.done", "item": item},
            {"type": "response.completed", "response": {"id": "r1", "usage": usage}},
        ]
        return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)

    @staticmethod
    def chat(body: dict[str, Any]) -> str:
        """An OpenAI Chat Completions stream: "ok", then the end of the turn."""
        base = {"id": "c1", "object": "chat.completion.chunk", "created": 1}
        base["model"] = body.get("model", "m")
        delta = {"role": "assistant", "content": "ok"}
        usage = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
        chunks = [
            {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
            {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
            {**base, "choices": [], "usage": usage},
        ]
        return "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"

    # What Gemini CLI's model router asks for in JSON mode (its two classifiers' schemas):
    # answered with anything else, it retries with backoff for ~100 s before routing anyway.
    ROUTE = json.dumps(
        {"reasoning": "a greeting", "model_choice": "flash"}
        | {"complexity_reasoning": "a greeting", "complexity_score": 1}
    )

    @staticmethod
    def gemini(body: dict[str, Any] | None = None) -> str:
        """A Gemini API generateContent answer (one streamed chunk reads the same): "ok",
        or a routing decision when the request asks for JSON."""
        config = (body or {}).get("generationConfig") or {}
        json_mode = config.get("responseMimeType") == "application/json"
        text = Model.ROUTE if json_mode else "ok"
        part = {"content": {"parts": [{"text": text}], "role": "model"}, "finishReason": "STOP"}
        usage = {"promptTokenCount": 1, "candidatesTokenCount": 1, "totalTokenCount": 2}
        return json.dumps({"candidates": [{**part, "index": 0}], "usageMetadata": usage})

    def last(self) -> str:
        """What the model was sent in the last conversation request, as one string."""
        return json.dumps(self.requests[-1]["body"], ensure_ascii=False)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


# -- a machine with a temporary HOME ------------------------------------------


class Machine:
    def __init__(self, tmp: Path, model: Model) -> None:
        self.home = tmp / "home"
        self.project = tmp / "proj"
        self.elsewhere = tmp / "elsewhere"
        for folder in (self.home, self.project, self.elsewhere):
            folder.mkdir(parents=True)
            subprocess.run(["git", "init", "-q"], cwd=folder, check=True)
        self.model = model
        self.rouse = self.installed_rouse(tmp)
        # a folder holding only `rouse`, for the hooks in files the repository carries,
        # which call rouse by name (on the user's PATH, as an install puts it)
        self.rouse_bin = tmp / "rouse-bin"
        self.rouse_bin.mkdir()
        (self.rouse_bin / "rouse").symlink_to(self.rouse)
        self.rouse_on_path = False
        self.claude = CLAUDE["pinned"]  # which Claude Code release runs (CLAUDE)
        self.extra_env: dict[str, str] = {}  # a test's own additions to the clients' env
        self.global_tree = self.tree(self.home / ".rouse", "GLOBAL-MARK")
        self.tree(self.project / "memory", "PROJECT-MARK")
        gemini = self.home / ".gemini"  # the API key's auth, chosen once as `gemini` asks
        gemini.mkdir()
        auth = {"security": {"auth": {"selectedType": "gemini-api-key"}}}
        (gemini / "settings.json").write_text(json.dumps(auth))
        codex = self.home / ".codex"
        codex.mkdir()
        (codex / "config.toml").write_text(
            'model = "gpt-5"\nmodel_provider = "fake"\ncheck_for_update_on_startup = false\n\n'
            f'[model_providers.fake]\nname = "fake"\nbase_url = "{model.url}/v1"\n'
            'wire_api = "responses"\nenv_key = "OPENAI_API_KEY"\n'
        )

    @staticmethod
    def installed_rouse(tmp: Path) -> str:
        """The venv's ``rouse`` script (what `rouse wire` pins), or a stand-in for it."""
        script = Path(sys.executable).parent / "rouse"
        if script.is_file():
            return str(script)
        folder = tmp / "opt" / "bin"
        folder.mkdir(parents=True)
        (folder / "rouse").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m rouse "$@"\n')
        (folder / "rouse").chmod(0o755)
        return str(folder / "rouse")

    @staticmethod
    def tree(root: Path, mark: str) -> Path:
        init(root, NOW, examples=False)
        (root / "entrypoint" / "beliefs" / "belief-mark.md").write_text(f"{mark}\n")
        return root

    def wire(self, tree: Path | None = None, executable: str | None = None, **flags: bool) -> None:
        tree = tree or self.project / "memory"
        pinned = self.rouse if executable is None else executable
        wire.wire(tree, home=self.home, executable=pinned, **flags)

    def path(self) -> str:
        """/usr/bin:/bin (and node's folder, for Codex's launcher): no rouse on it,
        unless ``rouse_on_path`` (then its own folder first, and nothing else of rouse's)."""
        node = os.path.dirname(shutil.which("node") or "/usr/bin/node")
        folders = ["/usr/bin", "/bin"] + ([node] if node not in ("/usr/bin", "/bin") else [])
        path = os.pathsep.join(folders)
        assert not shutil.which("rouse", path=path), f"a rouse on {path} would hide the test"
        return os.pathsep.join([str(self.rouse_bin), path]) if self.rouse_on_path else path

    def env(self) -> dict[str, str]:
        return {
            "HOME": str(self.home),
            "PATH": self.path(),  # no rouse here: the hook must find it by itself
            "LANG": "C.UTF-8",
            "ANTHROPIC_API_KEY": "sk-ant-dummy",
            "ANTHROPIC_BASE_URL": self.model.url,
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            "OPENAI_API_KEY": "sk-dummy",
            "GEMINI_API_KEY": "dummy",
            "GOOGLE_GEMINI_BASE_URL": self.model.url,
            "GEMINI_CLI_TRUST_WORKSPACE": "true",  # as trusting the folder does
            **self.extra_env,
        }

    def run(self, args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            args,
            cwd=cwd,
            env=self.env(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, f"{args[0]}: {done.stderr[-2000:]}"
        return done


def deliver_a_wake(machine: Machine, slug: str | None = "call-bank") -> None:
    """The sweeper delivers a wake while the session is open: a reminder made an hour
    ago and due 30 minutes ago, swept now (the wall clock: the hook reads it too).
    Without a slug, a tick with nothing due."""
    wall = datetime.now().replace(second=0, microsecond=0)
    tree = str(machine.project / "memory")
    due = stamp(wall - timedelta(minutes=30))
    made = stamp(wall - timedelta(hours=1))
    remind = [["remind", slug, "--due", due, "--now", made]] if slug else []
    for args in (*remind, ["sweep", "--once", "-q", "--now", stamp(wall)]):
        done = subprocess.run(
            [machine.rouse, *args, "--memory", tree],
            env={**machine.env(), "PATH": os.environ["PATH"]},
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
