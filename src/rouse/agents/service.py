"""``rouse service``: the sweeper (or the task worker) as a service of the OS — the plan.

A systemd user service on Linux, a launchd agent on macOS, elsewhere a crontab line
that is printed, never installed (docs/sweeper.md says why each runs what it runs).
Each unit pins the rouse that installed it and ``--memory`` of the tree; one service
per tree. This module plans it (:func:`plan`) and writes nothing: what each OS reads
is :mod:`rouse.agents.service_units`; installing, querying and removing it is
:mod:`rouse.agents.service_control`.
"""

from __future__ import annotations

import hashlib
import os
import plistlib
import re
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

from rouse.agents.service_units import (
    ROLES,
    Loop,
    Service,
    Unit,
    cron_entry,
    launchd_agent,
    sweep_command,
    systemd_unit,
)
from rouse.core.errors import UsageError

KINDS = ("systemd", "launchd", "cron")
SWEEPER = Loop()  # the sweeper's loop, at its own interval


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


def take_ledger(flags: Sequence[str]) -> tuple[list[str], str | None]:
    """The sweep flags without ``--ledger DSN``, and the DSN: a secret that never goes
    into a command line (a unit is 0644 and ``ps`` shows argv)."""
    rest: list[str] = []
    dsn: str | None = None
    words = list(flags)
    while words:
        word = words.pop(0)
        if word == "--":
            rest += [word, *words]
            break
        if word == "--ledger" and words:
            dsn = words.pop(0)
        elif word.startswith("--ledger="):
            dsn = word.partition("=")[2]
        else:
            rest.append(word)
    return rest, dsn


def plan(
    root: Path,
    flags: Sequence[str],
    *,
    kind: str,
    home: Path,
    loop: Loop = SWEEPER,
    ledger: str | None = None,
) -> Service:
    """The service for ``root`` running ``rouse sweep FLAGS`` (``loop.verb`` work: the task
    worker's, ``rouse work FLAGS``, beside the sweeper's); nothing is written here.

    ``loop`` is what the flags say (the caller parsed them with the verb's own parser).
    The service gets the installer's PATH (so exec sinks find what they found at install
    time).
    ``ledger``: ``ROUSE_LEDGER`` of the installer; like ``--ledger DSN`` among the
    flags, it reaches the service through a file only its owner can read (systemd's
    ``EnvironmentFile=``, a 0600 launchd plist), never its command line or output.
    """
    if kind not in KINDS:
        raise UsageError(f"no service kind {kind!r}: use one of {', '.join(KINDS)}")
    root = Path(os.path.abspath(root))
    ident = service_id(root, home)
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
    verb = loop.verb
    unit = Unit(root, ident, verb, home, service_path(os.environ.get("PATH", os.defpath), flags))
    if kind == "cron":
        return cron_entry(unit, flags, loop)
    if loop.once:
        raise UsageError(
            f"a {kind} service runs the {ROLES[verb]}'s loop, which --once would end at once: "
            "drop --once (a crontab line, --kind cron, is the --once way)"
        )
    command = sweep_command(root, flags, verb)
    if kind == "systemd":
        return systemd_unit(unit, command, dsn)
    made = launchd_agent(unit, command, os.getuid())
    if dsn:  # the plist itself becomes the secret: 0600, the DSN in its environment
        [(plist, _)] = made.files.items()
        data = plistlib.loads(made.files.pop(plist).encode("utf-8"))
        data["EnvironmentVariables"]["ROUSE_LEDGER"] = dsn
        made.secrets[plist] = plistlib.dumps(data, sort_keys=False).decode("utf-8")
    return made
