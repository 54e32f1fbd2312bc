"""The idle hooks' quick path (issue 24): what they load, the folder stamp, the light readers.

With nothing new, the UserPromptSubmit and Stop hooks should cost little more
than starting Python; bench/hooks_bench.py measures that. Here it is pinned
functionally instead: the exact rouse modules an idle hook imports and every
standard-library module beyond Python's own start-up, so that an import that
creeps back onto the path fails a test rather than a benchmark. The seen-set's
stamp of the nudges folder (a listing skipped) never hides a wake, the state
reader's fast reading (json's C scanner) gives json's answer or leaves it to json,
and the hooks' pathlib-free answers of rouse.core.home are find_tree's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path, PurePosixPath

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import NOW, stamp
from rouse.agents import hook, prompt_hook
from rouse.core import home as core_home
from rouse.core.errors import UsageError
from rouse.core.home import find_tree
from rouse.records.scaffold import init
from rouse.state import bounded, files
from rouse.state import files as statefile

START = stamp(NOW)
DUE = "2026-03-14 13:00"
SWEEP = "2026-03-14 13:05"

#: The rouse modules an idle prompt loads, and no other.
PROMPT_MODULES = {
    "rouse",
    "rouse.cli",
    "rouse.cli.main",
    "rouse.cli.quick",
    "rouse.agents",
    "rouse.agents.hook",
    "rouse.agents.hookio",
    "rouse.agents.prompt_hook",
    "rouse.core",
    "rouse.core.home",
    "rouse.state",
    "rouse.state.bounded",
    "rouse.state.files",
    "rouse.state.shapes",
}
#: ... and an idle Stop hook (or SessionEnd): its waiter and the agent's process.
STOP_MODULES = PROMPT_MODULES | {"rouse.agents.stop_hook", "rouse.agents.agentproc"}
STOP_MODULES |= {"rouse.core.inotify"}  # (ctypes is loaded only to sleep: WAITER_STDLIB)
#: The standard library an idle hook may add to Python's start-up: C modules and
#: small ones (ctypes for inotify: the Stop hook's waiter only).
LIGHT_STDLIB = {"__future__", "gc", "select", "_json", "fcntl"}
WAITER_STDLIB = {"ctypes", "_ctypes", "ctypes._endian", "struct", "_struct", "types"}
#: What they are kept from, named for a clearer failure (each costs milliseconds).
HEAVY = {"pathlib", "re", "json", "contextlib", "functools", "collections", "enum", "typing"}
HEAVY |= {"datetime", "argparse", "dataclasses", "signal", "tomllib", "sqlite3", "hashlib"}

PROBE = """
import sys
before = set(sys.modules)
from rouse.cli.main import main
code = main({argv!r})
loaded = sorted(set(sys.modules) - before)
with open({out!r}, "w") as handle:
    handle.write("\\n".join(loaded))
raise SystemExit(code)
"""


def environment(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ROUSE_", "CLAUDE_"))}
    return {**env, **extra}


def rouse(tree: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rouse", *args, "--memory", str(tree)],
        input=stdin,
        env=environment(),
        capture_output=True,
        text=True,
        timeout=60,
    )


def event(name: str, session: str = "s1") -> str:
    prompt = 'fix [the "x"] in C:\\\\tmp {now}'  # brackets, quotes, backslashes: still light
    return json.dumps(
        {"session_id": session, "hook_event_name": name, "cwd": "/", "prompt": prompt}
    )


def hook_run(tree: Path, name: str, session: str = "s1") -> subprocess.CompletedProcess[str]:
    return rouse(tree, "pack", "--hook", "claude", "--now", SWEEP, stdin=event(name, session))


def deliver(tree: Path, slug: str, due: str, now: str) -> None:
    for args in (["remind", slug, "--due", due, "--now", START], ["sweep", "--once", "-q"]):
        done = rouse(tree, *args, *(["--now", now] if args[0] == "sweep" else []))
        assert done.returncode == 0, done.stderr


def settle(folder: Path, seconds_ago: float = 3600) -> None:
    """The folder's mtime put in the past: past the racy window, as after a quiet while."""
    when = folder.stat().st_mtime - seconds_ago
    os.utime(folder, (when, when))


def seen_data(tree: Path, session: str = "s1") -> dict[str, object]:
    data = json.loads((tree / ".rouse" / "sessions" / f"{session}.json").read_text())
    assert isinstance(data, dict)
    return data


def stamp_of(folder: Path) -> list[int]:
    info = os.lstat(folder)
    return [info.st_mtime_ns, info.st_ctime_ns, info.st_ino, info.st_dev]


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A tree with one delivered wake and a session (s1) whose start showed it."""
    root = tmp_path / "memory"
    init(root, NOW, examples=False)
    deliver(root, "call-bank", DUE, SWEEP)
    settle(root / ".rouse" / "nudges")
    done = hook_run(root, "SessionStart")
    assert done.returncode == 0 and "woken: 1 record(s)" in done.stdout, done.stdout
    return root


# -- what an idle hook loads -------------------------------------------------------


def loaded_by(tmp_path: Path, argv: list[str], stdin: str, **env: str) -> set[str]:
    out = tmp_path / "modules.txt"
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(argv=argv, out=str(out))],
        input=stdin,
        env=environment(**env),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and done.stdout == "" and done.stderr == "", done.stderr
    return set(out.read_text().split())


@pytest.mark.parametrize(
    ("name", "wait", "modules", "stdlib"),
    [
        ("UserPromptSubmit", "", PROMPT_MODULES, LIGHT_STDLIB),
        ("Stop", "1e-9", STOP_MODULES, LIGHT_STDLIB),  # leaves at its first look: no watch
        ("Stop", "0.2", STOP_MODULES, LIGHT_STDLIB | WAITER_STDLIB),  # asleep a while
        ("SessionEnd", "", STOP_MODULES, LIGHT_STDLIB),
    ],
)
def test_an_idle_hook_loads_only_what_nothing_new_needs(
    tree: Path, tmp_path: Path, name: str, wait: str, modules: set[str], stdlib: set[str]
) -> None:
    argv = ["pack", "--memory", str(tree), "--hook", "claude"]
    loaded = loaded_by(tmp_path, argv, event(name), ROUSE_STOP_WAIT=wait)
    assert sorted(HEAVY & loaded) == []
    assert {m for m in loaded if m.split(".")[0] == "rouse"} == modules
    assert sorted(m for m in loaded if m.split(".")[0] != "rouse" and m not in stdlib) == []
    # and it answered from the stamp: a wake delivered now is shown by the same hook
    deliver(tree, "pay-rent", "2026-03-14 13:06", "2026-03-14 13:07")
    if name == "UserPromptSubmit":
        assert "reminder/pay-rent" in hook_run(tree, name).stdout


def test_a_prompt_for_a_tree_given_relative_to_the_project_is_light(
    tree: Path, tmp_path: Path
) -> None:
    stdin = json.dumps(
        {"session_id": "s1", "hook_event_name": "UserPromptSubmit", "cwd": str(tree.parent)}
    )
    loaded = loaded_by(tmp_path, ["pack", "--memory", "memory", "--hook", "codex"], stdin)
    assert {m for m in loaded if m.split(".")[0] == "rouse"} == PROMPT_MODULES


def test_an_idle_prompt_of_the_global_tree_is_light_and_it_still_gives_way(
    tmp_path: Path,
) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    outer = home / ".rouse"
    init(outer, NOW, examples=False)
    init(project / "memory", NOW, examples=False)
    settings = project / ".claude" / "settings.json"  # the project's own rouse hook
    command = f"rouse pack --memory {project / 'memory'} --hook claude"
    hooks = {"SessionStart": [{"hooks": [{"type": "command", "command": command}]}]}
    settings.parent.mkdir()
    settings.write_text(json.dumps({"hooks": hooks}))
    deliver(outer, "call-bank", DUE, SWEEP)
    session = {"session_id": "s1", "cwd": str(project), "hook_event_name": "UserPromptSubmit"}
    argv = ["pack", "--memory", str(outer), "--hook", "claude"]

    def run(home_env: dict[str, str]) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "rouse", *argv],
            input=json.dumps(session),
            env=environment(**home_env),
            capture_output=True,
            text=True,
            timeout=60,
        )

    assert run({"HOME": str(home)}).stdout == ""  # the project's hook wins: the wake waits
    (outer / ".rouse" / "sessions").mkdir(exist_ok=True)
    (outer / ".rouse" / "sessions" / "s1.json").write_text(
        json.dumps({"seen": [p.name for p in (outer / ".rouse" / "nudges").iterdir()]})
    )
    loaded = loaded_by(tmp_path, argv, json.dumps(session), HOME=str(home))
    assert {m for m in loaded if m.split(".")[0] == "rouse"} == PROMPT_MODULES
    session["cwd"] = str(tmp_path)  # no project hook there: the global tree serves
    (outer / ".rouse" / "sessions" / "s1.json").unlink()
    assert "reminder/call-bank" in run({"HOME": str(home)}).stdout


# -- the nudges folder's stamp -------------------------------------------------------


def test_a_settled_folder_is_stamped_and_a_racy_one_is_not(tree: Path) -> None:
    folder = tree / ".rouse" / "nudges"
    assert seen_data(tree)["nudges"] == stamp_of(folder)
    soon = os.lstat(folder).st_mtime_ns + 3600 * 10**9  # modified "now" (or later): racy
    os.utime(folder, ns=(soon, soon))
    assert hook_run(tree, "SessionStart", "s2").returncode == 0
    assert "nudges" not in seen_data(tree, "s2")
    assert prompt_hook.nothing_new(tree, "s2")  # listed instead: nothing new all the same


def test_a_wake_after_the_stamp_is_shown_once_even_at_the_same_mtime(tree: Path) -> None:
    folder = tree / ".rouse" / "nudges"
    old = seen_data(tree)["nudges"]
    assert isinstance(old, list)
    deliver(tree, "pay-rent", "2026-03-14 13:06", "2026-03-14 13:07")
    os.utime(folder, ns=(old[0], old[0]))  # the clock tick it was stamped in: ctime still moved
    assert not prompt_hook.nothing_new(tree, "s1")
    text = hook_run(tree, "UserPromptSubmit").stdout
    assert "reminder/pay-rent" in text and "call-bank" not in text
    assert hook_run(tree, "UserPromptSubmit").stdout == ""


def test_a_folder_changed_with_nothing_new_is_restamped(tree: Path) -> None:
    folder = tree / ".rouse" / "nudges"
    before = seen_data(tree)
    (folder / "notes.txt").write_text("not a nudge file\n")
    settle(folder)
    assert before["nudges"] != stamp_of(folder)
    assert hook_run(tree, "UserPromptSubmit").stdout == ""
    after = seen_data(tree)
    assert after == {"seen": before["seen"], "nudges": stamp_of(folder)}


def test_a_seen_set_the_fast_reading_declines_is_read_by_json(tree: Path) -> None:
    path = tree / ".rouse" / "sessions" / "s1.json"
    names = seen_data(tree)["seen"]
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps({"seen": names}).encode())  # json takes a BOM
    assert prompt_hook._read_seen(str(path))[0] == {"seen": names}  # json read it
    assert hook_run(tree, "UserPromptSubmit").stdout == ""  # and it holds every wake
    path.write_text(json.dumps({"seen": [*names, 7]}))  # refused by its shape: no seen-set
    assert prompt_hook._read_seen(str(path)) == (None, None)
    assert "call-bank" in hook_run(tree, "UserPromptSubmit").stdout  # every wake, once


# -- the fast reading gives json's answers; the hooks' light answers are the core's ----

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


def core_decode(data: bytes, depth: int) -> tuple[str, str]:
    """json's reading under the state reader's bounds (what the fast reading leaves to)."""
    if not bounded._depth_ok(data, depth):
        return "refused", ""
    try:
        value = json.loads(
            data, parse_constant=bounded._no_constant, parse_float=bounded._bounded_float
        )
    except (ValueError, RecursionError):
        return "refused", ""
    return "ok", repr(value)


def light_decode(data: bytes, depth: int) -> tuple[str, str] | None:
    if not bounded._depth_ok(data, depth):
        return None
    try:
        return "ok", repr(bounded._fast(data))
    except bounded._Declined:
        return None


def decoded(data: bytes, depth: int) -> tuple[str, str]:
    try:
        return "ok", repr(files.decode(data, max_depth=depth))
    except files.Damaged:
        return "refused", ""


@settings(max_examples=300, deadline=None)
@given(JSON, st.sampled_from(["", " ", "\n\t", "\ufeff", "x"]), st.integers(1, 6), st.data())
def test_the_light_json_reader_decodes_as_the_core_or_declines(
    value: object, pad: str, depth: int, data: st.DataObject
) -> None:
    text = json.dumps(value, ensure_ascii=data.draw(st.booleans()))
    raw = data.draw(st.sampled_from([f"{pad}{text}", f"{text}{pad}", text]))
    encoded = raw.encode(data.draw(st.sampled_from(["utf-8", "utf-16"])), "surrogatepass")
    cut = data.draw(st.integers(0, len(encoded)))
    for sample in (encoded, encoded[:cut], encoded[:cut] + b'"[' + encoded[cut:]):
        light = light_decode(sample, depth)
        assert light is None or light == core_decode(sample, depth)
        assert decoded(sample, depth) == core_decode(sample, depth)


@pytest.mark.parametrize(
    "sample",
    [
        b'{"prompt": "fix [the \\"x\\"] in C:\\\\tmp {now}", "cwd": "/p"}',
        b' {"seen": ["20260314-130500-reminder-a.md"], "nudges": [1, 2, 3, 4]}\n',
        b'{"pid": 12, "at": 1773490000000000000}',
        b'{"n": 1.5, "m": -3, "t": true, "z": null, "l": [[], {}]}',
    ],
)
def test_the_light_json_reader_takes_what_the_agents_and_rouse_write(sample: bytes) -> None:
    assert light_decode(sample, 16) == core_decode(sample, 16)


@pytest.mark.parametrize(
    "sample",
    [b'{"n": NaN}', b"[1e300]", b"[-1e16]", b"[" * 20 + b"]" * 20, b'{"a": 1} {}', b"", b'"'],
)
def test_the_light_json_reader_declines_what_the_core_refuses(sample: bytes) -> None:
    assert core_decode(sample, 16) == ("refused", "")
    assert light_decode(sample, 16) is None


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(), max_size=5), st.none() | st.lists(st.integers(0, 2**62), max_size=4))
def test_a_seen_set_is_written_as_save_json_writes_it(
    seen: list[str], stamp: list[int] | None
) -> None:
    data: dict[str, object] = {"seen": seen} if stamp is None else {"seen": seen, "nudges": stamp}
    expected = json.dumps(data, separators=(",", ":")).encode()
    assert prompt_hook._seen_bytes(seen, stamp) == expected


@settings(max_examples=200, deadline=None)
@given(JSON)
def test_state_is_written_as_json_dumps_writes_it(value: object) -> None:
    assert statefile.dumps(value) == json.dumps(value, separators=(",", ":")).encode()


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="/.a~", max_size=12), st.text(alphabet="/.b", max_size=8))
def test_paths_are_spelled_as_pathlib_spells_them(path: str, name: str) -> None:
    assert core_home.pure(path) == str(PurePosixPath(path))
    folder = core_home.pure("/" + path)
    if not name.startswith("/"):
        assert core_home.joined(folder, name) == str(PurePosixPath(folder) / name)


def test_the_link_rule_is_statefiles(tmp_path: Path) -> None:
    state = tmp_path / "memory" / ".rouse"
    (state / "sessions").mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    (state / "linked").symlink_to(tmp_path / "elsewhere")
    (state / "sessions" / "l.json").symlink_to(tmp_path / "elsewhere")
    (tmp_path / "linkroot").symlink_to(tmp_path / "memory")
    paths = {
        state / "sessions" / "s.json": False,
        state / "sessions" / "l.json": True,
        state / "linked" / "s.json": True,
        tmp_path / "linkroot" / ".rouse" / "sessions" / "s.json": False,  # (from .rouse down)
        state / "a" / "b" / "c" / "d" / "e" / "f" / "g" / "h" / "i.json": False,
    }
    for path, linked in paths.items():
        assert statefile.through_link(str(path)) == statefile.through_link(path) == linked, path


def test_bounded_reads_are_statefiles(tmp_path: Path) -> None:
    state = tmp_path / ".rouse"
    state.mkdir()
    (state / "ok.json").write_bytes(b"{}")
    (state / "big.json").write_bytes(b" " * 100)
    os.mkfifo(state / "fifo.json")
    (state / "link.json").symlink_to(state / "ok.json")
    expected = {
        "ok.json": b"{}",
        "big.json": "damaged",
        "fifo.json": "damaged",
        "link.json": None,
        "missing.json": None,
    }
    for name, want in expected.items():
        for path in (state / name, str(state / name)):
            try:
                got: object = statefile.read_bounded(path, 50)
            except statefile.Damaged:
                got = "damaged"
            assert got == want, name
    assert statefile.save_bytes(str(state / "new.json"), b"[1]")
    assert (state / "new.json").read_bytes() == b"[1]"
    assert not statefile.save_bytes(str(state / "link.json"), b"[2]")
    assert sorted(p.name for p in state.iterdir() if p.name.endswith(".tmp")) == []


def test_the_explicit_tree_is_find_trees(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "home" / "trees" / "t").mkdir(parents=True)
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path / "home")
    cases: list[tuple[str | None, dict[str, str]]] = [
        (str(tmp_path / "home" / "trees" / "t"), {}),
        (str(tmp_path / "home" / "trees" / "t") + "/./", {}),
        ("trees//t", {}),
        ("~/trees/t", {}),
        ("~nobody-here/t", {}),
        (str(tmp_path / "file"), {}),
        (str(tmp_path / "missing"), {}),
        (None, {"ROUSE_HOME": "trees/t"}),
        (None, {}),
        ("", {"ROUSE_HOME": ""}),
    ]
    for memory, env in cases:
        light = core_home.explicit_tree(memory, env)
        try:
            core: str | None = str(find_tree(memory, env, cwd=Path.cwd()))
        except (UsageError, RuntimeError):
            core = None
        if light is None:  # not decided here: the core decides (it may still find one)
            continue
        assert light == core, (memory, env)
    assert core_home.explicit_tree("trees/t", {}) == str(tmp_path / "home" / "trees" / "t")


def test_only_a_tree_that_is_surely_not_the_global_one_skips_the_project_lookup(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    (home / ".rouse").mkdir(parents=True)
    (tmp_path / "alias").symlink_to(home / ".rouse")
    (tmp_path / "other").mkdir()
    monkeypatch.setenv("HOME", str(home))
    assert not core_home.surely_local(str(home / ".rouse"))
    assert not core_home.surely_local(str(tmp_path / "alias"))
    assert core_home.surely_local(str(tmp_path / "other"))
    (home / ".rouse").rmdir()
    (home / ".rouse").symlink_to(home / ".rouse")  # a loop: pathlib raises, the core says so
    assert not core_home.surely_local(str(tmp_path / "other"))


def reference_hook_memory(memory: str | None, session: dict[str, object]) -> str | None:
    """hook_memory as it was written with pathlib (before issue 24)."""
    from rouse.core.home import is_tree

    if not memory or os.path.isabs(os.path.expanduser(memory)):
        return memory
    starts: list[str] = []
    cwd = session.get("cwd")
    if isinstance(cwd, str) and os.path.isabs(cwd):
        starts.append(cwd)
    roots = session.get("workspace_roots")
    if isinstance(roots, list):
        starts += [r for r in roots if isinstance(r, str) and os.path.isabs(r)]
    starts.append(os.getcwd())
    for start in starts:
        for folder in (Path(start), *Path(start).parents):
            if is_tree(folder / memory):
                return str(folder / memory)
    return memory


def test_the_hooks_tree_is_found_from_the_session_as_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    init(project / "memory", NOW, examples=False)
    (project / "src" / "deep").mkdir(parents=True)
    (project / ".rouse-tree").write_text("")  # the project itself marked as a tree too
    monkeypatch.chdir(tmp_path)
    memories = [None, "", "memory", "./memory", "memory/", "src/../memory", ".", "nothing"]
    memories += [str(project / "memory"), "~/memory"]
    sessions: list[dict[str, object]] = [
        {},
        {"cwd": str(project / "src" / "deep")},
        {"cwd": str(project) + "//src/./deep/"},
        {"cwd": "relative/dir"},
        {"workspace_roots": [str(tmp_path), str(project / "src"), 7]},
    ]
    for memory in memories:
        for session in sessions:
            assert hook.hook_memory(memory, session) == reference_hook_memory(memory, session)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="aZ09_-.é/ \n", min_size=1, max_size=130))
def test_a_session_id_is_a_file_name_as_before(session_id: str) -> None:
    import re

    plain = re.fullmatch(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}", session_id) is not None
    path = prompt_hook.seen_file("/t", session_id)
    assert path is not None
    assert (path == f"/t/.rouse/sessions/{session_id}.json") == plain
    assert os.path.dirname(path) == "/t/.rouse/sessions"
