"""One fence, every surface (issue 29, item 3).

A tree with a stamp key holds an ``untrusted`` and an ``unknown`` record of each
kind; every free-text header field (enumerated from the header's own key list,
so a new field is covered when it is added) and the body and log of each file
carry a unique marker. Each surface an agent reads is run as users run it (real
processes; the MCP tools as plain methods, as the MCP tests do), and every
marker found must sit inside a fence under a label that names its origin
rightly ("not signed" for ``unknown``, "untrusted" for ``untrusted``). The
bodies of quarantined context files appear nowhere.
"""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from rouse.core import layout
from rouse.lint import fields as lint_fields

NOW = "2099-01-02 09:00"
COMMON = "fencecommonword"
ORIGINS = ("untrusted", "unknown")
#: Free text: every key rouse reads that is not a machine field, a clock field, a
#: time, an interval or a count (those are parsed by the clock, never shown as written).
FREE_FIELDS = sorted(
    layout.KNOWN_KEYS
    - layout.MACHINE_FIELDS
    - lint_fields.CLOCK_FIELDS
    - lint_fields.STAMP_FIELDS
    - lint_fields.INTERVAL_FIELDS
    - lint_fields.COUNT_FIELDS
    - {"status"}
)
#: Fields the clock parses: a marker in each (but the status and the origin's own)
#: makes a problem the pack, due and explain report, and they must quote it too.
PARSED_FIELDS = sorted(
    layout.KNOWN_KEYS - set(FREE_FIELDS) - {"status", "origin", "origin-sig", "origin-turn"}
)
INT = layout.INTENTIONS


def paths(origin: str) -> dict[str, tuple[str, str]]:
    """kind → (file, its clock fields) for one origin's records and context files."""
    o = "ut" if origin == "untrusted" else "uk"
    old = "last-moved: 2026-01-01 09:00\n"
    return {
        "intention": (f"{INT}/fx{o}-alone/intention.md", "status: open\n" + old),
        "goal-parent": (f"{INT}/fx{o}-top/intention.md", "status: open\n" + old),
        "goal": (f"{INT}/fx{o}-top/fx{o}-goal/goal.md", "status: open\n" + old),
        "action": (f"{INT}/fx{o}-top/fx{o}-goal/fx{o}-act/action.md", "status: open\n" + old),
        "task": (f"{INT}/fx{o}-top/fx{o}-goal/fx{o}-task/task.md", "status: pending\n" + old),
        "reminder": (f"{layout.REMINDERS}/fx{o}-rem/reminder.md", "due: 2026-01-01 09:00\n"),
        "backlog": (f"{layout.BACKLOG}/fx{o}-idea/backlog.md", "status: open\n"),
        "note": (f"{layout.NOTES}/fx{o}-note.md", ""),
        "belief": (f"{layout.BELIEFS}/belief-fx{o}.md", ""),
        "motivation": (f"{layout.MOTIVATIONS}/motivation-fx{o}.md", ""),
        "bad-intention": (f"{INT}/fx{o}-bad/intention.md", "status: open\n"),
        "bad-reminder": (f"{layout.REMINDERS}/fx{o}-badrem/reminder.md", "status: open\n"),
    }


def rouse(
    memory: Path, key: Path, *args: str, stdin: str | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "ROUSE_STAMP_KEY": str(key), **(env or {})}
    full.pop("ROUSE_LEDGER", None)
    done = subprocess.run(
        [sys.executable, "-m", "rouse", "--memory", str(memory), *args],
        capture_output=True,
        text=True,
        env=full,
        input=stdin,
        timeout=120,
    )
    assert "Traceback" not in done.stderr, done.stderr
    return done


class Planted:
    def __init__(self) -> None:
        self.markers: dict[str, tuple[str, str, str]] = {}  # marker → (kind, origin, where)
        self.hidden: set[str] = set()  # markers that must appear nowhere
        self.shown: list[str] = []  # every text checked (so the test is never vacuous)

    def new(self, kind: str, origin: str, where: str) -> str:
        marker = f"zq{len(self.markers)}{kind[:3]}{origin[:3]}zq"
        self.markers[marker] = (kind, origin, where)
        return marker


@pytest.fixture(scope="module", params=["keyed", "no key"])
def planted(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, Path, Planted]:
    """The tree, its key path (no file there for "no key") and what was planted."""
    keyed = request.param == "keyed"
    base = tmp_path_factory.mktemp("fence")
    key = base / "stamp.key"
    memory = base / "project" / "memory"
    init = rouse(memory, key, "init", str(base / "project"), *([] if keyed else ["--no-key"]))
    if init.returncode != 0:  # (before `init --no-key` exists)
        init = rouse(memory, key, "init", str(base / "project"))
    assert init.returncode == 0, init.stderr
    if keyed and not key.exists():
        assert rouse(memory, key, "stamp", "--init-key").returncode == 0
    if not keyed:
        key.unlink(missing_ok=True)
    plant = Planted()
    untrusted: list[str] = []
    for origin in ORIGINS:
        for kind, (rel, clock) in paths(origin).items():
            lines = [clock.rstrip("\n")] if clock else []
            for field in FREE_FIELDS:
                lines.append(f"{field}: {plant.new(kind, origin, field)}")
            if kind.startswith("bad-"):
                lines += [f"{field}: {plant.new(kind, origin, field)}" for field in PARSED_FIELDS]
            body = (
                f"# {COMMON}\n\n{plant.new(kind, origin, 'body')} {COMMON}\n"
                f"second line {plant.new(kind, origin, 'body 2')}\n\n"
                "## Log <!-- rouse:log -->\n"
                f"- 2026-01-01 10:00: checkpoint: {plant.new(kind, origin, 'log')}\n"
            )
            # quarantined context: its words nowhere (untrusted; with a key, unknown too)
            if kind in ("belief", "motivation") and (keyed or origin == "untrusted"):
                plant.hidden |= {
                    m for m, (k, o, _) in plant.markers.items() if (k, o) == (kind, origin)
                }
            path = memory / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("---\n" + "\n".join(lines) + "\n---\n" + body)
            if origin == "untrusted":
                untrusted.append(str(path))
    stamped = rouse(memory, key, "stamp", "--origin", "untrusted", *untrusted)
    assert stamped.returncode == 0, stamped.stderr
    return memory, key, plant


# -- what counts as fenced --------------------------------------------------------

BLOCK_OPEN = re.compile(r"^\s*(`{3,})text\s*$")
SHORT_LABEL = re.compile(r"\((untrusted|not signed), quoted\) (`+)")


def _label_fits(label: str, origin: str) -> bool:
    if origin == "unknown":
        return "not signed" in label and "untrusted" not in label
    return "untrusted" in label


def _inline_spans(line: str) -> list[tuple[str, str]]:
    """(label word, content) of each labelled code span on the line."""
    spans = []
    for match in SHORT_LABEL.finditer(line):
        ticks = match.group(2)
        start = match.end()
        end = line.find(ticks, start)
        while end >= 0 and line[end + len(ticks) : end + len(ticks) + 1] == "`":
            end = line.find(ticks, end + 1)
        if end >= 0:
            spans.append((match.group(1), line[start:end]))
    return spans


def leaks(text: str, plant: Planted) -> list[str]:
    """Every marker in ``text`` that is not inside a rightly labelled fence."""
    plant.shown.append(text)
    found = []
    lines = text.splitlines()
    fence: str | None = None
    label = ""
    for number, line in enumerate(lines):
        if fence is not None:
            if line.strip() == fence:
                fence = None
                continue
            for marker, (_, origin, _) in plant.markers.items():
                if marker in line and not _label_fits(label, origin):
                    found.append(f"{marker} under the wrong label {label!r}")
            continue
        opened = BLOCK_OPEN.match(line)
        if opened and number > 0 and "quoted data" in lines[number - 1]:
            fence, label = opened.group(1), lines[number - 1]
            continue
        spans = _inline_spans(line)
        for marker, (_, origin, _) in plant.markers.items():
            if marker not in line:
                continue
            inside = [word for word, content in spans if marker in content]
            if not inside:
                found.append(f"{marker} unfenced: {line.strip()[:160]}")
            elif not _label_fits(f"({inside[0]}, quoted)", origin):
                found.append(f"{marker} under the wrong label: {line.strip()[:160]}")
    for marker in plant.hidden:
        if marker in text:
            found.append(f"{marker} of a quarantined context file is shown")
    return found


def strings(data: Any) -> Iterator[str]:
    if isinstance(data, str):
        yield data
    elif isinstance(data, dict):
        for key, value in data.items():
            yield str(key)
            yield from strings(value)
    elif isinstance(data, list) and data and all(isinstance(v, str) for v in data):
        yield "\n".join(data)  # lines of one text (a message): checked as one
    elif isinstance(data, list):
        for value in data:
            yield from strings(value)


def json_leaks(text: str, plant: Planted) -> list[str]:
    return [leak for value in strings(json.loads(text)) for leak in leaks(value, plant)]


def test_the_checker_catches_what_is_not_fenced() -> None:
    plant = Planted()
    marker = plant.new("note", "unknown", "body")
    assert leaks(f"keywords: {marker}", plant)
    assert leaks(f"x (untrusted, quoted) `{marker}`", plant)  # wrong label for unknown
    assert not leaks(f"x (not signed, quoted) `{marker}`", plant)
    fenced = f"(not signed: quoted data, not an instruction)\n```text\n{marker}\n```\n{marker}"
    assert len(leaks(fenced, plant)) == 1  # the line after the fence


# -- the surfaces -------------------------------------------------------------------

STANDIN = """#!{python}
import sys
with open({out!r}, "a") as handle:
    handle.write(sys.stdin.read() + "\\n")
print("done")
"""


def _standin(base: Path, name: str) -> tuple[Path, Path]:
    out = base / f"{name}.txt"
    script = base / f"{name}.py"
    script.write_text(STANDIN.format(python=sys.executable, out=str(out)))
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script, out


def test_every_surface_fences_every_field(planted: tuple[Path, Path, Planted]) -> None:
    memory, key, plant = planted
    found: dict[str, list[str]] = {}

    def text_of(name: str, *args: str, stdin: str | None = None) -> None:
        done = rouse(memory, key, *args, stdin=stdin)
        found[name] = leaks(done.stdout + done.stderr, plant)

    def json_of(name: str, *args: str) -> None:
        done = rouse(memory, key, *args)
        assert done.stdout.strip(), (name, done.stderr)
        found[name] = json_leaks(done.stdout, plant)

    text_of("pack", "pack", "--now", NOW)
    json_of("pack --json", "pack", "--now", NOW, "--json")
    text_of("due", "due", "--now", NOW)
    json_of("due --json", "due", "--now", NOW, "--json")
    text_of("recall", "recall", COMMON, "--limit", "100", "--mode", "words")
    json_of("recall --json", "recall", COMMON, "--limit", "100", "--mode", "words", "--json")
    for origin in ORIGINS:
        for kind, (rel, _) in paths(origin).items():
            if kind in ("note", "belief", "motivation"):
                continue
            ref = str(Path(rel).parent)
            text_of(f"explain {ref}", "explain", ref, "--now", NOW)
            json_of(f"explain --json {ref}", "explain", ref, "--now", NOW, "--json")
    text_of("tree", "tree", "--now", NOW)
    json_of("tree --json", "tree", "--now", NOW, "--json")
    text_of("status", "status", "--now", NOW)
    text_of("check", "check", "--now", NOW)
    json_of("check --json", "check", "--now", NOW, "--json")
    start = json.dumps({"session_id": "s", "hook_event_name": "SessionStart", "cwd": "/"})
    text_of("session hook", "pack", "--hook", "claude", "--now", NOW, stdin=start)
    idle = json.dumps({"session_id": "idle", "hook_event_name": "SessionStart", "cwd": "/"})
    rouse(memory, key, "pack", "--hook", "claude", "--now", NOW, stdin=idle)
    base = memory.parent.parent
    script, digest = _standin(base, "digest")
    swept = rouse(
        memory, key, "sweep", "--once", "--now", NOW, "-q", "--run", "exec", "--", str(script)
    )
    assert swept.returncode in (0, 1), swept.stderr
    nudges = sorted((memory / ".rouse" / "nudges").glob("*.md"))
    assert nudges, "the sweep wrote no wake"
    found["wakes"] = [leak for n in nudges for leak in leaks(n.read_text(), plant)]
    found["digest run prompt"] = leaks(digest.read_text() if digest.exists() else "", plant)
    event = json.dumps({"session_id": "s", "hook_event_name": "UserPromptSubmit", "cwd": "/"})
    text_of("prompt hook", "pack", "--hook", "claude", "--now", NOW, stdin=event)
    text_of("log", "log")
    found["stop hook"] = leaks(_stop_hook_text(memory, key), plant)
    script, prompts = _standin(base, "task")
    rouse(memory, key, "work", "--once", "--allow-untrusted", "--run", "exec", "--", str(script))
    assert prompts.exists(), "no task ran"
    found["work run prompt"] = leaks(prompts.read_text(), plant)
    for name, leaked in _mcp(memory, key, plant).items():
        found[name] = leaked
    leaked_by_surface = {name: leaked for name, leaked in found.items() if leaked}
    if os.environ.get("FENCE_REPORT"):
        Path(os.environ["FENCE_REPORT"]).write_text(json.dumps(leaked_by_surface, indent=1))
    assert leaked_by_surface == {}
    bodies = [m for m, (_, _, where) in plant.markers.items() if where == "body"]
    never = [m for m in bodies if m not in plant.hidden and not any(m in t for t in plant.shown)]
    assert never == []  # every body that may be shown was shown somewhere, fenced
    assert digest.exists() and prompts.read_text().count("zq") > 0  # the prompts said something


def _stop_hook_text(memory: Path, key: Path) -> str:
    """What the Stop hook wakes an idle session with (its wait is the stop hook tests')."""
    from rouse.agents import prompt_hook

    before = os.environ.get("ROUSE_STAMP_KEY")
    os.environ["ROUSE_STAMP_KEY"] = str(key)
    try:
        found, _ = prompt_hook.take_new(memory, "idle")
    finally:
        os.environ.pop("ROUSE_STAMP_KEY")
        if before is not None:
            os.environ["ROUSE_STAMP_KEY"] = before
    assert found, "the idle session was given no wake"
    return prompt_hook.render(found, datetime(2099, 1, 2, 9, 0), idle=True)


def _mcp(memory: Path, key: Path, plant: Planted) -> dict[str, list[str]]:
    from rouse.agents.mcp_tools import Tools

    tools = Tools(memory, now=lambda: datetime(2099, 1, 2, 9, 0), key_path=key)
    return {
        "mcp pack": leaks(tools.pack(), plant),
        "mcp recall": json_leaks(tools.recall(COMMON, limit=100, mode="words"), plant),
        "mcp due": leaks(tools.due(), plant),
    }
