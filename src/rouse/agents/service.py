"""``rouse service``: the sweeper as a service of the OS (systemd, launchd, or cron).

On Linux a systemd *user* service (``~/.config/systemd/user/``), on macOS a
launchd agent (``~/Library/LaunchAgents/``), elsewhere a crontab line that is
printed, never installed. systemd and launchd run the long-lived loop
(``rouse sweep``): it ticks the instant something comes due rather than on
the next timer, keeps its header cache warm between ticks, and holds the
one-sweeper lock for its whole life; the OS restarts it if it fails. cron
has no such supervisor, so its line runs ``sweep --once --every S`` (the
interval recorded so that ``status --check`` can tell when it is late).

Each unit pins the absolute path of the rouse that installed it (as the
hooks of ``rouse wire`` do) and ``--memory`` of the tree, so the service does
not depend on the PATH or the working directory it starts with. One service
per tree: its name carries the tree's folder name and a hash of its path.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import plistlib
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from rouse import __version__
from rouse.agents.settings_hooks import stable_executable
from rouse.core.errors import UsageError

KINDS = ("systemd", "launchd", "cron")
#: Seconds the OS waits before restarting a sweeper that failed.
RESTART_AFTER = 30
#: The intervals (seconds) a crontab line can keep exactly: minutes that divide an hour.
CRON_EVERY = (60, 120, 180, 240, 300, 360, 600, 720, 900, 1200, 1800, 3600)
CRON_DEFAULT_EVERY = 60


def default_kind(platform: str | None = None) -> str:
    """systemd on Linux, launchd on macOS, a crontab line elsewhere."""
    platform = sys.platform if platform is None else platform
    if platform.startswith("linux"):
        return "systemd"
    if platform == "darwin":
        return "launchd"
    return "cron"


def service_id(root: Path, home: Path | None = None) -> str:
    """``<project>-<8 hex of the tree's path hash>``: one service per tree, readable.

    Named after the project directory (the tree's parent: every tree is called
    ``memory``, so its own name tells units apart by nothing); the global tree
    (``~/.rouse``) is ``global``.
    """
    home = Path.home() if home is None else home
    is_global = os.path.abspath(root) == os.path.abspath(home / ".rouse")
    name = "global" if is_global else (root.parent.name or root.name)
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:32] or "tree"
    digest = hashlib.sha256(str(root).encode("utf-8", "surrogateescape")).hexdigest()[:8]
    return f"{slug}-{digest}"


#: The programs a sweep's runs need on PATH: ``--run claude|codex`` starts an npm CLI, whose
#: launcher is ``#!/usr/bin/env node``.
AGENT_CLIS = ("claude", "codex")


def service_path(path_env: str, flags: Sequence[str]) -> str:
    """The PATH a service gets: the installer's, resolved now, relative entries dropped,
    with the folders of the agent CLI that ``--run`` names and of ``node`` added if missing.

    A service starts with the OS's minimal PATH (cron: ``/usr/bin:/bin``), which finds
    neither an npm-installed agent nor ``node``; a relative entry would depend on the
    directory it starts in.
    """
    folders = list(dict.fromkeys(p for p in path_env.split(os.pathsep) if os.path.isabs(p)))
    wanted: list[str] = []
    for i, flag in enumerate(flags):
        value = flags[i + 1] if i + 1 < len(flags) else ""
        if flag == "--run" and value in AGENT_CLIS:
            wanted += [value, "node"]
        elif flag.startswith("--run=") and flag[6:] in AGENT_CLIS:
            wanted += [flag[6:], "node"]
        if flag == "--" and value and not os.path.isabs(value):
            wanted.append(value)  # exec -- CMD: the command's own program
    for program in wanted:
        found = shutil.which(program, path=os.pathsep.join(folders))
        if found is None:
            continue
        # an npm bin is a link into its package; node may sit beside the real file
        for where in (os.path.dirname(found), os.path.dirname(os.path.realpath(found))):
            if where not in folders and shutil.which("node", path=where):
                folders.append(where)
    return os.pathsep.join(folders)


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


REDACTED = "(redacted)"


def take_ledger(flags: Sequence[str]) -> tuple[list[str], str | None]:
    """The sweep flags without ``--ledger DSN``, and the DSN: a secret that never goes
    into a command line (a unit is 0644 and ``ps`` shows argv)."""
    rest: list[str] = []
    dsn: str | None = None
    words = list(flags)
    index = 0
    while index < len(words):
        word = words[index]
        if word == "--":
            rest += words[index:]
            break
        if word == "--ledger" and index + 1 < len(words):
            dsn = words[index + 1]
            index += 2
            continue
        if word.startswith("--ledger="):
            dsn = word.partition("=")[2]
        else:
            rest.append(word)
        index += 1
    return rest, dsn


def _env_value(value: str) -> str:
    """``value`` quoted for a systemd EnvironmentFile (read back unchanged)."""
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in value):
        raise UsageError("the ledger's DSN holds a control character: a service cannot carry it")
    if "'" not in value:
        return f"'{value}'"
    escaped = "".join("\\" + ch if ch in '\\"$`' else ch for ch in value)
    return f'"{escaped}"'


def sweep_command(
    root: Path, flags: Sequence[str], executable: str | None = None, verb: str = "sweep"
) -> list[str]:
    """The sweeper's argv (or, ``verb`` work, the task worker's): this rouse (absolute),
    ``--memory`` of the tree, the verb, then the flags.

    ``executable`` None finds this rouse when it is a stable install; else (or
    "") it is this Python with ``-m rouse``, also an absolute path.
    """
    pinned = stable_executable() if executable is None else executable
    head = [pinned] if pinned else [os.path.abspath(sys.executable), "-m", "rouse"]
    return [*head, "--memory", str(root), verb, *flags]


def plan(
    root: Path,
    flags: Sequence[str],
    *,
    kind: str,
    home: Path,
    every: float | None = None,
    once: bool = False,
    executable: str | None = None,
    path_env: str | None = None,
    uid: int | None = None,
    verb: str = "sweep",
    ledger: str | None = None,
) -> Service:
    """The service for ``root`` running ``rouse sweep FLAGS`` (``verb`` work: the task
    worker's, ``rouse work FLAGS``, beside the sweeper's); nothing is written here.

    ``every``/``once`` are what the flags say (the caller parsed them with
    the sweep verb's own parser); ``path_env`` is the PATH the service gets
    (the installer's, so exec sinks find what they found at install time).
    ``ledger``: ``ROUSE_LEDGER`` of the installer; like ``--ledger DSN`` among the
    flags, it reaches the service through a file only its owner can read (systemd's
    ``EnvironmentFile=``, a 0600 launchd plist), never its command line or output.
    """
    if kind not in KINDS:
        raise UsageError(f"no service kind {kind!r}: use one of {', '.join(KINDS)}")
    root = Path(os.path.abspath(root))
    ident = service_id(root, home)
    path_env = os.environ.get("PATH", os.defpath) if path_env is None else path_env
    flags, given = take_ledger(flags)
    dsn = given or ledger or None
    for word in (str(root), *flags):
        if any(ord(ch) < 32 or ord(ch) == 127 for ch in word):
            what = "the tree's path" if word == str(root) else "a sweep flag"
            raise UsageError(
                f"{what} {word!r} holds a line break or another control character, which "
                f"a {kind} service cannot carry (a crontab line would become two): remove it"
            )
    if kind == "cron" and dsn:
        source = "--ledger" if given else "ROUSE_LEDGER"
        raise UsageError(
            f"a crontab line cannot keep the fleet's DSN ({source}) secret: use --kind systemd "
            "or launchd, or set ROUSE_LEDGER at the top of your crontab yourself (crontab -e) "
            "and install without it"
        )
    path_env = service_path(path_env, flags)
    if kind == "cron":
        return _cron(
            root,
            flags,
            ident,
            every=every,
            once=once,
            executable=executable,
            path=path_env,
            verb=verb,
        )
    if once:
        raise UsageError(
            f"a {kind} service runs the {_WHO[verb]}'s loop, which --once would end at once: "
            "drop --once (a crontab line, --kind cron, is the --once way)"
        )
    command = sweep_command(root, flags, executable, verb)
    if kind == "systemd":
        return _systemd(root, ident, command, home, path_env, dsn, verb)
    uid = os.getuid() if uid is None else uid
    made = _launchd(root, ident, command, home, path_env, uid, verb)
    if dsn:  # the plist itself becomes the secret: 0600, the DSN in its environment
        [(plist, _)] = made.files.items()
        data = plistlib.loads(made.files.pop(plist).encode("utf-8"))
        data["EnvironmentVariables"]["ROUSE_LEDGER"] = dsn
        made.secrets[plist] = plistlib.dumps(data, sort_keys=False).decode("utf-8")
    return made


#: Who each service's verb is, as its unit describes it.
_WHO = {"sweep": "sweeper", "work": "task worker"}


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


def _systemd(
    root: Path,
    ident: str,
    command: list[str],
    home: Path,
    path_env: str,
    dsn: str | None,
    verb: str = "sweep",
) -> Service:
    name = f"rouse-{verb}-{ident}.service"
    config = os.environ.get("XDG_CONFIG_HOME", "")
    base = Path(config) if os.path.isabs(config) else home / ".config"
    unit = base / "systemd" / "user" / name
    env_file = base / "rouse" / "service" / f"rouse-{verb}-{ident}.env"
    secrets = {env_file: f"ROUSE_LEDGER={_env_value(dsn)}\n"} if dsn else {}
    text = "\n".join(
        [
            f"# Written by `rouse service install` (rouse {__version__}): the {_WHO[verb]} of "
            f"{root}.",
            "# Install again to change it; `rouse service uninstall` stops and removes it.",
            "[Unit]",
            f"Description=rouse {_WHO[verb]} for {str(root).replace('%', '%%')}",
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
        files={unit: text},
        secrets=secrets,
        private=[env_file],
        path=path_env,
        start=[[*ctl, "daemon-reload"], [*ctl, "enable", name], [*ctl, "restart", name]],
        stop=[[*ctl, "disable", "--now", name]],
        query=[*ctl, "is-active", name],
    )


# -- launchd ------------------------------------------------------------------


def _launchd(
    root: Path,
    ident: str,
    command: list[str],
    home: Path,
    path_env: str,
    uid: int,
    verb: str = "sweep",
) -> Service:
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
    return Service(
        kind="launchd",
        name=label,
        root=root,
        command=command,
        files={plist: text},
        path=path_env,
        # out first, so that installing again loads the new plist (not loaded yet is fine)
        start=[
            ["launchctl", "bootout", f"{domain}/{label}"],
            ["launchctl", "bootstrap", domain, str(plist)],
        ],
        stop=[["launchctl", "bootout", f"{domain}/{label}"]],
        query=["launchctl", "print", f"{domain}/{label}"],
        optional=[["launchctl", "bootout", f"{domain}/{label}"]],
    )


# -- cron ---------------------------------------------------------------------


def _cron(
    root: Path,
    flags: Sequence[str],
    ident: str,
    *,
    every: float | None,
    once: bool,
    executable: str | None,
    path: str,
    verb: str = "sweep",
) -> Service:
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
    command = sweep_command(root, [*extra, *flags], executable, verb)
    minutes = int(seconds) // 60
    when = "0 * * * *" if minutes == 60 else "* * * * *" if minutes == 1 else f"*/{minutes} * * * *"
    line = " ".join(_cron_word(word) for word in command)
    if path:  # cron's own PATH is /usr/bin:/bin: the line carries the one it needs
        line = f"PATH={_cron_word(path)} {line}"
    name = f"rouse-{verb}-{ident}"
    return Service(
        kind="cron",
        name=name,
        root=root,
        command=command,
        cron_line=f"{when} {line}  # {name}",
        path=path,
    )


def _cron_word(word: str) -> str:
    """A shell word for a crontab line: cron turns a bare ``%`` into a line break, so
    each ``%`` is ``\\%`` outside any quotes (which every cron and sh read as ``%``)."""
    return "\\%".join(shlex.quote(part) if part else "" for part in word.split("%")) or "''"


# -- install, status, uninstall -------------------------------------------------


def _run(commands: list[list[str]], optional: list[list[str]]) -> list[str]:
    """Run each command in turn; a line for each that failed (``optional`` ones may)."""
    said: list[str] = []
    for argv in commands:
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.SubprocessError) as exc:
            said.append(f"could not run {shlex.join(argv)}: {exc}")
            continue
        if done.returncode and argv not in optional:
            tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or [""]
            said.append(f"{shlex.join(argv)} exited {done.returncode}: {tail[0]}")
    return said


def _tool(service: Service) -> str | None:
    """The OS tool that starts/stops this kind of service, if it is on PATH."""
    if service.query is None:
        return None
    return shutil.which(service.query[0])


def install(service: Service, *, dry_run: bool, start: bool) -> list[str]:
    """Write the service's files (or say what it would), then start it; the lines to print."""
    if service.kind == "cron":
        return [
            "rouse does not edit your crontab; add this line with `crontab -e`:",
            "",
            service.cron_line or "",
        ]
    lines: list[str] = []
    for path, text in service.files.items():
        if dry_run:
            lines += [f"would write {path}:", "", text.rstrip("\n"), ""]
            continue
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{path.name}.tmp")
            tmp.write_text(text, encoding="utf-8")
            os.replace(tmp, path)
        except OSError as exc:
            raise UsageError(
                f"cannot write {path} ({exc.strerror}): check its permissions"
            ) from None
        lines.append(f"wrote {path}")
    for path, text in service.secrets.items():
        if dry_run:
            lines += [f"would write {path} (mode 0600, it holds the ledger's DSN: {REDACTED})", ""]
            continue
        _write_private(path, text)
        lines.append(f"wrote {path} (mode 0600: the ledger's DSN)")
    if os.environ.get("ROUSE_WEBHOOK_SECRET"):
        where = (
            f"`systemctl --user edit {service.name}` (Environment=ROUSE_WEBHOOK_SECRET=…)"
            if service.kind == "systemd"
            else "the plist's EnvironmentVariables"
        )
        lines.append(
            f"ROUSE_WEBHOOK_SECRET is set here but is not written into the unit (secrets stay "
            f"out of files): give the service it with {where}"
        )
    commands = [shlex.join(argv) for argv in service.start]
    if dry_run:
        return [*lines, "then would run:", *(f"  {c}" for c in commands)]
    if not start or _tool(service) is None:
        why = "(--no-start)" if not start else f"({service.start[0][0]} is not on PATH)"
        return [*lines, f"not started {why}; to start it, run:", *(f"  {c}" for c in commands)]
    failed = _run(service.start, service.optional)
    if failed:
        return [*lines, *failed, "the unit is written but may not be running: see above"]
    return [*lines, f"started {service.name} ({service.kind}): `rouse service status` to check"]


def _write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` readable by its owner only (0600 from the first byte)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.tmp")
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except OSError as exc:
        raise UsageError(f"cannot write {path} ({exc.strerror}): check its permissions") from None


def status(service: Service) -> dict[str, object]:
    """Whether the service's file is there, and (when the OS tool is here) whether it runs."""
    if service.kind == "cron":
        return {
            "kind": "cron",
            "name": service.name,
            "installed": None,
            "state": None,
            "command": service.command,
            "path": service.path,
            "note": f"rouse does not manage crontab: look for the line ending '# {service.name}' "
            "in `crontab -l`",
            "line": service.cron_line,
        }
    path = next(iter(service.files))
    installed = path.is_file()
    state: str | None = None
    if installed and _tool(service) is not None and service.query is not None:
        try:
            done = subprocess.run(service.query, capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.SubprocessError):
            state = None
        else:
            if service.kind == "systemd":
                state = done.stdout.strip() or f"unknown (exit {done.returncode})"
            else:
                state = "loaded" if done.returncode == 0 else "not loaded"
    return {
        "kind": service.kind,
        "name": service.name,
        "file": str(path),
        "installed": installed,
        "state": state,
        "current": installed and _read(path) == service.files[path],
        "command": service.command,
        "path": service.path,
    }


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _runs(data: dict[str, object]) -> list[str]:
    """What the unit runs, and with which PATH (for a unit written now)."""
    command = data.get("command")
    words = [str(w) for w in command] if isinstance(command, list) else []
    return [f"command: {shlex.join(words)}", f"PATH: {data.get('path')}"]


def status_lines(data: dict[str, object]) -> list[str]:
    if data["kind"] == "cron":
        return [str(data["note"]), f"the line: {data['line']}", *_runs(data)]
    lines = [f"{data['kind']} service {data['name']}", *_runs(data)]
    if not data["installed"]:
        return [*lines, f"not installed (no {data['file']}): `rouse service install`"]
    lines.append(f"file: {data['file']}")
    if not data["current"]:
        lines.append("the file differs from what `rouse service install` would write now")
    state = data["state"]
    lines.append(f"state: {state}" if state else "state: unknown (the OS tool is not on PATH)")
    return lines


def uninstall(service: Service, *, dry_run: bool, start: bool) -> list[str]:
    """Stop the service and remove its files; the lines to print. Idempotent."""
    if service.kind == "cron":
        return [
            f"rouse does not edit your crontab: remove the line ending '# {service.name}' "
            "with `crontab -e`"
        ]
    present = [path for path in (*service.files, *service.private) if path.exists()]
    if not present:
        return [f"{service.kind} service {service.name} is not installed: nothing to remove"]
    commands = [shlex.join(argv) for argv in service.stop]
    if dry_run:
        return [
            "would run:",
            *(f"  {c}" for c in commands),
            *(f"would remove {path}" for path in present),
        ]
    lines: list[str] = []
    if start and _tool(service) is not None:
        lines += _run(service.stop, service.optional)
    elif service.stop:
        lines += ["not stopped by rouse; if it runs, stop it with:", *(f"  {c}" for c in commands)]
    for path in present:
        try:
            path.unlink()
        except OSError as exc:
            raise UsageError(
                f"cannot remove {path} ({exc.strerror}): check its permissions"
            ) from None
        lines.append(f"removed {path}")
    return lines
