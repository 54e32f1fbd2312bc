"""The digest: every wake of one tick as one message (``rouse sweep --digest``).

A digest is shaped like a wake, so every sink sends it unchanged: its own
id, its text (a header line listing the wake ids, then each wake's text),
and for a webhook a JSON object with ``digest: true`` and the wakes' own
objects. Each wake inside keeps its own id and ledger row; the ledger's
outbox keeps each digest (its ``wakes``: which wakes it carried).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from rouse.sweep.wake import Wake


@dataclass(frozen=True)
class Digest(Wake):
    """Several wakes as one message; ``id`` is the digest's own."""

    wakes: tuple[Wake, ...] = ()

    def payload(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "digest": True,
            "wake_ids": [w.id for w in self.wakes],
            "wakes": [w.payload() for w in self.wakes],
            "text": self.text,
        }

    @property
    def wake_ids(self) -> list[str]:
        return [w.id for w in self.wakes]


def header(digest_id: str, wakes: list[Wake], now: datetime) -> str:
    count = f"{len(wakes)} wake" + ("" if len(wakes) == 1 else "s")
    return (
        f"rouse digest {digest_id} — {count} at {now:%Y-%m-%d %H:%M}\n"
        f"wake ids: {' '.join(w.id for w in wakes)}\n"
    )


#: The most wakes named one by one after a capped render's last whole wake.
MOST_NAMED = 200


def render(digest_id: str, wakes: list[Wake], now: datetime, limit: int | None = None) -> str:
    """The digest's text; with ``limit`` (characters), whole wakes while they fit, then
    the rest named by record and path and counted (an agent's prompt has a size)."""
    parts = [header(digest_id, wakes, now)]
    size = len(parts[0])
    for number, made in enumerate(wakes, 1):
        part = f"\n=== wake {number} of {len(wakes)}: id {made.id}\n{made.text}"
        if limit is not None and size + len(part) > limit and number > 1:
            rest = wakes[number - 1 :]
            parts.append(
                f"\n=== {len(rest)} more wake(s) not shown here (the size cap of "
                f"{limit:,} characters); each is in the memory, due now:\n"
            )
            parts += [f"- {w.record} at: {w.path} (id {w.id})\n" for w in rest[:MOST_NAMED]]
            if len(rest) > MOST_NAMED:
                parts.append(f"- … and {len(rest) - MOST_NAMED} more: `rouse due` lists them\n")
            break
        parts.append(part)
        size += len(part)
    return "".join(parts)


def build(digest_id: str, wakes: list[Wake], now: datetime) -> Digest:
    """A digest of ``wakes`` made at ``now`` (pure)."""
    return Digest(
        id=digest_id,
        record="digest",
        type="digest",
        slug="digest",
        path=".",
        file="",
        reason="digest",
        nudge=len(wakes),
        last_moved="",
        at=now.strftime("%Y-%m-%d %H:%M:%S"),
        text=render(digest_id, wakes, now),
        wakes=tuple(wakes),
    )


def new_id(now: datetime) -> str:
    """A fresh digest id (``d`` + a wake-style id), distinct from every wake id."""
    from rouse.sweep.wake import new_id as wake_id

    return "d" + wake_id(now)
