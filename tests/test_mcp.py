"""`rouse mcp` driven by the official `mcp` client library over stdio, and its tools in-process.

The client tests need the extra (`pip install 'rouse-memory[mcp]'`; `make test`
installs it through the dev extra); the in-process tests of the tools do not.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

import rouse
from conftest import INTENTIONS, NOTES, NOW
from rouse.agents.mcp_tools import ADD_TYPES, ENDINGS, Tools
from rouse.core import extras, levels
from rouse.core.errors import UsageError
from rouse.records.scaffold import init
from rouse.trust import stamp as stamping
from rouse.trust import stampkey

TOOLS = {
    "pack",
    "recall",
    "due",
    "probe",
    "remember",
    "intend",
    "add",
    "move",
    "snooze",
    "close",
    "promote",
    "tell",
    "cancel",
    "checkpoint",
    "forget",  # issue 32: forgetting is a verb
    "review",  # issue 32: a drifted note said to be still true
}
READ_ONLY = {"pack", "recall", "due", "probe"}
PROBES = "inventory/probes.md"
MARKER_PROBES = (
    "Probes.\n\n"
    '```probe\nname: marker\ncmd: touch "$ROOT/marker" && echo ran\ntier: pack\n```\n\n'
    '```probe\nname: demand-marker\ncmd: touch "$ROOT/demand-marker" && echo ran\n```\n'
)


@pytest.fixture
def memory(tmp_path: Path) -> Path:
    root = tmp_path / "memory"
    init(root, NOW)
    return root


@pytest.fixture
def no_key(tmp_path: Path) -> Path:
    return tmp_path / "no-key"


def files_under(root: Path) -> dict[str, bytes]:
    """Every file in the tree but rouse's own state (the walk cache may change on a read)."""
    found = {p.relative_to(root).as_posix(): p for p in root.rglob("*") if p.is_file()}
    return {rel: p.read_bytes() for rel, p in found.items() if not rel.startswith(".rouse/")}


# -- the tools in-process -----------------------------------------------------


def tools(root: Path, key_path: Path, **env: str) -> Tools:
    return Tools(root, lambda: NOW, env, key_path)


def test_intend_add_move_close(memory: Path, no_key: Path) -> None:
    t = tools(memory, no_key)
    assert t.intend("ship-it", "the release is tagged") == (
        f"wrote {INTENTIONS}/ship-it/intention.md"
    )
    out = t.add("goal", "green-ci", under="ship-it", fields={"success-when": "CI is green"})
    assert out == f"wrote {INTENTIONS}/ship-it/green-ci/goal.md"
    assert "moved intention/ship-it" in t.move("ship-it", note="tagged rc1")
    with pytest.raises(UsageError, match="needs a reason"):
        t.close("green-ci", "abandoned")
    assert t.close("green-ci", "abandoned", why="CI replaced") == "goal/green-ci is abandoned"
    with pytest.raises(UsageError, match="ending must be one of"):
        t.close("ship-it", "finished")


def test_machine_fields_are_refused_and_nothing_is_written(memory: Path, no_key: Path) -> None:
    t = tools(memory, no_key)
    for field in ("swept", "nudges", "origin", "origin-sig", "promoted", "was"):
        with pytest.raises(UsageError, match="machine field"):
            t.intend("forged", "x", fields={field: "2026-01-01 00:00"})
        with pytest.raises(UsageError, match="machine field"):
            t.remember("forged", "x", fields={field: "1"})
    assert not (memory / INTENTIONS / "forged").exists()
    assert not (memory / NOTES / "forged.md").exists()


#: Machine fields as the hostile run spelled them: case, spacing, a newline.
SMUGGLED_KEYS = ("ORIGIN", "origin ", "x\norigin", "Swept", "FIRES", "a\nnudges")


def test_machine_fields_in_any_spelling_are_refused_in_process(memory: Path, no_key: Path) -> None:
    t = tools(memory, no_key)
    before = files_under(memory)
    for key in SMUGGLED_KEYS:
        with pytest.raises(UsageError, match=r"machine field|bad field key"):
            t.intend("forged", "x", fields={key: "2099-01-01 00:00"})
        with pytest.raises(UsageError, match=r"machine field|bad field key"):
            t.remember("forged", "x", fields={key: "1"})
        with pytest.raises(UsageError, match=r"machine field|bad field key"):
            t.add("backlog", "forged", fields={key: "1"})
    assert files_under(memory) == before


def test_text_that_would_not_read_back_is_refused_in_process(memory: Path, no_key: Path) -> None:
    t = tools(memory, no_key)
    before = files_under(memory)
    with pytest.raises(UsageError, match="control character"):
        t.intend("nul", "x", fields={"success-when": "a\x00b"})
    with pytest.raises(UsageError, match="at most 4,000"):
        t.intend("big", "x" * 100_000)
    with pytest.raises(UsageError, match="at most 4,000"):
        t.promote("example-try-a-build-cache", "x" * 100_000)
    with pytest.raises(UsageError, match="one line"):
        t.promote("example-try-a-build-cache", "a\rb")
    with pytest.raises(UsageError, match="NUL"):
        t.remember("nul", "a\x00b")
    with pytest.raises(UsageError, match="NUL"):
        t.move("example-stabilise-nightly-build", note="a\x00b")
    with pytest.raises(UsageError, match="NUL"):
        t.close("example-stabilise-nightly-build", "dropped", why="a\x00b")
    assert files_under(memory) == before


def test_bad_slugs_and_kinds_are_refused(memory: Path, no_key: Path) -> None:
    t = tools(memory, no_key)
    with pytest.raises(UsageError, match="bad slug"):
        t.intend("../escape", "x")
    with pytest.raises(UsageError, match="kind must be one of"):
        t.add("belief", "x")
    with pytest.raises(UsageError, match=r"needs fields\.due"):
        t.add("reminder", "call-bob")
    assert "wrote inventory/reminders/call-bob/reminder.md" in t.add(
        "reminder", "call-bob", fields={"due": "+2h"}
    )
    text = (memory / "inventory/reminders/call-bob/reminder.md").read_text()
    assert "due: 2026-03-14 14:00" in text


def test_remember_writes_then_updates_a_note(memory: Path, no_key: Path) -> None:
    t = tools(memory, no_key)
    assert t.remember("deploys", "Deploys go through CI.", keywords="deploy, ci") == (
        f"wrote {NOTES}/deploys.md"
    )
    path = memory / NOTES / "deploys.md"
    stamping.stamp(memory, [f"{NOTES}/deploys.md"], "owner", "t1", cwd=memory)
    assert t.remember("deploys", "Deploys are manual now.") == f"updated {NOTES}/deploys.md"
    text = path.read_text()
    assert "keywords: deploy, ci" in text and "updated: 2026-03-14 12:00" in text
    assert text.endswith("---\nDeploys are manual now.\n")
    assert "origin" not in text  # the owner's stamp described the old text


def test_promote_and_due(memory: Path, no_key: Path) -> None:
    t = tools(memory, no_key)
    assert "nothing is due" in t.due()
    assert "promoted" in t.promote("example-try-a-build-cache", "the cache is on")
    forecast = t.due(until="2099-01-02 09:00")
    assert "reminder/example-renew-the-tls-certificate" in forecast


def cli(memory: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROUSE_")}
    return subprocess.run(
        [sys.executable, "-m", "rouse", "--memory", str(memory), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )


@pytest.mark.parametrize(
    ("now", "until"),
    [
        ("2026-03-14 12:00", None),  # nothing due
        ("2026-03-14 12:00", "+1h"),  # nothing comes due by then
        ("2099-01-02 09:00", None),  # two due
        ("2026-03-14 13:00", "+1d"),  # a forecast: the task comes due tomorrow
    ],
)
def test_due_tool_says_what_the_cli_says(
    memory: Path, no_key: Path, now: str, until: str | None
) -> None:
    at = datetime.strptime(now, "%Y-%m-%d %H:%M")
    answer = Tools(memory, lambda: at, {}, no_key).due(until)
    done = cli(memory, "due", "--now", now, *(["--until", until] if until else []))
    assert done.returncode == 0, done.stderr
    expected = done.stderr + done.stdout  # the header (if any), then the rows
    assert answer.startswith(expected.rstrip("\n"))
    if done.stdout:  # then the same items as `rouse due --json`
        items = json.loads(answer[len(expected) :])
        as_json = cli(memory, "due", "--json", "--now", now, *(["--until", until] if until else []))
        assert items == json.loads(as_json.stdout)
    else:
        assert answer == expected.rstrip("\n")
        assert answer.startswith("nothing")


# -- probe trust through the tools -------------------------------------------


def test_untrusted_probes_never_run_through_the_tools(memory: Path, tmp_path: Path) -> None:
    key_path = tmp_path / "keys" / "stamp.key"
    stampkey.init_key(key_path)
    (memory / PROBES).write_text("---\norigin: owner\n---\n" + MARKER_PROBES)  # typed, unsigned
    t = tools(memory, key_path)
    answer = t.probe("demand-marker")
    assert answer.startswith("demand-marker: <unknown>") and "probes did not run" in answer
    t.pack()
    assert not (tmp_path / "marker").exists() and not (tmp_path / "demand-marker").exists()
    # the control: stamped by the owner with the key, the same probes do run
    key = stampkey.load_key(key_path)
    stamping.stamp(memory, [PROBES], "owner", None, cwd=memory, key=key)
    assert t.probe("demand-marker") == "demand-marker: ran"
    assert (tmp_path / "demand-marker").exists()


def test_probes_off_runs_nothing(memory: Path, tmp_path: Path) -> None:
    (memory / PROBES).write_text(MARKER_PROBES)
    t = tools(memory, tmp_path / "no-key", ROUSE_PROBES="off")
    assert "ROUSE_PROBES=off" in t.probe()
    t.pack()
    assert not (tmp_path / "marker").exists() and not (tmp_path / "demand-marker").exists()


def test_mcp_server_module_loads_without_the_sdk() -> None:
    code = "import sys, rouse.agents.mcp; print('mcp' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# -- a real client over stdio -------------------------------------------------


def with_client(
    memory: Path, key_path: Path, body: Callable[[Any], Awaitable[None]], **env: str
) -> float:
    """Start `rouse mcp` as a subprocess, run ``body(session)``; return the start-up seconds."""
    pytest.importorskip("mcp", reason="the mcp extra is not installed (rouse-memory[mcp])")
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "rouse", "mcp", "--memory", str(memory), "--now", "2026-03-14 12:00"],
        env={"ROUSE_STAMP_KEY": str(key_path), **env},
        cwd=str(memory.parent),
    )
    started: list[float] = []

    async def main() -> None:
        begin = time.perf_counter()
        with open(os.devnull, "w") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                started.append(time.perf_counter() - begin)
                await body(session)

    asyncio.run(main())
    return started[0]


def text_of(result: Any) -> str:
    return "".join(part.text for part in result.content if part.type == "text")


def test_client_lists_the_tools_with_hints(memory: Path, no_key: Path) -> None:
    seen: dict[str, Any] = {}

    async def body(session: Any) -> None:
        listed = await session.list_tools()
        seen.update({tool.name: tool for tool in listed.tools})

    startup = with_client(memory, no_key, body)
    print(f"\nrouse mcp start-up (spawn to initialized): {startup * 1000:.0f} ms")
    assert set(seen) == TOOLS and "stamp" not in seen
    for name, tool in seen.items():
        assert tool.description and len(tool.description) > 40
        assert tool.annotations.read_only_hint is (name in READ_ONLY), name
    for name in ("close", "promote", "remember", "forget"):
        assert seen[name].annotations.destructive_hint is True
    for name in ("intend", "add", "move"):
        assert seen[name].annotations.destructive_hint is False
    assert set(seen["add"].input_schema["required"]) == {"kind", "slug"}
    assert set(seen["tell"].input_schema["required"]) == {"ref", "message"}
    assert set(seen["forget"].input_schema["required"]) == {"ref", "why"}
    assert seen["tell"].annotations.open_world_hint is True  # it reaches a person
    # issue 34, item 11: docs/wiring.md §7 names every tool the server offers, no other
    wiring = (Path(__file__).resolve().parent.parent / "docs/wiring.md").read_text()
    section = wiring.split("## 7. ", 1)[1].split("\n## ", 1)[0]
    intro = " ".join(section.split("`rouse wire --mcp`", 1)[0].split())
    listed = set(re.findall(r"`([a-z]+)`", intro.split(" as tools: ", 1)[1].split(". ", 1)[0]))
    assert listed == set(seen)


def test_client_sees_the_version_parameter_descriptions_and_enums(
    memory: Path, no_key: Path
) -> None:
    seen: dict[str, Any] = {}

    async def body(session: Any) -> None:
        seen["info"] = session.server_info
        listed = await session.list_tools()
        seen.update({tool.name: tool.input_schema for tool in listed.tools})

    with_client(memory, no_key, body)
    assert seen.pop("info").version == rouse.__version__
    for name, schema in seen.items():
        for param, spec in schema["properties"].items():
            assert len(spec.get("description", "")) > 10, f"{name}.{param} has no description"
    assert seen["add"]["properties"]["kind"]["enum"] == list(ADD_TYPES)
    assert seen["close"]["properties"]["ending"]["enum"] == list(ENDINGS)
    outcome = seen["close"]["properties"]["outcome"]["anyOf"]
    assert {"type": "string", "enum": list(levels.OUTCOMES)} in outcome


def test_client_bad_arguments_are_refused_in_rouse_words(memory: Path, no_key: Path) -> None:
    before = files_under(memory)
    results: dict[str, Any] = {}

    async def body(session: Any) -> None:
        calls = {
            "max_chars": ("pack", {"max_chars": "lots"}),
            "kind": ("add", {"kind": 5, "slug": "x"}),
            "ending": ("close", {"ref": "example-stabilise-nightly-build"}),
            "limit": ("recall", {"query": "x", "limit": [1]}),
            "fields": ("intend", {"slug": "x", "closes_when": "y", "fields": {"a": 1}}),
            "belief": ("add", {"kind": "belief", "slug": "x"}),
        }
        for what, (tool, arguments) in calls.items():
            results[what] = (tool, await session.call_tool(tool, arguments))

    with_client(memory, no_key, body)
    for what, (tool, result) in results.items():
        text = text_of(result)
        assert result.is_error, what
        assert "\n" not in text and "http" not in text and "pydantic" not in text, text
        assert "validation error" not in text and "Error executing" not in text, text
        assert text.startswith(f"{tool}: "), text
        assert what in text, text
    assert "'ending'" in text_of(results["ending"][1]) and "missing" in text_of(
        results["ending"][1]
    )
    assert "'lots'" in text_of(results["max_chars"][1])
    assert files_under(memory) == before


def test_client_creates_an_intention_reads_the_pack_and_is_refused_swept(
    memory: Path, no_key: Path
) -> None:
    results: dict[str, Any] = {}

    async def body(session: Any) -> None:
        results["intend"] = await session.call_tool(
            "intend", {"slug": "learn-mcp", "closes_when": "a client drives rouse"}
        )
        results["pack"] = await session.call_tool("pack", {})
        results["swept"] = await session.call_tool(
            "add",
            {
                "kind": "goal",
                "slug": "sneaky",
                "under": "learn-mcp",
                "fields": {"swept": "2026-03-14 12:00"},
            },
        )
        results["due"] = await session.call_tool("due", {"until": "2026-03-14 15:00"})

    with_client(memory, no_key, body)
    assert not results["intend"].is_error
    assert text_of(results["intend"]) == f"wrote {INTENTIONS}/learn-mcp/intention.md"
    assert (memory / INTENTIONS / "learn-mcp" / "intention.md").is_file()
    pack = text_of(results["pack"])
    assert pack.startswith("now: Saturday 2026-03-14 12:00")
    assert "belief example-say-what-you-dont-know" in pack
    assert results["swept"].is_error
    assert "'swept' is a machine field" in text_of(results["swept"])
    assert not (memory / INTENTIONS / "learn-mcp" / "sneaky").exists()
    assert "intention/learn-mcp\tstale" in text_of(results["due"])


def test_client_refuses_machine_fields_in_any_spelling_and_writes_nothing(
    memory: Path, no_key: Path
) -> None:
    before = files_under(memory)
    results: list[tuple[str, Any]] = []

    async def body(session: Any) -> None:
        for key in SMUGGLED_KEYS:
            calls = {
                "intend": {"slug": "forged", "closes_when": "x", "fields": {key: "2099-01-01"}},
                "remember": {"slug": "forged", "body": "x", "fields": {key: "1"}},
                "add": {"kind": "backlog", "slug": "forged", "fields": {key: "1"}},
            }
            for name, arguments in calls.items():
                results.append((f"{name} {key!r}", await session.call_tool(name, arguments)))
        value = {"slug": "forged", "closes_when": "x", "fields": {"success-when": "a\x00b"}}
        results.append(("a NUL in a value", await session.call_tool("intend", value)))

    with_client(memory, no_key, body)
    for what, result in results:
        assert result.is_error, what
        assert (
            "machine field" in text_of(result)
            or "field key" in text_of(result)
            or ("control character" in text_of(result))
        ), what
    assert files_under(memory) == before


def test_client_unknown_arguments_are_an_error_naming_them(memory: Path, no_key: Path) -> None:
    record = memory / INTENTIONS / "example-stabilise-nightly-build" / "intention.md"
    before = files_under(memory)
    results: dict[str, Any] = {}
    schemas: dict[str, Any] = {}

    async def body(session: Any) -> None:
        listed = await session.list_tools()
        schemas.update({tool.name: tool.input_schema for tool in listed.tools})
        results["swept"] = await session.call_tool(
            "intend", {"slug": "sneaky", "closes_when": "x", "swept": "2099-01-01 00:00"}
        )
        results["for"] = await session.call_tool(
            "snooze", {"ref": "example-stabilise-nightly-build", "for": "3d"}
        )
        results["two"] = await session.call_tool("pack", {"verbose": True, "color": "no"})
        results["fine"] = await session.call_tool("due", {})

    with_client(memory, no_key, body)
    for name, schema in schemas.items():
        assert schema.get("additionalProperties") is False, name
    assert results["swept"].is_error and "'swept'" in text_of(results["swept"])
    assert results["for"].is_error and "'for'" in text_of(results["for"])
    assert "duration" in text_of(results["for"])  # it says what the tool does take
    assert results["two"].is_error
    assert "'color'" in text_of(results["two"]) and "'verbose'" in text_of(results["two"])
    assert not results["fine"].is_error
    assert files_under(memory) == before
    assert "2099" not in record.read_text()


def test_client_cannot_run_an_untrusted_probe(memory: Path, tmp_path: Path) -> None:
    key_path = tmp_path / "keys" / "stamp.key"
    stampkey.init_key(key_path)
    (memory / PROBES).write_text(MARKER_PROBES)
    answers: dict[str, str] = {}

    async def body(session: Any) -> None:
        answers["probe"] = text_of(await session.call_tool("probe", {"name": "demand-marker"}))
        answers["pack"] = text_of(await session.call_tool("pack", {}))

    with_client(memory, key_path, body)
    assert answers["probe"].startswith("demand-marker: <unknown>")
    assert not (tmp_path / "marker").exists() and not (tmp_path / "demand-marker").exists()


def test_rouse_mcp_without_the_extra_says_how_to_install_it(memory: Path) -> None:
    code = (
        "import sys; sys.modules['mcp'] = None; from rouse.cli.main import main; "
        f"sys.exit(main(['mcp', '--memory', {str(memory)!r}]))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 2
    assert extras.install_hint("mcp") in done.stderr


def test_client_reads_the_pack_and_the_due_list_as_resources(memory: Path, no_key: Path) -> None:
    """Issue 21, item 7: the pack and the due list are read-only resources beside the tools."""
    seen: dict[str, Any] = {}
    before = files_under(memory)

    async def body(session: Any) -> None:
        listed = await session.list_resources()
        seen["listed"] = {str(r.uri): r for r in listed.resources}
        for uri in seen["listed"]:
            read = await session.read_resource(uri)
            seen[uri] = "".join(part.text for part in read.contents)
        seen["pack tool"] = text_of(await session.call_tool("pack", {}))
        seen["due tool"] = text_of(await session.call_tool("due", {}))

    with_client(memory, no_key, body)
    assert set(seen["listed"]) == {"rouse://pack", "rouse://due"}
    for uri, resource in seen["listed"].items():
        assert resource.mime_type == "text/plain" and len(resource.description) > 40, uri
    assert seen["rouse://pack"].startswith("now: ") and "standing truth" in seen["rouse://pack"]
    assert seen["rouse://pack"] == seen["pack tool"]  # the same pack, at the same --now
    assert seen["rouse://due"] == seen["due tool"]
    assert files_under(memory) == before  # read-only: no memory file written
