"""The verbs that write memory: init, new, remind, move, snooze, close, promote, stamp."""

from __future__ import annotations

import contextlib
from pathlib import Path

from rouse.cli.common import (
    emit,
    read_body,
    resolve_now,
    tree_root,
)
from rouse.core import layout
from rouse.core.errors import UsageError
from rouse.core.home import global_tree, stamp_key_path
from rouse.core.timefmt import format_stamp

# typing costs ~5 ms to import on the pack's start-up path; annotations are
# strings here (__future__), so it is only imported for the type checker
TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse


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


def args_init(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("dir", nargs="?", metavar="DIR", help="lay DIR/memory (default ./memory)")
    sub.add_argument("--global", dest="glob", action="store_true", help="lay ~/.rouse instead")
    sub.add_argument("--no-examples", action="store_true", help="only the instruction file")
    sub.add_argument("--wire", action="store_true", help="then `rouse wire` (CLAUDE.md/AGENTS.md)")


def args_new(sub: argparse.ArgumentParser) -> None:
    sub.add_argument(
        "type",
        metavar="TYPE",
        help="intention goal action task reminder backlog belief motivation persona note",
    )
    sub.add_argument("slug", nargs="?", metavar="SLUG", help="lowercase letters, digits and -")
    sub.add_argument("--under", metavar="REF", help="the record it nests under")
    sub.add_argument("--set", action="append", metavar="K=V", help="a header field (repeatable)")
    sub.add_argument("--body", metavar="TEXT", help="the body text, or - to read stdin")


def args_move(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("ref", metavar="REF", help="a slug or tree-relative path")
    sub.add_argument("--note", metavar="TEXT", help="append a dated line to the body")


def args_snooze(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("ref", metavar="REF", help="a slug or tree-relative path")
    when = sub.add_mutually_exclusive_group(required=True)
    when.add_argument("--until", metavar="WHEN", help="a stamp or +INTERVAL")
    when.add_argument("--for", metavar="INTERVAL", help="e.g. 2h, 3d")
    sub.add_argument("--note", metavar="TEXT", help="why, appended as a dated line")


def args_close(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("ref", metavar="REF", help="a slug or tree-relative path")
    ending = sub.add_mutually_exclusive_group(required=True)
    ending.add_argument("--done", action="store_true", help="it is done")
    ending.add_argument("--dropped", metavar="WHY", help="dropped, with the reason")
    ending.add_argument("--abandoned", metavar="WHY", help="a goal given up, with the reason")
    sub.add_argument(
        "--outcome", metavar="O", help="an action's: as-expected surprising contradicts"
    )


def args_promote(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("slug", metavar="SLUG", help="the backlog item's slug")
    sub.add_argument("--closes-when", required=True, metavar="TEXT", help="how you'll know")
    sub.add_argument("--under", metavar="REF", help="nest it under this record")


def args_remind(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("slug", metavar="SLUG", help="the reminder's slug")
    sub.add_argument("--due", required=True, metavar="WHEN", help="a stamp or +2h")
    sub.add_argument("--nag", metavar="INTERVAL", help="re-fire until done, starting every I")
    sub.add_argument("--body", metavar="TEXT", help="what to say when it fires, or - for stdin")


def args_stamp(sub: argparse.ArgumentParser) -> None:
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
