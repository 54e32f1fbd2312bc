"""How to add one of rouse's optional extras (mcp, pg, semantic) to an install.

rouse is installed from a clone (it is not on PyPI yet), so a hint never names
the package by name as if it could be fetched. It owns the one hint every error
message gives: inject the extra's library into the pipx environment (works from any
directory), or reinstall from the clone with every extra listed (``--force`` alone
would drop the extras given before). The requirements are pyproject.toml's (a test
compares them).
"""

from __future__ import annotations

#: Each extra's requirement, as pyproject.toml declares it.
EXTRAS = {
    "mcp": "mcp>=2,<3",
    "pg": "psycopg[binary]>=3.2,<4",
    "semantic": "wordllama>=0.4,<0.5",
}
#: Every extra, as one pip extras list.
ALL = ",".join(EXTRAS)


def install_hint(extra: str) -> str:
    """How to add ``extra`` to rouse as it was installed (pipx, or pip in a virtualenv)."""
    return (
        f"add it with `pipx inject rouse-memory '{EXTRAS[extra]}'`, or in your clone of "
        f"rouse `pipx install --force '.[{ALL}]'` (pip in a virtualenv: "
        f"`pip install '.[{extra}]'` in the clone)"
    )
