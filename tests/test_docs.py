"""The docs cannot drift from the CLI."""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from rouse.cli.parser import build_parser

ROOT = Path(__file__).resolve().parent.parent


def _reference_module():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("cli_reference", ROOT / "tools/cli_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["cli_reference"] = module
    spec.loader.exec_module(module)
    return module


def _verbs() -> list[str]:
    for action in build_parser()._actions:
        if isinstance(action, argparse._SubParsersAction):
            return list(action.choices)
    raise AssertionError("no verbs")


def test_cli_reference_matches_help() -> None:
    expected = _reference_module().render()
    actual = (ROOT / "docs" / "cli.md").read_text()
    assert actual == expected, "docs/cli.md is stale: run `python tools/cli_reference.py`"


def test_every_verb_is_documented() -> None:
    text = (ROOT / "docs" / "cli.md").read_text()
    missing = [verb for verb in _verbs() if f"## rouse {verb}\n" not in text]
    assert missing == []


def test_readme_gives_the_two_commands() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "make demo" in readme and "make test" in readme


def test_architecture_page_names_every_package() -> None:
    text = (ROOT / "docs" / "architecture.md").read_text()
    source = ROOT / "src" / "rouse"
    packages = sorted(p.parent.name for p in source.glob("*/__init__.py"))
    assert packages, "no packages found"
    missing = [name for name in packages if f"| `{name}` |" not in text]
    assert missing == [], f"docs/architecture.md has no row for {missing}"


# -- every command the docs show (issue 12, item 9) -----------------------------------
#
# Each `$ rouse …` line of every page (docs/*.md and README.md) runs, in page
# order, in a fresh project whose tree `rouse init` laid (unless the page lays
# it itself), with HOME a fresh directory (the pages call it /home/you). It
# must exit 0, and the output shown under it must be its whole output: a
# shown line with `…` matches any text in its place, and a line that is only
# `…` stands for any number of lines. Every line that calls rouse in a shell
# block (`$ ` lines, the README's tour, scripts, cron lines) must also parse
# with the real parser.

PAGES = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]
#: Programs other than rouse that the pages show: never run here.
EXTERNAL = ("pipx ", "pip ", "uv ", "claude ", "codex ", "git ", "python ")
#: Shell blocks whose lines are commands (``` ``` alone, console, sh, cron).
SHELL = ("", "console", "sh", "shell", "bash", "cron")
#: Pages whose shown outputs are not yet whole: their shown lines must appear,
#: in order, but other lines may come between and after. docs/wiring.md is
#: being reworked under issue 12 item 4; drop it from here when that lands.
NOT_YET_WHOLE = frozenset({"wiring.md"})


def fenced_blocks(text: str) -> list[tuple[str, list[str]]]:
    """Each fenced block of a page: its language (may be empty) and its lines."""
    blocks: list[tuple[str, list[str]]] = []
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        line = lines[index]
        if line.startswith("```"):
            fence = "`" * (len(line) - len(line.lstrip("`")))
            end = lines.index(fence, index + 1)
            blocks.append((line[len(fence) :].strip(), lines[index + 1 : end]))
            index = end
        index += 1
    return blocks


def shown_commands(page: Path) -> list[tuple[str, list[str]]]:
    """Every `$ ` line of a page's shell blocks, with the output shown under it."""
    found: list[tuple[str, list[str]]] = []
    for lang, lines in fenced_blocks(page.read_text()):
        if lang not in SHELL:
            continue
        current: tuple[str, list[str]] | None = None
        for line in lines:
            if line.startswith("$ "):
                current = (line[2:], [])
                found.append(current)
            elif current is not None:
                current[1].append(line)
    return found


def rouse_lines(page: Path) -> list[str]:
    """Every line of a page's shell blocks that calls rouse, as a command line."""
    found: list[str] = []
    for lang, lines in fenced_blocks(page.read_text()):
        if lang not in SHELL:
            continue
        joined: list[str] = []  # a line ending in a backslash goes on, as in a shell
        for line in lines:
            if joined and joined[-1].endswith("\\"):
                joined[-1] = joined[-1][:-1] + " " + line.strip()
            else:
                joined.append(line)
        for line in joined:
            command = line.removeprefix("$ ").strip()
            if lang == "cron":
                command = " ".join(command.split()[5:])
            if command.startswith("rouse "):
                found.append(command)
    return found


def _matches(shown: str, line: str) -> bool:
    pattern = ".*".join(re.escape(part) for part in shown.split("…"))
    return re.fullmatch(pattern, line) is not None


def whole(shown: list[str], printed: list[str]) -> bool:
    """Whether the shown lines are the printed ones (`…` as described above)."""
    if not shown:
        return not printed
    head, rest = shown[0], shown[1:]
    if head == "…":
        return any(whole(rest, printed[start:]) for start in range(len(printed) + 1))
    return bool(printed) and _matches(head, printed[0]) and whole(rest, printed[1:])


def appear_in_order(shown: list[str], printed: list[str]) -> bool:
    remaining = iter(printed)
    return all(any(_matches(want, line) for line in remaining) for want in shown if want != "…")


def test_the_whole_match_reads_ellipses() -> None:
    assert whole(["a", "b"], ["a", "b"])
    assert not whole(["a"], ["a", "b"])
    assert whole(["a", "…"], ["a", "b", "c"])
    assert whole(["now: …", "…", "end"], ["now: Saturday", "x", "end"])
    assert not whole(["now: …"], ["later: x"])
    assert whole([], []) and not whole([], ["x"])


RUN_PAGES = [
    page for page in PAGES if any(not c.startswith(EXTERNAL) for c, _ in shown_commands(page))
]


def test_pages_with_commands_are_found() -> None:
    names = {page.name for page in RUN_PAGES}
    assert {"recall.md", "provenance.md", "wiring.md"} <= names


def _bin_dir(tmp_path: Path) -> Path:
    """A PATH entry where `rouse` runs this checkout's CLI."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    script = bin_dir / "rouse"
    script.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m rouse "$@"\n')
    script.chmod(0o755)
    return bin_dir


@pytest.mark.parametrize("page", RUN_PAGES, ids=lambda page: page.name)
def test_every_dollar_line_runs_as_shown(page: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    project = home / "code" / "myproject"
    project.mkdir(parents=True)
    (project / "CLAUDE.md").write_text("# My project\n")
    (project / "AGENTS.md").write_text("# My project\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ROUSE_", "CLAUDE_"))}
    env.update(HOME=str(home), PATH=f"{_bin_dir(tmp_path)}{os.pathsep}{env.get('PATH', '')}")

    def sh(command: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["sh", "-c", command], cwd=project, env=env, capture_output=True, text=True, timeout=60
        )

    commands = shown_commands(page)
    if not any(command.startswith("rouse init") for command, _ in commands):
        assert sh("rouse init --no-key").returncode == 0
    ran = 0
    for command, shown in commands:
        if command.startswith(EXTERNAL):
            continue
        done = sh(command)
        ran += 1
        assert done.returncode == 0, f"{page.name}: {command}: {done.stderr}"
        printed = done.stdout.splitlines()
        want = [line.replace("/home/you", str(home)) for line in shown]
        if page.name in NOT_YET_WHOLE:
            assert appear_in_order(want, printed), (page.name, command, done.stdout)
        else:
            assert whole(want, printed), f"{page.name}: {command}: printed\n{done.stdout}"
    assert ran > 0


def test_every_rouse_line_in_the_docs_parses() -> None:
    parser = build_parser()
    checked = 0
    for page in PAGES:
        for command in rouse_lines(page):
            tokens: list[str] = []
            for token in shlex.split(command, comments=True):
                if token in ("|", "||", "&&", ";") or token.startswith((">", "2>", "<")):
                    break
                tokens.append(token)
            try:
                parser.parse_args(tokens[1:])
            except SystemExit:
                pytest.fail(f"{page.name}: `{command}` does not parse")
            checked += 1
    assert checked >= 30


def _readme_block(heading: str) -> list[str]:
    text = (ROOT / "README.md").read_text()
    section = text[text.index(f"## {heading}\n") :]
    section = section[: section.find("\n## ", 1)]
    ((_, lines),) = [block for block in fenced_blocks(section) if block[0] == "sh"]
    return [line for line in lines if line.strip()]


def test_the_readme_installs_from_a_clone_until_it_is_published() -> None:
    """Issue 12, item 9: the install line works as written today (rouse is on no index)."""
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    lines = _readme_block("Install")
    targets = [shlex.split(line, comments=True)[2] for line in lines]
    # the clone itself: pipx builds it from pyproject
    # issue 34, item 4: one line with every extra, and how to change the extras later
    extras = project["optional-dependencies"]
    every = ",".join(name for name in extras if name != "dev")  # (dev: rouse's own tests)
    assert targets == [f".[{every}]"]
    assert {"mcp", "pg", "semantic"} <= set(extras) and "rouse" in project["scripts"]
    text = " ".join((ROOT / "README.md").read_text().split())
    assert f"pipx install --force '.[{every}]'" in text
    assert f"pipx inject {project['name']} '{extras['mcp'][0]}'" in text


def test_the_readme_tour_runs(tmp_path: Path) -> None:
    """Every line of the README's tour, in order, in an empty directory: each exits 0."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ROUSE_", "CLAUDE_"))}
    env.update(HOME=str(tmp_path), PATH=f"{_bin_dir(tmp_path)}{os.pathsep}{env.get('PATH', '')}")
    project = tmp_path / "project"
    project.mkdir()
    lines = _readme_block("A 60-second tour")
    assert lines[0].startswith("rouse init") and len(lines) >= 10
    for line in lines:
        done = subprocess.run(
            ["sh", "-c", line], cwd=project, env=env, capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, f"{line}: {done.stderr}"


def test_no_page_cites_the_spec() -> None:
    """Users do not have the SPEC (issue 31, item 22): the pages say things in their terms."""
    docs = Path(__file__).resolve().parents[1] / "docs"
    citing = [p.name for p in sorted(docs.glob("*.md")) if "SPEC" in p.read_text()]
    assert citing == []
