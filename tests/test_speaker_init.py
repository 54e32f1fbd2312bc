"""Signed by default (issue 29 item 2): ``rouse init`` makes the stamp key when there is
none (``--no-key`` opts out), its examples are signed ``system``, and a pack without a
key says once that the origins are unverified."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

from rouse.core.tree import walk
from rouse.pack.warnings import UNVERIFIED
from rouse.trust import stampkey


def rouse(tmp_path: Path, key: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROUSE_")}
    env.update(HOME=str(tmp_path / "home"), ROUSE_STAMP_KEY=str(key))
    return subprocess.run(
        [sys.executable, "-m", "rouse", *args],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def test_init_makes_the_key_and_signs_its_examples(tmp_path: Path) -> None:
    key = tmp_path / "keys" / "stamp.key"
    done = rouse(tmp_path, key, "init", "proj")
    assert done.returncode == 0, done.stderr
    assert f"made a stamp key at {key}" in done.stdout
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    loaded = stampkey.load_key(key)
    assert loaded is not None and loaded.secret is not None
    root = tmp_path / "proj" / "memory"
    tree = walk(root)
    examples = [*tree.context, *tree.records.values()]
    assert examples
    for file in examples:
        data = (root / file.rel).read_bytes()
        assert stampkey.verify(loaded.secret, file.rel, data) == ("system", "verified"), file.rel
    checked = rouse(tmp_path, key, "check", "--memory", str(root))
    assert "not signed" not in checked.stdout + checked.stderr
    packed = rouse(tmp_path, key, "pack", "--memory", str(root))
    assert UNVERIFIED not in packed.stdout


def test_init_keeps_an_existing_key(tmp_path: Path) -> None:
    key = stampkey.init_key(tmp_path / "keys" / "stamp.key")
    before = key.read_bytes()
    done = rouse(tmp_path, key, "init", "proj")
    assert done.returncode == 0, done.stderr
    assert "made a stamp key" not in done.stdout
    assert key.read_bytes() == before


def test_no_key_makes_none_and_the_pack_says_so_once(tmp_path: Path) -> None:
    key = tmp_path / "keys" / "stamp.key"
    done = rouse(tmp_path, key, "init", "proj", "--no-key")
    assert done.returncode == 0, done.stderr
    assert not key.exists()
    root = tmp_path / "proj" / "memory"
    packed = rouse(tmp_path, key, "pack", "--memory", str(root))
    assert packed.stdout.count(UNVERIFIED) == 1
    again = rouse(tmp_path, key, "pack", "--memory", str(root))  # from the snapshot
    assert again.stdout.count(UNVERIFIED) == 1


def test_a_key_inside_the_tree_is_refused_before_anything_is_laid(tmp_path: Path) -> None:
    key = tmp_path / "proj" / "memory" / "stamp.key"
    done = rouse(tmp_path, key, "init", "proj")
    assert done.returncode == 2
    assert "refusing to put the stamp key inside the memory tree" in done.stderr
    assert not key.exists()
    assert not (tmp_path / "proj" / "memory" / "entrypoint").exists()
