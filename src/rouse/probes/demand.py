"""Demand probes: ``rouse probe NAME`` and its ttl cache, ``.rouse/probes.json``
(:class:`DemandCache` says when an entry is believed; ``--now`` never ages one)."""

from __future__ import annotations

import json
import math
import os
import time
from pathlib import Path

from rouse.core import home, layout
from rouse.probes.definitions import Probe
from rouse.probes.readings import MAX_READING, run_all
from rouse.state.files import save_json
from rouse.state.shapes import PROBES
from rouse.trust.origins import Finding
from rouse.trust.stampkey import load_key, mac

CACHE_FILE = "probes.json"
CACHE_VERSION = 2


def _number(value: object) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


class DemandCache:
    """``.rouse/probes.json``: the last demand readings, each bound to the probe it answers.

    The file is ``{"version": 2, "entries": {NAME: {"cmd", "ttl", "reading", "at"
    [, "mac"]}}}``. An entry is reused only by the probe of the same name whose
    ``cmd`` and ``ttl`` are the entry's, within that ttl (wall-clock), and only
    when its reading is one a probe could give. With a stamp key each entry
    carries ``mac``, the HMAC-SHA256 under the key of the versioned message
    :meth:`message` (which names the tree too), and an entry whose MAC is
    missing or wrong is ignored: the probe runs again. Without a key, binding
    to the name, cmd and ttl is all there is (the state is the agent's to edit).
    """

    def __init__(self, root: Path, key_path: Path | None = None):
        self.root = root
        self.path = root / layout.STATE_DIR / CACHE_FILE
        self.key_path = key_path
        self.raw = PROBES.read(self.path)
        entries = self.raw.get("entries") if self._current(self.raw) else None
        self.entries: dict[str, object] = entries if isinstance(entries, dict) else {}
        self._key: tuple[bool, bytes | None] | None = None  # (keyed, secret), read when needed
        self._tree: str | None = None

    @staticmethod
    def _current(raw: object) -> bool:
        return isinstance(raw, dict) and raw.get("version") == CACHE_VERSION

    def key(self) -> tuple[bool, bytes | None]:
        """``(keyed, secret)``: is there a key file, and its secret when it can be used."""
        if self._key is None:
            key = load_key(self.key_path or home.stamp_key_path())
            self._key = (key is not None, key.secret if key is not None else None)
        return self._key

    def message(self, name: str, cmd: str, ttl: float, reading: str, at: float) -> bytes:
        """What an entry's MAC covers: a compact JSON array, so no field bleeds into another."""
        if self._tree is None:
            self._tree = os.path.realpath(self.root)
        fields = ["rouse-probe-reading", CACHE_VERSION, self._tree, name, cmd, ttl, reading, at]
        return json.dumps(fields, ensure_ascii=True, separators=(",", ":")).encode("ascii")

    def _mac(self, secret: bytes, name: str, fields: tuple[str, float, str, float]) -> str:
        return mac(secret, self.message(name, *fields))

    @staticmethod
    def _fields(entry: object) -> tuple[str, float, str, float] | None:
        """``(cmd, ttl, reading, at)`` of a well-formed entry, else None."""
        if not isinstance(entry, dict):
            return None
        cmd, reading = entry.get("cmd"), entry.get("reading")
        ttl, at = _number(entry.get("ttl")), _number(entry.get("at"))
        if not isinstance(cmd, str) or not isinstance(reading, str) or ttl is None or at is None:
            return None
        if not 0 < len(reading) <= MAX_READING or len(reading.splitlines()) != 1:
            return None  # (not one line of 1-200 characters: no probe could have read it)
        return cmd, ttl, reading, at

    def _vouched(self, name: str, entry: object, fields: tuple[str, float, str, float]) -> bool:
        """Does rouse stand behind this entry? Without a key: yes (the floor)."""
        keyed, secret = self.key()
        if not keyed:
            return True
        if secret is None or not isinstance(entry, dict):
            return False
        import hmac

        given = entry.get("mac")
        return isinstance(given, str) and hmac.compare_digest(
            given, self._mac(secret, name, fields)
        )

    def reading(self, probe: Probe) -> str | None:
        """A reading of ``probe`` younger than its ttl, bound to it and vouched for; else None."""
        if probe.ttl is None:
            return None
        entry = self.entries.get(probe.name)
        fields = self._fields(entry)
        if fields is None:
            return None
        cmd, ttl, reading, at = fields
        if cmd != probe.cmd or ttl != probe.ttl.total_seconds():
            return None
        if not self._vouched(probe.name, entry, fields):
            return None
        return reading if 0 <= time.time() - at < ttl else None

    def put(self, probe: Probe, reading: str, at: float) -> bool:
        """Record a reading (only for a probe with a ttl: no other is ever reused)."""
        keyed, secret = self.key()
        if probe.ttl is None or (keyed and secret is None):
            return False
        fields = (probe.cmd, probe.ttl.total_seconds(), reading, at)
        entry: dict[str, object] = {"cmd": fields[0], "ttl": fields[1], "reading": reading}
        entry["at"] = at
        if secret is not None:
            entry["mac"] = self._mac(secret, probe.name, fields)
        self.entries[probe.name] = entry
        return True

    def save(self) -> bool:
        return save_json(self.path, {"version": CACHE_VERSION, "entries": self.entries})

    def findings(self) -> list[Finding]:
        """What in the file is ignored, one warning each (for ``rouse check``)."""
        rel = f"{layout.STATE_DIR}/{CACHE_FILE}"
        fix = "delete it, or let `rouse probe NAME` write it anew"

        def warn(message: str) -> Finding:
            return Finding("warn", rel, message)

        if self.raw is None:
            if not os.path.lexists(self.path):
                return []
            return [
                warn(f"the probe reading cache cannot be read as JSON rouse wrote: ignored — {fix}")
            ]
        if not self._current(self.raw) or not isinstance(self.raw.get("entries"), dict):
            return [
                warn(
                    "the probe reading cache is not in the layout rouse writes (written by hand, "
                    f"or by an older rouse): every reading in it is ignored — {fix}"
                )
            ]
        keyed, secret = self.key()
        found = []
        for name, entry in self.entries.items():
            shown = repr(name[:80])
            fields = self._fields(entry)
            if fields is None:
                found.append(
                    warn(f"probe reading {shown} is not one rouse writes: ignored — {fix}")
                )
            elif keyed and secret is not None and not self._vouched(name, entry, fields):
                found.append(
                    warn(
                        f"probe reading {shown} does not verify with the stamp key (edited by "
                        "hand, written before the key existed, or copied from another tree): "
                        f"ignored — `rouse probe {name[:80]}` runs it again"
                    )
                )
        return found


def cache_findings(root: Path, key_path: Path | None = None) -> list[Finding]:
    """``check``'s warnings about ``.rouse/probes.json``: entries that are ignored
    because they are malformed or (with a stamp key) do not verify."""
    return DemandCache(root, key_path).findings()


def run_demand(root: Path, probe: Probe, key_path: Path | None = None) -> str:
    """``rouse probe NAME``: reuse a reading younger than ttl, else run it now."""
    reading = DemandCache(root, key_path).reading(probe)
    if reading is not None:
        return reading
    taken = time.time()
    reading = run_all(root, [probe], probe.timeout.total_seconds())[probe.name]
    cache = DemandCache(root, key_path)  # read again: another run may have written meanwhile
    if cache.put(probe, reading, taken):
        cache.save()
    return reading
