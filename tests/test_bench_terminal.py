"""bench/bench_terminal.py end to end on a few repeats: validate through a pipe and on a
pseudo-terminal with and without the bar, this install against itself as the old one."""

from __future__ import annotations

import re
import sys

from bench_runs import BENCH, KINGREC
from bench_runs import run as _run


def test_the_terminal_bench_times_each_way_for_both_installs_in_turn() -> None:
    command = [sys.executable, str(BENCH / "bench_terminal.py"), "--old", str(KINGREC),
               "--repeats", "30", "--runs", "2"]  # fmt: skip
    result = _run(*command)
    assert result.returncode == 0, result.stderr
    head, *ways = result.stdout.splitlines()
    counted = re.search(r"\(([\d,]+) report lines\)", head)
    assert counted is not None, head
    lines = int(counted.group(1).replace(",", ""))
    assert lines >= 59  # 30 matches judged, 29 of them repeats with a warning each
    assert [way.split("  old:")[0].strip() for way in ways] == [
        "pipe",
        "terminal",
        "terminal --no-progress",
    ]
    assert all(re.search(r"new: +[\d.]+ s \([\d,]+ lines/s\)  new/old [\d.]+$", w) for w in ways)
