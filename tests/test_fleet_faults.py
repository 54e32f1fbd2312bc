"""Fault tests of the fleet: random SIGKILLs of sweepers and workers lose no wake.

3 trees, each cloned twice with a sweeper per clone (one leads, one stands by),
2 delivery workers, one real PostgreSQL; records come due before and during the
run while a random process is killed with SIGKILL every second or two and
started again. Repeated with different seeds. ``bench/fleet_faults.py`` runs the
same for a minute or more and prints the counts.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import fleet_chaos

SECONDS = 20


@pytest.mark.parametrize("seed", [1, 2])
def test_random_kills_lose_no_wake_and_double_none(seed: int, tmp_path: Path, pg_dsn: str) -> None:
    result = fleet_chaos.run(tmp_path, pg_dsn, SECONDS, seed=seed)
    print(result.line())
    assert result.kills >= SECONDS // 3
    assert result.lost == []
    assert result.delivered == result.due
    # at-least-once: a wake id arrives twice only if its sender was killed in between
    assert result.duplicates_unexplained == 0
    assert result.unstamped == []
