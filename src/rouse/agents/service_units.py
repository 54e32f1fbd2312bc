"""What each OS reads for a ``rouse service``: a systemd unit, a launchd plist, a crontab line.

:class:`Service` is what ``install`` writes and runs (and how to undo it), made per kind
from :func:`sweep_command`'s argv, each word quoted the way that kind reads it back unchanged.
"""

from __future__ import annotations

import os
import plistlib
import re
import shlex
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rouse import __version__
from rouse.agents.hook_commands import stable_executable
from rouse.core.errors import UsageError

#: Seconds the OS waits before restarting a sweeper that failed.
RESTART_AFTER = 30
#: The intervals (seconds) a crontab line can keep exactly: minutes that divide an hour.
CRON_EVERY = (60, 120, 180, 240, 300, 360, 600, 720, 900, 1200, 1800, 3600)
CRON_DEFAULT_EVERY = 60


@dataclass
class Service:
    """What ``install`` writes (``files``) and runs (``start``), and how to undo it."""

    kind: str
    name: str  # the unit's name, launchd's label, or cron's marker
    root: Path
    command: list[str]
    files: dict[Path, str] = field(default_factory=dict)
    start: list[list[str]] = field(default_factory=list)  # after writing, in order
    stop: list[list[str]] = field(default_factory=list)  # before removing, in order
    query: list[str] | None = None  # the command that says whether it runs
    optional: list[list[str]] = field(default_factory=list)  # of those, may fail
    cron_line: str | None = None
    #: files that hold a secret (the fleet's DSN): written mode 0600, never printed
    secrets: dict[Path, str] = field(default_factory=dict)
    #: where a secret of this service may have been written (uninstall removes it)
    private: list[Path] = field(default_factory=list)
    path: str = ""  # the PATH the unit runs with

    @property
    def unit(self) -> Path:
        """The file the OS reads (a launchd plist holding the DSN is among the secrets)."""
        return next(iter({**self.files, **self.secrets}))


@dataclass(frozen=True)
class Unit:
    """What each kind of service for one tree is made from: the tree, its service id
    (:func:`rouse.agents.service.service_id`), the verb it runs (``sweep`` or ``work``),
    the user's home, and the PATH it runs with."""

    root: Path
    ident: str
    verb: str
    home: Path
    path: str


@dataclass(frozen=True)
class Loop:
    """How the service runs its verb, as the caller parsed its flags: ``verb`` (``sweep``
    or ``work``), ``--every`` (None: not given) and ``--once``."""

    verb: str = "sweep"
    every: float | None = None
    once: bool = False


def env_value(value: str) -> str:
    """``value`` quoted for a systemd EnvironmentFile (read back unchanged)."""
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in value):
        raise UsageError("the ledger's DSN holds a control character: a service cannot carry it")
    if "'" not in value:
        return f"'{value}'"
    escaped = "".join("\\" + ch if ch in '\\"$`' else ch for ch in value)
    return f'"{escaped}"'


def sweep_command(root: Path, flags: Sequence[str], verb: str = "sweep") -> list[str]:
    """The sweeper's argv (or, ``verb`` work, the task worker's): this rouse (absolute:
    the stable install, else this Python with ``-m rouse``), ``--memory`` of the tree,
    the verb, then the flags."""
    pinned = stable_executable()
    head = [pinned] if pinned else [os.path.abspath(sys.executable), "-m", "rouse"]
    return [*head, "--memory", str(root), verb, *flags]


def installed_argv(kind: str, text: str) -> list[str] | None:
    """The command a unit file (systemd) or plist (launchd) rouse wrote runs, read back;
    None when it cannot be read (a file edited past recognition, another kind)."""
    if kind == "launchd":
        found = _plist(text).get("ProgramArguments")
        if isinstance(found, list) and all(isinstance(w, str) for w in found):
            return list(found)
        return None
    if kind != "systemd":
        return None
    line = next((ln for ln in text.splitlines() if ln.startswith("ExecStart=")), None)
    try:
        words = shlex.split(line.partition("=")[2]) if line is not None else None
    except ValueError:
        return None
    return [w.replace("$$", "$").replace("%%", "%") for w in words] if words else None


def _plist(text: str) -> dict[str, Any]:
    """A plist's top-level dict ({} when it is not one)."""
    try:
        data = plistlib.loads(text.encode("utf-8"))
    except (plistlib.InvalidFileException, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def installed_flags(service: Service, text: str, root: Path, verb: str) -> list[str] | None:
    """The flags ``rouse service install`` was given for the unit ``text`` (what follows
    ``--memory ROOT VERB`` in its command); None when its command is not one of ours."""
    argv = installed_argv(service.kind, text)
    if argv is None:
        return None
    for at in range(len(argv) - 2):
        if argv[at : at + 3] == ["--memory", str(root), verb]:
            return argv[at + 3 :]
    return None


def installed_ledger(kind: str, text: str) -> str | None:
    """The fleet's DSN an installed unit (systemd: through its ``EnvironmentFile=``, the
    0600 file) or plist (launchd: its environment) was given; None without one. For
    ``status``, to plan what an install with it would write; never printed."""
    if kind == "launchd":
        env = _plist(text).get("EnvironmentVariables")
        value = env.get("ROUSE_LEDGER") if isinstance(env, dict) else None
        return value if isinstance(value, str) else None
    line = next((ln for ln in text.splitlines() if ln.startswith("EnvironmentFile=")), None)
    if kind != "systemd" or line is None:
        return None
    try:
        with open(line.partition("=")[2].replace("%%", "%"), encoding="utf-8") as handle:
            words = shlex.split(handle.read(4096))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    found = [w.partition("=")[2] for w in words if w.startswith("ROUSE_LEDGER=")]
    return found[0] if len(found) == 1 else None


#: Who each service's verb is, as its unit describes it.
ROLES = {"sweep": "sweeper", "work": "task worker"}


# -- systemd ------------------------------------------------------------------

_BARE = re.compile(r"[A-Za-z0-9_@+=:,./-]+")


def systemd_word(word: str, *, command: bool = True) -> str:
    """One argument as a systemd unit file reads it back unchanged.

    ``%`` is a specifier and ``$`` (in a command line) a variable there:
    both are doubled; anything but plain characters goes in double quotes
    with ``\\`` and ``"`` escaped.
    """
    if any(ch in word for ch in "\n\r\0"):
        raise UsageError(
            f"{word!r} holds a line break or NUL, which a unit file cannot carry: "
            "remove it from the sweep flags"
        )
    text = word.replace("%", "%%")
    if command:
        text = text.replace("$", "$$")
    if _BARE.fullmatch(text):
        return text
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def systemd_path(path: str) -> str:
    """A path for a directive that takes one path as is (``WorkingDirectory=``): systemd
    unquotes nothing there, so the path is written raw with ``%`` doubled (a specifier);
    what a unit line cannot carry — a control character, a trailing backslash (a line
    continuation), space at either end (trimmed) — is refused."""
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in path):
        raise UsageError(
            f"the tree's path {path!r} holds a control character, which a unit file cannot "
            "carry: move the tree to a plainer path"
        )
    if path != path.strip() or path.endswith("\\"):
        raise UsageError(
            f"the tree's path {path!r} ends in a space or a backslash, which a unit file "
            "cannot carry: move the tree to a plainer path"
        )
    return path.replace("%", "%%")


def systemd_unit(unit: Unit, command: list[str], dsn: str | None) -> Service:
    root, ident, verb, home, path_env = unit.root, unit.ident, unit.verb, unit.home, unit.path
    name = f"rouse-{verb}-{ident}.service"
    config = os.environ.get("XDG_CONFIG_HOME", "")
    base = Path(config) if os.path.isabs(config) else home / ".config"
    unit_file = base / "systemd" / "user" / name
    env_file = base / "rouse" / "service" / f"rouse-{verb}-{ident}.env"
    secrets = {env_file: f"ROUSE_LEDGER={env_value(dsn)}\n"} if dsn else {}
    text = "\n".join(
        [
            f"# Written by `rouse service install` (rouse {__version__}): the {ROLES[verb]} of "
            f"{root}.",
            "# Install again to change it; `rouse service uninstall` stops and removes it.",
            "[Unit]",
            f"Description=rouse {ROLES[verb]} for {str(root).replace('%', '%%')}",
            "",
            "[Service]",
            "Type=simple",
            "ExecStart=" + " ".join(systemd_word(word) for word in command),
            f"WorkingDirectory={systemd_path(str(root))}",
            f"Environment={systemd_word('PATH=' + path_env, command=False)}",
            *([f"EnvironmentFile={systemd_path(str(env_file))}"] if dsn else []),
            "Restart=on-failure",
            f"RestartSec={RESTART_AFTER}",
            # the worker alone hears SIGTERM (its runs finish); what is left is killed later
            *(["KillMode=mixed"] if verb == "work" else []),
            "",
            "[Install]",
            "WantedBy=default.target",
            "",
        ]
    )
    ctl = ["systemctl", "--user"]
    return Service(
        kind="systemd",
        name=name,
        root=root,
        command=command,
        files={unit_file: text},
        secrets=secrets,
        private=[env_file],
        path=path_env,
        start=[[*ctl, "daemon-reload"], [*ctl, "enable", name], [*ctl, "restart", name]],
        stop=[[*ctl, "disable", "--now", name]],
        query=[*ctl, "is-active", name],
    )


# -- launchd ------------------------------------------------------------------


def launchd_agent(unit: Unit, command: list[str], uid: int) -> Service:
    root, ident, verb, home, path_env = unit.root, unit.ident, unit.verb, unit.home, unit.path
    label = f"rouse.{verb}.{ident}"
    plist = home / "Library" / "LaunchAgents" / f"{label}.plist"
    log = home / "Library" / "Logs" / f"{label}.log"
    data = {
        "Label": label,
        "ProgramArguments": command,
        "WorkingDirectory": str(root),
        "EnvironmentVariables": {"PATH": path_env},
        "RunAtLoad": True,
        "KeepAlive": {"SuccessfulExit": False},  # restart it when it fails
        "ThrottleInterval": RESTART_AFTER,
        "ProcessType": "Background",
        "StandardOutPath": str(log),
        "StandardErrorPath": str(log),
    }
    text = plistlib.dumps(data, sort_keys=False).decode("utf-8")
    domain = f"gui/{uid}"
    bootout = ["launchctl", "bootout", f"{domain}/{label}"]
    return Service(
        kind="launchd",
        name=label,
        root=root,
        command=command,
        files={plist: text},
        path=path_env,
        # out first, so that installing again loads the new plist (not loaded yet is fine)
        start=[bootout, ["launchctl", "bootstrap", domain, str(plist)]],
        stop=[bootout],
        query=["launchctl", "print", f"{domain}/{label}"],
        optional=[bootout],
    )


# -- cron ---------------------------------------------------------------------


def cron_entry(unit: Unit, flags: Sequence[str], loop: Loop) -> Service:
    root, ident, verb, path = unit.root, unit.ident, unit.verb, unit.path
    every, once = loop.every, loop.once
    seconds = CRON_DEFAULT_EVERY if every is None else every
    if seconds not in CRON_EVERY:
        allowed = ", ".join(f"{s:g}" for s in CRON_EVERY)
        raise UsageError(
            f"a crontab line can tick every whole number of minutes that divides an hour, "
            f"not --every {seconds:g}: use one of {allowed}"
        )
    extra = [] if once else ["--once"]
    if verb == "sweep":  # (the worker's --once has no interval: cron's line is it)
        extra += [] if every is not None else ["--every", f"{seconds:g}"]
    command = sweep_command(root, [*extra, *flags], verb)
    minutes = int(seconds) // 60
    when = "0 * * * *" if minutes == 60 else "* * * * *" if minutes == 1 else f"*/{minutes} * * * *"
    line = " ".join(cron_word(word) for word in command)
    if path:  # cron's own PATH is /usr/bin:/bin: the line carries the one it needs
        line = f"PATH={cron_word(path)} {line}"
    name = f"rouse-{verb}-{ident}"
    return Service(
        kind="cron",
        name=name,
        root=root,
        command=command,
        cron_line=f"{when} {line}  # {name}",
        path=path,
    )


def cron_word(word: str) -> str:
    """A shell word for a crontab line: cron turns a bare ``%`` into a line break, so
    each ``%`` is ``\\%`` outside any quotes (which every cron and sh read as ``%``)."""
    return "\\%".join(shlex.quote(part) if part else "" for part in word.split("%")) or "''"
