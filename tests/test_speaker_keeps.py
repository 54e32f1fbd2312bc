"""Rouse's verbs never cost a signature (issue 29 item 4).

Every writing verb, run on an owner-signed record of each kind, leaves it verifying
as the owner's (``cancel`` and ``promote`` used not to), whoever runs it; and with a
key, ``rouse check`` names each unsigned file once and the one command that vouches
for them all after review.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import NOW
from rouse.records.scaffold import init
from rouse.trust import stampkey
from rouse.trust.speaker import AGENT_MARKERS

INTENTION = "entrypoint/beliefs/motivations/intentions/ship"
MADE = {
    "intention": (["new", "intention", "ship", "--set", "closes-when=v2 is out"], INTENTION),
    "goal": (
        ["new", "goal", "tests", "--under", "ship", "--set", "success-when=green"],
        f"{INTENTION}/tests",
    ),
    "action": (["new", "action", "fix", "--under", "tests"], f"{INTENTION}/tests/fix"),
    "task": (["new", "task", "run-ci", "--under", "fix"], f"{INTENTION}/tests/fix/run-ci"),
    "reminder": (["remind", "call-bank", "--due", "+2h"], "inventory/reminders/call-bank"),
    "backlog": (["new", "backlog", "someday"], "inventory/backlog/someday"),
}
LIFECYCLE = {
    "move": ["move", "{slug}", "--note", "moved on"],
    "snooze": ["snooze", "{slug}", "--for", "2h", "--note", "later"],
    "tell": ["tell", "{slug}", "a word for the owner"],
    "close": ["close", "{slug}", "--done"],
}
TASK_VERBS = {
    "checkpoint": ["checkpoint", "{slug}", "halfway there"],
    "cancel": ["cancel", "{slug}"],
}


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Path], Path]:
    """Per kind, a tree where the owner made a record of that kind (and what it nests
    under), and the key: made once for the module (four `rouse new` runs, not one to four
    per test); each test works on a copy of its own."""
    where = tmp_path_factory.mktemp("made")
    key = stampkey.init_key(where / "keys" / "stamp.key")
    empty = where / "empty"
    init(empty, NOW, examples=False)
    trees: dict[str, Path] = {}
    chain = where / "chain"  # intention, then a goal under it, an action, a task
    shutil.copytree(empty, chain, symlinks=True)
    for kind in list(MADE)[:4]:
        rouse(chain, key, *MADE[kind][0], "--origin", "owner")
        trees[kind] = shutil.copytree(chain, where / kind, symlinks=True)
    for kind in ("reminder", "backlog"):
        trees[kind] = shutil.copytree(empty, where / kind, symlinks=True)
        rouse(trees[kind], key, *MADE[kind][0], "--origin", "owner")
    return trees, key


@pytest.fixture
def keyed(
    tmp_path: Path, made: tuple[dict[str, Path], Path]
) -> Callable[[str], tuple[Path, Path, str]]:
    """A fresh copy of the tree where the owner made a record of ``kind``: its root, the
    key, and the record's file."""

    def copy(kind: str) -> tuple[Path, Path, str]:
        trees, key = made
        root = shutil.copytree(trees[kind], tmp_path / "memory", symlinks=True)
        return root, key, f"{MADE[kind][1]}/{kind}.md"

    return copy


def rouse(root: Path, key: Path, *args: str, agent: bool = False) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROUSE_")}
    for name, _ in AGENT_MARKERS:
        env.pop(name, None)
    env.update(ROUSE_HOME=str(root), ROUSE_STAMP_KEY=str(key))
    if agent:
        env["CLAUDECODE"] = "1"
    done = subprocess.run(
        [sys.executable, "-m", "rouse", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode in (0, 1), done.stderr  # check exits 1 on findings
    return done.stdout + done.stderr


def verdict(root: Path, key: Path, rel: str) -> tuple[str, str]:
    loaded = stampkey.load_key(key)
    assert loaded is not None and loaded.secret is not None
    return stampkey.verify(loaded.secret, rel, (root / rel).read_bytes())


CASES = [
    (kind, verb)
    for kind in ("intention", "goal", "action", "task", "reminder")
    for verb in LIFECYCLE
] + [("task", verb) for verb in TASK_VERBS]


@pytest.mark.parametrize(("kind", "verb"), CASES, ids=[f"{k}-{v}" for k, v in CASES])
@pytest.mark.parametrize("agent", [False, True], ids=["by-a-script", "by-an-agent"])
def test_every_verb_keeps_the_owners_signature(
    keyed: Callable[[str], tuple[Path, Path, str]], kind: str, verb: str, agent: bool
) -> None:
    root, key, rel = keyed(kind)
    assert verdict(root, key, rel) == ("owner", "verified")
    slug = rel.split("/")[-2]
    args = [part.format(slug=slug) for part in {**LIFECYCLE, **TASK_VERBS}[verb]]
    rouse(root, key, *args, agent=agent)
    assert verdict(root, key, rel) == ("owner", "verified")
    assert rel not in rouse(root, key, "check")


def test_promote_signs_the_intention_it_makes(
    keyed: Callable[[str], tuple[Path, Path, str]],
) -> None:
    root, key, _ = keyed("backlog")
    rouse(root, key, "promote", "someday", "--closes-when", "it ships", "--origin", "owner")
    rel = "entrypoint/beliefs/motivations/intentions/someday/intention.md"
    assert verdict(root, key, rel) == ("owner", "verified")
    assert rel not in rouse(root, key, "check")


def test_an_agent_promoting_the_owners_item_signs_agent(
    keyed: Callable[[str], tuple[Path, Path, str]],
) -> None:
    root, key, _ = keyed("backlog")
    rouse(root, key, "promote", "someday", "--closes-when", "it ships", agent=True)
    rel = "entrypoint/beliefs/motivations/intentions/someday/intention.md"
    assert verdict(root, key, rel) == ("agent", "verified")  # the agent wrote closes-when


def test_a_verb_never_signs_what_did_not_verify(
    keyed: Callable[[str], tuple[Path, Path, str]],
) -> None:
    root, key, rel = keyed("intention")
    path = root / rel
    path.write_text(path.read_text().replace("v2 is out", "never"))  # a hand edit
    assert verdict(root, key, rel) == ("owner", "mismatch")
    rouse(root, key, "move", "ship", "--note", "moved")
    assert verdict(root, key, rel) == ("owner", "mismatch")  # not laundered by the verb


def test_check_names_each_unsigned_file_once_and_the_one_command(
    keyed: Callable[[str], tuple[Path, Path, str]],
) -> None:
    root, key, rel = keyed("intention")
    path = root / rel
    path.write_text(path.read_text().replace("v2 is out", "v3 is out"))
    hand = root / "inventory/notes/by-hand.md"
    hand.write_text("---\nkeywords: hand\n---\nWritten in an editor.\n")
    said = rouse(root, key, "check")
    assert said.count(rel) == 1
    assert said.count("inventory/notes/by-hand.md") == 1
    assert said.count("rouse stamp --changed") == 1
