"""The store's guarded rewrite (every writer's path): nobody's bytes are lost.

Each test forces one interleaving that a plain re-read-and-rename would get
wrong, and checks the editor's bytes are what is left at the path.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from rouse.core import store
from rouse.core.errors import ChangedUnderfoot
from rouse.core.header import parse_header
from rouse.core.store import Store

REL = "x/task.md"
ORIGINAL = b"---\nstatus: pending\n---\nline one\n"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "x").mkdir()
    (tmp_path / REL).write_bytes(ORIGINAL)
    return tmp_path


def test_a_quiet_file_is_stamped_with_its_mode_and_body(root: Path) -> None:
    (root / REL).chmod(0o640)
    Store(root).set_fields(REL, {"swept": "2026-03-14 12:00"})
    data = (root / REL).read_bytes()
    assert parse_header(data).fields["swept"] == "2026-03-14 12:00"
    assert data.endswith(b"---\nline one\n")
    assert stat.S_IMODE((root / REL).stat().st_mode) == 0o640
    assert sorted(p.name for p in (root / "x").iterdir()) == ["task.md"]  # no temp left


def test_a_file_held_open_for_writing_is_not_touched(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if store._renameat2() is None:
        pytest.skip("no renameat2 on this system: the plain path is tested elsewhere")
    monkeypatch.setattr(store, "GUARDED_RETRIES", 3)
    with open(root / REL, "ab") as editor:  # an editor mid-write keeps it open
        try:
            Store(root).set_fields(REL, {"swept": "now"})
        except ChangedUnderfoot:
            pass
        else:
            pytest.skip("leases are not enforced here (another user's file, or no support)")
        editor.write(b"line two\n")
    assert (root / REL).read_bytes() == ORIGINAL + b"line two\n"


def _landing(root: Path, times: int) -> Callable[[Path, Path], bool]:
    """An ``_exchange`` that lets an editor rename over the file just before it swaps."""
    real = store._exchange
    state = {"left": times}
    swapped_in: set[Path] = set()

    def exchange(a: Path, b: Path) -> bool:
        if state["left"] > 0 and b == root / REL and a not in swapped_in:
            swapped_in.add(a)  # only before a swap-in, never before a swap-back
            state["left"] -= 1
            editor = root / "x" / ".editor.tmp"
            editor.write_bytes((root / REL).read_bytes() + b"editor line\n")
            os.replace(editor, root / REL)
        return real(a, b)

    return exchange


def test_an_editor_renaming_over_in_the_gap_keeps_its_bytes(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if store._renameat2() is None:
        pytest.skip("no renameat2 on this system")
    monkeypatch.setattr(store, "_exchange", _landing(root, 1))
    Store(root).set_fields(REL, {"swept": "now"})
    data = (root / REL).read_bytes()
    assert data.endswith(b"line one\neditor line\n")  # the editor's line survived
    assert parse_header(data).fields["swept"] == "now"  # and the retry stamped it
    assert sorted(p.name for p in (root / "x").iterdir()) == ["task.md"]


def test_a_file_that_never_settles_is_left_as_the_editor_wrote_it(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if store._renameat2() is None:
        pytest.skip("no renameat2 on this system")
    monkeypatch.setattr(store, "GUARDED_RETRIES", 4)
    monkeypatch.setattr(store, "_exchange", _landing(root, 100))
    with pytest.raises(ChangedUnderfoot):
        Store(root).set_fields(REL, {"swept": "now"})
    data = (root / REL).read_bytes()
    assert data.count(b"editor line\n") == 4 and b"swept" not in data


def test_without_leases_or_exchange_it_falls_back_to_the_plain_way(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store, "_take_lease", lambda fd: False)
    monkeypatch.setattr(store, "_exchange", lambda a, b: False)
    Store(root).set_fields(REL, {"swept": "now"})
    assert parse_header((root / REL).read_bytes()).fields["swept"] == "now"
    assert sorted(p.name for p in (root / "x").iterdir()) == ["task.md"]


def test_an_unchanged_result_writes_nothing(root: Path) -> None:
    before = (root / REL).stat()
    Store(root).update(REL, lambda data: data)
    after = (root / REL).stat()
    assert (before.st_ino, before.st_mtime_ns) == (after.st_ino, after.st_mtime_ns)


def test_a_missing_file_is_a_usage_error(root: Path) -> None:
    from rouse.core.errors import UsageError

    with pytest.raises(UsageError, match="does not exist"):
        Store(root).set_fields("x/gone.md", {"a": "b"})
