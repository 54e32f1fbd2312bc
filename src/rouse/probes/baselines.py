"""What a note's probes read when its text was written: ``.rouse/baselines.json``.

A note that names ``probes:`` was written against a world those probes measure.
This module keeps, per note, the readings its current text was written against
(its baseline) and says when a reading now differs (the note has drifted):
"written when staging-version read 1.29; it reads 1.31 now".

A baseline is taken when a verb writes or reviews the note (``rouse review``)
and, lazily, the first time readings are seen for a note with none or whose
``updated:`` changed since its baseline. ``<unknown>`` is never a baseline and
never a drift. Owns: the file (MACed like the walk cache when a stamp key
exists: a file that does not verify is no baselines at all), taking and
comparing baselines. Not owned: running probes (:mod:`rouse.probes.demand`),
showing drift (recall, the pack).
"""

from __future__ import annotations

import json
from pathlib import Path

from rouse.core import layout
from rouse.probes.readings import MAX_READING, UNKNOWN
from rouse.state.files import read_signed, write_signed

FILE = "baselines.json"
MAGIC = b"rouse-baselines"
VERSION = 1
MAX_BYTES = 4 * 1024 * 1024
_LABEL = b"rouse-baselines-mac"
MAX_NOTES = 20_000

#: path → {"updated": the note's updated: when taken, "readings": {probe: reading}}
Baselines = dict[str, dict[str, object]]


def path_of(root: Path) -> Path:
    return root / layout.STATE_DIR / FILE


def load(root: Path, secret: bytes | None) -> Baselines:
    """The baselines of the tree at ``root``; none when the file is missing, damaged or
    (with a key) not MACed with it."""
    body = read_signed(path_of(root), MAX_BYTES, MAGIC, VERSION, secret, _LABEL)
    if body is None:
        return {}
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        return {}
    if not isinstance(data, dict):
        return {}
    kept: Baselines = {}
    for rel, entry in list(data.items())[:MAX_NOTES]:
        if isinstance(rel, str) and _well_formed(entry):
            kept[rel] = entry
    return kept


def _well_formed(entry: object) -> bool:
    if not isinstance(entry, dict) or not isinstance(entry.get("updated"), str):
        return False
    readings = entry.get("readings")
    return isinstance(readings, dict) and all(
        isinstance(k, str) and isinstance(v, str) and 0 < len(v) <= MAX_READING
        for k, v in readings.items()
    )


def save(root: Path, secret: bytes | None, baselines: Baselines) -> None:
    """Write the baselines (best effort: a tree whose ``.rouse/`` cannot be written
    keeps none, and drift is never shown — never a wrong one)."""
    body = json.dumps(baselines, separators=(",", ":"), sort_keys=True).encode()
    write_signed(path_of(root), MAGIC, VERSION, secret, _LABEL, body)


def known(readings: dict[str, str]) -> dict[str, str]:
    """The readings that can be a baseline: not ``<unknown>``."""
    return {name: value for name, value in readings.items() if value != UNKNOWN}


def drift(entry: dict[str, object] | None, readings: dict[str, str]) -> list[tuple[str, str, str]]:
    """``(probe, then, now)`` for each probe whose known reading differs from the baseline."""
    if entry is None:
        return []
    then = entry.get("readings")
    assert isinstance(then, dict)
    return [
        (name, str(then[name]), now)
        for name, now in known(readings).items()
        if name in then and then[name] != now
    ]


def observe(
    root: Path, secret: bytes | None, seen: list[tuple[str, str, dict[str, str]]]
) -> dict[str, list[tuple[str, str, str]]]:
    """Readings just taken for notes (``(path, updated, readings)``): the drift of each
    note that has one. A note with no baseline, or whose ``updated:`` changed since,
    takes these readings as its baseline (the known ones; none known: none taken)."""
    if not seen:
        return {}
    baselines = load(root, secret)
    changed = False
    drifted: dict[str, list[tuple[str, str, str]]] = {}
    for rel, updated, readings in seen:
        entry = baselines.get(rel)
        if entry is None or entry.get("updated") != updated:
            if known(readings):
                baselines[rel] = {"updated": updated, "readings": known(readings)}
                changed = True
            continue
        found = drift(entry, readings)
        if found:
            drifted[rel] = found
    if changed:
        save(root, secret, baselines)
    return drifted


def take(
    root: Path, secret: bytes | None, rel: str, updated: str, readings: dict[str, str]
) -> None:
    """Make ``readings`` the note's baseline now (``rouse review``, a verb that wrote it)."""
    baselines = load(root, secret)
    if known(readings):
        baselines[rel] = {"updated": updated, "readings": known(readings)}
    else:
        baselines.pop(rel, None)
    save(root, secret, baselines)


def said(found: list[tuple[str, str, str]]) -> str:
    """The words for a drifted note."""
    parts = [f"{name} read {then}; it reads {now} now" for name, then, now in found]
    return "written when " + "; ".join(parts) + " — re-check this note"
