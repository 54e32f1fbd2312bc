"""The read verbs: pack, due, tree, explain, check, probe, recall.

``rouse pack`` runs at every session start: this module imports nothing heavy
at the top, and each verb imports what it needs when it runs.
"""

from __future__ import annotations

import os
import sys

from rouse.cli.common import (
    LEFT_BEHIND,
    emit,
    emit_json,
    probes_enabled,
    resolve_now,
    tree_root,
)
from rouse.cli.quick import HOOK_KINDS, PACK_DEFAULTS
from rouse.core import layout
from rouse.core.errors import RouseError, UsageError
from rouse.core.home import stamp_key_path
from rouse.core.humantime import parse_when

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from datetime import datetime
    from typing import Any

    from rouse.core.tree import Tree


#: The bounds of the read verbs' numbers (``--limit`` is also ``rouse log``'s).
MOST_LISTED = 1_000_000
MAX_CHARS = (200, 10_000_000)
PROBE_BUDGET_MS = (0, 60_000)


def within(option: str, value: int, low: int, high: int) -> int:
    """``value``, or a usage error (exit 2) naming ``option`` and its bounds."""
    if not low <= value <= high:
        raise UsageError(f"{option} must be a whole number from {low} to {high}, got {value}")
    return value


def cmd_pack(args: argparse.Namespace) -> int:
    if getattr(args, "hook", None):
        from rouse.agents.hook import pack_hook

        return pack_hook(args, cmd_pack)
    from rouse.pack.build import pack as build

    # (both the quick parse in cli.main and argparse come here)
    within("--max-chars", args.max_chars, *MAX_CHARS)
    within("--probe-budget", args.probe_budget, *PROBE_BUDGET_MS)
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
    LEFT_BEHIND.append(pack)
    return 0


def cmd_probe(args: argparse.Namespace) -> int:
    from rouse.core.tree import walk
    from rouse.probes import definitions as probes
    from rouse.probes import demand, readings
    from rouse.probes.readings import probes_allowed_at
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
        reading = demand.run_demand(root, chosen[0])
        if args.json:
            emit_json({"name": chosen[0].name, "tier": chosen[0].tier, "reading": reading})
        else:
            emit([reading])
        return 1 if reading == readings.UNKNOWN else 0
    measured = [(p, demand.run_demand(root, p)) for p in found]
    if args.json:
        emit_json([{"name": p.name, "tier": p.tier, "reading": r} for p, r in measured])
    else:
        emit([f"{p.name}\t{p.tier}\t{r}" for p, r in measured])
    return 0


def cmd_recall(args: argparse.Namespace) -> int:
    from rouse.pack import recall

    query = " ".join(args.query)
    within("--limit", args.limit, 1, MOST_LISTED)
    notes: list[str] = []
    hits = recall.recall(
        tree_root(args),
        query,
        resolve_now(args),
        limit=args.limit,
        kind=args.kind,
        run_probes=probes_enabled(),
        mode=args.mode,
        notes=notes,
    )
    for note in notes:
        print(f"rouse: {note}", file=sys.stderr)
    if args.json:
        emit_json([hit.to_json() for hit in hits])
    else:
        emit(recall.render(hits))
    if not hits:
        where = f" among {args.kind} files" if args.kind else ""
        raise RouseError(f"nothing recalled for {query!r}{where}: try other words, or grep")
    return 0


def cmd_tree(args: argparse.Namespace) -> int:
    from rouse.cache.walk import cached_walk
    from rouse.pack.views import tree_json, tree_lines
    from rouse.trust.stampkey import cache_secret

    tree = cached_walk(tree_root(args), cache_secret(stamp_key_path()))
    now = resolve_now(args)
    if getattr(args, "json", False):  # (set when parser.VERBS gives `tree` args_tree)
        emit_json(tree_json(tree, now))
    else:
        emit(tree_lines(tree, now))
    return 0


def cmd_due(args: argparse.Namespace) -> int:
    now = resolve_now(args)
    if args.until:
        try:
            until = parse_when(args.until, now, end=True)
        except ValueError as exc:
            raise UsageError(f"bad --until: {exc}") from None
        return _forecast(args, now, until)
    from rouse.pack.findings import found
    from rouse.pack.views import row_items, row_lines
    from rouse.trust.stampkey import cache_secret

    # what is due now: the rows the last full walk kept, while they hold, else from the
    # plans the walk cache keeps
    rows, tree, surveyed = found(tree_root(args), cache_secret(stamp_key_path()), now, "due")
    skipped: list[str] = []
    if tree is not None and surveyed is not None:
        skipped = [p.render() for p in tree.untrackable]
        skipped += _problem_lines(tree, surveyed.problems)
    shown = row_items(rows) if args.json else row_lines(rows, now)
    return _show_due(args.json, shown, now, None, skipped)


def _forecast(args: argparse.Namespace, now: datetime, until: datetime) -> int:
    """``rouse due --until``: a forecast lists a repeating reminder once per occurrence."""
    from rouse.cache.walk import cached_walk
    from rouse.core import clock, nextdue
    from rouse.core.tree import display_ids
    from rouse.pack.views import due_item, due_lines, due_order
    from rouse.trust.stampkey import cache_secret

    tree = cached_walk(tree_root(args), cache_secret(stamp_key_path()))
    every = clock.decisions(tree, until)
    found = due_order(nextdue.forecast(every, until))
    if args.json:
        ids = display_ids(tree)
        shown: list[Any] = [due_item(d, ids[d.record.dir]) for d in found]
    else:
        shown = due_lines(tree, found, now)
    skipped = [p.render() for p in tree.untrackable]
    skipped += _problem_lines(tree, clock.field_problems(every))
    return _show_due(args.json, shown, now, until, skipped)


def _problem_lines(tree: Tree, problems: list[Any]) -> list[str]:
    """Unreadable clock fields, each value quoted by its file's origin (read only when
    there is a problem to say)."""
    if not problems:
        return []
    from rouse.pack.warnings import problem_lines
    from rouse.trust.origins import origin_reader

    reader = origin_reader(tree.root, stamp_key_path())
    return problem_lines(tree, problems, reader)


def _show_due(
    json: bool, shown: list[Any], now: datetime, until: datetime | None, skipped: list[str]
) -> int:
    from rouse.pack.views import due_header

    if json:
        emit_json(shown)
    else:
        # stdout carries only the rows (for scripts); the header is for the reader
        header = due_header(len(shown), now, until)
        if header:
            print(header, file=sys.stderr, flush=True)
        emit(shown)
    for line in skipped:
        print(f"rouse: skipped or fell back: {line}", file=sys.stderr)
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    from rouse.core.tree import walk
    from rouse.lint.check import check
    from rouse.probes.readings import probes_allowed
    from rouse.trust.origins import origin_reader

    within("--probe-budget", args.probe_budget, *PROBE_BUDGET_MS)
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


def cmd_explain(args: argparse.Namespace) -> int:
    from rouse.core.tree import walk
    from rouse.pack import explain

    now = resolve_now(args)
    tree = walk(tree_root(args))
    data = explain.explain(tree, tree.resolve(args.ref), now)
    if args.json:
        emit_json(data)
    else:
        emit(explain.explain_lines(data, now))
    return 0


def args_pack(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("--query", metavar="TEXT", help="thin motivations that share no keyword")
    sub.add_argument("--json", action="store_true", help="the same content as one JSON object")
    sub.add_argument(
        "--max-chars",
        type=int,
        default=PACK_DEFAULTS["max_chars"],
        metavar="N",
        help="fit in N characters: trims the index, then the due list (default 9000)",
    )
    sub.add_argument(
        "--probe-budget",
        type=int,
        default=PACK_DEFAULTS["probe_budget"],
        metavar="MS",
        help="shared deadline for pack-tier probes (default 150)",
    )
    sub.add_argument(
        "--hook",
        choices=HOOK_KINDS,
        help="as a SessionStart hook: fit 10,000 chars, always exit 0 (codex: JSON)",
    )
    sub.add_argument(
        "--promises",
        action="store_true",
        help="with --hook claude, codex or gemini, at a turn's end: ask once about a promise left "
        "without a record",
    )


def args_probe(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("name", nargs="?", metavar="NAME", help="the probe to run")
    sub.add_argument(
        "--json",
        action="store_true",
        help="a JSON object (NAME) or array of probes: name, tier, reading",
    )


def args_tree(sub: argparse.ArgumentParser) -> None:
    sub.add_argument(
        "--json", action="store_true", help="the ladder as one JSON object, records nested"
    )


def args_recall(sub: argparse.ArgumentParser) -> None:
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
    sub.add_argument(
        "--mode",
        choices=("words", "meaning", "both"),
        metavar="MODE",
        help="words (full-text), meaning (the semantic extra's model) or both (default: "
        "both when the semantic extra is installed, words otherwise)",
    )
    sub.add_argument("--json", action="store_true", help="a JSON array of hits, best first")


def args_due(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("--json", action="store_true", help="a JSON array of due items")
    sub.add_argument("--until", metavar="WHEN", help="forecast what comes due by WHEN (or +2h)")


def args_check(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("--json", action="store_true", help="findings as a JSON array")
    sub.add_argument("--strict", action="store_true", help="exit 1 on warnings too")
    sub.add_argument(
        "--probe-budget",
        type=int,
        default=150,
        metavar="MS",
        help="run pack-tier probes once under this budget and judge them",
    )


def args_explain(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("ref", metavar="REF", help="a slug or tree-relative path")
    sub.add_argument("--json", action="store_true", help="the explanation as JSON")
