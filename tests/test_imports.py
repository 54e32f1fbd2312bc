"""The core and the CLI start-up load nothing outside the standard library.

And nothing heavy on the start-up paths (``typing`` among them: the modules there
import what their annotations name under ``TYPE_CHECKING = False``, as
docs/architecture.md says under "Anything on the pack's start-up path")."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SOURCE = Path(__file__).resolve().parents[1] / "src" / "rouse"
#: Every module of the package: the core and the edges alike keep heavy
#: extras (mcp) inside the verbs that need them.
CORE = [
    "rouse",
    *sorted(
        "rouse." + ".".join(p.relative_to(SOURCE).with_suffix("").parts).removesuffix(".__init__")
        for p in SOURCE.rglob("*.py")
        if p.name != "__main__.py"
    ),
]

PROBE = """
import json, sys
before = set(sys.modules)
import {module}
loaded = sorted(set(sys.modules) - before)
print(json.dumps(loaded))
"""


def _loaded(module: str) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-c", PROBE.format(module=module)],
        capture_output=True,
        text=True,
        check=True,
    )
    return list(json.loads(out.stdout))


@pytest.mark.parametrize("module", CORE)
def test_core_module_loads_only_the_standard_library(module: str) -> None:
    foreign = [
        name
        for name in _loaded(module)
        if name.split(".")[0] not in sys.stdlib_module_names and name.split(".")[0] != "rouse"
    ]
    assert foreign == [], f"{module} pulled in {foreign}"


def test_importing_rouse_does_no_work() -> None:
    loaded = _loaded("rouse")
    assert [m for m in loaded if m.startswith("rouse.")] == []


#: What a session start must never pay for: each costs milliseconds to import.
NOT_AT_START = {
    "argparse",
    "dataclasses",
    "inspect",
    "typing",
    "shutil",
    "tempfile",
    "sqlite3",
    "rouse.agents.wire",
    "rouse.lint",
    "rouse.sweep",
    # a watching sweeper's socket is asked only when it is there (issue 24)
    "_socket",
    # the semantic extra (issue 23): recall and the MCP server only
    *("numpy", "tokenizers", "safetensors", "wordllama", "rouse.pack.semantic"),
}

START = """
import json, sys
from rouse.cli.main import main
code = main({argv!r})
sys.stderr.write(json.dumps(sorted(sys.modules)))
"""


@pytest.mark.parametrize("extra", [[], ["--hook", "claude"], ["--hook", "codex"]])
def test_session_start_loads_nothing_heavy(tmp_path: Path, extra: list[str]) -> None:
    subprocess.run([sys.executable, "-m", "rouse", "init", "--no-key", str(tmp_path)], check=True)
    argv = ["--memory", str(tmp_path / "memory"), "pack", *extra]
    done = subprocess.run(
        [sys.executable, "-c", START.format(argv=argv)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert "not listed: every body" in done.stdout  # the whole pack was printed
    assert sorted(NOT_AT_START & set(json.loads(done.stderr))) == []


#: What `rouse status` and `rouse due`, a monitor's and an agent's quick looks (issue 24,
#: within 10% of the warm pack), must not pay for either (the sweeper's options do).
NOT_AT_A_LOOK = {"argparse", "dataclasses", "inspect", "rouse.sweep.options", "rouse.fleet"}


@pytest.mark.parametrize("verb", ["status", "due"])
def test_status_and_due_load_nothing_heavy(tmp_path: Path, verb: str) -> None:
    subprocess.run([sys.executable, "-m", "rouse", "init", "--no-key", str(tmp_path)], check=True)
    argv = ["--memory", str(tmp_path / "memory"), verb]
    done = subprocess.run(
        [sys.executable, "-c", START.format(argv=argv)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    loaded = set(json.loads(done.stderr.splitlines()[-1]))  # (after what the verb said)
    assert "rouse.cache.walk" in loaded  # it did look
    assert sorted(NOT_AT_A_LOOK & loaded) == []


#: The semantic extra's libraries: loaded by recall when it searches by meaning.
SEMANTIC = {"numpy", "tokenizers", "safetensors"}


@pytest.mark.parametrize("mode", ["words", "default"])
def test_recall_loads_the_model_only_to_search_by_meaning(tmp_path: Path, mode: str) -> None:
    from rouse.pack import semantic

    subprocess.run([sys.executable, "-m", "rouse", "init", "--no-key", str(tmp_path)], check=True)
    argv = ["--memory", str(tmp_path / "memory"), "recall", "nightly", "build"]
    argv += ["--mode", "words"] if mode == "words" else []
    done = subprocess.run(
        [sys.executable, "-c", START.format(argv=argv)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert "example-how-the-nightly-build-runs" in done.stdout
    loaded = set(json.loads(done.stderr))
    assert "wordllama" not in loaded  # its files are read, its module never imported
    if mode == "words" or not semantic.available():
        assert sorted(SEMANTIC & loaded) == []
    else:
        assert loaded >= SEMANTIC  # the default with the extra: both, so the model loaded
