"""``rouse fleet status|due|recall``: one view of every tree mirrored into the fleet's database."""

from __future__ import annotations

from rouse.core.errors import UsageError

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse


def cmd_fleet(args: argparse.Namespace) -> int:
    raise UsageError("rouse fleet is not built yet")


def args_fleet(sub: argparse.ArgumentParser) -> None:
    pass
