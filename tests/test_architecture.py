"""The layout docs/architecture.md describes is the one in src/ (issue 20, item 6).

The layers themselves are import-linter's (``make lint``); these are the rules
it cannot check: every module of the sweeper and the fleet has its line on the
page, and no module reaches into another's private names.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "src" / "rouse"

#: Private names imported across modules, to be made public in the module that owns
#: them: none left; a new one fails the test.
KNOWN: set[tuple[str, str]] = set()


def _module(path: Path, source: Path) -> str:
    parts = path.relative_to(source.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_imports(path: Path, source: Path = SOURCE) -> set[str]:
    """``module._name`` for each private name of another module that ``path`` (a module
    of the package at ``source``) imports (``from module import _name``) or reads off
    an imported module (``module._name``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    own = _module(path, source)
    found: set[str] = set()
    modules: dict[str, str] = {}  # local name → the module it is
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                modules[alias.asname or alias.name.partition(".")[0]] = alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                if _private(alias.name) and node.module != own:
                    found.add(f"{node.module}.{alias.name}")
                if (SOURCE.parent / node.module.replace(".", "/") / f"{alias.name}.py").is_file():
                    modules[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and _private(node.attr)
            and isinstance(node.value, ast.Name)
            and node.value.id in modules
            and modules[node.value.id].startswith("rouse")
            and modules[node.value.id] != own
        ):
            found.add(f"{modules[node.value.id]}.{node.attr}")
    return found


def test_no_module_imports_another_modules_private_names() -> None:
    found = {
        (str(path.relative_to(SOURCE)), name)
        for path in sorted(SOURCE.rglob("*.py"))
        for name in private_imports(path)
    }
    assert found - KNOWN == set(), "make the name public in the module that owns it"


def test_the_private_import_check_can_fail(tmp_path: Path) -> None:
    source = tmp_path / "src" / "rouse"
    (source / "sweep").mkdir(parents=True)
    sample = source / "sweep" / "sample.py"
    sample.write_text(
        "from rouse.sweep.voice import _what, moment\n"
        "from rouse.sweep import wake\n"
        "from rouse.sweep.sample import _mine\n"  # its own: not another module's
        "wake._secret, moment._not_a_module_attribute\n"
    )
    found = private_imports(sample, source)
    assert found == {"rouse.sweep.voice._what", "rouse.sweep.wake._secret"}


def test_architecture_page_names_every_module_of_the_sweeper_and_the_fleet() -> None:
    text = (ROOT / "docs" / "architecture.md").read_text()
    missing = []
    for package in ("sweep", "fleet"):
        for path in sorted((SOURCE / package).rglob("*.py")):
            name = path.parent.name + "/" if path.name == "__init__.py" else path.stem
            if name != f"{package}/" and f"`{name}`" not in text:
                missing.append(str(path.relative_to(SOURCE)))
    assert missing == [], f"docs/architecture.md names no {missing}"


def classes_named_twice(source: Path = SOURCE) -> dict[str, list[str]]:
    """Each class name that two modules under ``source`` define, with those modules."""
    where: dict[str, list[str]] = {}
    for path in sorted(source.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                where.setdefault(node.name, []).append(_module(path, source))
    return {name: found for name, found in where.items() if len(found) > 1}


def test_no_class_name_is_used_for_two_things() -> None:
    # (issue 30: two Workers, two Watchers, two Entrys, two Verdicts, two Plans)
    assert classes_named_twice() == {}


def test_the_class_name_check_can_fail(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "a.py").write_text("class Worker:\n    pass\n")
    (package / "b.py").write_text("class Worker:\n    pass\n")
    assert classes_named_twice(package) == {"Worker": ["pkg.a", "pkg.b"]}
