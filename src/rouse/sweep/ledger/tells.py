"""The outbox's tells: messages to the owner, and the message a sink sends.

A tell is written by ``rouse tell`` (source ``tell``) or by the sweeper when a
reminder with a ``channel:`` was woken (source ``reminder``: the wake's text,
reaching the owner too). It lives in the tree's own ``.rouse/ledger.sqlite3``
whatever ledger the sweeper keeps its wakes in, so it is durable the moment
it is written. It goes through the outbox's one state machine; what only a
tell has is its channel and its ``waiting`` state (the sweeper has no channel
for it yet).

Which sink a tell goes through, and when, is :mod:`rouse.sweep.channels`'.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rouse.core.timefmt import iso_stamp
from rouse.sweep.ledger.entry import as_time, said
from rouse.sweep.ledger.outbox import OutboxRows
from rouse.sweep.wake import Wake


@dataclass(frozen=True)
class Outreach(Wake):
    """A tell as a sink sends it: wake-shaped (every sink takes it), its own payload."""

    channel: str = ""  # the channel it was meant for ('' none: the default)
    #: the channel it goes through when it names none: the default's name, for an exec
    #: channel's ``ROUSE_CHANNEL``
    via: str = ""

    def payload(self) -> dict[str, Any]:
        """The webhook's JSON object: the wake's fields that make sense, and ``kind``."""
        return {
            "id": self.id,
            "kind": "tell",
            **{key: getattr(self, key) for key in ("record", "type", "slug", "path")},
            "channel": self.channel or None,
            "told_at": iso_stamp(self.made_at),
            "text": self.text,
        }

    @property
    def extra_env(self) -> dict[str, str]:
        """What an exec channel gets besides the wake's variables."""
        return {"ROUSE_TELL_ID": self.id, "ROUSE_CHANNEL": self.channel or self.via}


def for_person(text: str, record: str, path: str, when: str) -> str:
    """A message as a person reads it: its words, then one line saying which record it
    is about and when (``told 2026-03-14 12:00``, ``due …``). No wake's prompt lines."""
    return f"{text.rstrip()}\n\n— about {record} ({path}), {when}"


def outreach(row: Any, text: str | None = None, via: str = "") -> Outreach:
    """The message of a tell's row (``text``: the text to send, default the row's;
    ``via``: the default channel's name, when the row names no channel)."""
    return Outreach(
        **{key: row[key] for key in ("id", "record", "type", "slug", "path", "channel")},
        file=f"{row['path']}/{row['type']}.md",
        reason="tell",
        nudge=0,
        last_moved="",
        at=row["made_at"],
        text=row["text"] if text is None else text,
        via=via,
    )


class TellRows(OutboxRows):
    """Reading and writing tells (mixed into :class:`~rouse.sweep.ledger.sqlite.Ledger`)."""

    def add_tell(self, message: Outreach, source: str) -> bool:
        """Write a new tell, pending; False if one with this id is there already."""
        done = self.run(
            "INSERT INTO outbox (kind, tree, id, record, path, type, slug, channel, source, "
            "text, made_at, state) VALUES ('tell',?,?,?,?,?,?,?,?,?,?,'pending') "
            "ON CONFLICT (id) DO NOTHING",
            self.tree,
            message.id,
            message.record,
            message.path,
            message.type,
            message.slug,
            message.channel,
            source,
            message.text,
            message.at,
        )
        return done.rowcount == 1

    def owed_tells(self) -> list[Any]:
        """Tells not delivered or given up yet, oldest first."""
        return self.run(
            "SELECT * FROM outbox WHERE kind = 'tell' AND tree = ? "
            "AND state IN ('pending', 'waiting') ORDER BY made_at, id",
            self.tree,
        ).fetchall()


def tell_json(row: Any) -> dict[str, object]:
    """A tell as ``rouse log --json`` shows it, beside the wakes (``kind: tell``)."""
    state = str(row["state"])
    return {
        "id": row["id"],
        "kind": "tell",
        "record": row["record"],
        "path": row["path"],
        "reason": "tell",
        "source": row["source"],
        "channel": row["channel"] or None,
        "sink": row["sink"],
        "state": said(state),
        "attempts": row["attempts"],
        "made_at": iso_stamp(as_time(row["made_at"])),
        "first_failure": iso_stamp(as_time(row["first_failure"])),
        "last_attempt": iso_stamp(as_time(row["last_attempt"])),
        "next_attempt": iso_stamp(as_time(row["next_attempt"])) if state == "pending" else None,
        "finished": iso_stamp(as_time(row["finished"])),
        "receipt": row["receipt"],
        "error": row["error"],
    }
