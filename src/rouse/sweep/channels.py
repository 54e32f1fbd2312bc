"""Channels: named sinks that reach the owner, and the Sweeper's part that uses them.

``sweep --channel phone=webhook URL --channel mail=exec 'CMD' --notify phone``:
:class:`Channels` is that configuration, checked when the sweeper starts. A
tell (``rouse tell``, :mod:`rouse.sweep.telling`) goes through the channel its
record names (a reminder's ``channel:``), else the default (``--notify``); a
name the sweeper does not know goes to the default with a warning in the
message; with no default it waits (state ``waiting``, which ``status`` and the
pack report). :class:`Teller` delivers the tree's owed tells at each tick the
sweeper leads, within the tick's slice for sends to the owner: one try per tell
per tick, the wakes' backoff between tries,
given up 24h after the first failure as a nudge file for the pack.

Without an agent run, a woken reminder with a ``channel:`` also reaches the
owner: :meth:`Teller.outreach` writes its message as a tell (source
``reminder``), sent through its channel like any other. What a channel gets is
written for a person (:func:`~rouse.sweep.ledger.tells.for_person`): the words,
then which record and when; never the wake's prompt to the agent.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from rouse.core.timefmt import format_stamp, parse_stamp
from rouse.core.tree import Record
from rouse.state import nudges
from rouse.sweep.ledger import Ledger, gives_up, ready
from rouse.sweep.ledger.entry import as_time
from rouse.sweep.ledger.tells import Outreach, for_person, outreach
from rouse.sweep.quiet import QuietHours
from rouse.sweep.report import ERRORS, EVERY_TICK, TickReport, Voice, moment
from rouse.sweep.sinks import Sink, SinkError, write_nudge
from rouse.sweep.telling import waiting_reason
from rouse.sweep.wake import Wake


@dataclass
class Channels:
    """The sweeper's channels by name, and its default (``--notify``; None: none)."""

    named: dict[str, Sink] = field(default_factory=dict)
    default: Sink | None = None
    #: the name the default was given by (``--notify phone``), if it is a named channel
    default_name: str | None = None

    def route(self, channel: str) -> tuple[Sink | None, str, str]:
        """For a tell meant for ``channel`` ('' none): the sink, how the ledger names the
        way it went, and a warning to put before its text ('' none)."""
        if channel and channel in self.named:
            sink = self.named[channel]
            return sink, f"channel {channel} ({sink.kind})", ""
        if self.default is None:
            return None, "", ""
        label = f"default{' ' + self.default_name if self.default_name else ''} "
        label += f"({self.default.kind})"
        if not channel:
            return self.default, label, ""
        return (
            self.default,
            label,
            f"(rouse: this message was meant for channel {channel!r}, which the sweeper "
            "does not know; it came through the default channel)\n\n",
        )

    def summary(self) -> dict[str, str]:
        return {name: sink.describe() for name, sink in self.named.items()}

    def describe(self) -> str:
        """For the sweeper's first line."""
        parts = [f"{name} = {sink.describe()}" for name, sink in self.named.items()]
        if self.default is not None:
            parts.append(f"default {self.default_name or self.default.describe()}")
        else:
            parts.append("no default (a tell for no known channel waits)")
        return "channels " + ", ".join(parts)


@dataclass(eq=False)
class Teller:
    """Delivers a tree's tells through its channels, recording each try in the ledger.

    ``ledger`` is the tree's own SQLite ledger (tells live there even in a fleet).
    """

    root: Path
    ledger: Ledger
    channels: Channels
    voice: Voice
    quiet: QuietHours | None
    #: asked before each send whether this sweeper still leads (in a fleet; else yes)
    fence: Callable[[float], bool]

    def outreach(self, made: Wake, record: Record | None) -> None:
        """A reminder's wake landed: if the reminder names a channel, its text goes
        there too (a tell, id derived from the wake's: written once)."""
        if record is None or record.type != "reminder" or isinstance(made, Outreach):
            return
        channel = (record.get("channel") or "").strip()
        if not channel:
            return
        text = self._reminder_text(made, record)
        message = Outreach(
            **{**made.as_dict(), "id": f"r{made.id}", "reason": "tell", "text": text},
            channel=channel,
        )
        if self.ledger.add_tell(message, "reminder"):
            self.voice.say(f"{made.at} {made.record}: its channel {channel} is told too")

    def _reminder_text(self, made: Wake, record: Record) -> str:
        """A woken reminder as its owner reads it: its message, when it was due, and
        the record (the wake's text speaks to the agent)."""
        lines, more = nudges.message(self.root, record)
        said = "\n".join(lines) if lines else f"{made.record} is due"
        if more:
            said += f"\n(… {more} more line(s) in {record.rel})"
        try:
            due = format_stamp(parse_stamp((record.get("due") or "").strip()))
        except ValueError:
            due = made.at[:16]
        return for_person(f"Reminder: {said}", made.record, made.path, f"due {due}")

    def deliver(self, now: datetime, report: TickReport) -> None:
        """Send each owed tell whose time has come (one try per tell per tick), within
        the tick's slice (:class:`~rouse.sweep.report.Slice`)."""
        for row in self.ledger.owed_tells():
            if report.slice.spent():
                self.voice.say(f"{moment(now)} owed tells wait for the next tick", EVERY_TICK)
                return
            try:
                self._one(row, now, report)
            except Exception as exc:  # one bad tell never stops the others, nor the tick
                report.errors += 1
                self.voice.say(
                    f"{moment(now)} error on tell {row['id']}: {type(exc).__name__}: {exc}", ERRORS
                )

    def _one(self, row: Any, now: datetime, report: TickReport) -> None:
        sink, label, warning = self.channels.route(row["channel"])
        what = f"tell {row['id']} about {row['record']}"
        if sink is None:
            why = waiting_reason(row["channel"])
            if row["state"] != "waiting" or row["error"] != why:
                self.ledger.hold(row["id"], why)
                self.voice.say(f"{moment(now)} {what} waits: {why}", ERRORS)
            return
        if gives_up(as_time(row["first_failure"]), now):
            self._give_up(row, label, now, report)
            return
        if not ready(as_time(row["next_attempt"]), now):
            return
        if sink.holdable and self.quiet is not None and self.quiet.holds(now):
            return  # quiet hours: the owner hears it when they end
        if not self.fence(float(getattr(sink, "timeout", 0) or 0)):
            return  # no longer the leader: the new one sends it
        text = row["text"]
        if row["source"] != "reminder":  # (a reminder's is written for a person already)
            told = row["made_at"][:16]
            text = for_person(text, row["record"], row["path"], f"told {told}")
        via = "" if row["channel"] else (self.channels.default_name or "default")
        message = outreach(row, warning + text, via)
        try:
            receipt = sink.send(message, now)
        except SinkError as exc:
            self.ledger.tried(row["id"], now, receipt=None, error=str(exc), sink=label)
            report.tells_failed.append(row["id"])
            self.voice.say(f"{moment(now)} could not deliver {what} via {label}: {exc}", ERRORS)
            return
        self.ledger.tried(row["id"], now, receipt=receipt, error=None, sink=label)
        report.told.append(row["id"])
        self.voice.say(f"{moment(now)} delivered {what} to the owner via {label}: {receipt}")

    def _give_up(self, row: Any, label: str, now: datetime, report: TickReport) -> None:
        text = (
            f"{row['record']} — a message to the owner could not be delivered\n"
            f"at: {row['path']}\n"
            f"rouse tried for 24h to send this message (tell {row['id']}) via "
            f"{row['sink'] or label} and gave up: {row['error'] or 'no answer'}.\n"
            "Reach the owner another way, then move or close the record.\n\n"
            f"{row['text']}\n"
        )
        written = write_nudge(self.root, outreach(row, text), now)
        self.ledger.given_up(row["id"], now, written)
        report.tells_given_up.append(row["id"])
        self.voice.say(
            f"{moment(now)} gave up on tell {row['id']} about {row['record']} after 24h: "
            f"wrote {written}",
            ERRORS,
        )
