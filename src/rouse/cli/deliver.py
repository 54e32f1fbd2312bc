"""``rouse deliver``: a delivery worker of the fleet (claims owed wakes from a shared ledger)."""

from __future__ import annotations

from rouse.core.errors import UsageError

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse


def cmd_deliver(args: argparse.Namespace) -> int:
    raise UsageError("rouse deliver is not built yet")


def args_deliver(sub: argparse.ArgumentParser) -> None:
    pass
