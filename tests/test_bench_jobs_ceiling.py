"""bench/bench_jobs_ceiling.py end to end on a small file: one validate alone, two at once
and one --jobs 2, each round, and the ratios they make."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from bench_runs import BENCH, simulated
from bench_runs import run as _run


def test_the_ceiling_bench_sets_jobs_2_beside_two_validates_at_once(tmp_path: Path) -> None:
    small = simulated(tmp_path / "small.krec", 20)
    command = [sys.executable, str(BENCH / "bench_jobs_ceiling.py"), "--file", str(small),
               "--rounds", "2"]  # fmt: skip
    result = _run(*command)
    assert result.returncode == 0, result.stderr
    head, times, ceiling, jobs = result.stdout.splitlines()
    assert head.startswith(f"{small}: 2 rounds, load average ")
    assert re.fullmatch(r"  one validate alone [\d.]+ s; two at once [\d.]+ s \(both done\); "
                        r"--jobs 2 [\d.]+ s", times)  # fmt: skip
    assert re.fullmatch(r"  the machine's ceiling for two processes: [\d.]+x \(per round [\d.]+\)",
                        ceiling)  # fmt: skip
    assert re.fullmatch(r"  --jobs 2 over one job: [\d.]+x \(per round [\d.]+\)", jobs)
