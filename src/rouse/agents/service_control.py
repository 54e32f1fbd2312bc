"""``rouse service install|status|uninstall``: a planned service written, asked after, removed.

The plan (:func:`rouse.agents.service.plan`) says what to write and run; this module
writes the files (a secret one mode 0600 from its first byte), runs the OS tool when
it is on PATH, and says what it did. A crontab is never edited: its line is printed.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import subprocess
from pathlib import Path

from rouse.agents.service_units import Service
from rouse.core.errors import UsageError

REDACTED = "(redacted)"


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
        _write(path, text)
        lines.append(f"wrote {path}")
    for path, text in service.secrets.items():
        if dry_run:
            lines += [f"would write {path} (mode 0600, it holds the ledger's DSN: {REDACTED})", ""]
            continue
        _write(path, text, private=True)
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


def _write(path: Path, text: str, private: bool = False) -> None:
    """Write ``text`` to ``path`` atomically; ``private``: readable by its owner only
    (0600 from the first byte)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.tmp")
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
        fd = os.open(tmp, flags, 0o600 if private else 0o666)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        if private:
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
    path = service.unit
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
        "current": installed and _read(path) == {**service.files, **service.secrets}[path],
        "command": service.command,
        "path": service.path,
    }


def installed_text(service: Service) -> str | None:
    """The service's installed file as it is now (None: not installed, or cron)."""
    if service.kind == "cron":
        return None
    return _read(service.unit)


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
        lines.append(
            "the file differs from what `rouse service install` would write now with the "
            "options it was installed with"
        )
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
