"""bench/bench_worker_ranges.py: a worker's ranges read and mapped, figures for both."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kingrec import _twins, judges
from kingrec.simrun import simulate_to_file

ROOT = Path(__file__).resolve().parent.parent


def test_the_bench_prints_both_ways_over_every_frame_of_the_file(tmp_path: Path) -> None:
    if _twins.COMPILED is None or not judges._can_map(_twins.COMPILED):
        pytest.skip("ranges are mapped only with the checksum in C")
    path = tmp_path / "some.krec"
    simulate_to_file(str(path), "classic", 30, 5)
    bench = str(ROOT / "bench" / "bench_worker_ranges.py")
    done = subprocess.run(
        [sys.executable, bench, "--file", str(path), "--rounds", "2"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "30 frames" in lines[1]
    assert lines[2].startswith("  read  : user ") and lines[3].startswith("  mapped: user ")
    assert "minor faults" in lines[2]
