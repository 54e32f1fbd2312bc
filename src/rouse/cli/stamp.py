"""``rouse stamp``: write origins and sign them, make the stamp key, re-sign what changed.

The library side is :mod:`rouse.trust.stamp` (and :mod:`rouse.trust.stampkey` for the
key); this module parses, asks on a terminal, and prints.
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

from rouse.cli.common import emit, tree_root
from rouse.core.errors import UsageError
from rouse.core.home import stamp_key_path
from rouse.trust.speaker import vouching

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse


def cmd_stamp(args: argparse.Namespace) -> int:
    from rouse.trust import stamp as stamping
    from rouse.trust import stampkey

    if args.init_key:
        if args.origin or args.turn or args.files:
            raise UsageError("--init-key takes no --origin, --turn or FILE")
        if args.vouch_existing:
            vouching(os.environ, "--vouch-existing")
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
        if trees:
            _vouch_existing(trees[-1], args.vouch_existing)
        return 0
    if args.vouch_existing:
        raise UsageError("--vouch-existing goes with --init-key")
    if args.upgrade or args.changed:
        vouching(os.environ, "--upgrade" if args.upgrade else "--changed")
        return _resign(args)
    if not args.origin:
        raise UsageError("stamp needs --origin CLASS (or --init-key, --upgrade, --changed)")
    if not args.files:
        raise UsageError("stamp needs at least one FILE")
    if args.origin.strip().lower() in ("owner", "system"):
        vouching(os.environ, f"--origin {args.origin.strip().lower()}")
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


def _vouch_existing(root: Path, vouch: bool) -> None:
    """After ``--init-key``: the context files the new key quarantines (nothing signed
    vouches for them yet), vouched for as the owner's with ``--vouch-existing`` or a yes
    on a terminal; else listed with the command that vouches for them."""
    from rouse.core.tree import walk
    from rouse.lint.check import quarantined
    from rouse.trust import stamp as stamping
    from rouse.trust import stampkey
    from rouse.trust.origins import origin_reader

    held = sorted(c.rel for c in quarantined(walk(root), origin_reader(root, stamp_key_path())))
    if not held:
        return
    emit([f"{len(held)} context file(s) in {root} are quarantined from now on (nothing signed "
          "vouches for them):", *(f"  {rel}" for rel in held)])  # fmt: skip
    if not vouch and sys.stdin.isatty() and sys.stdout.isatty():
        answer = input("vouch for them as the owner now? [y/N] ").strip().lower()
        vouch = answer in ("y", "yes")
    if not vouch:
        emit(["vouch for those that are yours, from outside the agent: "
              "rouse stamp --origin owner FILE…"])  # fmt: skip
        return
    key = stampkey.load_key(stamp_key_path())
    done = stamping.stamp(root, [str(root / rel) for rel in held], "owner", None, key=key)
    emit([f"stamped {rel} origin=owner (signed)" for rel in done.written])


def _resign(args: argparse.Namespace) -> int:
    """``stamp --upgrade`` (v1 → v2) and ``stamp --changed`` (edited since stamped)."""
    from rouse.trust import stamp as stamping
    from rouse.trust import stampkey

    if args.origin or args.turn or args.files or (args.upgrade and args.changed):
        raise UsageError("--upgrade and --changed take no --origin, --turn or FILE, nor each other")
    key = stampkey.load_key(stamp_key_path())
    if key is None:
        raise UsageError("there is no stamp key to sign with: `rouse stamp --init-key` makes one")
    root = tree_root(args)
    states = frozenset({"verified-v1"} if args.upgrade else {"mismatch", "unsigned", "unstamped"})
    listed = stamping.unvouched(root, key, states)
    if not listed:
        emit(["nothing to re-sign: every stamp is v2 and verifies" if args.upgrade
              else "nothing to re-sign: every written origin verifies"])  # fmt: skip
        return 0
    why = {
        "verified-v1": "signed v1",
        "mismatch": "edited since stamped",
        "unsigned": "no signature",
        "unstamped": "never stamped (written outside rouse): vouching signs it owner",
    }
    emit(
        [
            f"{item.rel}\t{'no origin' if item.state == 'unstamped' else 'origin ' + item.origin}"
            f"\t{why[item.state]}"
            for item in listed
        ]
    )
    if not args.upgrade and not args.yes:
        if not sys.stdin.isatty():
            print(
                f"rouse: {len(listed)} file(s) above are not signed; review "
                "them, then re-sign with `rouse stamp --changed --yes` (from outside the agent)",
                file=sys.stderr,
            )
            return 1
        answer = input(
            f"re-sign these {len(listed)} file(s) with the origin each carries (owner for "
            "those with none)? [y/N] "
        )
        if answer.strip().lower() not in ("y", "yes"):
            emit(["nothing re-signed"])
            return 1
    done = stamping.resign(root, key, listed)
    emit(
        [f"re-signed {rel}" for rel in done.written]
        + [f"left {rel}: it changed after it was listed" for rel in done.skipped]
    )
    return 0


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
    sub.add_argument(
        "--vouch-existing",
        action="store_true",
        help="with --init-key: stamp the tree's context files as the owner's, signed",
    )
    sub.add_argument(
        "--upgrade",
        action="store_true",
        help="re-sign files whose v1 signature verifies as v2 (same origin and turn)",
    )
    sub.add_argument(
        "--changed",
        action="store_true",
        help="list files whose written origin does not verify (edited by hand since "
        "stamping); re-sign them, with the origin each carries, when you confirm",
    )
    sub.add_argument("--yes", action="store_true", help="with --changed: re-sign without asking")
