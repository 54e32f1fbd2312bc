"""The size rules of issue 30, checked: no function over 60 lines, no module over 400.

`python tools/sizes.py` (`make lint` runs it) names every function and module of
src/rouse over its limit that tools/sizes_allowlist.txt does not list, and every
entry of that list now within its limit (or gone): the list only shrinks. The third
rule, at most 6 parameters without an options object, is ruff's (PLR0913 and
PLR0917 in pyproject.toml), whose per-file-ignores are its allowlist; this checks
that each file named there still has a signature that needs it.

A function's lines are its body's, from its first statement (the docstring too) to
its last line; a module's are the file's. Names are the file's path from the root,
then `:` and the function's dotted path (`Class.method`, `outer.inner`).
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ALLOWLIST = ROOT / "tools" / "sizes_allowlist.txt"
FUNCTION_LINES = 60
MODULE_LINES = 400
SIGNATURE_RULES = ("PLR0913", "PLR0917")


def _functions(node: ast.AST, prefix: str) -> dict[str, int]:
    """Each function under ``node`` (methods and nested ones too) → its body's lines."""
    found: dict[str, int] = {}
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            name = f"{prefix}{child.name}"
            if not isinstance(child, ast.ClassDef):
                found[name] = (child.end_lineno or child.lineno) - child.body[0].lineno + 1
            found.update(_functions(child, f"{name}."))
        else:
            found.update(_functions(child, prefix))
    return found


def oversized(root: Path) -> dict[str, tuple[int, int]]:
    """Everything under ``root``/src/rouse over its limit → (its lines, the limit)."""
    found: dict[str, tuple[int, int]] = {}
    for path in sorted((root / "src" / "rouse").rglob("*.py")):
        name = path.relative_to(root).as_posix()
        text = path.read_text(encoding="utf-8")
        lines = len(text.splitlines())
        if lines > MODULE_LINES:
            found[name] = (lines, MODULE_LINES)
        for function, length in _functions(ast.parse(text), "").items():
            if length > FUNCTION_LINES:
                found[f"{name}:{function}"] = (length, FUNCTION_LINES)
    return found


def allowed(allowlist: Path) -> set[str]:
    """The entries of the allowlist: one name a line; `#` starts a comment."""
    text = allowlist.read_text(encoding="utf-8") if allowlist.is_file() else ""
    return {line.partition("#")[0].strip() for line in text.splitlines()} - {""}


def signature_allowances(root: Path) -> dict[str, set[str]]:
    """The files pyproject.toml's per-file-ignores let off a signature rule → which."""
    config = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    ignores = config["tool"]["ruff"]["lint"].get("per-file-ignores", {})
    return {
        pattern: set(codes) & set(SIGNATURE_RULES)
        for pattern, codes in ignores.items()
        if set(codes) & set(SIGNATURE_RULES) and (root / pattern).is_file()
    }


def needless_allowances(root: Path) -> list[str]:
    """Each per-file-ignore of a signature rule whose file no longer breaks it."""
    allowances = signature_allowances(root)
    if not allowances:
        return []
    ruff = Path(sys.executable).parent / "ruff"
    run = subprocess.run(
        [
            str(ruff) if ruff.exists() else "ruff",
            *("check", "--select", ",".join(SIGNATURE_RULES), "--exit-zero"),
            *("--config", "lint.per-file-ignores = {}", "--output-format", "json"),
            *sorted(allowances),
        ],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    )
    broken = {
        (Path(f["filename"]).relative_to(root).as_posix(), f["code"])
        for f in json.loads(run.stdout)
    }
    return [
        f"{pattern}: {code}"
        for pattern, codes in sorted(allowances.items())
        for code in sorted(codes)
        if (pattern, code) not in broken
    ]


def problems(root: Path = ROOT, allowlist: Path = ALLOWLIST) -> list[str]:
    """What breaks the size rules under ``root``, one line each, for a person to act on."""
    over = oversized(root)
    listed = allowed(allowlist)
    said = [
        f"{name}: {lines} lines, over the limit of {limit}: split it by what it does"
        for name, (lines, limit) in sorted(over.items())
        if name not in listed
    ]
    said += [
        f"{name}: within its limit now (or gone): remove it from {allowlist.name}"
        for name in sorted(listed - set(over))
    ]
    said += [
        f"pyproject.toml per-file-ignores {allowance}: no signature breaks it now: remove it"
        for allowance in needless_allowances(root)
    ]
    return said


def main() -> int:
    said = problems()
    for line in said:
        print(line, file=sys.stderr)
    return 1 if said else 0


if __name__ == "__main__":
    sys.exit(main())
