"""The command line: one small function per verb — parse, call, print.

No behaviour lives only here; every verb calls a library function that the
MCP server can call too.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import sys
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from types import SimpleNamespace

from rouse import __version__
from rouse.core import layout
from rouse.core.errors import RouseError, UsageError
from rouse.core.home import find_tree, global_tree, stamp_key_path
from rouse.core.timefmt import format_stamp, parse_stamp, parse_when

# typing costs ~5 ms to import on the pack's start-up path; annotations are
# strings here (__future__), so it is only imported for the type checker
TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from typing import Any

    Handler = Callable[[argparse.Namespace], int]

LONG_RUNNING = frozenset({"sweep", "mcp"})
HOOK_KINDS = ("claude", "codex")


# -- shared plumbing ----------------------------------------------------------


def resolve_now(args: argparse.Namespace) -> datetime:
    """``--now``, else ``$ROUSE_NOW``, else the wall clock (local time)."""
    given = getattr(args, "now", None) or os.environ.get("ROUSE_NOW")
    if not given:
        return datetime.now().replace(microsecond=0)
    try:
        return parse_stamp(given)
    except ValueError:
        raise UsageError(f"bad --now {given!r}: use 'YYYY-MM-DD HH:MM'") from None


def tree_root(args: argparse.Namespace) -> Path:
    return find_tree(getattr(args, "memory", None))


def emit(lines: Sequence[str]) -> None:
    if lines:
        sys.stdout.write("\n".join(lines) + "\n")


def emit_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def read_body(text: str | None) -> str:
    if text == "-":
        return sys.stdin.read()
    return text or ""


# -- verbs --------------------------------------------------------------------


def cmd_init(args: argparse.Namespace) -> int:
    from rouse.records import scaffold
    from rouse.trust import stampkey

    if args.glob and args.dir:
        raise UsageError("give DIR or --global, not both")
    target = global_tree() if args.glob else Path(args.dir or ".").resolve() / "memory"
    key = stampkey.load_key(stamp_key_path())
    result = scaffold.init(target, resolve_now(args), examples=not args.no_examples, stamp_key=key)
    instructions = target / layout.INSTRUCTIONS
    emit(
        [
            f"laid a memory tree at {target}",
            *result.notes,
            "",
            "Add this line to your agent's instruction file (CLAUDE.md, AGENTS.md, ...):",
            "  " + scaffold.AGENT_LINE.format(instructions=instructions),
            "",
            f"persona.md is optional: `rouse new persona` writes one at {target / 'persona.md'}.",
        ]
    )
    if args.wire:
        from rouse.agents import wire

        wired = wire.wire(target, home=Path.home())
        emit(["", *wired.done, *wired.printed])
    return 0


def probes_enabled() -> bool:
    return os.environ.get("ROUSE_PROBES", "").strip().lower() != "off"


#: What a read verb built and the process may leave behind at exit (see ``run``).
_LEFT_BEHIND: list[object] = []


def cmd_pack(args: argparse.Namespace) -> int:
    if getattr(args, "hook", None):
        from rouse.agents.hook import pack_hook

        return pack_hook(args, cmd_pack)
    from rouse.pack.build import pack as build

    if args.max_chars < 200:
        raise UsageError("--max-chars must be at least 200")
    pack = build(
        tree_root(args),
        resolve_now(args),
        env=os.environ,
        key_path=stamp_key_path(),
        query=args.query,
        max_chars=args.max_chars,
        probe_budget_ms=args.probe_budget,
    )
    if args.json:
        emit_json(pack.to_json())
    else:
        sys.stdout.write(pack.text)
    _LEFT_BEHIND.append(pack)
    return 0


def cmd_probe(args: argparse.Namespace) -> int:
    from rouse.core.tree import walk
    from rouse.probes import definitions as probes
    from rouse.probes import readings
    from rouse.probes.gate import probes_allowed_at
    from rouse.trust.origins import origin_reader

    root = tree_root(args)
    found, problems = probes.load_probes(walk(root))
    for problem in problems:
        print(f"rouse: {problem.render()}", file=sys.stderr)
    allowed, why = probes_allowed_at(root, origin_reader(root, stamp_key_path()), os.environ)
    if not allowed:
        raise RouseError(why)
    if args.name:
        chosen = [p for p in found if p.name == args.name]
        if not chosen:
            names = ", ".join(p.name for p in found) or "none"
            raise UsageError(f"no probe named {args.name!r} in {layout.PROBES} (have: {names})")
        reading = readings.run_demand(root, chosen[0])
        emit([reading])
        return 1 if reading == readings.UNKNOWN else 0
    emit([f"{p.name}\t{p.tier}\t{readings.run_demand(root, p)}" for p in found])
    return 0


def cmd_recall(args: argparse.Namespace) -> int:
    from rouse.pack import recall

    query = " ".join(args.query)
    hits = recall.recall(
        tree_root(args),
        query,
        resolve_now(args),
        limit=args.limit,
        kind=args.kind,
        run_probes=probes_enabled(),
    )
    if args.json:
        emit_json([hit.to_json() for hit in hits])
    else:
        emit(recall.render(hits))
    if not hits:
        where = f" among {args.kind} files" if args.kind else ""
        raise RouseError(f"nothing recalled for {query!r}{where}: try other words, or grep")
    return 0


def cmd_tree(args: argparse.Namespace) -> int:
    from rouse.core.cache import cached_walk
    from rouse.pack.views import tree_lines

    emit(tree_lines(cached_walk(tree_root(args))))
    return 0


def cmd_due(args: argparse.Namespace) -> int:
    from rouse.core import clock
    from rouse.core.cache import cached_walk
    from rouse.core.tree import display_ids
    from rouse.pack.views import due_item, due_lines

    now = resolve_now(args)
    at = now
    if args.until:
        try:
            at = parse_when(args.until, now)
        except ValueError as exc:
            raise UsageError(f"bad --until: {exc}") from None
    tree = cached_walk(tree_root(args))
    every = clock.decisions(tree, at)
    found = clock.select_due(every)
    if args.json:
        ids = display_ids(tree)
        emit_json([due_item(d, ids[d.record.dir]) for d in found])
    else:
        emit(due_lines(tree, found, at))
    skipped = [p.render() for p in tree.untrackable]
    skipped += [p.render() for p in clock.field_problems(every)]
    for line in skipped:
        print(f"rouse: skipped or fell back: {line}", file=sys.stderr)
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    from rouse.core.tree import walk
    from rouse.lint.check import check
    from rouse.probes.gate import probes_allowed
    from rouse.trust.origins import origin_reader

    root = tree_root(args)
    tree = walk(root)
    origins = origin_reader(root, stamp_key_path())
    allowed, _ = probes_allowed(tree, origins, os.environ)
    budget = args.probe_budget if allowed else None
    findings = check(tree, resolve_now(args), origins, budget)
    if args.json:
        emit_json(
            [
                {"level": f.level, "path": f.path, "line": f.line, "message": f.message}
                for f in findings
            ]
        )
    else:
        emit([f.render() for f in findings])
        errors = sum(f.level == "error" for f in findings)
        print(f"{errors} error(s), {len(findings) - errors} warning(s)", file=sys.stderr)
    if any(f.level == "error" for f in findings):
        return 1
    return 1 if args.strict and findings else 0


def cmd_new(args: argparse.Namespace) -> int:
    from rouse.records import scaffold

    now = resolve_now(args)
    created = scaffold.new(
        tree_root(args),
        args.type,
        args.slug,
        now,
        under=args.under,
        fields=scaffold.parse_assignments(args.set or [], now),
        body=read_body(args.body),
    )
    lines = [str(created.path)]
    if created.todo:
        lines.append(f"fill in: {', '.join(created.todo)}")
    emit(lines)
    return 0


def cmd_remind(args: argparse.Namespace) -> int:
    from rouse.records import scaffold

    created = scaffold.remind(
        tree_root(args),
        args.slug,
        args.due,
        resolve_now(args),
        nag=args.nag,
        body=read_body(args.body),
    )
    emit([str(created.path)])
    return 0


def cmd_move(args: argparse.Namespace) -> int:
    from rouse.records import lifecycle

    emit([lifecycle.move(tree_root(args), args.ref, resolve_now(args), args.note).summary])
    return 0


def cmd_snooze(args: argparse.Namespace) -> int:
    from rouse.records import lifecycle

    changed = lifecycle.snooze(
        tree_root(args),
        args.ref,
        resolve_now(args),
        until=args.until,
        duration=getattr(args, "for"),
        note=args.note,
    )
    lines = [changed.summary]
    if changed.next_due is not None:
        lines.append(f"next due: {format_stamp(changed.next_due)}")
    emit(lines)
    return 0


def cmd_close(args: argparse.Namespace) -> int:
    from rouse.records import lifecycle

    if args.done:
        ending, why = "done", None
    elif args.dropped is not None:
        ending, why = "dropped", args.dropped
    else:
        ending, why = "abandoned", args.abandoned
    changed = lifecycle.close(
        tree_root(args), args.ref, resolve_now(args), ending, why, args.outcome
    )
    emit([changed.summary])
    return 0


def cmd_promote(args: argparse.Namespace) -> int:
    from rouse.records import lifecycle

    changed = lifecycle.promote(
        tree_root(args), args.slug, args.closes_when, resolve_now(args), args.under
    )
    emit([changed.summary])
    return 0


def cmd_explain(args: argparse.Namespace) -> int:
    from rouse.core.tree import walk
    from rouse.pack import views

    now = resolve_now(args)
    tree = walk(tree_root(args))
    data = views.explain(tree, tree.resolve(args.ref), now)
    if args.json:
        emit_json(data)
    else:
        emit(views.explain_lines(data, now))
    return 0


def cmd_stamp(args: argparse.Namespace) -> int:
    from rouse.trust import stamp as stamping
    from rouse.trust import stampkey

    if args.init_key:
        if args.origin or args.turn or args.files:
            raise UsageError("--init-key takes no --origin, --turn or FILE")
        trees = [Path(args.memory)] if getattr(args, "memory", None) else []
        with contextlib.suppress(UsageError):
            trees.append(tree_root(args))
        path = stampkey.init_key(stamp_key_path(), trees)
        emit(
            [
                f"made a stamp key at {path} (mode 600): `rouse stamp` now signs origins",
                "keep it out of the agent's reach: see docs/provenance.md",
            ]
        )
        return 0
    if not args.origin:
        raise UsageError("stamp needs --origin CLASS (or --init-key)")
    if not args.files:
        raise UsageError("stamp needs at least one FILE")
    key = stampkey.load_key(stamp_key_path())
    done = stamping.stamp(
        tree_root(args), args.files, args.origin, args.turn, key=key, if_changed=args.if_changed
    )
    signed = " (signed)" if done.signed else ""
    emit(
        [f"stamped {rel} origin={args.origin}{signed}" for rel in done.written]
        + [f"kept {rel}: its stamp still verifies" for rel in done.skipped]
    )
    return 0


def cmd_wire(args: argparse.Namespace) -> int:
    from rouse.agents import wire

    wired = wire.wire(
        tree_root(args),
        home=Path.home(),
        claude_hooks=args.claude_hooks,
        shared=args.shared,
        codex_hooks=args.codex_hooks,
        cursor=args.cursor,
        mcp=args.mcp,
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
            f"`rouse mcp` needs the mcp extra ({exc}): pipx install 'rouse-memory[mcp]'"
        ) from None
    resolve_now(args)  # a bad --now fails here, before the server starts
    mcp_server.serve(root, now=lambda: resolve_now(args), env=dict(os.environ))
    return 0


def cmd_sweep(args: argparse.Namespace) -> int:
    from rouse.sweep import loop, sinks
    from rouse.sweep.ledger import QuietHours
    from rouse.trust.origins import origin_reader

    root = tree_root(args)
    given = getattr(args, "now", None) or os.environ.get("ROUSE_NOW")
    sink = sinks.make_sink(
        args.sink,
        args.command,
        root=root,
        timeout=args.timeout,
        secret=os.environ.get("ROUSE_WEBHOOK_SECRET"),
        base_env=os.environ,
    )
    return loop.sweep(
        root,
        sink,
        once=args.once,
        every=args.every,
        now=resolve_now(args) if given else None,
        quiet=QuietHours.parse(args.quiet) if args.quiet else None,
        origins=origin_reader(root, stamp_key_path()),
    )


def cmd_log(args: argparse.Namespace) -> int:
    from rouse.sweep import ledger

    if args.limit < 1:
        raise UsageError("--limit must be at least 1")
    entries = ledger.recent(tree_root(args), args.limit)
    if args.json:
        emit_json([entry.as_json() for entry in entries])
    else:
        emit(ledger.log_lines(entries))
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    from rouse.core.tree import walk
    from rouse.sweep import status

    now = resolve_now(args)
    data = status.status(walk(tree_root(args)), now)
    if args.json:
        emit_json(data)
    else:
        emit(status.status_lines(data))
    return 0


# -- the parser ---------------------------------------------------------------


def _globals(parser: argparse.ArgumentParser, suppress: bool) -> None:
    import argparse

    default = argparse.SUPPRESS if suppress else None
    parser.add_argument(
        "--memory",
        metavar="DIR",
        default=default,
        help="the tree (else $ROUSE_HOME, ./memory, ~/.rouse)",
    )
    parser.add_argument(
        "--now",
        metavar="WHEN",
        default=default,
        help="evaluate the clock at this instant, 'YYYY-MM-DD HH:MM' (else $ROUSE_NOW)",
    )


def _args_init(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("dir", nargs="?", metavar="DIR", help="lay DIR/memory (default ./memory)")
    sub.add_argument("--global", dest="glob", action="store_true", help="lay ~/.rouse instead")
    sub.add_argument("--no-examples", action="store_true", help="only the instruction file")
    sub.add_argument("--wire", action="store_true", help="then `rouse wire` (CLAUDE.md/AGENTS.md)")


def _args_pack(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("--query", metavar="TEXT", help="thin motivations that share no keyword")
    sub.add_argument("--json", action="store_true", help="the same content as one JSON object")
    sub.add_argument(
        "--max-chars",
        type=int,
        default=_PACK_DEFAULTS["max_chars"],
        metavar="N",
        help="fit in N characters: trims the index, then the due list (default 9000)",
    )
    sub.add_argument(
        "--probe-budget",
        type=int,
        default=_PACK_DEFAULTS["probe_budget"],
        metavar="MS",
        help="shared deadline for pack-tier probes (default 150)",
    )
    sub.add_argument(
        "--hook",
        choices=HOOK_KINDS,
        help="as a SessionStart hook: fit 10,000 chars, always exit 0 (codex: JSON)",
    )


def _args_probe(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("name", nargs="?", metavar="NAME", help="the probe to run")


def _args_recall(sub: argparse.ArgumentParser) -> None:
    sub.add_argument(
        "query",
        nargs="+",
        metavar="QUERY",
        help="words to look for (any of them; -- before a word starting with -)",
    )
    sub.add_argument(
        "--limit", type=int, default=10, metavar="N", help="at most N hits (default 10)"
    )
    sub.add_argument(
        "--kind",
        metavar="K",
        help="only this kind: note backlog intention goal action task reminder persona "
        "belief motivation",
    )
    sub.add_argument("--json", action="store_true", help="a JSON array of hits, best first")


def _args_due(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("--json", action="store_true", help="a JSON array of due items")
    sub.add_argument("--until", metavar="WHEN", help="forecast what comes due by WHEN (or +2h)")


def _args_check(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("--json", action="store_true", help="findings as a JSON array")
    sub.add_argument("--strict", action="store_true", help="exit 1 on warnings too")
    sub.add_argument(
        "--probe-budget",
        type=int,
        default=150,
        metavar="MS",
        help="run pack-tier probes once under this budget and judge them",
    )


def _args_new(sub: argparse.ArgumentParser) -> None:
    sub.add_argument(
        "type",
        metavar="TYPE",
        help="intention goal action task reminder backlog belief motivation persona note",
    )
    sub.add_argument("slug", nargs="?", metavar="SLUG", help="lowercase letters, digits and -")
    sub.add_argument("--under", metavar="REF", help="the record it nests under")
    sub.add_argument("--set", action="append", metavar="K=V", help="a header field (repeatable)")
    sub.add_argument("--body", metavar="TEXT", help="the body text, or - to read stdin")


def _args_move(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("ref", metavar="REF", help="a slug or tree-relative path")
    sub.add_argument("--note", metavar="TEXT", help="append a dated line to the body")


def _args_snooze(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("ref", metavar="REF", help="a slug or tree-relative path")
    when = sub.add_mutually_exclusive_group(required=True)
    when.add_argument("--until", metavar="WHEN", help="a stamp or +INTERVAL")
    when.add_argument("--for", metavar="INTERVAL", help="e.g. 2h, 3d")
    sub.add_argument("--note", metavar="TEXT", help="why, appended as a dated line")


def _args_explain(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("ref", metavar="REF", help="a slug or tree-relative path")
    sub.add_argument("--json", action="store_true", help="the explanation as JSON")


def _args_close(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("ref", metavar="REF", help="a slug or tree-relative path")
    ending = sub.add_mutually_exclusive_group(required=True)
    ending.add_argument("--done", action="store_true", help="it is done")
    ending.add_argument("--dropped", metavar="WHY", help="dropped, with the reason")
    ending.add_argument("--abandoned", metavar="WHY", help="a goal given up, with the reason")
    sub.add_argument(
        "--outcome", metavar="O", help="an action's: as-expected surprising contradicts"
    )


def _args_promote(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("slug", metavar="SLUG", help="the backlog item's slug")
    sub.add_argument("--closes-when", required=True, metavar="TEXT", help="how you'll know")
    sub.add_argument("--under", metavar="REF", help="nest it under this record")


def _args_remind(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("slug", metavar="SLUG", help="the reminder's slug")
    sub.add_argument("--due", required=True, metavar="WHEN", help="a stamp or +2h")
    sub.add_argument("--nag", metavar="INTERVAL", help="re-fire until done, starting every I")
    sub.add_argument("--body", metavar="TEXT", help="what to say when it fires, or - for stdin")


def _args_stamp(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("--origin", metavar="CLASS", help="owner system agent untrusted unknown")
    sub.add_argument("--turn", metavar="ID", help="the id of the turn that wrote the files")
    sub.add_argument("files", nargs="*", metavar="FILE", help="files in the tree")
    sub.add_argument(
        "--if-changed",
        action="store_true",
        help="with a key: leave files whose stamp still verifies as they are",
    )
    sub.add_argument(
        "--init-key",
        action="store_true",
        help="make the stamp key ($ROUSE_STAMP_KEY, else ~/.config/rouse/stamp.key)",
    )


def _args_status(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("--json", action="store_true", help="the status as JSON")


def _args_sweep(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("--once", action="store_true", help="one tick (cron); exit 1 if undelivered")
    sub.add_argument(
        "--sink",
        nargs="+",
        metavar="KIND",
        help="file (default), stdout, webhook URL, or exec (command after --)",
    )
    sub.add_argument("--every", type=float, metavar="S", help="seconds between ticks (default 60)")
    sub.add_argument(
        "--timeout", type=float, metavar="S", help="sink timeout in seconds (exec 60, webhook 10)"
    )
    sub.add_argument(
        "--quiet", metavar="HH:MM-HH:MM", help="hold exec/webhook wakes in this window"
    )
    sub.add_argument("command", nargs="*", metavar="-- CMD ARG", help="the exec sink's command")


def _args_log(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("--json", action="store_true", help="a JSON array of wakes, newest first")
    sub.add_argument("--limit", type=int, default=20, metavar="N", help="how many (default 20)")


def _args_wire(sub: argparse.ArgumentParser) -> None:
    sub.add_argument(
        "--claude-hooks", action="store_true", help="SessionStart hook in .claude/ settings"
    )
    sub.add_argument("--shared", action="store_true", help="with --claude-hooks: settings.json")
    sub.add_argument("--codex-hooks", action="store_true", help="SessionStart hook in .codex/")
    sub.add_argument("--cursor", action="store_true", help="an always-applied .cursor rule")
    sub.add_argument("--mcp", action="store_true", help="print how to register `rouse mcp`")


#: Every verb: its handler, its one-line help, and what adds its arguments.
VERBS: dict[str, tuple[Handler, str, Callable[[argparse.ArgumentParser], None] | None]] = {
    "init": (
        cmd_init,
        "lay a new memory tree with examples and its own git repository",
        _args_init,
    ),
    "pack": (cmd_pack, "print the block for the top of a session (read-only)", _args_pack),
    "probe": (cmd_probe, "run one demand probe, or list every probe with its reading", _args_probe),
    "recall": (cmd_recall, "search notes, backlog, records and context by keywords", _args_recall),
    "due": (cmd_due, "what the clock would wake about now, one line each", _args_due),
    "tree": (cmd_tree, "the ladder: context, records by nesting, inventory", None),
    "check": (cmd_check, "lint the tree; exit 1 on errors", _args_check),
    "new": (cmd_new, "write a record, context file or note with a fresh header", _args_new),
    "move": (cmd_move, "stamp last-moved: now (the record moved)", _args_move),
    "snooze": (cmd_snooze, "push a record so it next comes due at WHEN", _args_snooze),
    "explain": (
        cmd_explain,
        "why a record is or is not due, and when it next will be",
        _args_explain,
    ),
    "close": (cmd_close, "end a record out loud (nothing is deleted)", _args_close),
    "promote": (cmd_promote, "turn a backlog item into an open intention", _args_promote),
    "remind": (cmd_remind, "shorthand for a new reminder", _args_remind),
    "stamp": (cmd_stamp, "write origin (and origin-turn) into files: for wrappers", _args_stamp),
    "status": (cmd_status, "counts per level, what is due, the sweeper and ledger", _args_status),
    "sweep": (
        cmd_sweep,
        "run the clock: deliver a wake for each due record, then stamp",
        _args_sweep,
    ),
    "log": (
        cmd_log,
        "the ledger's recent wakes: id, record, reason, sink, state, times",
        _args_log,
    ),
    "wire": (cmd_wire, "wire the tree into agents: CLAUDE.md/AGENTS.md, hooks, rules", _args_wire),
    "mcp": (cmd_mcp, "serve the memory as MCP tools over stdio (extra: rouse-memory[mcp])", None),
}


def _columns() -> int:
    """The terminal's width as ``shutil.get_terminal_size`` would give it."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


def _formatter() -> type[argparse.HelpFormatter]:
    """argparse's help formatter, given its width so that it does not import
    ``shutil`` (~5 ms, with bz2 and lzma) at every start just to size help text."""
    import argparse

    class Formatter(argparse.HelpFormatter):
        def __init__(
            self,
            prog: str,
            indent_increment: int = 2,
            max_help_position: int = 24,
            width: int | None = None,
        ):
            if width is None:
                width = _columns() - 2
            super().__init__(prog, indent_increment, max_help_position, width)

    return Formatter


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser with every verb, or (``only``) with just that one verb's subparser.

    Building every verb's subparser costs ~13 ms, and ``rouse pack`` runs at every
    session start: ``main`` builds only the verb it was given (see ``_verb_named``),
    and a plain ``rouse pack`` skips argparse altogether (see ``_quick_pack``).
    """
    import argparse

    formatter = _formatter()
    parser = argparse.ArgumentParser(
        prog="rouse",
        description="Agent memory with a clock: plain markdown that comes and finds the agent.",
        formatter_class=formatter,
    )
    parser.add_argument("--version", action="version", version=f"rouse {__version__}")
    _globals(parser, suppress=False)
    verbs = parser.add_subparsers(dest="verb", metavar="VERB")
    for name, (handler, help_text, add_arguments) in VERBS.items():
        if only is not None and name != only:
            continue
        sub = verbs.add_parser(
            name, help=help_text, description=help_text, formatter_class=formatter
        )
        _globals(sub, suppress=True)
        sub.set_defaults(handler=handler)
        if add_arguments is not None:
            add_arguments(sub)
    return parser


#: Top-level options that take a value, and the spelled-out names argparse
#: accepts abbreviations of.
_VALUE_OPTIONS = ("--memory", "--now")


def _verb_named(argv: Sequence[str]) -> str | None:
    """The verb ``argv`` names, if only --memory/--now come before it; else None.

    None (anything else before the verb, such as --help, or no known verb)
    means: build the whole parser, so help and errors read as they always have.
    """
    index = 0
    while index < len(argv):
        token = argv[index]
        if not token.startswith("-"):
            return token if token in VERBS else None
        name, equals, _ = token.partition("=")
        if len(name) < 3 or not any(option.startswith(name) for option in _VALUE_OPTIONS):
            return None
        index += 1 if equals else 2
    return None


#: ``rouse pack``'s values when not given (argparse's defaults for it too).
_PACK_DEFAULTS: dict[str, Any] = {
    "memory": None,
    "now": None,
    "query": None,
    "json": False,
    "max_chars": 9000,
    "probe_budget": 150,
    "hook": None,
}
#: Each option the quick parse takes: its destination and how to read its value.
_PACK_OPTIONS: dict[str, tuple[str, Callable[[str], Any] | None]] = {
    "--memory": ("memory", str),
    "--now": ("now", str),
    "--query": ("query", str),
    "--json": ("json", None),
    "--max-chars": ("max_chars", int),
    "--probe-budget": ("probe_budget", int),
    "--hook": ("hook", str),
}
_GLOBAL_DESTS = frozenset({"memory", "now"})


def _quick_pack(argv: Sequence[str]) -> argparse.Namespace | None:
    """``rouse pack`` read without argparse, or None to let argparse read it.

    ``rouse pack`` runs at every session start, and importing and building
    argparse costs ~9 ms of it. Only exact, well-formed spellings are taken
    here; anything else (help, an abbreviation, a bad value, a value that
    looks like an option) returns None, and argparse reads it and says what is
    wrong. tests/test_cli.py checks that both read every accepted form alike.
    """
    values = dict(_PACK_DEFAULTS)
    verb = False
    index = 0
    while index < len(argv):
        token = argv[index]
        index += 1
        if token == "pack" and not verb:
            verb = True
            continue
        name, equals, value = token.partition("=")
        option = _PACK_OPTIONS.get(name)
        if option is None:
            return None
        dest, read = option
        if not verb and dest not in _GLOBAL_DESTS:
            return None  # a pack option before the verb: argparse's error
        if read is None:  # a flag
            if equals:
                return None
            values[dest] = True
            continue
        if not equals:
            if index >= len(argv) or argv[index].startswith("-"):
                return None
            value = argv[index]
            index += 1
        try:
            values[dest] = read(value)
        except ValueError:
            return None
    if not verb or values["hook"] not in (None, *HOOK_KINDS):
        return None
    # it reads like argparse.Namespace (plain attributes), which is not imported
    args: argparse.Namespace = SimpleNamespace(  # type: ignore[assignment]
        verb="pack", handler=cmd_pack, **values
    )
    return args


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = _quick_pack(argv)
    if args is None:
        parser = build_parser(_verb_named(argv))
        args = parser.parse_args(argv)
        if not getattr(args, "handler", None):
            parser.print_help()
            return 2
    collecting = gc.isenabled()
    if args.verb not in LONG_RUNNING:
        # a short-lived process: reference counting frees what it builds, and
        # the cyclic collector would only rescan the tree's objects for nothing
        gc.disable()
    try:
        return int(args.handler(args))
    except RouseError as exc:
        print(f"rouse: {exc.render()}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        if os.environ.get("ROUSE_DEBUG") == "1":
            import traceback

            traceback.print_exc()
        else:
            print(
                f"rouse: internal error: {type(exc).__name__}: {exc} "
                "(set ROUSE_DEBUG=1 for a traceback)",
                file=sys.stderr,
            )
        return 1
    finally:
        if collecting:
            gc.enable()


def run() -> None:
    """The console entry point (and ``python -m rouse``): ``main``, then exit.

    ``rouse pack`` runs at every session start. When it has finished (its
    caches saved, its output written), the process ends without tearing down
    the tree it built: on a large tree that teardown alone costs several
    percent of the run. Every other verb exits normally.
    """
    code = main()
    if _LEFT_BEHIND:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except OSError:
            code = code or 1  # the reader went away: nothing more to say
        os._exit(code)
    raise SystemExit(code)
