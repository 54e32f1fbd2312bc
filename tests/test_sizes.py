"""The size rules of issue 30 are checked (tools/sizes.py, run by `make lint`)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent


def _sizes() -> ModuleType:
    spec = importlib.util.spec_from_file_location("sizes", ROOT / "tools" / "sizes.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["sizes"] = module
    spec.loader.exec_module(module)
    return module


def _function(name: str, body_lines: int, indent: str = "") -> str:
    body = "".join(f"{indent}    x = {n}\n" for n in range(body_lines))
    return f"{indent}def {name}():\n{body}"


def _project(root: Path, ignores: str = "") -> Path:
    """A repository at ``root`` with a src/rouse package, and its allowlist's path."""
    (root / "src" / "rouse").mkdir(parents=True)
    (root / "pyproject.toml").write_text(
        "[tool.ruff.lint]\nselect = ['PLR0913']\n"
        "[tool.ruff.lint.pylint]\nmax-args = 6\n"
        f"[tool.ruff.lint.per-file-ignores]\n{ignores}"
    )
    return root / "allowlist.txt"


def test_a_function_or_module_over_its_limit_is_named_and_the_limit_itself_passes(
    tmp_path: Path,
) -> None:
    sizes = _sizes()
    allowlist = _project(tmp_path)
    source = tmp_path / "src" / "rouse"
    (source / "short.py").write_text(
        _function("at_limit", 60) + "class Holder:\n" + _function("method", 61, "    ")
    )
    (source / "long.py").write_text("x = 1\n" * 401)
    (source / "edge.py").write_text("x = 1\n" * 400)
    said = sizes.problems(tmp_path, allowlist)
    assert said == [
        "src/rouse/long.py: 401 lines, over the limit of 400: split it by what it does",
        "src/rouse/short.py:Holder.method: 61 lines, over the limit of 60: split it by what it does",
    ]


def test_the_allowlist_lets_off_what_it_names_and_fails_once_that_is_within_its_limit(
    tmp_path: Path,
) -> None:
    sizes = _sizes()
    allowlist = _project(tmp_path)
    source = tmp_path / "src" / "rouse"
    (source / "mod.py").write_text(
        _function("outer", 3) + _function("inner", 70, "    ") + _function("small", 5)
    )
    allowlist.write_text(
        "# today's exceptions\n"
        "src/rouse/mod.py:outer.inner  # the nested one\n"
        "src/rouse/mod.py:outer\n"
        "src/rouse/mod.py:small\n"
        "src/rouse/gone.py\n"
    )
    said = sizes.problems(tmp_path, allowlist)
    assert said == [
        "src/rouse/gone.py: within its limit now (or gone): remove it from allowlist.txt",
        "src/rouse/mod.py:small: within its limit now (or gone): remove it from allowlist.txt",
    ]


def test_a_per_file_ignore_of_the_signature_rule_must_still_be_needed(tmp_path: Path) -> None:
    sizes = _sizes()
    allowlist = _project(
        tmp_path,
        '"src/rouse/wide.py" = ["PLR0913"]\n"src/rouse/narrow.py" = ["PLR0913", "E501"]\n',
    )
    source = tmp_path / "src" / "rouse"
    (source / "wide.py").write_text("def wide(a, b, c, d, e, f, g):\n    pass\n")
    (source / "narrow.py").write_text("def narrow(a, b, c, d, e, f):\n    pass\n")
    assert sizes.problems(tmp_path, allowlist) == [
        "pyproject.toml per-file-ignores src/rouse/narrow.py: PLR0913: "
        "no signature breaks it now: remove it"
    ]


def test_the_repository_keeps_its_size_rules() -> None:
    run = subprocess.run(
        [sys.executable, "tools/sizes.py"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert run.returncode == 0, run.stderr
