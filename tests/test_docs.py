"""The docs cannot drift from the CLI."""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

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
