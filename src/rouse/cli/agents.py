"""The verbs that face agent tools: wire and mcp."""

from __future__ import annotations

import os
from pathlib import Path

from rouse.cli.common import (
    emit,
    resolve_now,
    tree_root,
)
from rouse.core.errors import UsageError
from rouse.core.extras import install_hint

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse


def cmd_wire(args: argparse.Namespace) -> int:
    from rouse.agents import wire

    wired = wire.wire(
        tree_root(args),
        home=Path.home(),
        claude_hooks=args.claude_hooks,
        shared=args.shared,
        codex_hooks=args.codex_hooks,
        cursor=args.cursor,
        gemini=args.gemini,
        opencode=args.opencode,
        mcp=args.mcp,
        remove=args.remove,
        promises=not args.no_promises,
    )
    emit([*wired.done, *wired.printed])
    return 0


def cmd_mcp(args: argparse.Namespace) -> int:
    root = tree_root(args)
    try:
        import mcp.server.mcpserver  # noqa: F401  (the extra; only this verb loads it)

        from rouse.agents import mcp as mcp_server
    except ImportError as exc:
        raise UsageError(
            f"`rouse mcp` needs the mcp extra ({exc}): {install_hint('mcp')}"
        ) from None
    resolve_now(args)  # a bad --now fails here, before the server starts
    from rouse.core.store import prepare_leases

    prepare_leases()  # the tools may write from worker threads: guard them too
    from rouse.trust.speaker import marked

    mcp_server.serve(root, now=lambda: resolve_now(args), env=marked(os.environ))
    return 0


def args_wire(sub: argparse.ArgumentParser) -> None:
    sub.add_argument(
        "--claude-hooks", action="store_true", help="SessionStart hook in .claude/ settings"
    )
    sub.add_argument("--shared", action="store_true", help="with --claude-hooks: settings.json")
    sub.add_argument(
        "--no-promises",
        action="store_true",
        help="with --claude-hooks, --codex-hooks or --gemini: no hook asking about promises "
        "left without a record",
    )
    sub.add_argument("--codex-hooks", action="store_true", help="SessionStart hook in .codex/")
    sub.add_argument("--cursor", action="store_true", help="an always-applied .cursor rule")
    sub.add_argument(
        "--gemini", action="store_true", help="SessionStart and BeforeAgent hooks in .gemini/"
    )
    sub.add_argument(
        "--opencode", action="store_true", help="a plugin in .opencode/plugins/: pack and wakes"
    )
    sub.add_argument("--mcp", action="store_true", help="print how to register `rouse mcp`")
    sub.add_argument(
        "--remove", action="store_true", help="take every piece `rouse wire` laid back out"
    )
