"""``rouse review NOTE [--note TEXT]``: the agent says a note is still true.

It stamps ``reviewed:`` (a machine field), puts ``--note`` in the note's log,
and takes the readings of the probes the note names, as they are now, as the
note's new baseline (:mod:`rouse.probes.baselines`): a drift it showed is
answered. Probes run under the usual rules (only from a trusted
``probes.md``; a reading younger than its ttl is reused); a probe that reads
``<unknown>`` keeps no baseline. Not owned: finding the note
(:func:`rouse.records.forgetting.find`), running probes
(:mod:`rouse.probes.demand`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from rouse.core.errors import UsageError
from rouse.core.header import read_header
from rouse.core.store import Store
from rouse.core.timefmt import format_stamp
from rouse.core.tree import walk
from rouse.probes import baselines, demand, gate, readings
from rouse.probes import definitions as probes
from rouse.records.forgetting import find
from rouse.records.inputs import check_body
from rouse.state import acts
from rouse.trust import origins


@dataclass
class Reviewed:
    rel: str
    reviewed: str  # the reviewed: stamp
    readings: dict[str, str] = field(default_factory=dict)  # the new baseline (and unknowns)

    @property
    def summary(self) -> str:
        shown = ", ".join(f"{k}={v}" for k, v in self.readings.items())
        taken = f"; baseline now {shown}" if shown else ""
        return f"reviewed {self.rel} at {self.reviewed}{taken}"


def review(
    root: Path,
    ref: str,
    now: datetime,
    note: str | None = None,
    *,
    key_path: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> Reviewed:
    """Stamp the note ``ref`` reviewed now and take its probes' readings as its baseline."""
    file, kind = find(root, ref)
    if kind != "note":
        raise UsageError(f"{file.rel} is {kind}, not a note: only notes are reviewed")
    if note is not None:
        check_body(note, "the note")
    stamp = format_stamp(now)
    line = f"- {stamp}: reviewed" + (f": {' '.join(note.split())}" if note and note.strip() else "")
    reader = origins.origin_reader(root, key_path)
    store = Store(root)
    with store.lock():
        store.append_log(file.rel, {"reviewed": stamp}, line)
        acts.note(root, file.rel, now, reader.cache_secret)  # answers a drift wake
    head = read_header(root / file.rel)
    measured = _readings(root, head.get("probes") or "", key_path, env or {})
    updated = (head.get("updated") or "").strip()
    baselines.take(root, reader.cache_secret, file.rel, updated, measured)
    return Reviewed(file.rel, stamp, measured)


def _readings(
    root: Path, named: str, key_path: Path | None, env: Mapping[str, str]
) -> dict[str, str]:
    names = [n.strip() for n in named.split(",") if n.strip()]
    if not names:
        return {}
    tree = walk(root)
    reader = origins.origin_reader(root, key_path)
    allowed = gate.probes_allowed(tree, reader, env)[0]
    known = {p.name: p for p in probes.load_probes(tree)[0]} if allowed else {}
    return {
        name: demand.run_demand(root, known[name], reader.key_path)
        if name in known
        else readings.UNKNOWN
        for name in names
    }
