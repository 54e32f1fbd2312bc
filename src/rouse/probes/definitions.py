"""Probes: named commands in ``inventory/probes.md`` whose output is the answer.

This module parses the probes file (SPEC §6). Who may run them, and running them
under the pack's shared budget, is ``rouse.probes.readings``; demand readings with
their ttl cache ``rouse.probes.demand``.

A probe is a fenced block opening with a line ```` ```probe ```` at column 0
and closing with ```` ``` ````; inside it, ``key: value`` lines. Everything
outside the blocks is prose for the model, and other fenced blocks (for
instance an example shown inside a ```` ```` ```` fence) are skipped whole.
"""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path

from rouse.core import header
from rouse.core.body import split_log
from rouse.core.errors import HeaderError
from rouse.core.timefmt import parse_interval
from rouse.core.tree import Problem, Tree
from rouse.core.value import Value

DEFAULT_TIMEOUT = timedelta(seconds=10)
MAX_PROBES_BYTES = 1024 * 1024
TIERS = ("pack", "demand")
KEYS = ("name", "cmd", "tier", "ttl", "timeout", "unknown-ok")
OPENER = "```probe"

#: Probe names: notes list them comma-separated, so no spaces or commas.
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,79}$")
_FENCE_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


class Probe(Value):
    """One probe block, read."""

    __slots__ = ("name", "cmd", "tier", "ttl", "timeout", "unknown_ok", "line")
    _fields = __slots__

    def __init__(
        self,
        name: str,
        cmd: str,
        tier: str = "demand",
        ttl: timedelta | None = None,
        timeout: timedelta = DEFAULT_TIMEOUT,
        unknown_ok: bool = False,
        line: int = 0,
    ):
        self.name = name
        self.cmd = cmd
        self.tier = tier
        self.ttl = ttl  # how long a demand reading may be reused
        self.timeout = timeout
        self.unknown_ok = unknown_ok
        self.line = line  # line of the opening ```probe fence


def _duration(value: str) -> timedelta:
    """Seconds (a bare integer) or an interval (``45m``, ``2h``, ``1h30m``)."""
    text = value.strip()
    if text.isascii() and text.isdigit():
        return timedelta(seconds=int(text))
    return parse_interval(text)


class _Block:
    """The ``key: value`` lines of one probe block, collected then judged."""

    def __init__(self, line: int, path: str, problems: list[Problem]):
        self.line = line
        self.path = path
        self.problems = problems
        self.values: dict[str, tuple[str, int]] = {}

    def bad(self, message: str, line: int) -> None:
        self.problems.append(Problem(self.path, message, line))

    def add(self, text: str, lineno: int) -> None:
        stripped = text.strip()
        if not stripped or stripped.startswith("#"):
            return
        key, colon, value = stripped.partition(":")
        key = key.strip().lower()
        if not colon or not key:
            self.bad(
                f"not a 'key: value' line in a probe block: {stripped!r} — write it as key: value",
                lineno,
            )
            return
        if key not in KEYS:
            self.bad(f"unknown probe key {key!r} — use one of {', '.join(KEYS)}", lineno)
            return
        if key in self.values:
            first = self.values[key][1]
            self.bad(
                f"duplicate {key!r} in a probe block (first on line {first}) — keep one", lineno
            )
            return
        self.values[key] = (value.strip(), lineno)

    def build(self) -> Probe | None:
        missing = [k for k in ("name", "cmd") if not self.values.get(k, ("", 0))[0]]
        if missing:
            what = " and ".join(f"'{k}'" for k in missing)
            self.bad(f"probe block without {what} — every probe needs a name and a cmd", self.line)
            return None
        name, name_line = self.values["name"]
        if not NAME_RE.match(name):
            self.bad(
                f"bad probe name {name!r} — use letters, digits, '-', '_' or '.' (no spaces or "
                "commas: notes list probes comma-separated)",
                name_line,
            )
            return None
        probe = Probe(name=name, cmd=self.values["cmd"][0], line=self.line)
        if "tier" in self.values:
            tier, lineno = self.values["tier"]
            if tier.lower() in TIERS:
                probe.tier = tier.lower()
            else:
                self.bad(
                    f"'tier' must be pack or demand, got {tier!r} — fix it (until then: demand)",
                    lineno,
                )
        if "ttl" in self.values:
            value, lineno = self.values["ttl"]
            try:
                probe.ttl = _duration(value)
            except ValueError:
                self.bad(
                    f"'ttl' must be seconds or like 45m, 2h, 1d, got {value!r} — fix it", lineno
                )
        if "timeout" in self.values:
            value, lineno = self.values["timeout"]
            try:
                timeout = _duration(value)
            except ValueError:
                self.bad(
                    f"'timeout' must be seconds or like 30s, 2m, got {value!r} — fix it", lineno
                )
            else:
                if timeout > timedelta(0):
                    probe.timeout = timeout
                else:
                    self.bad(
                        f"'timeout' must be more than zero, got {value!r} — fix it "
                        "(until then: 10s)",
                        lineno,
                    )
        if "unknown-ok" in self.values:
            value, lineno = self.values["unknown-ok"]
            if value.lower() in ("yes", "no"):
                probe.unknown_ok = value.lower() == "yes"
            else:
                self.bad(f"'unknown-ok' must be yes or no, got {value!r} — fix it", lineno)
        return probe


def parse_probes(text: str, path: str, first_line: int = 1) -> tuple[list[Probe], list[Problem]]:
    """Read every probe block in ``text``; return the probes and the problems found.

    A block missing ``name`` or ``cmd``, an unterminated block and a repeated
    name are problems (the later duplicate is dropped). A bad ``tier``,
    ``ttl``, ``timeout`` or ``unknown-ok`` is a problem, and the probe keeps
    its default for that key.
    """
    problems: list[Problem] = []
    probes: list[Probe] = []
    seen: dict[str, int] = {}
    block: _Block | None = None
    other_fence: tuple[str, int, int] | None = None  # (char, length, line) of a non-probe fence
    lines = text.removeprefix("\ufeff").splitlines()
    for index, raw in enumerate(lines):
        lineno = index + first_line
        if other_fence is not None:
            char, length, _ = other_fence
            stripped = raw.strip()
            if stripped and set(stripped) == {char} and len(stripped) >= length:
                other_fence = None
            continue
        if block is None:
            if raw.rstrip() == OPENER:
                block = _Block(lineno, path, problems)
                continue
            match = _FENCE_RE.match(raw)
            if match:
                fence = match.group(1)
                other_fence = (fence[0], len(fence), lineno)
            continue
        if raw.strip() == "```":
            probe = block.build()
            block = None
            if probe is not None and _first_named(probe, seen, path, problems):
                probes.append(probe)
            continue
        block.add(raw, lineno)
    if block is not None:
        problems.append(
            Problem(path, "unterminated probe block — close it with a line ```", block.line)
        )
    elif other_fence is not None and any(
        line.rstrip() == OPENER for line in lines[other_fence[2] - first_line + 1 :]
    ):
        problems.append(
            Problem(
                path,
                "unterminated ``` fence hides the probe blocks after it — close it",
                other_fence[2],
            )
        )
    return probes, problems


def _first_named(probe: Probe, seen: dict[str, int], path: str, problems: list[Problem]) -> bool:
    """Whether no probe before this one has its name (``seen``: name → line); a later one
    is a problem, and dropped."""
    if probe.name in seen:
        problems.append(
            Problem(
                path,
                f"duplicate probe name {probe.name!r} (first on line "
                f"{seen[probe.name]}) — rename or remove one",
                probe.line,
            )
        )
        return False
    seen[probe.name] = probe.line
    return True


def load_probes(tree: Tree) -> tuple[list[Probe], list[Problem]]:
    """Read and parse the tree's probes file, if it has one (re-read on every use)."""
    if tree.probes is None:
        return [], []
    rel = tree.probes.rel
    try:
        data = header.read_capped(Path(tree.root) / rel, MAX_PROBES_BYTES + 1)
    except OSError as exc:
        return [], [Problem(rel, f"cannot read: {exc.strerror} — check its permissions")]
    if len(data) > MAX_PROBES_BYTES:
        return [], [Problem(rel, "over 1 MiB, too large for a probes file — trim it")]
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        return [], [Problem(rel, "not valid UTF-8 — re-save the file as UTF-8", line)]
    return parse_probe_file(data, rel)


def parse_probe_file(data: bytes, rel: str) -> tuple[list[Probe], list[Problem]]:
    """The probes of a whole probes file: read from its authored body only.

    A signature covers the authored body (above the log marker), so that is
    the only place a probe may be defined; a probe block in the header or in
    the log is a problem and never runs.
    """
    try:
        _, body = header.split(data, rel)
    except HeaderError as exc:
        return [], [Problem(rel, f"{exc.message} — no probe runs until it reads", exc.line)]
    head_lines = data[: len(data) - len(body)].count(b"\n")
    authored, log = split_log(body)
    found, problems = parse_probes(authored.decode("utf-8"), rel, head_lines + 1)
    log_line = head_lines + authored.count(b"\n") + 2  # the line after the marker
    outside = [
        (number + 1, "the header")
        for number, line in enumerate(data[: len(data) - len(body)].decode("utf-8").splitlines())
        if line.rstrip() == OPENER
    ]
    outside += [
        (log_line + number, "the log")
        for number, line in enumerate(log.decode("utf-8").splitlines())
        if line.rstrip() == OPENER
    ]
    problems += [
        Problem(
            rel,
            f"a probe block in {where} never runs: probes are read only from the authored "
            "body (what a signature covers) — move it above the log, out of the header",
            line,
        )
        for line, where in outside
    ]
    return found, problems
