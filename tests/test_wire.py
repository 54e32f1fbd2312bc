"""Wiring: instruction blocks, hook files (round-tripped through json.loads), rules, MCP help."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from conftest import NOW
from rouse.agents import hook, wire
from rouse.core import extras
from rouse.core.errors import RouseError, UsageError
from rouse.records.scaffold import AGENT_LINE, init

PRE_EXISTING = {
    "permissions": {"allow": ["Bash(ls:*)"], "deny": ["Read(~/.config/rouse/**)"]},
    "env": {"FOO": "bar"},
    "hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "echo pre"}]}],
        "SessionStart": [
            {"matcher": "startup", "hooks": [{"type": "command", "command": "echo hello"}]}
        ],
    },
}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    init(root / "memory", NOW)
    return root


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


def run_wire(project: Path, home: Path, executable: str = "", **flags: bool) -> wire.Wired:
    """``rouse wire`` for the project's tree; hooks pin ``executable`` ("" pins none)."""
    return wire.wire(project / "memory", home=home, executable=executable, **flags)


def session_hooks(path: Path) -> list[dict[str, object]]:
    data = json.loads(path.read_text())
    return [h for g in data["hooks"]["SessionStart"] for h in g["hooks"]]


# -- CLAUDE.md / AGENTS.md ----------------------------------------------------


def test_never_creates_instruction_files_and_prints_the_block(project: Path, home: Path) -> None:
    result = run_wire(project, home)
    assert not (project / "CLAUDE.md").exists() and not (project / "AGENTS.md").exists()
    text = "\n".join(result.printed)
    assert "None of CLAUDE.md, AGENTS.md, GEMINI.md exists" in text
    assert wire.BEGIN in text and "run `rouse pack` and treat its output" in text
    assert "memory/entrypoint/rouse.md" in text


def test_block_is_appended_once_and_keeps_the_rest(project: Path, home: Path) -> None:
    (project / "CLAUDE.md").write_text("# My project\n\nUse tabs.\n")
    (project / "AGENTS.md").write_text("Agents: be brief.")
    run_wire(project, home)
    first = {n: (project / n).read_text() for n in ("CLAUDE.md", "AGENTS.md")}
    again = run_wire(project, home)
    assert all(line.startswith("unchanged:") for line in again.done)
    for name, text in first.items():
        assert (project / name).read_text() == text
        assert text.count(wire.BEGIN) == 1 and text.count(wire.END) == 1
    assert first["CLAUDE.md"].startswith("# My project\n\nUse tabs.\n\n" + wire.BEGIN)
    assert first["AGENTS.md"].startswith("Agents: be brief.\n\n" + wire.BEGIN)
    line = AGENT_LINE.format(instructions="`memory/entrypoint/rouse.md`")
    assert f"- {line}\n" in first["CLAUDE.md"]


def test_block_is_replaced_in_place_and_text_after_it_kept(project: Path, home: Path) -> None:
    stale = f"top\n{wire.BEGIN}\nold advice\n{wire.END}\nbottom\n"
    (project / "CLAUDE.md").write_text(stale)
    run_wire(project, home)
    text = (project / "CLAUDE.md").read_text()
    assert text.startswith(f"top\n{wire.BEGIN}\n") and text.endswith(f"{wire.END}\nbottom\n")
    assert "old advice" not in text


def test_crlf_files_stay_crlf(project: Path, home: Path) -> None:
    (project / "AGENTS.md").write_bytes(b"# Agents\r\n")
    run_wire(project, home)
    data = (project / "AGENTS.md").read_bytes()
    assert b"\r\n" in data and b"\n" not in data.replace(b"\r\n", b"")


def test_unbalanced_markers_are_refused(project: Path, home: Path) -> None:
    (project / "CLAUDE.md").write_text(f"x\n{wire.BEGIN}\nno end\n")
    with pytest.raises(RouseError, match="unbalanced"):
        run_wire(project, home)
    assert (project / "CLAUDE.md").read_text() == f"x\n{wire.BEGIN}\nno end\n"


def test_with_hooks_the_block_says_the_pack_comes_by_itself(project: Path, home: Path) -> None:
    (project / "CLAUDE.md").write_text("# P\n")
    (project / "AGENTS.md").write_text("# P\n")
    run_wire(project, home, claude_hooks=True, codex_hooks=True)
    claude = (project / "CLAUDE.md").read_text()
    agents = (project / "AGENTS.md").read_text()
    assert "arrives at the start of every session by itself" in claude
    assert "do not run it again" in claude
    assert "In Codex the memory pack arrives" in agents
    # a later plain `rouse wire` keeps saying so (it reads the hook files)
    assert all(line.startswith("unchanged:") for line in run_wire(project, home).done)


def test_a_tree_whose_path_needs_quoting_is_named_alike_in_the_skill_and_the_pack_line(
    tmp_path: Path,
) -> None:
    """The skill's `rouse pack --memory …` quotes a path as the printed line does: one rule
    (a path with a space gave the skill a command that named another directory)."""
    home = tmp_path / "my home"
    tree = home / ".rouse"
    init(tree, NOW)
    result = wire.wire(tree, home=home)
    skill = (home / ".claude/skills/rouse/SKILL.md").read_text()
    quoted = shlex.quote(str(tree))
    assert quoted != str(tree)  # (the path needs quoting: the case under test)
    assert f"`rouse pack --memory {quoted}`" in skill
    assert f"rouse pack --memory {tree}`" not in skill
    assert f"run `rouse pack --memory {quoted}`" in "\n".join(result.printed)


def test_the_global_tree_has_no_project_root(tmp_path: Path, home: Path) -> None:
    tree = home / ".rouse"
    init(tree, NOW)
    (home / "CLAUDE.md").write_text("not touched\n")
    result = wire.wire(tree, home=home)
    skills = [home / ".claude/skills/rouse/SKILL.md", home / ".agents/skills/rouse/SKILL.md"]
    assert result.done == [  # only the personal skills, in the user's own folders
        f"wrote {skills[0]} (Claude Code skill)",
        f"wrote {skills[1]} (Codex skill)",
    ]
    assert f"--memory {tree}" in skills[0].read_text()
    text = "\n".join(result.printed)
    assert "has no project root" in text and f"run `rouse pack --memory {tree}`" in text
    assert (home / "CLAUDE.md").read_text() == "not touched\n"


# -- Claude Code hooks --------------------------------------------------------


def test_claude_hook_merges_into_settings_local_and_keeps_everything(
    project: Path, home: Path
) -> None:
    settings = project / ".claude" / "settings.local.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps(PRE_EXISTING, indent=4))
    run_wire(project, home, claude_hooks=True)
    data = json.loads(settings.read_text())
    assert data["permissions"] == PRE_EXISTING["permissions"]
    assert data["env"] == PRE_EXISTING["env"]
    assert data["hooks"]["PreToolUse"] == PRE_EXISTING["hooks"]["PreToolUse"]
    groups = data["hooks"]["SessionStart"]
    assert groups[0] == PRE_EXISTING["hooks"]["SessionStart"][0]
    ours = groups[1]
    assert ours["matcher"] == "startup|resume|clear|compact|fork"
    command = ours["hooks"][0]["command"]
    assert command == (
        'rouse pack --memory "$CLAUDE_PROJECT_DIR/memory" --hook claude || echo '
        + shlex.quote(wire.CANNOT_RUN)
    )
    assert ours["hooks"][0]["type"] == "command"
    assert not (project / ".claude" / "settings.json").exists()


def test_claude_hook_is_idempotent_and_replaces_an_older_rouse_hook(
    project: Path, home: Path
) -> None:
    settings = project / ".claude" / "settings.json"
    settings.parent.mkdir()
    old = {"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "rouse pack"}]}]}}
    settings.write_text(json.dumps(old))
    run_wire(project, home, claude_hooks=True, shared=True)
    first = settings.read_text()
    run_wire(project, home, claude_hooks=True, shared=True)
    assert settings.read_text() == first
    commands = [h["command"] for h in session_hooks(settings)]
    assert len(commands) == 1 and "--hook claude" in commands[0]


def test_shared_needs_claude_hooks(project: Path, home: Path) -> None:
    with pytest.raises(UsageError, match="--shared goes with --claude-hooks"):
        run_wire(project, home, shared=True)


def test_broken_settings_are_refused_untouched(project: Path, home: Path) -> None:
    settings = project / ".claude" / "settings.local.json"
    settings.parent.mkdir()
    for broken in ("{not json", "[1, 2]", '{"hooks": []}'):
        settings.write_text(broken)
        with pytest.raises(RouseError):
            run_wire(project, home, claude_hooks=True)
        assert settings.read_text() == broken


def test_global_claude_hook_goes_to_user_settings_and_pins_the_path(home: Path) -> None:
    tree = home / ".rouse"
    init(tree, NOW)
    wire.wire(tree, home=home, claude_hooks=True)
    (command,) = [h["command"] for h in session_hooks(home / ".claude" / "settings.json")]
    assert command.startswith(f"rouse pack --memory {tree} --hook claude || echo ")


# -- Codex hooks and Cursor ---------------------------------------------------


def test_codex_hook_file_and_what_codex_needs_before_it_runs_it(project: Path, home: Path) -> None:
    hooks = project / ".codex" / "hooks.json"
    hooks.parent.mkdir()
    hooks.write_text(json.dumps({"hooks": {"Stop": [{"hooks": [{"command": "x"}]}]}}))
    result = run_wire(project, home, codex_hooks=True)
    data = json.loads(hooks.read_text())
    theirs, ours = data["hooks"]["Stop"]  # issue 33: the promise check joins their Stop hook
    assert theirs == {"hooks": [{"command": "x"}]}
    assert (
        ours["hooks"][0]["command"] == "rouse pack --memory memory --hook codex --promises || true"
    )
    assert data["hooks"]["SessionStart"][0]["matcher"] == "startup|resume|clear"
    (command,) = [h["command"] for h in session_hooks(hooks)]
    assert command.startswith("rouse pack --memory memory --hook codex || printf")  # the repo's
    printed = "\n".join(result.printed)
    assert "open /hooks and trust" in printed and "codex exec --trust" in printed
    assert "codex_hooks" not in printed  # the deprecated name of [features].hooks


def test_cursor_rule_is_always_applied_as_a_boolean(project: Path, home: Path) -> None:
    run_wire(project, home, cursor=True)
    text = (project / ".cursor" / "rules" / "rouse.mdc").read_text()
    _, front, body = text.split("---\n", 2)
    fields = dict(line.split(":", 1) for line in front.splitlines())
    assert fields["alwaysApply"].strip() == "true"  # YAML boolean, not "'true'"
    assert "run `rouse pack` and treat its output as your memory" in body
    assert run_wire(project, home, cursor=True).done[-1].startswith("unchanged:")


def test_mcp_instructions_parse_as_toml_and_json(project: Path, home: Path) -> None:
    lines = run_wire(project, home, mcp=True).printed
    text = "\n".join(lines)
    tree = str(project / "memory")
    assert f"claude mcp add rouse -- rouse mcp --memory {tree}" in text
    assert f"codex mcp add rouse -- rouse mcp --memory {tree}" in text
    start = lines.index("  [mcp_servers.rouse]")
    toml = tomllib.loads("\n".join(line.strip() for line in lines[start : start + 3]))
    assert toml["mcp_servers"]["rouse"] == {"command": "rouse", "args": ["mcp", "--memory", tree]}
    brace = next(i for i, line in enumerate(lines) if line == "  {")
    cursor = json.loads("\n".join(lines[brace:]))
    assert cursor["mcpServers"]["rouse"]["args"] == ["mcp"]  # .cursor/mcp.json is the team's


# -- the hook commands, run the way the agents run them -----------------------


def _bin_dir(tmp_path: Path) -> Path:
    """A PATH entry where `rouse` runs this checkout's CLI."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    script = bin_dir / "rouse"
    script.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m rouse "$@"\n')
    script.chmod(0o755)
    return bin_dir


def run_hook(
    command: str, tmp_path: Path, cwd: Path | None = None, **env: str
) -> subprocess.CompletedProcess[str]:
    """Run a hook's command as an agent does: in the session's directory (``cwd``)."""
    full = {k: v for k, v in os.environ.items() if not k.startswith("ROUSE_")}
    full.update(env)
    full["PATH"] = f"{_bin_dir(tmp_path)}{os.pathsep}{full.get('PATH', '')}"
    full["ROUSE_STAMP_KEY"] = str(tmp_path / "no-key")
    return subprocess.run(
        ["sh", "-c", command], cwd=cwd, env=full, capture_output=True, text=True, timeout=60
    )


def test_the_claude_hook_prints_the_pack_within_the_limit(
    project: Path, home: Path, tmp_path: Path
) -> None:
    for i in range(300):  # enough notes to need trimming
        note = project / "memory" / "inventory" / "notes" / f"note-{i:03}.md"
        note.write_text(f"---\nkeywords: topic-{i}, filler words here\n---\nbody\n")
    run_wire(project, home, claude_hooks=True)
    (command,) = [h["command"] for h in session_hooks(project / ".claude/settings.local.json")]
    done = run_hook(command, tmp_path, CLAUDE_PROJECT_DIR=str(project))
    assert done.returncode == 0
    assert done.stdout.startswith("now: ")
    assert len(done.stdout) <= hook.HOOK_LIMIT


@pytest.mark.parametrize("kind", ["claude", "codex"])
def test_the_hook_exits_0_with_a_note_when_the_tree_is_broken(
    project: Path, home: Path, tmp_path: Path, kind: str
) -> None:
    run_wire(project, home, claude_hooks=True, codex_hooks=True)
    path = project / (".claude/settings.local.json" if kind == "claude" else ".codex/hooks.json")
    (command,) = [h["command"] for h in session_hooks(path)]
    # no tree where the hook points (claude: another project dir; codex: the tree moved)
    (project / "memory").rename(project / "moved")
    done = run_hook(command, tmp_path, CLAUDE_PROJECT_DIR=str(project))
    assert done.returncode == 0
    text = done.stdout
    if kind == "codex":
        payload = json.loads(text)
        assert set(payload) == {"hookSpecificOutput"}
        assert payload["hookSpecificOutput"]["hookEventName"] == "SessionStart"
        text = payload["hookSpecificOutput"]["additionalContext"]
    assert text.startswith("rouse: no memory pack this session:")
    # `rouse` missing from PATH altogether: still exit 0, and one line says why
    missing = subprocess.run(
        ["/bin/sh", "-c", command],
        env={"PATH": str(tmp_path / "empty"), "CLAUDE_PROJECT_DIR": str(project)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert missing.returncode == 0
    if kind == "codex":  # the repository's hook calls rouse by name, and says so
        payload = json.loads(missing.stdout)
        assert payload["hookSpecificOutput"]["additionalContext"] == wire.CANNOT_RUN_SHARED
    else:
        assert missing.stdout == wire.CANNOT_RUN + "\n"


def test_the_codex_hook_prints_strict_json_with_only_allowed_keys(
    project: Path, home: Path, tmp_path: Path
) -> None:
    run_wire(project, home, codex_hooks=True)
    (command,) = [h["command"] for h in session_hooks(project / ".codex/hooks.json")]
    done = run_hook(command, tmp_path, cwd=project)
    assert done.returncode == 0
    payload = json.loads(done.stdout)
    allowed = {"continue", "hookSpecificOutput", "stopReason", "suppressOutput", "systemMessage"}
    assert set(payload) <= allowed
    inner = payload["hookSpecificOutput"]
    assert set(inner) == {"hookEventName", "additionalContext"}
    assert inner["additionalContext"].startswith("now: ")


def test_a_hook_crash_still_exits_0() -> None:
    def boom(args: argparse.Namespace) -> int:
        raise ValueError("kaput")

    args = argparse.Namespace(hook="codex", json=True, max_chars=20_000)
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        assert hook.pack_hook(args, boom) == 0
    context = json.loads(buffer.getvalue())["hookSpecificOutput"]["additionalContext"]
    assert "internal error ValueError: kaput" in context
    assert args.max_chars == hook.HOOK_MAX_CHARS and args.json is False


def test_cap_keeps_hook_output_under_the_limit() -> None:
    assert hook.cap("x" * 50) == "x" * 50
    capped = hook.cap("x\n" * 20_000)
    assert len(capped) <= hook.HOOK_LIMIT and capped.endswith("run `rouse pack` for the rest)\n")
    assert capped.startswith("x\nx\n")


# -- one pack per session, from a rouse that can be found (issue 12, item 4) --


def test_wiring_keeps_one_rouse_hook_across_the_settings_scopes(project: Path, home: Path) -> None:
    local = project / ".claude" / "settings.local.json"
    shared = project / ".claude" / "settings.json"
    local.parent.mkdir()
    local.write_text(json.dumps(PRE_EXISTING))
    run_wire(project, home, claude_hooks=True)
    moved = run_wire(project, home, claude_hooks=True, shared=True)
    assert not any("rouse" in h["command"] for h in session_hooks(local))
    (ours,) = session_hooks(shared)
    assert "--hook claude" in str(ours["command"])
    assert any(line.startswith(f"removed the rouse hook from {local}") for line in moved.done)
    # everything else in the personal file is kept, hook groups included
    data = json.loads(local.read_text())
    assert data["permissions"] == PRE_EXISTING["permissions"] and data["env"] == {"FOO": "bar"}
    assert data["hooks"]["SessionStart"] == PRE_EXISTING["hooks"]["SessionStart"]
    # and back again: the shared file loses it, keeping its (now empty) self
    run_wire(project, home, claude_hooks=True)
    assert json.loads(shared.read_text()) == {}
    assert [h["command"] for h in session_hooks(local)].count("echo hello") == 1
    assert sum("--hook claude" in h["command"] for h in session_hooks(local)) == 1


def prompt_hooks(path: Path) -> list[dict[str, object]]:
    data = json.loads(path.read_text())
    return [h for g in data["hooks"].get("UserPromptSubmit", []) for h in g["hooks"]]


def test_wire_adds_one_prompt_hook_per_agent_and_moves_it_with_the_session_hook(
    project: Path, home: Path
) -> None:
    local = project / ".claude" / "settings.local.json"
    shared = project / ".claude" / "settings.json"
    local.parent.mkdir()
    theirs = {"hooks": [{"type": "command", "command": "echo mine"}]}
    local.write_text(json.dumps({"hooks": {"UserPromptSubmit": [theirs]}}))
    run_wire(project, home, claude_hooks=True, codex_hooks=True)
    first = local.read_text()
    run_wire(project, home, claude_hooks=True, codex_hooks=True)
    assert local.read_text() == first  # idempotent
    groups = json.loads(first)["hooks"]["UserPromptSubmit"]
    assert groups[0] == theirs and "matcher" not in groups[1]  # neither agent matches on it
    (ours,) = prompt_hooks(local)[1:]
    assert (
        ours["command"] == 'rouse pack --memory "$CLAUDE_PROJECT_DIR/memory" --hook claude || true'
    )
    (codex,) = prompt_hooks(project / ".codex" / "hooks.json")
    assert str(codex["command"]).endswith("--hook codex || true")
    # one scope: moving the session hook to the shared file moves the prompt hook too
    run_wire(project, home, claude_hooks=True, shared=True)
    assert prompt_hooks(local) == theirs["hooks"]
    assert [h["command"] for h in prompt_hooks(shared)] == [
        'rouse pack --memory "$CLAUDE_PROJECT_DIR/memory" --hook claude || true'
    ]


def idle_hooks(path: Path, event: str) -> list[dict[str, object]]:
    data = json.loads(path.read_text())
    return [h for g in data["hooks"].get(event, []) for h in g["hooks"]]


def test_wire_adds_one_stop_and_session_end_hook_for_claude_only(project: Path, home: Path) -> None:
    local = project / ".claude" / "settings.local.json"
    shared = project / ".claude" / "settings.json"
    local.parent.mkdir()
    theirs = {"hooks": [{"type": "command", "command": "rouse stamp --changed"}]}
    local.write_text(json.dumps({"hooks": {"Stop": [theirs]}}))
    run_wire(project, home, claude_hooks=True, codex_hooks=True)
    first = local.read_text()
    run_wire(project, home, claude_hooks=True, codex_hooks=True)
    assert local.read_text() == first  # idempotent
    groups = json.loads(first)["hooks"]["Stop"]
    assert groups[0] == theirs and "matcher" not in groups[1]  # the user's Stop hook stays
    (stop, promises) = idle_hooks(local, "Stop")[1:]
    pinned = 'rouse pack --memory "$CLAUDE_PROJECT_DIR/memory" --hook claude'
    assert stop == {
        "type": "command",
        "command": pinned + " || exit $(( $? == 2 ? 2 : 0 ))",
        "asyncRewake": True,
        "timeout": 24 * 3600,
    }
    # issue 33: beside it, the promise check, answering before the turn ends (never exit 2)
    assert promises == {"type": "command", "command": pinned + " --promises || true", "timeout": 30}
    assert idle_hooks(local, "SessionEnd") == [{"type": "command", "command": pinned + " || true"}]
    codex = json.loads((project / ".codex" / "hooks.json").read_text())["hooks"]
    assert set(codex) == {"SessionStart", "UserPromptSubmit", "Stop"}  # Stop: issue 33's …
    assert not any("asyncRewake" in h for g in codex["Stop"] for h in g["hooks"])  # no wake
    # one scope: moving the session hook moves the Stop and SessionEnd hooks too
    run_wire(project, home, claude_hooks=True, shared=True)
    assert idle_hooks(local, "Stop") == theirs["hooks"] and "SessionEnd" not in local.read_text()
    assert len(idle_hooks(shared, "Stop")) == 2 and len(idle_hooks(shared, "SessionEnd")) == 1


@pytest.mark.parametrize("kind", ["claude", "codex"])
def test_the_prompt_hook_prints_nothing_when_rouse_cannot_start(
    project: Path, home: Path, tmp_path: Path, kind: str
) -> None:
    run_wire(project, home, str(tmp_path / "gone" / "rouse"), claude_hooks=True, codex_hooks=True)
    path = project / (".claude/settings.local.json" if kind == "claude" else ".codex/hooks.json")
    (command,) = [h["command"] for h in prompt_hooks(path)]
    done = subprocess.run(
        ["/bin/sh", "-c", command],
        env={"PATH": str(tmp_path / "empty"), "CLAUDE_PROJECT_DIR": str(project)},
        input=json.dumps({"session_id": "s1", "hook_event_name": "UserPromptSubmit"}),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and done.stdout == ""  # said once at session start, not here


def test_matchers_follow_each_agents_session_start_sources() -> None:
    assert wire.MATCHERS == {
        "claude": "startup|resume|clear|compact|fork",
        "codex": "startup|resume|clear",
    }


def _pinned_rouse(folder: Path) -> Path:
    """A stand-in for an installed rouse (a script that runs this checkout)."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "rouse"
    script.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m rouse "$@"\n')
    script.chmod(0o755)
    return script


@pytest.mark.parametrize("kind", ["claude", "codex"])
def test_the_hook_runs_the_pinned_rouse_then_the_name_then_says_why_not(
    project: Path, home: Path, tmp_path: Path, kind: str
) -> None:
    pinned = _pinned_rouse(tmp_path / "opt" / "bin")
    if kind == "claude":  # the personal settings file
        run_wire(project, home, str(pinned), claude_hooks=True)
        path = project / ".claude/settings.local.json"
    else:  # Codex's project file is the repository's: only the user's own file pins a path
        wire.wire(_init_global(home), home=home, executable=str(pinned), codex_hooks=True)
        path = home / ".codex/hooks.json"
    (command,) = [h["command"] for h in session_hooks(path)]
    assert command.startswith(f"R={pinned}; ")

    def run(path_env: str) -> str:
        env = {"PATH": path_env, "CLAUDE_PROJECT_DIR": str(project), "HOME": str(home)}
        env["ROUSE_STAMP_KEY"] = str(tmp_path / "no-key")
        done = subprocess.run(
            ["/bin/sh", "-c", command],
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        if kind == "codex":
            return str(json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"])
        return done.stdout

    assert run("/usr/bin:/bin").startswith("now: ")  # no rouse on PATH: the pinned one runs
    pinned.unlink()
    assert run(f"{_bin_dir(tmp_path)}:/usr/bin:/bin").startswith("now: ")  # the name, then
    assert run("/usr/bin:/bin") == wire.CANNOT_RUN + "\n" * (kind == "claude")


def test_stable_executable_pins_a_lasting_install_only(tmp_path: Path) -> None:
    installed = _pinned_rouse(tmp_path / "home" / ".local" / "bin")
    assert wire.stable_executable(str(installed), "", unstable=[]) == str(installed)
    # a temp directory or a cache may be gone by the next session
    assert wire.stable_executable(str(installed), "", unstable=[str(tmp_path)]) is None
    cached = _pinned_rouse(tmp_path / "home" / ".cache" / "uv" / "x" / "bin")
    assert wire.stable_executable(str(cached), "", unstable=[]) is None
    # `python -m rouse`: not a rouse script, so the one on PATH, if any
    assert wire.stable_executable("/x/rouse/__main__.py", str(installed), []) == str(installed)
    assert wire.stable_executable("/x/rouse/__main__.py", "", []) is None
    assert wire.stable_executable(str(tmp_path / "gone" / "rouse"), "", []) is None


def _init_global(home: Path) -> Path:
    tree = home / ".rouse"
    init(tree, NOW)
    (tree / "entrypoint" / "beliefs" / "belief-from-global.md").write_text("GLOBAL TREE\n")
    return tree


def _hook_with_input(
    command: str, tmp_path: Path, home: Path, session: dict[str, str], **env: str
) -> str:
    full = {k: v for k, v in os.environ.items() if not k.startswith(("ROUSE_", "CLAUDE_"))}
    full.update(env, HOME=str(home), ROUSE_STAMP_KEY=str(tmp_path / "no-key"))
    full["PATH"] = f"{_bin_dir(tmp_path)}{os.pathsep}{full.get('PATH', '')}"
    done = subprocess.run(
        ["sh", "-c", command],
        env=full,
        input=json.dumps(session),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_global_hook_gives_way_to_a_project_hook_for_claude(
    project: Path, home: Path, tmp_path: Path
) -> None:
    tree = _init_global(home)
    wire.wire(tree, home=home, claude_hooks=True, executable="")
    (command,) = [h["command"] for h in session_hooks(home / ".claude" / "settings.json")]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    session = {"session_id": "s1", "source": "startup", "hook_event_name": "SessionStart"}
    # a project without a rouse hook: the global pack
    out = _hook_with_input(
        command, tmp_path, home, {**session, "cwd": str(project)}, CLAUDE_PROJECT_DIR=str(project)
    )
    assert "GLOBAL TREE" in out
    # once the project has its own hook, the global one prints nothing: one pack
    run_wire(project, home, claude_hooks=True)
    out = _hook_with_input(
        command, tmp_path, home, {**session, "cwd": str(project)}, CLAUDE_PROJECT_DIR=str(project)
    )
    assert out == ""
    out = _hook_with_input(command, tmp_path, home, {**session, "cwd": str(elsewhere)})
    assert "GLOBAL TREE" in out
    # in HOME itself the user's settings are not a project's: no giving way to itself
    out = _hook_with_input(
        command, tmp_path, home, {**session, "cwd": str(home)}, CLAUDE_PROJECT_DIR=str(home)
    )
    assert "GLOBAL TREE" in out


def test_the_global_hook_gives_way_to_a_project_hook_codex_will_run(
    project: Path, home: Path, tmp_path: Path
) -> None:
    tree = _init_global(home)
    wire.wire(tree, home=home, codex_hooks=True, executable="")
    (command,) = [h["command"] for h in session_hooks(home / ".codex" / "hooks.json")]
    (project / ".git").mkdir()
    run_wire(project, home, codex_hooks=True)
    session = {"session_id": "s1", "source": "startup", "cwd": str(project)}

    def context() -> str:
        out = _hook_with_input(command, tmp_path, home, session)
        return "" if not out else json.loads(out)["hookSpecificOutput"]["additionalContext"]

    # Codex skips a project's hooks until the project and the hook are trusted:
    # till then the global pack is the session's only one
    assert "GLOBAL TREE" in context()
    hooks_json = project / ".codex" / "hooks.json"
    (home / ".codex" / "config.toml").write_text(
        f'[projects."{project}"]\ntrust_level = "trusted"\n\n'
        f'[hooks.state."{hooks_json}:session_start:0:0"]\ntrusted_hash = "sha256:0"\n'
    )
    assert context() == ""


PACK_HOOK = ("pack", "--hook", "claude")


def test_the_hook_reads_no_input_from_a_terminal_or_a_silent_pipe(
    project: Path, tmp_path: Path
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ROUSE_", "CLAUDE_"))}
    env["ROUSE_STAMP_KEY"] = str(tmp_path / "no-key")
    with subprocess.Popen(
        [sys.executable, "-m", "rouse", "--memory", str(project / "memory"), *PACK_HOOK],
        env=env,
        stdin=subprocess.PIPE,  # held open, never written: the hook must not wait for it
        stdout=subprocess.PIPE,
        text=True,
    ) as proc:
        assert proc.wait(timeout=60) == 0
        assert proc.stdout is not None and proc.stdout.read().startswith("now: ")
        assert proc.stdin is not None
        proc.stdin.close()
    assert hook.read_session(io.StringIO('{"cwd": "/x"}')) == {}  # no file descriptor


def test_a_malformed_settings_file_exits_2_and_nothing_is_written(
    project: Path, home: Path
) -> None:
    local = project / ".claude" / "settings.local.json"
    local.parent.mkdir()
    local.write_text('{"hooks": {,}}')
    for flags in (["--claude-hooks"], ["--claude-hooks", "--shared"]):
        done = cli("--memory", str(project / "memory"), "wire", *flags, cwd=project, home=home)
        assert done.returncode == 2, done.stderr
        (line,) = done.stderr.splitlines()
        assert line.startswith(f"rouse: {local}: not valid JSON (") and "fix it by hand" in line
        assert local.read_text() == '{"hooks": {,}}'
        assert not (project / ".claude" / "settings.json").exists()


def test_init_and_wire_suggest_the_same_instruction_line(tmp_path: Path, home: Path) -> None:
    done = cli("init", "--no-key", cwd=tmp_path, home=home)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    suggested = lines[lines.index(next(x for x in lines if x.startswith("Add this line"))) + 1]
    wired = cli("wire", cwd=tmp_path, home=home)
    assert wired.returncode == 0, wired.stderr
    block = [x for x in wired.stdout.splitlines() if x.startswith("- At the start")]
    assert block, wired.stdout
    # word for word, the path included: relative to the project (issue 34 item 5)
    assert suggested.strip() == block[0][2:]
    assert str(tmp_path) not in suggested


# -- docs/wiring.md runs as written -------------------------------------------

DOCS = Path(__file__).resolve().parent.parent / "docs"
EXTERNAL = ("pipx ", "uv ", "claude ", "codex ")


def console_blocks(text: str) -> list[list[str]]:
    blocks: list[list[str]] = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.strip() == "```console":
            end = lines.index("```", i + 1)
            blocks.append(lines[i + 1 : end])
    return blocks


def test_the_wiring_page_runs_as_written(tmp_path: Path) -> None:
    home = tmp_path / "home"
    project = home / "code" / "myproject"
    project.mkdir(parents=True)
    (project / "CLAUDE.md").write_text("# My project\n")
    (project / "AGENTS.md").write_text("# My project\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ROUSE_", "CLAUDE_"))}
    env.update(HOME=str(home), PATH=f"{_bin_dir(tmp_path)}{os.pathsep}{env.get('PATH', '')}")
    printed = ""
    ran = external = 0
    for block in console_blocks((DOCS / "wiring.md").read_text()):
        commands: list[tuple[str, list[str]]] = []
        for line in block:
            if line.startswith("$ "):
                commands.append((line[2:], []))
            else:
                commands[-1][1].append(line.replace("/home/you", str(home)))
        for command, expected in commands:
            if command.startswith(EXTERNAL):
                external += 1
                if " mcp add " in command:
                    assert command.replace("/home/you", str(home)) in printed, command
                else:
                    # the install line, from a clone (rouse is not on PyPI yet)
                    assert command == f"pipx install '.[{extras.ALL}]'", command
                continue
            done = subprocess.run(
                ["sh", "-c", command],
                cwd=project,
                env=env,
                capture_output=True,
                text=True,
                timeout=60,
            )
            ran += 1
            assert done.returncode == 0, f"{command}: {done.stderr}"
            printed += done.stdout
            for want in expected:
                if "…" in want:
                    assert done.stdout.startswith(want.split("…")[0]), (command, done.stdout)
                else:
                    assert want in done.stdout.splitlines(), (command, want, done.stdout)
    assert ran >= 10 and external >= 3
    # what the page says happened, happened
    assert (home / ".config/rouse/stamp.key").is_file()
    assert "rouse:begin" in (project / "CLAUDE.md").read_text()
    assert "In Codex the memory pack arrives" in (project / "AGENTS.md").read_text()
    assert (project / ".cursor/rules/rouse.mdc").is_file()
    assert session_hooks(home / ".claude/settings.json")


def test_the_wiring_page_shows_the_hook_rouse_writes() -> None:
    text = (DOCS / "wiring.md").read_text()
    start = text.index("```json\n") + len("```json\n")
    shown = json.loads(text[start : text.index("```", start)])
    (group,) = shown["hooks"]["SessionStart"]
    home = Path("/home/you")
    w = wire.Wiring(home / "code/myproject/memory", home / "code/myproject", home)
    assert group["matcher"] == wire.MATCHERS["claude"]
    assert group["hooks"] == [
        {"type": "command", "command": wire.hook_command(w, "claude", "/home/you/.local/bin/rouse")}
    ]
    (group,) = shown["hooks"]["UserPromptSubmit"]
    command = wire.hook_command(w, "claude", "/home/you/.local/bin/rouse", wire.PROMPT)
    assert group == {"hooks": [{"type": "command", "command": command}]}
    (group,) = shown["hooks"]["SessionEnd"]
    assert group == {"hooks": [{"type": "command", "command": command}]}
    (group,) = shown["hooks"]["Stop"]
    command = wire.hook_command(w, "claude", "/home/you/.local/bin/rouse", wire.STOP)
    entry = {"type": "command", "command": command, "asyncRewake": True, "timeout": 86400}
    assert group == {"hooks": [entry]}


def test_the_stop_hook_in_the_provenance_page_stamps_what_a_turn_changed(
    tmp_path: Path,
) -> None:
    text = (DOCS / "provenance.md").read_text()
    start = text.index("<!-- test: stop-hook -->")
    script = text[text.index("```sh\n", start) + 6 : text.index("```\n", start + 30)]
    home = tmp_path / "home"
    project = tmp_path / "proj"
    project.mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ROUSE_", "CLAUDE_"))}
    env.update(
        HOME=str(home),
        PATH=f"{_bin_dir(tmp_path)}{os.pathsep}{env.get('PATH', '')}",
        GIT_AUTHOR_NAME="t",
        GIT_AUTHOR_EMAIL="t@t",
        GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@t",
        CLAUDE_PROJECT_DIR=str(project),
    )

    def sh(command: str) -> str:
        done = subprocess.run(
            ["sh", "-c", command], cwd=project, env=env, capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, f"{command}: {done.stderr}"
        return done.stdout

    hook = project / "stop-hook.sh"
    hook.write_text(script)
    hook.chmod(0o755)
    sh("git init -q && rouse stamp --init-key && rouse init && git add -A && git commit -qm init")
    belief = "memory/entrypoint/beliefs/belief-example-small-reversible-steps.md"
    owned = "memory/entrypoint/beliefs/belief-example-say-what-you-dont-know.md"
    sh(f"rouse stamp --memory memory --origin owner {owned}")  # uncommitted, still verifies
    sh(f"echo 'The agent added this.' >> {belief}")  # the turn's edit
    sh("rouse new note turn-note --memory memory --body 'from this turn'")  # a new file
    sh("./stop-hook.sh")
    heads = {
        rel: dict(
            line.split(": ", 1)
            for line in (project / rel).read_text().split("---\n")[1].splitlines()
            if ": " in line
        )
        for rel in (belief, owned, "memory/inventory/notes/turn-note.md")
    }
    assert heads[belief]["origin"] == "agent" and heads[belief]["origin-turn"].startswith("claude-")
    assert heads["memory/inventory/notes/turn-note.md"]["origin"] == "agent"
    assert heads[owned]["origin"] == "owner"  # kept: its stamp still verifies
    assert "does not verify" not in sh("rouse check --memory memory")


# -- the verbs as a user runs them --------------------------------------------


def cli(*args: str, cwd: Path, home: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROUSE_")}
    env["HOME"] = str(home)
    return subprocess.run(
        [sys.executable, "-m", "rouse", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_init_wire_adds_the_block(tmp_path: Path, home: Path) -> None:
    (tmp_path / "AGENTS.md").write_text("# Agents\n")
    done = cli("init", "--no-key", "--wire", cwd=tmp_path, home=home)
    assert done.returncode == 0, done.stderr
    assert f"updated {tmp_path / 'AGENTS.md'} (rouse block)" in done.stdout
    assert wire.BEGIN in (tmp_path / "AGENTS.md").read_text()


def test_stamp_init_key_refuses_inside_the_tree_and_needs_no_origin(
    project: Path, home: Path
) -> None:
    inside = project / "memory" / "stamp.key"
    env_cli = {"ROUSE_STAMP_KEY": str(inside)}
    done = subprocess.run(
        [sys.executable, "-m", "rouse", "--memory", str(project / "memory"), "stamp", "--init-key"],
        env={**os.environ, **env_cli, "HOME": str(home)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "inside the memory tree" in done.stderr
    assert not inside.exists()
    both = cli("stamp", "--init-key", "--origin", "owner", cwd=project, home=home)
    assert both.returncode == 2 and "--init-key takes no --origin" in both.stderr
    neither = cli("stamp", "memory/persona.md", cwd=project, home=home)
    assert neither.returncode == 2 and "needs --origin" in neither.stderr


# -- wiring that travels with the repository (issue 21, item 2) ----------------


def _all_text(folder: Path) -> str:
    return "\n".join(
        p.read_text() for p in sorted(folder.rglob("*")) if p.is_file() and ".git" not in p.parts
    )


def test_shared_files_carry_no_path_of_this_machine(project: Path, home: Path) -> None:
    pinned = "/opt/tools/bin/rouse"
    run_wire(project, home, executable=pinned, claude_hooks=True, shared=True, codex_hooks=True)
    shared = [project / ".claude/settings.json", project / ".codex/hooks.json"]
    for path in shared:
        text = path.read_text()
        assert str(project) not in text and pinned not in text and str(home) not in text
        for entry in [h for g in json.loads(text)["hooks"].values() for x in g for h in x["hooks"]]:
            assert entry["command"].startswith("rouse pack --memory "), entry
    claude = session_hooks(shared[0])[0]["command"]
    assert '--memory "$CLAUDE_PROJECT_DIR/memory"' in claude
    assert claude.endswith("echo " + shlex.quote(wire.CANNOT_RUN_SHARED))
    assert "--memory memory --hook codex" in session_hooks(shared[1])[0]["command"]
    # the personal file may pin this machine's rouse, as before
    run_wire(project, home, executable=pinned, claude_hooks=True)
    local = session_hooks(project / ".claude/settings.local.json")[0]["command"]
    assert local.startswith(f"R={pinned}; ")


def test_the_codex_hook_sets_its_own_context_limit(project: Path, home: Path) -> None:
    run_wire(project, home, codex_hooks=True)
    data = json.loads((project / ".codex/hooks.json").read_text())
    for event in ("SessionStart", "UserPromptSubmit"):
        (group,) = data["hooks"][event]
        (entry,) = group["hooks"]
        assert entry["additionalContextLimit"] == wire.CODEX_CONTEXT_LIMIT == 10_000


def test_a_teammates_clone_finds_its_own_tree_from_a_subdirectory(
    project: Path, home: Path, tmp_path: Path
) -> None:
    (project / "memory" / "entrypoint" / "beliefs" / "belief-mark.md").write_text("MINE\n")
    run_wire(project, home, executable="/opt/tools/bin/rouse", codex_hooks=True)
    clone = tmp_path / "teammate" / "proj"
    shutil.copytree(project, clone, symlinks=True)
    (clone / "memory" / "entrypoint" / "beliefs" / "belief-mark.md").write_text("THEIRS\n")
    src = clone / "src"
    (src / "memory").mkdir(parents=True)  # a source package called memory/: not a tree
    (src / "memory" / "__init__.py").write_text("")
    (command,) = [h["command"] for h in session_hooks(clone / ".codex/hooks.json")]
    session = json.dumps({"hook_event_name": "SessionStart", "cwd": str(src)})
    full = {k: v for k, v in os.environ.items() if not k.startswith(("ROUSE_", "CLAUDE_"))}
    full.update(PATH=f"{_bin_dir(tmp_path)}{os.pathsep}{full['PATH']}", HOME=str(home))
    done = subprocess.run(
        ["sh", "-c", command], cwd=src, input=session, env=full, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    assert context.startswith("now: ") and "THEIRS" in context and "MINE" not in context
    assert list((src / "memory").iterdir()) == [src / "memory" / "__init__.py"]


def test_the_teams_mcp_registration_names_no_path(project: Path, home: Path) -> None:
    text = "\n".join(run_wire(project, home, mcp=True).printed)
    assert "  claude mcp add --scope project rouse -- rouse mcp\n" in text + "\n"
    cursor = json.loads(text[text.index("  {") :])
    assert cursor["mcpServers"]["rouse"] == {"command": "rouse", "args": ["mcp"]}


# -- skills and --remove (issue 21, item 6) ------------------------------------

VERBS = ("move", "snooze", "close", "remind", "tell", "checkpoint", "recall")


def test_wire_lays_one_skill_for_claude_code_and_codex(project: Path, home: Path) -> None:
    run_wire(project, home)
    paths = [project / ".claude/skills/rouse/SKILL.md", project / ".agents/skills/rouse/SKILL.md"]
    for path in paths:
        text = path.read_text()
        head, body = text.split("---\n")[1:3]
        fields = dict(line.split(": ", 1) for line in head.splitlines())
        assert fields["name"] == "rouse" and "memory" in fields["description"]
        assert all(f"`rouse {verb} " in body for verb in VERBS), body
        assert "memory/entrypoint/rouse.md" in body and str(project) not in text
    assert paths[0].read_text() == paths[1].read_text()
    again = run_wire(project, home)
    assert [line for line in again.done if "skill" in line] == [
        f"unchanged: {paths[0]} (Claude Code skill)",
        f"unchanged: {paths[1]} (Codex skill)",
    ]


def test_wire_remove_takes_every_piece_back_out(project: Path, home: Path) -> None:
    (project / "CLAUDE.md").write_text("# My project\n\nUse tabs.\n")
    (project / "AGENTS.md").write_text("Agents: be brief.\n")
    settings = project / ".claude/settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps(PRE_EXISTING, indent=2) + "\n")
    (project / ".agents/skills/other").mkdir(parents=True)  # the user's own skill stays
    before = {p: p.read_text() for p in (project / "CLAUDE.md", project / "AGENTS.md")}
    run_wire(project, home, claude_hooks=True, codex_hooks=True, cursor=True)
    run_wire(project, home, claude_hooks=True, shared=True)
    assert (project / ".cursor/rules/rouse.mdc").exists()

    done = run_wire(project, home, remove=True).done
    for path, text in before.items():
        assert path.read_text() == text
    assert json.loads(settings.read_text()) == PRE_EXISTING
    for name in (".claude/settings.local.json", ".codex/hooks.json"):
        path = project / name
        assert not path.exists() or "rouse" not in path.read_text()
    gone = [".cursor/rules/rouse.mdc", ".claude/skills/rouse", ".agents/skills/rouse"]
    assert not any((project / name).exists() for name in gone)
    assert (project / ".agents/skills/other").is_dir()
    assert any(line.startswith("removed the rouse hooks from") for line in done)
    assert run_wire(project, home, remove=True).done == [
        f"nothing of rouse's is wired for {project / 'memory'}"
    ]
    with pytest.raises(UsageError, match="--remove"):
        run_wire(project, home, remove=True, codex_hooks=True)


# -- Cursor's sessionStart hook (issue 21, item 3) -----------------------------

CURSOR_OTHER = {
    "version": 1,
    "hooks": {
        "afterFileEdit": [{"command": "./scripts/format.sh"}],
        "sessionStart": [{"command": "echo hello"}],
    },
}


def check_cursor_hooks_schema(data: object) -> None:
    """Cursor's documented hooks.json: version 1, event name → list of {command, …}."""
    assert isinstance(data, dict) and set(data) <= {"version", "hooks"}
    assert data["version"] == 1
    assert isinstance(data["hooks"], dict)
    for event, entries in data["hooks"].items():
        assert event[0].islower() and isinstance(entries, list), event
        for entry in entries:
            assert (
                isinstance(entry, dict) and isinstance(entry["command"], str) and entry["command"]
            )
            assert set(entry) <= {"command", "timeout", "matcher", "type", "loop_limit"}


def test_cursor_hook_is_merged_once_beside_the_rule(project: Path, home: Path) -> None:
    path = project / ".cursor/hooks.json"
    path.parent.mkdir()
    path.write_text(json.dumps(CURSOR_OTHER))
    done = run_wire(project, home, executable="/opt/tools/bin/rouse", cursor=True).done
    assert f"wrote {project / '.cursor/rules/rouse.mdc'} (Cursor rule, always applied)" in done
    assert f"updated {path} (Cursor sessionStart hook)" in done
    data = json.loads(path.read_text())
    check_cursor_hooks_schema(data)
    assert data["hooks"]["afterFileEdit"] == CURSOR_OTHER["hooks"]["afterFileEdit"]
    first, ours = data["hooks"]["sessionStart"]
    assert first == {"command": "echo hello"}
    assert ours["command"].startswith("rouse pack --memory memory --hook cursor || printf ")
    assert str(project) not in path.read_text() and "/opt/tools" not in path.read_text()
    again = run_wire(project, home, executable="/opt/tools/bin/rouse", cursor=True).done
    assert f"unchanged: {path} (Cursor sessionStart hook)" in again
    run_wire(project, home, remove=True)
    assert json.loads(path.read_text()) == CURSOR_OTHER


def test_the_cursor_hook_returns_the_pack_as_additional_context(
    project: Path, home: Path, tmp_path: Path
) -> None:
    run_wire(project, home, cursor=True)
    (entry,) = json.loads((project / ".cursor/hooks.json").read_text())["hooks"]["sessionStart"]
    session = {"hook_event_name": "sessionStart", "conversation_id": "c-1"}
    session["workspace_roots"] = [str(project)]
    full = {k: v for k, v in os.environ.items() if not k.startswith(("ROUSE_", "CLAUDE_"))}
    full.update(PATH=f"{_bin_dir(tmp_path)}{os.pathsep}{full['PATH']}", HOME=str(home))
    full["ROUSE_STAMP_KEY"] = str(tmp_path / "no-key")
    elsewhere = tmp_path / "elsewhere"  # wherever Cursor starts it: the input says the project
    elsewhere.mkdir()
    done = subprocess.run(
        ["sh", "-c", entry["command"]],
        cwd=elsewhere,
        input=json.dumps(session),
        env=full,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    payload = json.loads(done.stdout)  # Cursor reads stdout as one JSON object
    assert set(payload) == {"additional_context"}
    context = payload["additional_context"]
    assert context.startswith("now: ") and len(context) <= hook.HOOK_LIMIT
    missing = subprocess.run(
        ["/bin/sh", "-c", entry["command"]],
        env={"PATH": str(tmp_path / "empty")},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert missing.returncode == 0
    assert json.loads(missing.stdout) == {"additional_context": wire.CANNOT_RUN_SHARED}


# -- Gemini CLI (issue 21, item 4) ---------------------------------------------


def test_gemini_hooks_merge_into_the_projects_settings(project: Path, home: Path) -> None:
    settings = project / ".gemini/settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"model": {"name": "x"}}))
    (project / "GEMINI.md").write_text("# Gemini\n")
    done = run_wire(project, home, executable="/opt/tools/bin/rouse", gemini=True).done
    # issue 33 adds the promise check at AfterAgent (the label says so)
    assert f"updated {settings} (Gemini CLI SessionStart, BeforeAgent, AfterAgent)" in done
    data = json.loads(settings.read_text())
    assert data["model"] == {"name": "x"}
    ((start,), (prompt,)) = data["hooks"]["SessionStart"], data["hooks"]["BeforeAgent"]
    ((after,),) = [group["hooks"] for group in data["hooks"]["AfterAgent"]]
    assert after["command"].endswith("--hook gemini --promises || true")
    assert "matcher" not in start  # lifecycle matchers are exact strings: none runs for all
    (entry,) = start["hooks"]
    assert entry["command"].startswith('rouse pack --memory "${GEMINI_PROJECT_DIR}/memory" ')
    assert prompt["hooks"][0]["command"].endswith("--hook gemini || true")
    assert str(project) not in settings.read_text() and "/opt/tools" not in settings.read_text()
    assert "arrives at the start of every session by itself" in (project / "GEMINI.md").read_text()
    run_wire(project, home, remove=True)
    assert json.loads(settings.read_text()) == {"model": {"name": "x"}}
    assert (project / "GEMINI.md").read_text() == "# Gemini\n"


# -- only what rouse wrote is rouse's; check first, then write (issue 31) -------

USERS_OWN = "my-wrapper && rouse pack --memory ~/other/memory --hook claude"


@pytest.mark.parametrize("scope", [".claude/settings.local.json", ".claude/settings.json"])
def test_a_users_own_hook_running_rouse_pack_survives_wire_and_remove(
    project: Path, home: Path, scope: str
) -> None:
    """Item 19: the user's hook runs `rouse pack` for another tree through a wrapper."""
    settings = project / scope
    settings.parent.mkdir()
    mine = {"type": "command", "command": USERS_OWN}
    settings.write_text(json.dumps({"hooks": {"SessionStart": [{"hooks": [mine]}]}}))
    run_wire(project, home, claude_hooks=True, shared=scope.endswith("settings.json"))
    assert mine in session_hooks(settings)
    assert any("--hook claude || " in str(h["command"]) for h in session_hooks(settings))
    run_wire(project, home, claude_hooks=True)  # again, into the other scope
    run_wire(project, home, remove=True)
    assert session_hooks(settings) == [mine]


QUOTING = "# Notes\n\nrouse's block ends with this line:\n\n<!-- rouse:end -->\n"


def test_a_claude_md_that_quotes_the_end_marker_is_refused_before_anything_is_written(
    project: Path, home: Path
) -> None:
    """Item 21: the refusal leaves every file as it was (no hook file, no skill)."""
    (project / "CLAUDE.md").write_text(QUOTING)
    (project / "AGENTS.md").write_text("Agents: be brief.\n")
    before = sorted(p for p in project.rglob("*") if "memory" not in p.parts)
    with pytest.raises(RouseError, match="unbalanced"):
        run_wire(project, home, claude_hooks=True, codex_hooks=True, opencode=True, cursor=True)
    assert sorted(p for p in project.rglob("*") if "memory" not in p.parts) == before
    assert (project / "AGENTS.md").read_text() == "Agents: be brief.\n"
    assert not (home / ".codex").exists()


def test_wire_remove_refuses_before_taking_anything_out(project: Path, home: Path) -> None:
    (project / "CLAUDE.md").write_text("# Notes\n")
    run_wire(project, home, claude_hooks=True)
    settings = project / ".claude/settings.local.json"
    wired = settings.read_text()
    (project / "CLAUDE.md").write_text((project / "CLAUDE.md").read_text() + QUOTING)
    with pytest.raises(RouseError, match="unbalanced"):
        run_wire(project, home, remove=True)
    assert settings.read_text() == wired
    assert (project / ".claude/skills/rouse").exists()


def test_remove_takes_away_the_hook_files_rouse_made_and_left_empty(
    project: Path, home: Path
) -> None:
    """Issue 34, item 11: no ``{}`` left behind in files (and folders) rouse created."""
    settings = project / ".gemini/settings.json"
    run_wire(project, home, codex_hooks=True, gemini=True, claude_hooks=True)
    made = [project / ".codex/hooks.json", settings, project / ".claude/settings.local.json"]
    assert all(path.is_file() for path in made)
    done = run_wire(project, home, remove=True).done
    for path in made:
        assert not path.exists(), path
        assert any(f"removed {path}" in line for line in done), done
    assert not (project / ".codex").exists() and not (project / ".gemini").exists()
    # a file that holds anything else keeps it
    settings.parent.mkdir()
    settings.write_text(json.dumps({"model": {"name": "x"}}))
    run_wire(project, home, gemini=True)
    run_wire(project, home, remove=True)
    assert json.loads(settings.read_text()) == {"model": {"name": "x"}}


def untracked(folder: Path) -> str:
    """``git status`` of ``folder``, every untracked file listed."""
    return subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=folder,
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def test_the_local_claude_settings_are_left_out_of_git(project: Path, home: Path) -> None:
    """Issue 34, item 11: the hooks' file is this machine's: ``git status`` stays clean."""
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    done = run_wire(project, home, claude_hooks=True).done
    assert any(".git/info/exclude" in line for line in done), done
    status = untracked(project)
    assert ".claude/settings.local.json" not in status and "memory/" in status
    run_wire(project, home, claude_hooks=True)  # again: the line is not added twice
    lines = (project / ".git/info/exclude").read_text().splitlines()
    assert lines.count("/.claude/settings.local.json") == 1


def test_in_a_git_worktree_the_local_settings_are_left_out_too(tmp_path: Path, home: Path) -> None:
    """A worktree's ``.git`` is a file: the exclude goes to the repository's common
    ``info/exclude``, which git reads for every worktree."""
    main = tmp_path / "main"
    main.mkdir()
    git = ["git", "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], cwd=main, check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "x"], cwd=main, check=True)
    work = tmp_path / "work"
    subprocess.run([*git, "worktree", "add", "-q", str(work)], cwd=main, check=True)
    init(work / "memory", NOW)
    done = run_wire(work, home, claude_hooks=True).done
    assert any("info/exclude" in line for line in done), done
    status = untracked(work)
    assert ".claude/settings.local.json" not in status and "memory/" in status
    run_wire(work, home, claude_hooks=True)
    lines = (main / ".git/info/exclude").read_text().splitlines()
    assert lines.count("/.claude/settings.local.json") == 1


def test_a_git_file_that_points_elsewhere_is_not_followed(tmp_path: Path, home: Path) -> None:
    """A ``.git`` file naming a folder that is not this worktree's is left alone."""
    project, elsewhere = tmp_path / "proj", tmp_path / "elsewhere"
    init(project / "memory", NOW)
    (elsewhere / "info").mkdir(parents=True)
    (project / ".git").write_text(f"gitdir: {elsewhere}\n")
    run_wire(project, home, claude_hooks=True)
    assert not (elsewhere / "info" / "exclude").exists()
