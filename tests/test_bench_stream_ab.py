"""bench/bench_stream_ab.py end to end on a small file: both servers answer alike, and each
one's figures and the ratio of their CPU a match are printed."""

from __future__ import annotations

import sys
from pathlib import Path

from bench_runs import BENCH, KINGREC, simulated
from bench_runs import run as _run


def test_the_stream_ab_streams_to_both_installs_and_prints_their_figures(tmp_path: Path) -> None:
    small = simulated(tmp_path / "small.krec", 30)
    result = _run(sys.executable, str(BENCH / "bench_stream_ab.py"), "--old", str(KINGREC),
                  "--file", str(small), "--pairs", "2", "--per-request", "8")  # fmt: skip
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "ValidateStream of 30 classic matches, 8 a message, 2 pairs" in out
    for name in ("old", "new"):
        assert f"  {name}: server CPU " in out and "stream / fast path" in out
    assert "server CPU a match, new / old: " in out


def test_the_stream_ab_refuses_an_old_install_that_is_not_there(tmp_path: Path) -> None:
    result = _run(sys.executable, str(BENCH / "bench_stream_ab.py"), "--old",
                  str(tmp_path / "nothing"))  # fmt: skip
    assert result.returncode == 1 and "no such command" in result.stderr
