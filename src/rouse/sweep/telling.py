"""``rouse tell REF MESSAGE``: an agent, in any session or run, reaches the owner.

The message is written to the tree's own ledger (``.rouse/ledger.sqlite3``,
a ``tell`` row of its outbox) at once, whether or not a sweeper runs, and the record's
log notes it. The tree's (leading) sweeper delivers it at its next tick
through the record's ``channel:`` or its default (:mod:`rouse.sweep.channels`).
This module owns the verb: checking the message, writing it, and saying where
it will go; it sends nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from rouse.core import layout
from rouse.core.errors import RouseError, UsageError
from rouse.core.timefmt import format_stamp, iso_stamp
from rouse.core.tree import display_ids, walk
from rouse.state import acts
from rouse.state.locks import holder, sweeper_channels
from rouse.sweep.ledger import Ledger
from rouse.sweep.ledger.tells import Outreach
from rouse.sweep.wake import ID_RE as ID_RE  # (a tell's id is wake-shaped)
from rouse.trust.stamp import SigningStore

#: The longest message ``tell`` takes, in characters.
MAX_MESSAGE = 4000
#: A channel's name (``--channel NAME=SINK``, a reminder's ``channel:``).
CHANNEL_RE = re.compile(r"^[a-z0-9][a-z0-9-]{0,39}\Z")
#: How much of the message the record's log quotes.
LOG_QUOTE = 80


@dataclass
class Told:
    """What ``tell`` wrote, and where the message will go."""

    id: str
    record: str
    path: str
    channel: str | None
    told_at: datetime
    goes: str  # one line: where it will go, or that it waits
    warnings: list[str] = field(default_factory=list)
    state: str = "pending"  # or waiting: no sweeper that ticks here has a channel for it

    @property
    def summary(self) -> str:
        return f"told the owner about {self.record} (tell {self.id}): {self.goes}"

    def as_json(self) -> dict[str, object]:
        return {
            **{key: getattr(self, key) for key in ("id", "record", "path", "channel", "state")},
            "told_at": iso_stamp(self.told_at),
            "goes": self.goes,
        }


def check_message(text: str) -> str:
    """The message as it will be sent: text, not empty, at most MAX_MESSAGE characters,
    no control character but newlines (a CRLF is taken as a newline)."""
    text = text.replace("\r\n", "\n").strip()
    if not text:
        raise UsageError("the message is empty: say what the owner should hear")
    if len(text) > MAX_MESSAGE:
        raise UsageError(
            f"the message is {len(text):,} characters, over the {MAX_MESSAGE:,} a tell takes: "
            "shorten it, and put the detail in the record or a note"
        )
    for char in text:
        if char != "\n" and (ord(char) < 32 or 127 <= ord(char) < 160):
            raise UsageError(
                f"the message holds a control character (U+{ord(char):04X}): only text and "
                "newlines reach the owner"
            )
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError("the message is not valid UTF-8 text") from None
    return text


def new_tell_id(now: datetime) -> str:
    """A fresh opaque tell id (``t`` + time + 40 random bits): the webhook-id of every try."""
    import secrets

    return f"t{now:%Y%m%dT%H%M%S}-{secrets.token_hex(5)}"


def tell(root: Path, ref: str, message: str, now: datetime) -> Told:
    """Write a message to the owner about the record ``ref``; the sweeper delivers it.

    Refused (UsageError, nothing written): a bad or ambiguous ``ref``, an empty,
    oversized or control-character message.
    """
    text = check_message(message)
    tree = walk(root)
    record = tree.resolve(ref)
    shown = display_ids(tree)[record.dir]
    channel = (record.get("channel") or "").strip() if record.type == "reminder" else ""
    made = Outreach(
        id=new_tell_id(now),
        record=shown,
        type=record.type,
        slug=record.slug,
        path=record.dir,
        file=record.rel,
        reason="tell",
        nudge=0,
        last_moved="",
        at=now.strftime("%Y-%m-%d %H:%M:%S"),
        text=text,
        channel=channel,
    )
    where, waits = goes(root, channel, now)
    with Ledger(root) as book:  # durable from here on: the sweeper finds it at its next tick
        book.add_tell(made, "tell")
        if waits:  # no sweeper that ticks here has a channel for it: it waits, said at once
            book.hold(made.id, waits)
    told = Told(made.id, shown, record.dir, channel or None, now, where)
    told.state = "waiting" if waits else "pending"
    first = text.split("\n", 1)[0]
    quoted = first if len(first) <= LOG_QUOTE else first[: LOG_QUOTE - 1] + "…"
    via = f" via channel {layout.shown(channel)}" if channel else ""
    line = f"- {format_stamp(now)}: told the owner{via} (tell {made.id}): {quoted}"
    store = SigningStore(root)
    try:
        with store.lock():
            store.append_log(record.rel, {}, line)
            # telling the owner answers the record's wake
            acts.note(root, record.dir, now, store.secret)
    except (RouseError, OSError) as exc:  # the tell is in the ledger all the same
        told.warnings.append(f"the tell is written, but its note in {record.rel} is not: {exc}")
        acts.note(root, record.dir, now, store.secret)
    return told


def waiting_reason(channel: str) -> str:
    """Why a tell for ``channel`` ('' none) waits when no channel of the sweeper takes it
    (the ledger's ``error`` of a ``waiting`` tell)."""
    if channel:
        return f"no channel {channel!r} and no default (--notify)"
    return "no default channel (--notify)"


def goes(root: Path, channel: str, now: datetime) -> tuple[str, str]:
    """Where a tell meant for ``channel`` ('' none) will go, as the sweeper last said;
    and, when no running sweeper may still take it, why it waits ('' it does not)."""
    found = sweeper_channels(root, now)
    if found is None:
        return (
            "it waits for a sweeper: none is running or ticking on this tree "
            "(`rouse sweep --notify SINK` delivers it)"
        ), ""
    named, default = found
    if channel and channel in named:
        return f"it goes via channel {channel} ({named[channel]}) at the sweeper's next tick", ""
    if default is not None:
        if channel:
            return (
                f"the sweeper knows no channel {channel!r}: it goes to the default "
                f"({default}) at its next tick, with a warning"
            ), ""
        return f"it goes to the default ({default}) at the sweeper's next tick", ""
    if (holder(root) or {}).get("running"):
        return (
            "it waits: the running sweeper has no channel for it "
            "(restart it with --notify SINK or --channel NAME=SINK)"
        ), ""
    return (
        "it waits: no sweeper is running, and the last one to tick (sweep --once) had no "
        "channel for it (give the sweeper --notify SINK or --channel NAME=SINK)"
    ), waiting_reason(channel)
