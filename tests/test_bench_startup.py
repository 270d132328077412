"""bench/bench_startup_ab.py end to end on one match: both installs' instructions and their
ratio (here the old install is this one: ratio 1). Without --layers, whose five more runs
under valgrind would cost this test a minute."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
from bench_runs import BENCH, KINGREC, simulated
from bench_runs import run as _run


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind counts the instructions")
def test_the_startup_ab_counts_both_installs_and_prints_their_ratio(
    tmp_path: Path,
) -> None:
    one = simulated(tmp_path / "one.krec", 1)
    command = [sys.executable, str(BENCH / "bench_startup_ab.py"), "--old", str(KINGREC),
               "--file", str(one)]  # fmt: skip
    result = _run(*command, timeout=600)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    counts = {line.split(":")[0].strip(): float(line.split()[1]) for line in lines[1:3]}
    assert list(counts) == ["old", "new"] and all(50 < c < 2000 for c in counts.values())
    ratio = float(lines[3].split()[1])
    assert 0.95 < ratio < 1.05  # the same install twice: the count hardly moves
    assert len(lines) == 4  # no layers asked for


def test_the_startup_ab_refuses_an_old_install_that_is_not_there(tmp_path: Path) -> None:
    result = _run(sys.executable, str(BENCH / "bench_startup_ab.py"), "--old",
                  str(tmp_path / "nothing"))  # fmt: skip
    assert result.returncode == 1 and "no such command" in result.stderr
