"""What rouse's verbs did to records, to the second: ``.rouse/acts.json``.

A wake is answered when the agent acted on its record after it (SPEC §5).
Stamps in a header have minute resolution, so a ``rouse move`` in the same
minute as a wake could not be told from the record's creation in that
minute. The verbs that act on a record (``move``, ``snooze``, ``close``,
``promote``, ``tell``; CLI and MCP alike) therefore also note here the
instant they acted, and readers (:func:`rouse.state.nudges.acted_since`)
compare that instant with the wake's, to the second. Creating a record notes
nothing: a record's creation never answers its own wake.

The file is operational state: one entry per record directory (the latest
act), pruned as it is written, read through the bounded state reader. Lost,
it costs only the same-minute answers of the wakes still standing (a later
``rouse move`` answers them again).

An act answers wakes, so what the agent can write must not forge one: with a
stamp key the file is MACed like the caches (:func:`rouse.state.files.write_signed`,
under a key derived for it), and one that does not verify, is damaged or is of
another format reads as empty (``rouse check`` says so). An act later than now is
never an answer, and pruning counts back from the act being written, so an act
dated far ahead can neither stand nor push the others out.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

from rouse.core import layout
from rouse.state import shapes
from rouse.state.files import Damaged, read_signed, write_signed

FILE = "acts.json"
#: The file's first line: magic, version, MAC (``-`` without a key).
MAGIC = b"rouse-acts"
VERSION = 2
#: which key the file is MACed with (derived from the stamp key's secret)
_LABEL = b"rouse-acts-mac"
#: Acts older than this (before the act being written) are dropped: a wake
#: still standing after so long is answered by the next act, not an old one.
KEEP = timedelta(days=90)
#: At most this many records are remembered (the newest acts win).
MOST = 10_000
_FORMAT = "%Y-%m-%dT%H:%M:%S"

Acts = dict[str, datetime]


def path_of(root: Path) -> Path:
    return root / layout.STATE_DIR / FILE


def _read(root: Path, secret: bytes | None) -> tuple[Acts, bool]:
    """The acts, and whether the file (when there is one) read as rouse wrote it."""
    path = path_of(root)
    body = read_signed(path, shapes.ACTS.max_bytes, MAGIC, VERSION, secret, _LABEL)
    if body is None:
        return {}, not path.exists()
    try:
        data = shapes.ACTS.decode(body)
    except Damaged:
        return {}, False
    found: Acts = {}
    for record_dir, stamp in data["acts"].items():
        try:  # (fromisoformat: ~20× strptime; the round trip keeps the one format)
            at = datetime.fromisoformat(stamp)
        except ValueError:
            continue
        if at.isoformat() == stamp:  # naive, to the second, exactly as written
            found[record_dir] = at
    return found, True


def load(root: Path, secret: bytes | None = None, now: datetime | None = None) -> Acts:
    """record directory → the instant a verb last acted on it; nothing when the file is
    damaged or (with the stamp key's ``secret``) not MACed with it. With ``now``, an act
    later than now is left out: it answers nothing."""
    found, _ = _read(root, secret)
    if now is None:
        return found
    return {record_dir: at for record_dir, at in found.items() if at <= now}


def problem(root: Path, secret: bytes | None) -> str | None:
    """What ``rouse check`` says of the file: None when it reads as rouse wrote it."""
    if _read(root, secret)[1]:
        return None
    keyed = " or not written by rouse under the stamp key" if secret is not None else ""
    return (
        f"damaged{keyed}: it reads as empty, so no verb's act answers a wake until the "
        "next one rewrites it"
    )


def note(root: Path, record_dir: str, when: datetime, secret: bytes | None = None) -> bool:
    """Note that a verb acted on ``record_dir`` at ``when`` (call it under the writers' lock).

    Acts later than ``when`` are dropped (an act ahead of now is no answer), then those
    more than :data:`KEEP` before it (unless ``when`` itself is ahead of the wall
    clock). Best effort, like all state: False when ``.rouse/`` cannot be written.
    """
    when = when.replace(microsecond=0)
    acts = load(root, secret, when)
    acts[record_dir] = when
    # an act dated ahead of the wall clock prunes nothing by age: it could push out all
    ages = when <= datetime.now()
    kept = sorted(
        ((d, at) for d, at in acts.items() if not ages or at >= when - KEEP),
        key=lambda item: item[1],
        reverse=True,
    )[:MOST]
    import json  # writers only

    body = {"version": VERSION, "acts": {d: at.strftime(_FORMAT) for d, at in kept}}
    data = json.dumps(body, separators=(",", ":")).encode()
    return write_signed(path_of(root), MAGIC, VERSION, secret, _LABEL, data)
