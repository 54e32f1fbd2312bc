"""The read verbs' snapshot (issue 24): a warm ``rouse pack``, ``rouse due`` and
``rouse status`` answered from what the last full walk kept, at the cost of a stat.

The property: on a random tree, at random instants (before, inside and past the
window the snapshot was made for), after random edits, moves, deletes and
identity-only changes (content rewritten at the same size with the mtime put
back), the three verbs print exactly what they print once every cache is
removed — text and ``--json``. The tests after it check that the snapshot is
really used where it holds, and not where it does not.
Then the hostile cases: a damaged, foreign or hand-edited snapshot is a miss.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import shutil
import tempfile
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import BELIEFS, INTENTIONS, NOTES, NOW, REMINDERS, set_mtime, stamp, write_tree
from rouse.cache import snapshot
from rouse.cli.main import main
from rouse.core.tree import walk

VERBS = (["pack"], ["pack", "--json"], ["due"], ["due", "--json"], ["status", "--json"])


@contextlib.contextmanager
def _keyless(key: Path | None = None) -> Iterator[None]:
    where = str(key) if key is not None else "/nonexistent/rouse-test/stamp.key"
    with mock.patch.dict(os.environ, {"ROUSE_STAMP_KEY": where, "ROUSE_NOW": ""}):
        yield


def _run(root: Path, when: datetime, argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["--memory", str(root), *argv, "--now", when.strftime("%Y-%m-%d %H:%M")])
    text = out.getvalue()
    if argv[0] == "status":  # (its "now" is the wall clock's second when --now has none)
        data = json.loads(text)
        text = json.dumps({k: v for k, v in data.items() if k != "now"})
    return code, text, err.getvalue()


def _all(root: Path, when: datetime) -> list[tuple[int, str, str]]:
    return [_run(root, when, argv) for argv in VERBS]


def _fresh(root: Path, when: datetime) -> list[tuple[int, str, str]]:
    """What the verbs print with no cache at all (each verb from an uncached walk)."""
    found = []
    for argv in VERBS:
        shutil.rmtree(root / ".rouse" / "cache", ignore_errors=True)
        found.append(_run(root, when, argv))
    shutil.rmtree(root / ".rouse" / "cache", ignore_errors=True)
    return found


def _text(fields: dict[str, str], body: str = "body\n") -> str:
    return "---\n" + "".join(f"{k}: {v}\n" for k, v in fields.items()) + "---\n" + body


def _random_tree(rng: random.Random) -> dict[str, str]:
    def at(hours: int) -> str:
        return stamp(NOW + timedelta(hours=rng.randint(-hours, hours), minutes=rng.randint(0, 59)))

    files: dict[str, str] = {
        f"{BELIEFS}/belief-b{i}.md": _text({"origin": "owner"}, f"belief {i}\n")
        for i in range(rng.randint(0, 2))
    }
    for i in range(rng.randint(0, 3)):
        files[f"{NOTES}/n{i}.md"] = _text({"keywords": "alpha, beta"}, f"note {i}\n")
    for i in range(rng.randint(1, 5)):
        fields = {"status": rng.choice(["open", "open", "done"]), "last-moved": at(96)}
        if rng.random() < 0.3:
            fields["stale-after"] = rng.choice(["10m", "3h", "2d"])
        if rng.random() < 0.2:
            fields["review-every"] = "1d"
        if rng.random() < 0.2:
            fields["snoozed-until"] = at(48)
        files[f"{INTENTIONS}/i{i}/intention.md"] = _text(fields)
        for j in range(rng.randint(0, 2)):
            kind = rng.choice(["goal", "task"])
            status = rng.choice(["pending", "running"] if kind == "task" else ["open"])
            files[f"{INTENTIONS}/i{i}/{kind[0]}{j}/{kind}.md"] = _text(
                {"status": status, "last-moved": at(96)}
            )
    for i in range(rng.randint(0, 3)):
        fields = {"status": "pending", "due": at(72)}
        if rng.random() < 0.3:
            fields["nag"] = "30m"
        if rng.random() < 0.3:
            fields["expires"] = at(96)
        files[f"{REMINDERS}/r{i}/reminder.md"] = _text(fields)
    return files


def _settle(root: Path, when: datetime) -> None:
    """Every file and directory of the tree (not .rouse/) to ``when``: past the racy window."""
    for directory, _, names in os.walk(root):
        if ".rouse" in Path(directory).parts:
            continue
        for name in names:
            set_mtime(Path(directory) / name, when)
        set_mtime(Path(directory), when)


def _mutate(rng: random.Random, root: Path, when: datetime) -> None:
    records = sorted(walk(root).records.values(), key=lambda r: r.dir)
    record = rng.choice(records)
    path = root / record.rel
    action = rng.choice(["edit", "same-size", "touch", "delete", "add", "nothing"])
    if action == "edit":
        path.write_text(_text({"status": "done"}))
    elif action == "same-size":  # the identity trick: same size, the mtime put back
        before = path.stat()
        data = path.read_bytes()
        path.write_bytes(data.replace(b"open", b"done") if b"open" in data else data[::-1])
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
        return
    elif action == "touch":
        path.touch()
    elif action == "delete" and record.type != "intention":
        shutil.rmtree(root / record.dir)
    elif action == "add":
        new = root / INTENTIONS / f"new{rng.randint(0, 10**6)}" / "intention.md"
        new.parent.mkdir(parents=True)
        new.write_text(_text({"status": "open", "last-moved": stamp(NOW)}))
    if action != "nothing":
        _settle(root, when)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1))
def test_verbs_from_the_snapshot_print_what_they_print_from_the_files(seed: int) -> None:
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory(prefix="rouse-snapshot-") as scratch, _keyless():
        root = write_tree(Path(scratch) / "memory", _random_tree(rng))
        settled = datetime(2021, 1, 1)
        _settle(root, settled)
        for round_ in range(4):
            start = NOW + timedelta(minutes=rng.randint(-600, 600))
            for when in sorted(
                start + timedelta(minutes=rng.randint(0, 60 * 30)) for _ in range(3)
            ):
                when = when.replace(second=0, microsecond=0)
                warm = _all(root, when)
                assert warm == _fresh(root, when), (seed, round_, when)
                _all(root, when)  # (the fresh run removed the caches: make them again)
            _mutate(rng, root, settled + timedelta(days=round_ + 1))


def _steady(make_tree) -> Path:  # type: ignore[no-untyped-def]
    files = {
        f"{BELIEFS}/belief-sky.md": _text({"origin": "owner"}, "The sky is blue.\n"),
        f"{INTENTIONS}/ship/intention.md": _text(
            {"status": "open", "last-moved": stamp(NOW - timedelta(days=3))}
        ),
        f"{INTENTIONS}/ship/t1/task.md": _text({"status": "pending", "last-moved": stamp(NOW)}),
        f"{REMINDERS}/call/reminder.md": _text(
            {"status": "pending", "due": stamp(NOW + timedelta(hours=2))}
        ),
        f"{NOTES}/n1.md": _text({"keywords": "alpha"}, "a note\n"),
    }
    root: Path = make_tree(files)
    _settle(root, datetime(2021, 1, 1))
    return root


def test_the_snapshot_is_used_inside_its_window_and_not_past_it(make_tree) -> None:  # type: ignore[no-untyped-def]
    root = _steady(make_tree)
    with _keyless():
        first = _all(root, NOW)
        assert snapshot.load(root, None, False, NOW + timedelta(minutes=30), "pack") is not None
        assert snapshot.load(root, None, False, NOW + timedelta(minutes=30), "due") is not None
        assert snapshot.load(root, None, False, NOW + timedelta(minutes=30), "status") is not None
        # before it was made, and once the reminder comes due, it does not hold
        assert snapshot.load(root, None, False, NOW - timedelta(minutes=1), "pack") is None
        later = NOW + timedelta(hours=2)
        assert snapshot.load(root, None, False, later, "pack") is None
        warm = _all(root, later)
        assert "reminder/call" in warm[2][1]
        assert warm == _fresh(root, later)
        assert first[2][1] != warm[2][1]


def test_a_changed_identity_is_a_miss_even_at_the_same_size_and_mtime(make_tree) -> None:  # type: ignore[no-untyped-def]
    root = _steady(make_tree)
    with _keyless():
        _all(root, NOW)
        assert snapshot.load(root, None, False, NOW, "pack") is not None
        belief = root / BELIEFS / "belief-sky.md"
        before = belief.stat()
        belief.write_text(belief.read_text().replace("blue", "gray"))
        os.utime(belief, ns=(before.st_atime_ns, before.st_mtime_ns))
        assert snapshot.load(root, None, False, NOW, "pack") is None
        assert "The sky is gray." in _run(root, NOW, ["pack"])[1]


def test_a_new_file_or_a_nudge_waiting_is_a_miss(make_tree) -> None:  # type: ignore[no-untyped-def]
    root = _steady(make_tree)
    with _keyless():
        _all(root, NOW)
        (root / NOTES / "n2.md").write_text(_text({"keywords": "gamma"}, "new\n"))
        assert snapshot.load(root, None, False, NOW, "pack") is None
        assert "n2.md" in _run(root, NOW, ["pack"])[1]
        _settle(root, datetime(2021, 1, 2))
        _all(root, NOW)
        assert snapshot.load(root, None, False, NOW, "pack") is not None
        # a nudge file is the sweeper's word, not the tree's: the pack walks
        nudges = root / ".rouse" / "nudges"
        nudges.mkdir()
        (nudges / "20260314-110000-intention-ship.md").write_text("x\nat: whatever\n")
        assert _run(root, NOW, ["pack"]) == _fresh(root, NOW)[0]


@pytest.mark.parametrize(
    "damage",
    [
        b"not json at all",
        b"[]",
        b'{"key": 1}',
        None,  # parts of the wrong shape, under a header that reads
    ],
)
def test_a_damaged_snapshot_is_a_miss(make_tree, damage: bytes | None) -> None:  # type: ignore[no-untyped-def]
    root = _steady(make_tree)
    with _keyless():
        want = _fresh(root, NOW)
        _all(root, NOW)
        path = snapshot.path_of(root)
        first, _, body = path.read_bytes().partition(b"\n")
        if damage is None:  # each part of the wrong shape, in a file that reads
            head, paths, *_ = body.split(b"\n")
            names = json.loads(head)["parts"]
            wrong = {"pack": {"woken": 7, "due": "x"}, "due": [["x"], 3], "status": {"levels": []}}
            damage = b"\n".join([head, paths, *(json.dumps(wrong[n]).encode() for n in names)])
        path.write_bytes(first + b"\n" + damage)
        assert _all(root, NOW) == want


def test_with_a_stamp_key_a_snapshot_made_without_it_or_edited_is_a_miss(  # type: ignore[no-untyped-def]
    make_tree, key_path: Path
) -> None:
    from rouse.trust.stampkey import cache_secret

    root = _steady(make_tree)
    with _keyless():
        _all(root, NOW)  # kept without a key
    secret = cache_secret(key_path)
    assert secret is not None
    assert snapshot.load(root, secret, True, NOW, "pack") is None
    with _keyless(key_path):
        keyed = _all(root, NOW)
        assert snapshot.load(root, secret, True, NOW, "pack") is not None
        # the file edited by someone without the key: its MAC fails
        path = snapshot.path_of(root)
        kept = path.read_bytes()
        assert b'"due_total":0' in kept
        path.write_bytes(kept.replace(b'"due_total":0', b'"due_total":9'))
        assert snapshot.load(root, secret, True, NOW, "pack") is None
        assert _all(root, NOW) == keyed
    # and the key taken away: what was kept under it is not used
    with _keyless():
        assert snapshot.load(root, None, False, NOW, "pack") is None


def test_one_query_part_is_kept_at_a_time(make_tree) -> None:  # type: ignore[no-untyped-def]
    root = _steady(make_tree)
    with _keyless():
        _run(root, NOW, ["pack"])
        _run(root, NOW, ["pack", "--query", "alpha"])
        _run(root, NOW, ["pack", "--query", "beta"])
        parts = json.loads(snapshot.path_of(root).read_bytes().split(b"\n")[1])["parts"]
        assert sorted(parts) == ["due", "pack", "pack beta", "status"]  # (alpha's: dropped)
        assert snapshot.load(root, None, False, NOW, "pack beta") is not None


def test_the_snapshot_keeps_decisions_never_text(make_tree) -> None:  # type: ignore[no-untyped-def]
    root = _steady(make_tree)
    still = {"status": "open", "stale-after": "1d", "last-moved": stamp(NOW - timedelta(days=3))}
    write_tree(root, {f"{INTENTIONS}/idle/intention.md": _text(still)})
    _settle(root, datetime(2021, 1, 1))
    with _keyless():
        due = _run(root, NOW, ["due"])[1]
        assert "went stale" in due  # (what the rows say, rendered at every run)
        _all(root, NOW)
    kept = snapshot.path_of(root).read_bytes()
    assert b"\\u0000" not in kept  # no placeholder where the words of when go
    for rendered in (b"went stale", b" ago", b"_still", b"_mtime", b"origins are unverified"):
        assert rendered not in kept, rendered
    head, _, rest = kept.partition(b"\n")[2].partition(b"\n")
    names = json.loads(head)["parts"]
    rows = json.loads(rest.split(b"\n")[1 + names.index("due")])
    assert [row[:4] for row in rows] == [
        ["intention/idle", f"{INTENTIONS}/idle", "intention", "stale"]
    ]


def test_a_kept_due_row_is_four_texts_then_three_whole_numbers() -> None:
    from rouse.pack.findings import kept_rows

    row = ["intention/ship", "entrypoint/ship", "intention", "stale", 1, 2, 3]
    assert kept_rows([row, row]) == [row, row]
    assert kept_rows([]) == []
    wrong = [
        row[:6],
        [*row, 4],
        "abcdefg",  # seven texts
        {"a": 1},
        7,
        None,
        *([*row[:at], value, *row[at + 1 :]] for at in range(7) for value in (None, 1.0, True)),
        *([*row[:at], 5, *row[at + 1 :]] for at in range(4)),
        *([*row[:at], "5", *row[at + 1 :]] for at in range(4, 7)),
    ]
    for bad in wrong:
        assert kept_rows([row, bad]) is None, bad
    assert kept_rows({"rows": [row]}) is None
