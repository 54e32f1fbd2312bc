"""The verbs that write memory: init, new, remind, move, snooze, close, promote, and tell.

``rouse stamp`` (origins and their signatures) is :mod:`rouse.cli.stamp`.
"""

from __future__ import annotations

import sys
from pathlib import Path

from rouse.cli.common import (
    emit,
    emit_json,
    read_body,
    report_changed,
    report_created,
    resolve_now,
    speaking,
    tree_root,
)
from rouse.core import layout
from rouse.core.errors import UsageError
from rouse.core.home import global_tree, stamp_key_path
from rouse.core.timefmt import format_stamp

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse


def cmd_init(args: argparse.Namespace) -> int:
    from rouse.records import scaffold
    from rouse.trust import stampkey

    if args.glob and args.dir:
        raise UsageError("give DIR or --global, not both")
    target = global_tree() if args.glob else Path(args.dir or ".").resolve() / "memory"
    key_path = stamp_key_path()
    result = scaffold.init(
        target,
        resolve_now(args),
        examples=not args.no_examples,
        stamp_key=stampkey.load_key(key_path),
        new_key=None if args.no_key else key_path,
    )
    # the line goes into a committed file: the project's own path, never this checkout's
    instructions = (
        target / layout.INSTRUCTIONS if args.glob else Path(target.name, layout.INSTRUCTIONS)
    )
    emit(
        [
            f"laid a memory tree at {target}",
            *result.notes,
            "",
            "Add this line to your agent's instruction file (CLAUDE.md, AGENTS.md, ...):",
            "  " + scaffold.AGENT_LINE.format(instructions=f"`{instructions}`"),
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
    from rouse.records.inputs import parse_assignments

    now = resolve_now(args)
    fields = parse_assignments(args.set or [], now)
    if args.supersedes is not None:
        fields["supersedes"] = args.supersedes
    origin = speaking(args)
    created = scaffold.new(
        tree_root(args),
        args.type,
        args.slug,
        now,
        under=args.under,
        fields=fields,
        body=read_body(args.body),
        origin=origin,
    )
    return report_created(created, args)


def cmd_remind(args: argparse.Namespace) -> int:
    from rouse.records import scaffold

    origin = speaking(args)
    created = scaffold.remind(
        tree_root(args),
        args.slug,
        args.due,
        resolve_now(args),
        nag=args.nag,
        body=read_body(args.body),
        every=args.every,
        until=args.until,
        origin=origin,
    )
    return report_created(created, args)


def cmd_move(args: argparse.Namespace) -> int:
    from rouse.records import lifecycle

    changed = lifecycle.move(
        tree_root(args), args.ref, resolve_now(args), args.note, force=args.force
    )
    return report_changed(changed, args)


def cmd_tell(args: argparse.Namespace) -> int:
    from rouse.sweep import telling

    told = telling.tell(tree_root(args), args.ref, args.message, resolve_now(args))
    for warning in told.warnings:
        print(f"rouse: warning: {warning}", file=sys.stderr)
    if args.json:
        emit_json(told.as_json())
    else:
        emit([told.summary])
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
        clear=args.clear,
    )
    nxt = [] if changed.next_due is None else [f"next due: {format_stamp(changed.next_due)}"]
    return report_changed(changed, args, *nxt)


def cmd_close(args: argparse.Namespace) -> int:
    from rouse.records import lifecycle

    ending, why = "done", None
    for name in ("dropped", "abandoned", "failed", "cancelled"):
        if getattr(args, name) is not None:
            ending, why = name, getattr(args, name)
    changed = lifecycle.close(
        tree_root(args),
        args.ref,
        resolve_now(args),
        ending,
        why,
        args.outcome,
        force=args.force,
        series=args.series,
    )
    return report_changed(changed, args)


def cmd_forget(args: argparse.Namespace) -> int:
    from rouse.pack import index
    from rouse.records import notes
    from rouse.trust.origins import origin_reader

    root = tree_root(args)
    done = notes.forget(root, args.ref, args.why, resolve_now(args))
    index.forget(root, origin_reader(root).cache_secret)
    if args.json:
        emit_json({"path": done.rel, "kind": done.kind, "forgotten": done.at})
    else:
        emit([done.summary])
    return 0


def cmd_review(args: argparse.Namespace) -> int:
    import os

    from rouse.records import notes

    root, now = tree_root(args), resolve_now(args)
    done = notes.review(root, args.ref, now, args.note, key_path=stamp_key_path(), env=os.environ)
    if args.json:
        emit_json({"path": done.rel, "reviewed": done.reviewed, "readings": done.readings})
    else:
        emit([done.summary])
    return 0


def cmd_promote(args: argparse.Namespace) -> int:
    from rouse.records import promoting

    origin = speaking(args)
    changed = promoting.promote(
        tree_root(args), args.slug, args.closes_when, resolve_now(args), args.under, origin
    )
    return report_changed(changed, args)


def args_forget(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("ref", metavar="REF", help="a note's slug, or a note's or context file's path")
    sub.add_argument(
        "--why",
        metavar="TEXT",
        required=True,
        help="the reason, kept word for word in place of the text",
    )
    _json_option(sub, "path kind forgotten")


def args_review(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("ref", metavar="NOTE", help="a note's slug or path")
    sub.add_argument("--note", metavar="TEXT", help="why it is still true, for its log")
    _json_option(sub, "path reviewed readings")


def args_init(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("dir", nargs="?", metavar="DIR", help="lay DIR/memory (default ./memory)")
    sub.add_argument("--global", dest="glob", action="store_true", help="lay ~/.rouse instead")
    sub.add_argument("--no-examples", action="store_true", help="only the instruction file")
    sub.add_argument(
        "--no-key",
        action="store_true",
        help="make no stamp key when there is none ($ROUSE_STAMP_KEY, else "
        "~/.config/rouse/stamp.key): nothing is signed, origins read as written",
    )
    sub.add_argument("--wire", action="store_true", help="then `rouse wire` (CLAUDE.md/AGENTS.md)")


def args_new(sub: argparse.ArgumentParser) -> None:
    sub.add_argument(
        "type",
        metavar="TYPE",
        help="intention goal action task reminder backlog belief motivation persona note",
    )
    sub.add_argument("slug", nargs="?", metavar="SLUG", help="lowercase letters, digits and -")
    sub.add_argument(
        "--under",
        metavar="REF",
        help="the record it nests under, down the ladder intention > goal > action > task "
        "(a reminder under any of them)",
    )
    sub.add_argument(
        "--set",
        action="append",
        metavar="K=V",
        help="a header field rouse reads, e.g. closes-when=TEXT (repeatable)",
    )
    sub.add_argument("--body", metavar="TEXT", help="the body text, or - to read stdin")
    sub.add_argument(
        "--supersedes",
        metavar="OLD",
        help="a note or context file: the slug of the one it replaces (it leaves the pack, "
        "and recall ranks it after this one)",
    )
    _origin_option(sub)
    _json_option(sub, "record type path file fields fill_in warnings")


def _origin_option(sub: argparse.ArgumentParser) -> None:
    sub.add_argument(
        "--origin",
        metavar="CLASS",
        help="who it is from, when rouse's own reading is wrong: owner system agent "
        "untrusted (inside an agent session only untrusted)",
    )


def _json_option(sub: argparse.ArgumentParser, keys: str) -> None:
    sub.add_argument(
        "--json",
        action="store_true",
        help=f"print one JSON object ({', '.join(keys.split())}); times are ISO 8601 "
        "with their offset, durations seconds",
    )


def _force_option(sub: argparse.ArgumentParser, what: str) -> None:
    sub.add_argument("--force", action="store_true", help=what)


def args_move(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("ref", metavar="REF", help="a slug or tree-relative path")
    sub.add_argument("--note", metavar="TEXT", help="append a dated line to the body")
    _force_option(sub, "stamp a time earlier than its last-moved")
    _json_option(sub, "record path file moved_at note")


def args_tell(sub: argparse.ArgumentParser) -> None:
    sub.add_argument(
        "ref", metavar="REF", help="the record it is about: a slug or tree-relative path"
    )
    sub.add_argument(
        "message",
        metavar="MESSAGE",
        help="what the owner should hear (up to 4,000 characters; newlines kept)",
    )
    _json_option(sub, "id record path channel state told_at goes")


def args_snooze(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("ref", metavar="REF", help="a slug or tree-relative path")
    when = sub.add_mutually_exclusive_group(required=True)
    when.add_argument("--until", metavar="WHEN", help="not due before then: a stamp or +INTERVAL")
    when.add_argument("--for", metavar="INTERVAL", help="not due for this long: e.g. 2h, 3d")
    when.add_argument("--clear", action="store_true", help="remove the record's snooze")
    sub.add_argument("--note", metavar="TEXT", help="why, appended as a dated line")
    _json_option(sub, "record path file until next_due")


def args_close(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("ref", metavar="REF", help="a slug or tree-relative path")
    ending = sub.add_mutually_exclusive_group(required=True)
    ending.add_argument("--done", action="store_true", help="it is done")
    ending.add_argument("--dropped", metavar="WHY", help="dropped, with the reason")
    ending.add_argument("--abandoned", metavar="WHY", help="a goal given up, with the reason")
    ending.add_argument("--failed", metavar="WHY", help="a task that failed, with the reason")
    ending.add_argument("--cancelled", metavar="WHY", help="a task called off, with the reason")
    sub.add_argument(
        "--outcome", metavar="O", help="an action's: as-expected surprising contradicts"
    )
    sub.add_argument(
        "--series",
        action="store_true",
        help="with --done on a repeating reminder: end the series (done alone arms the next)",
    )
    _force_option(sub, "end a record that already ended, or at a time before its last-moved")
    _json_option(sub, "record path file status ended_at reason outcome previous_status next_due")


def args_promote(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("slug", metavar="SLUG", help="the backlog item's slug")
    sub.add_argument("--closes-when", required=True, metavar="TEXT", help="how you'll know")
    sub.add_argument("--under", metavar="REF", help="nest it under this record")
    _origin_option(sub)
    _json_option(sub, "record path file was promoted_at closes_when")


def args_remind(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("slug", metavar="SLUG", help="the reminder's slug")
    sub.add_argument(
        "--due", metavar="WHEN", help="a stamp, +2h or mon 9am (with --every: its first occurrence)"
    )
    sub.add_argument("--nag", metavar="INTERVAL", help="re-fire until done, starting every I")
    sub.add_argument(
        "--every",
        metavar="RULE",
        help="repeat: 1d, 2w, 1mo, daily 07:00, weekdays 09:00, mon,thu 18:30, monthly 1 09:00",
    )
    sub.add_argument("--until", metavar="WHEN", help="with --every: no occurrence after WHEN")
    sub.add_argument("--body", metavar="TEXT", help="what to say when it fires, or - for stdin")
    _origin_option(sub)
    _json_option(sub, "record type path file fields fill_in warnings")
