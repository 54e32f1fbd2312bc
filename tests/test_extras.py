"""Install hints that work from where the user is (issue 34, item 4).

rouse is not on PyPI yet: no hint, doc or error may name a package the user cannot
install (``rouse-memory[mcp]``); each extra's hint is one function, whose requirements
are the ones pyproject.toml declares.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from rouse.core import extras

REPO = Path(__file__).resolve().parent.parent
#: a published package named with an extra, or a pipx/pip/uv install of it by name
UNPUBLISHED = re.compile(
    r"rouse-memory\[|(?:pipx|pip|uv tool) install\s+'?rouse-memory\b(?!.*once it is published)"
)


def test_each_extra_s_requirement_is_the_one_pyproject_declares() -> None:
    declared = tomllib.loads((REPO / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    for name, requirement in extras.EXTRAS.items():
        assert declared[name] == [requirement], name
    assert set(extras.ALL.split(",")) == set(extras.EXTRAS)


@pytest.mark.parametrize("name", ["mcp", "pg", "semantic"])
def test_a_hint_adds_the_extra_without_dropping_the_others(name: str) -> None:
    hint = extras.install_hint(name)
    assert f"pipx inject rouse-memory '{extras.EXTRAS[name]}'" in hint
    assert f"pipx install --force '.[{extras.ALL}]'" in hint  # --force alone drops extras


def test_no_hint_names_a_package_that_is_not_published() -> None:
    files = [*REPO.joinpath("src").rglob("*.py"), *REPO.joinpath("docs").glob("*.md")]
    files.append(REPO / "README.md")
    found = [
        f"{path.relative_to(REPO)}:{number}: {line.strip()}"
        for path in files
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if UNPUBLISHED.search(line)
    ]
    assert found == []
