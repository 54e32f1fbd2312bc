"""``rouse service install|status|uninstall`` (issue 13, item 5): the sweeper as a service.

Real ``rouse`` processes with a temporary HOME and a PATH with no
``systemctl``/``launchctl`` on it (tests never start or stop a real
service): ``--dry-run`` and ``--no-start`` show and write the files; systemd
units are checked by ``systemd-analyze verify`` and launchd plists by
``plistlib``; the macOS generator runs on Linux through ``--kind launchd``
and ``default_kind``'s platform parameter.
"""

from __future__ import annotations

import json
import os
import plistlib
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from rouse.agents import service, service_units

INIT = "2026-03-14 12:00"
Rouse = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def empty_path(tmp_path: Path) -> str:
    """A PATH with nothing on it: no systemctl, launchctl or rouse can be found."""
    path = tmp_path / "bin"
    path.mkdir()
    return str(path)


def environment(home: Path, path: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("ROUSE_") and k not in ("XDG_CONFIG_HOME", "HOME", "PATH")
    }
    env.update(HOME=str(home), PATH=path)
    return env


@pytest.fixture
def tree(tmp_path: Path, home: Path, empty_path: str) -> Path:
    done = subprocess.run(
        [sys.executable, "-m", "rouse", "init", "--no-key", str(tmp_path), "--now", INIT],
        env=environment(home, empty_path),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return tmp_path / "memory"


@pytest.fixture
def rouse(tree: Path, home: Path, empty_path: str) -> Rouse:
    def run(*args: str, path: str = empty_path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "rouse", "--memory", str(tree), "service", *args],
            env=environment(home, path),
            capture_output=True,
            text=True,
            timeout=60,
            cwd=home,
        )

    return run


def unit_path(home: Path, tree: Path) -> Path:
    name = f"rouse-sweep-{service.service_id(tree)}.service"
    return home / ".config/systemd/user" / name


def plist_path(home: Path, tree: Path) -> Path:
    return home / f"Library/LaunchAgents/rouse.sweep.{service.service_id(tree)}.plist"


def files_under(home: Path) -> list[Path]:
    return sorted(p for p in home.rglob("*") if p.is_file())


def test_dry_run_prints_the_unit_and_writes_nothing(rouse: Rouse, tree: Path, home: Path) -> None:
    done = rouse("install", "--kind", "systemd", "--dry-run", "--every", "30")
    assert done.returncode == 0, done.stderr
    python = os.path.abspath(sys.executable)
    assert f"would write {unit_path(home, tree)}:" in done.stdout
    assert f"ExecStart={python} -m rouse --memory {tree} sweep --every 30\n" in done.stdout
    assert "  systemctl --user enable " in done.stdout
    assert files_under(home) == []


def test_the_unit_pins_this_rouse_when_it_is_a_stable_install(
    rouse: Rouse, tree: Path, home: Path
) -> None:
    from rouse.agents.hook_commands import stable_executable

    installed = Path(sys.executable).parent / "rouse"
    assert installed.is_file(), "the venv's rouse script"
    done = rouse("install", "--kind", "systemd", "--dry-run", path=str(installed.parent))
    assert done.returncode == 0, done.stderr
    if stable_executable(argv0="", on_path=str(installed)):
        assert f"ExecStart={installed} --memory {tree} sweep\n" in done.stdout
    else:  # this checkout lives under a temp directory: a venv there may vanish
        python = os.path.abspath(sys.executable)
        assert f"ExecStart={python} -m rouse --memory {tree} sweep\n" in done.stdout


def test_the_pinned_command_runs_from_anywhere_with_no_path(
    rouse: Rouse, tree: Path, home: Path, tmp_path: Path
) -> None:
    done = rouse("install", "--kind", "launchd", "--no-start", "--every", "30")
    assert done.returncode == 0, done.stderr
    with plist_path(home, tree).open("rb") as handle:
        argv = plistlib.load(handle)["ProgramArguments"]
    # the service's own command, once (a real tick), from elsewhere, with nothing on PATH
    ran = subprocess.run(
        [*argv, "--once"],
        env={"HOME": str(home), "PATH": ""},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ran.returncode == 0, ran.stderr
    assert (tree / ".rouse/sweep.json").is_file()


ODD = ("--heartbeat", "http://127.0.0.1:9/p%20a$HOME", "--sink", "exec", "--", "sh", "-c",
       'echo "a b" \\ $x; true', "it's")  # fmt: skip


def test_install_writes_a_unit_systemd_analyze_verifies(
    rouse: Rouse, tree: Path, home: Path
) -> None:
    if shutil.which("systemd-analyze") is None:
        pytest.skip("systemd-analyze is not installed (Debian package systemd): cannot verify")
    done = rouse("install", "--no-start", "--kind", "systemd", "--every", "20", *ODD)
    assert done.returncode == 0, done.stderr
    unit = unit_path(home, tree)
    assert files_under(home) == [unit]
    assert f"wrote {unit}" in done.stdout
    assert "not started (--no-start)" in done.stdout
    checked = subprocess.run(
        ["systemd-analyze", "verify", str(unit)], capture_output=True, text=True, timeout=60
    )
    assert checked.returncode == 0, checked.stderr
    assert unit.name not in checked.stderr  # no warning about our unit
    text = unit.read_text()
    assert '"http://127.0.0.1:9/p%%20a$$HOME"' in text  # specifier and variable kept literal
    assert "Restart=on-failure" in text
    assert "WantedBy=default.target" in text


def test_the_launchd_plist_loads_with_plistlib(rouse: Rouse, tree: Path, home: Path) -> None:
    done = rouse("install", "--kind", "launchd", "--no-start", "--every", "20", *ODD)
    assert done.returncode == 0, done.stderr
    with plist_path(home, tree).open("rb") as handle:
        data = plistlib.load(handle)
    assert data["Label"] == f"rouse.sweep.{service.service_id(tree)}"
    assert data["ProgramArguments"] == [
        os.path.abspath(sys.executable), "-m", "rouse", "--memory", str(tree),
        "sweep", "--every", "20", *ODD,
    ]  # fmt: skip
    assert data["RunAtLoad"] is True
    assert data["KeepAlive"] == {"SuccessfulExit": False}
    assert data["WorkingDirectory"] == str(tree)
    assert "launchctl bootstrap gui/" in done.stdout  # what to run, since it is not on PATH


def test_the_platform_picks_the_kind(tree: Path, home: Path) -> None:
    assert service.default_kind("linux") == "systemd"
    assert service.default_kind("darwin") == "launchd"
    assert service.default_kind("freebsd14") == "cron"
    mac = service.plan(tree, ["--every", "30"], kind=service.default_kind("darwin"), home=home)
    (path, text), = mac.files.items()  # fmt: skip
    assert path == plist_path(home, tree)
    assert plistlib.loads(text.encode())["ProgramArguments"][-2:] == ["--every", "30"]


def test_cron_prints_a_line_and_writes_nothing(rouse: Rouse, tree: Path, home: Path) -> None:
    done = rouse("install", "--kind", "cron", "--every", "300", "--heartbeat", "http://h/a%b")
    assert done.returncode == 0, done.stderr
    line = done.stdout.splitlines()[-1]
    python = os.path.abspath(sys.executable)
    path = str(home.parent / "bin")  # the installer's PATH (the fixture's empty folder)
    assert line == (
        f"*/5 * * * * PATH={path} {python} -m rouse --memory {tree} sweep --once --every 300 "
        f"--heartbeat http://h/a\\%b  # rouse-sweep-{service.service_id(tree)}"
    )
    assert files_under(home) == []
    default = rouse("install", "--kind", "cron")
    assert default.stdout.splitlines()[-1].startswith("* * * * * ")
    assert "sweep --once --every 60  #" in default.stdout


def test_cron_refuses_an_interval_it_cannot_keep(rouse: Rouse) -> None:
    done = rouse("install", "--kind", "cron", "--every", "45")
    assert done.returncode == 2
    assert "not --every 45: use one of 60, 120" in done.stderr


def test_status_and_uninstall(rouse: Rouse, tree: Path, home: Path) -> None:
    unit = unit_path(home, tree)
    before = rouse("status", "--kind", "systemd")
    assert before.returncode == 1
    assert f"not installed (no {unit})" in before.stdout
    assert rouse("install", "--kind", "systemd", "--no-start").returncode == 0
    after = rouse("status", "--kind", "systemd")
    assert after.returncode == 0, after.stderr
    assert f"file: {unit}" in after.stdout
    assert "state: unknown (the OS tool is not on PATH)" in after.stdout
    data = json.loads(rouse("status", "--kind", "systemd", "--json").stdout)
    assert (data["installed"], data["current"], data["file"]) == (True, True, str(unit))
    dry = rouse("uninstall", "--kind", "systemd", "--dry-run")
    assert f"would remove {unit}" in dry.stdout
    assert unit.is_file()
    gone = rouse("uninstall", "--kind", "systemd")
    assert gone.returncode == 0, gone.stderr
    assert f"removed {unit}" in gone.stdout
    assert "systemctl --user disable --now" in gone.stdout  # to run by hand: not on PATH
    assert not unit.exists()
    again = rouse("uninstall", "--kind", "systemd")
    assert (again.returncode, "nothing to remove" in again.stdout) == (0, True)


def test_installing_again_replaces_the_one_unit(rouse: Rouse, tree: Path, home: Path) -> None:
    assert rouse("install", "--kind", "systemd", "--no-start", "--every", "30").returncode == 0
    assert rouse("install", "--kind", "systemd", "--no-start", "--every", "90").returncode == 0
    assert files_under(home) == [unit_path(home, tree)]
    assert "sweep --every 90\n" in unit_path(home, tree).read_text()


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (["--every", "soon"], "invalid float value"),
        (["--every", "0"], "--every must be a number of seconds above 0"),
        (["--heartbeat", "ftp://x/"], "bad --heartbeat URL"),
        (["--once"], "drop --once"),
        (["--memory", "/elsewhere"], "--memory has no place among the service's sweep flags"),
        (["--now", "2026-01-01 00:00"], "--now has no place in a service"),
        (["--sink", "exec", "--", "printf", "a\nb"], "holds a line break"),
        (["--kind", "upstart"], "no service kind 'upstart'"),
    ],
)
def test_bad_sweep_flags_fail_at_install_not_in_the_service(
    rouse: Rouse, home: Path, flags: list[str], says: str
) -> None:
    done = rouse("install", "--kind", "systemd", "--no-start", *flags)
    assert done.returncode == 2
    assert says in done.stderr
    assert files_under(home) == []


def test_status_takes_no_sweep_flags(rouse: Rouse) -> None:
    done = rouse("status", "--every", "30")
    assert done.returncode == 2
    assert "takes no sweep flags" in done.stderr


@pytest.mark.parametrize("word", ["plain", "a b%", "%", "100%done", "it's 5%", "", "$HOME%x"])
def test_a_cron_word_reads_back_whether_cron_drops_the_backslash_or_not(word: str) -> None:
    quoted = service_units.cron_word(word)
    assert "%" not in quoted.replace("\\%", "")  # no bare % for cron to turn into a newline
    for as_cron_leaves_it in (quoted, quoted.replace("\\%", "%")):
        said = subprocess.run(
            ["sh", "-c", f"printf '%s|' {as_cron_leaves_it}"],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert said.stdout == f"{word}|"


def test_the_worker_gets_its_own_unit_beside_the_sweepers(
    rouse: Rouse, tree: Path, home: Path
) -> None:
    done = rouse("install", "--kind", "systemd", "--no-start")
    assert done.returncode == 0, done.stderr
    work = rouse("install", "--work", "--kind", "systemd", "--no-start", "--jobs", "2")
    assert work.returncode == 0, work.stderr
    ident = service.service_id(tree)
    sweeper = home / f".config/systemd/user/rouse-sweep-{ident}.service"
    worker = home / f".config/systemd/user/rouse-work-{ident}.service"
    assert sweeper.is_file() and worker.is_file()
    text = worker.read_text()
    assert f"--memory {tree} work --jobs 2" in text and "KillMode=mixed" in text
    assert "task worker" in text and "KillMode" not in sweeper.read_text()
    cron = rouse("install", "--work", "--kind", "cron", "--run", "claude")
    assert cron.returncode == 0, cron.stderr
    assert f"work --once --run claude  # rouse-work-{ident}" in cron.stdout
    bad = rouse("install", "--work", "--kind", "cron", "--no-such-flag")
    assert bad.returncode == 2


# -- units that run (issue 21, item 8) -------------------------------------------


def test_units_are_named_after_the_project(tmp_path: Path) -> None:
    home = tmp_path / "home"
    mine = service.service_id(tmp_path / "My Project" / "memory", home)
    theirs = service.service_id(tmp_path / "other" / "My Project" / "memory", home)
    assert mine.startswith("my-project-") and theirs.startswith("my-project-")
    assert mine != theirs  # the hash of the tree's path tells them apart
    assert service.service_id(home / ".rouse", home).startswith("global-")


def _agent_install(tmp_path: Path) -> tuple[Path, Path]:
    """An npm-style install: bin/claude links into the package, node beside it."""
    prefix = tmp_path / "npm"
    package = prefix / "lib" / "node_modules" / "claude-code"
    package.mkdir(parents=True)
    script = package / "cli.js"
    script.write_text("#!/usr/bin/env node\n")
    script.chmod(0o755)
    (prefix / "bin").mkdir()
    (prefix / "bin" / "claude").symlink_to(script)
    node = prefix / "bin" / "node"
    node.write_text("#!/bin/sh\n")
    node.chmod(0o755)
    return prefix / "bin", node


def test_the_unit_records_the_path_that_finds_the_agent_and_node(
    rouse: Rouse, tmp_path: Path, home: Path
) -> None:
    bin_dir, _ = _agent_install(tmp_path)
    installer = os.pathsep.join(["relative/bin", str(bin_dir), "", "/usr/bin", "/bin"])
    done = rouse("install", "--kind", "cron", "--run", "claude", path=installer)
    assert done.returncode == 0, done.stderr
    line = done.stdout.splitlines()[-1]
    recorded = f"{bin_dir}:/usr/bin:/bin"  # resolved at install time, the relative entry dropped
    assert line.startswith(f"* * * * * PATH={recorded} ")
    assert shutil.which("claude", path=recorded) and shutil.which("node", path=recorded)
    installed = rouse(
        "install", "--kind", "systemd", "--no-start", "--run", "claude", path=installer
    )
    assert installed.returncode == 0, installed.stderr
    shown = rouse("status", "--kind", "systemd", path=installer)
    assert f"PATH: {bin_dir}:/usr/bin:/bin" in shown.stdout.splitlines()
    assert any(x.startswith("command: ") and " sweep" in x for x in shown.stdout.splitlines())
    unit = unit_path(home, tree=home.parent / "memory").read_text()
    assert f"Environment=PATH={recorded}" in unit


@pytest.mark.parametrize("kind", ["systemd", "launchd"])
def test_status_compares_with_the_options_the_service_was_installed_with(
    rouse: Rouse, tree: Path, home: Path, kind: str
) -> None:
    """Issue 34, item 6: a fresh ``install --no-start --every 300`` is current, and status
    shows the command with its ``--every``; a unit edited by hand still differs."""
    done = rouse("install", "--kind", kind, "--no-start", "--every", "300", "--sink", "stdout")
    assert done.returncode == 0, done.stderr
    status = rouse("status", "--kind", kind)
    assert status.returncode == 0, status.stderr
    assert "differs" not in status.stdout
    assert "sweep --every 300 --sink stdout" in status.stdout
    data = json.loads(rouse("status", "--kind", kind, "--json").stdout)
    assert data["current"] is True and data["command"][-4:] == [
        "--every",
        "300",
        "--sink",
        "stdout",
    ]
    if kind == "systemd":
        unit = unit_path(home, tree)
        unit.write_text(unit.read_text().replace("Restart=", "#Restart="))
        assert "differs" in rouse("status", "--kind", kind).stdout


@pytest.mark.parametrize("kind", ["systemd", "launchd"])
def test_a_service_installed_with_a_fleet_dsn_is_current(
    rouse: Rouse, home: Path, kind: str
) -> None:
    """The DSN is an option it was installed with: status compares with it (read back from
    the 0600 file that keeps it), and neither prints nor shows it."""
    dsn = "postgresql://u:s3cret-pw@db.invalid/rouse"
    done = rouse("install", "--kind", kind, "--no-start", "--ledger", dsn)
    assert done.returncode == 0, done.stderr
    for args in (("status", "--kind", kind), ("status", "--kind", kind, "--json")):
        status = rouse(*args)
        assert status.returncode == 0, status.stderr
        assert "differs" not in status.stdout and "s3cret-pw" not in status.stdout
    assert json.loads(rouse("status", "--kind", kind, "--json").stdout)["current"] is True
