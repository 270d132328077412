"""bench/bench_floor.py end to end on a small file: the floors beside one with a DuckDB
setting, DuckDB's profiler, a file's first batches; bench/with_settings.py's settings reach
DuckDB."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from bench_runs import BENCH, ROOT, simulated
from bench_runs import run as _run


@pytest.fixture(scope="module")
def small_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return simulated(tmp_path_factory.mktemp("floor") / "small.krec", 40)


def test_the_floor_beside_a_setting_prints_both_floors_their_ratio_and_the_profile(
    small_file: Path,
) -> None:
    options = ["--file", str(small_file), "--batches", "1", "--no-ingest", "--profile"]
    result = _run(sys.executable, str(BENCH / "bench_floor.py"), *options, "--setting", "threads=1")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "round 1: small.krec, " in out
    assert "floor [the store as it is]:" in out and "floor [threads=1]:" in out
    assert out.count("floor, pipelined (2 transactions in flight)") == 2
    assert "with the settings / without: one at a time " in out
    assert "DuckDB's profiler, µs a deal by operator" in out
    plays = next(line for line in out.splitlines() if line.strip().startswith("plays "))
    assert "INSERT" in plays and "PYTHON_ARROW_SCAN" in plays


def test_the_floor_with_the_ingest_prints_each_rounds_ingest_and_the_cpu_budget(
    small_file: Path,
) -> None:
    result = _run(sys.executable, str(BENCH / "bench_floor.py"), "--file", str(small_file),
                  "--rounds", "2")  # fmt: skip
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    budget = [line for line in lines if "CPU budget: kingrec ingest" in line]
    assert len(budget) == 2 and all("250 k deals/s needs at most" in b for b in budget)
    assert len([line for line in lines if line.strip().startswith("kingrec ingest (")]) == 2


def test_a_setting_that_is_not_name_equals_value_is_refused_before_anything_runs() -> None:
    result = _run(sys.executable, str(BENCH / "bench_floor.py"), "--setting", "threads")
    assert result.returncode == 2
    assert "'threads': a DuckDB setting as NAME=VALUE" in result.stderr


def test_with_settings_gives_duckdb_the_settings_of_a_writable_store(tmp_path: Path) -> None:
    store = tmp_path / "s.duckdb"
    sample = str(ROOT / "samples" / "valid" / "abandoned.krec")
    wrong = _run(sys.executable, str(BENCH / "with_settings.py"), "no_such_setting=1", "--",
                 "ingest", "--no-progress", "--db", str(store), sample)  # fmt: skip
    assert wrong.returncode == 2 and "no_such_setting" in wrong.stderr
    right = _run(sys.executable, str(BENCH / "with_settings.py"), "threads=1", "--",
                 "ingest", "--no-progress", "--db", str(store), sample)  # fmt: skip
    assert right.returncode == 0, right.stderr
    assert "stored 1 record(s)" in right.stdout
