"""The new wakes a session is shown, read from the ledger and the tree (SPEC §11).

:func:`rouse.agents.prompt_hook.take_new` keeps each session's seen-set and lists the
nudge files it has not shown; this module, loaded only when one is new, says which of
them stand: vouched for by the ledger, their record not moved since, each reminder's
message fenced by its origin.
"""

from __future__ import annotations

import time
from datetime import datetime
from pathlib import Path

from rouse.state import nudges
from rouse.state.files import suppress

# a prompt whose new wakes the ledger does not vouch for yet reads no tree: what
# standing wakes need is imported with them
TYPE_CHECKING = False
if TYPE_CHECKING:
    from rouse.core.tree import Tree

#: A nudge file younger than this that the ledger does not know yet is looked at again.
SETTLE_SECONDS = 60


def unsettled_names(strays: list[nudges.Nudge]) -> set[str]:
    """Names of nudge files the ledger does not vouch for that were written just now."""
    now = time.time()
    found = set()
    for nudge in strays:
        if nudge.path is None:
            continue
        with suppress(OSError):
            if now - nudge.path.stat(follow_symlinks=False).st_mtime < SETTLE_SECONDS:
                found.add(nudge.name)
    return found


def candidates(root: Path, names: set[str]) -> list[nudges.Nudge]:
    """The new nudge files by name and time only: the ledger says the rest (never the file)."""
    found = []
    for name in names:
        try:
            at = datetime.strptime(name[:15], nudges.NAME_STAMP)
        except ValueError:
            continue
        found.append(nudges.Nudge(nudges.nudge_dir(root) / name, at, "", ""))
    found.sort(key=lambda n: (n.at, n.name))
    return found


def standing(root: Path, kept: list[nudges.Nudge]) -> list[tuple[str, nudges.Nudge]]:
    """Of these nudges (the ledger vouches for them), the ones whose record has not moved
    since."""
    if not kept:
        return []
    from rouse.cache.walk import cached_walk
    from rouse.core.home import stamp_key_path
    from rouse.core.tree import display_ids
    from rouse.state import acts
    from rouse.trust.stampkey import cache_secret

    secret = cache_secret(stamp_key_path())
    tree = cached_walk(root, secret)  # the pack's cache, warm
    # an act later than the wall clock answers nothing; acts.json is MACed under the key
    live = nudges.standing(tree, kept, acts.load(root, secret, datetime.now()))
    fill_messages(root, tree, live)
    ids = display_ids(tree)
    return [(ids.get(n.record_dir, n.record_dir), n) for n in live]


def fill_messages(root: Path, tree: Tree, live: list[nudges.Nudge]) -> None:
    """Each woken reminder's message, fenced when its origin is not to be trusted."""
    reminders = [  # (a note's drift wake has no record)
        n for n in live if getattr(tree.records.get(n.record_dir), "type", "") == "reminder"
    ]
    if not reminders:
        return
    from rouse.core.home import stamp_key_path
    from rouse.trust.fence import message_block
    from rouse.trust.origins import origin_reader

    origins = origin_reader(root, stamp_key_path())
    for nudge in reminders:
        record = tree.records[nudge.record_dir]
        shown, more = nudges.message(root, record)
        nudge.says = message_block(shown, more, record.rel, origins(record))
    origins.flush()
