"""The core and the CLI start-up load nothing outside the standard library."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

CORE = [
    "rouse",
    "rouse.errors",
    "rouse.header",
    "rouse.timefmt",
    "rouse.home",
    "rouse.layout",
    "rouse.tree",
    "rouse.clock",
    "rouse.store",
    "rouse.provenance",
    "rouse.stampkey",
    "rouse.wire",
    "rouse.mcp_server",
    "rouse.check",
    "rouse.probes",
    "rouse.views",
    "rouse.scaffold",
    "rouse.lifecycle",
    "rouse.wake",
    "rouse.ledger",
    "rouse.sinks",
    "rouse.stamping",
    "rouse.sweeplock",
    "rouse.sweep",
    "rouse.cli",
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
