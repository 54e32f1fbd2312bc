"""Generate docs/cli.md from the parser's own --help texts.

`python tools/cli_reference.py` rewrites the file; tests/test_docs.py fails
when the committed file differs from what this prints, so the reference
cannot drift from the CLI.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from rouse.cli.parser import build_parser

TARGET = Path(__file__).resolve().parent.parent / "docs" / "cli.md"

INTRO = """\
# CLI reference

Generated from `rouse --help` by `tools/cli_reference.py`; a test fails when it
drifts. Every verb takes the global options `--memory DIR` and `--now WHEN`,
before or after the verb.

Exit codes: `0` ok; `1` the verb ran and found a problem (check errors, a
`stamp` path that is missing); `2` usage or environment error (bad arguments,
no tree, a refused or ambiguous slug, a refused machine field, an ending that
is not one of the level's states, `init` onto an existing tree). `due`, `tree`
and `pack` exit 0 whenever they ran. Errors are one line on stderr; set
`ROUSE_DEBUG=1` for a traceback.
"""


def render() -> str:
    os.environ["COLUMNS"] = "88"  # stable wrapping whatever the terminal
    parser = build_parser()
    parts = [INTRO, "## rouse\n", "```text", parser.format_help().rstrip(), "```\n"]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                parts += [f"## rouse {name}\n", "```text", sub.format_help().rstrip(), "```\n"]
    return "\n".join(parts)


if __name__ == "__main__":
    text = render()
    if "--check" in sys.argv:
        sys.exit(0 if TARGET.read_text() == text else 1)
    TARGET.write_text(text)
    print(f"wrote {TARGET}")
