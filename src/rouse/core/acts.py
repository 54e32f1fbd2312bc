"""What rouse's verbs did to records, to the second: ``.rouse/acts.json``.

A wake is answered when the agent acted on its record after it (SPEC §5).
Stamps in a header have minute resolution, so a ``rouse move`` in the same
minute as a wake could not be told from the record's creation in that
minute. The verbs that act on a record (``move``, ``snooze``, ``close``,
``promote``, ``tell``; CLI and MCP alike) therefore also note here the
instant they acted, and readers (:func:`rouse.core.nudges.acted_since`)
compare that instant with the wake's, to the second. Creating a record notes
nothing: a record's creation never answers its own wake.

The file is operational state: one entry per record directory (the latest
act), pruned as it is written, read through the bounded state reader. Lost,
it costs only the same-minute answers of the wakes still standing (a later
``rouse move`` answers them again).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

from rouse.core import layout, statefile, stateshapes

FILE = "acts.json"
VERSION = 1
#: Acts older than this (before the newest one written) are dropped: a wake
#: still standing after so long is answered by the next act, not an old one.
KEEP = timedelta(days=90)
#: At most this many records are remembered (the newest acts win).
MOST = 10_000
_FORMAT = "%Y-%m-%dT%H:%M:%S"

Acts = dict[str, datetime]


def path_of(root: Path) -> Path:
    return root / layout.STATE_DIR / FILE


def load(root: Path) -> Acts:
    """record directory → the instant a verb last acted on it (damaged state: nothing)."""
    data = stateshapes.ACTS.read(path_of(root))
    found: Acts = {}
    if not isinstance(data, dict) or data.get("version") != VERSION:
        return found
    acts = data.get("acts")
    if not isinstance(acts, dict):
        return found
    for record_dir, stamp in acts.items():
        if isinstance(record_dir, str) and isinstance(stamp, str):
            try:  # (fromisoformat: ~20× strptime; the round trip keeps the one format)
                at = datetime.fromisoformat(stamp)
            except ValueError:
                continue
            if at.isoformat() == stamp:  # naive, to the second, exactly as written
                found[record_dir] = at
    return found


def note(root: Path, record_dir: str, when: datetime) -> bool:
    """Note that a verb acted on ``record_dir`` at ``when`` (call it under the writers' lock).

    Best effort, like all state: False when ``.rouse/`` cannot be written.
    """
    acts = load(root)
    when = when.replace(microsecond=0)
    acts[record_dir] = max(when, acts.get(record_dir, when))
    newest = max(acts.values())
    kept = sorted(
        ((d, at) for d, at in acts.items() if at >= newest - KEEP),
        key=lambda item: item[1],
        reverse=True,
    )[:MOST]
    body = {"version": VERSION, "acts": {d: at.strftime(_FORMAT) for d, at in kept}}
    return statefile.save_json(path_of(root), body)
