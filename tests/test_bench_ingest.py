"""bench/bench_ingest_ab.py and bench/bench_ingest_timeline.py end to end on a small file:
the A/B prints each run and the medians of both installs, the timeline each phase."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest
from bench_runs import BENCH, KINGREC, simulated
from bench_runs import run as _run


@pytest.fixture(scope="module")
def small_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return simulated(tmp_path_factory.mktemp("ingest-bench") / "small.krec", 30)


def test_the_ingest_ab_runs_both_installs_in_turn_and_prints_their_medians_and_ratios(
    small_file: Path, tmp_path: Path
) -> None:
    command = [sys.executable, str(BENCH / "bench_ingest_ab.py"), "--old", str(KINGREC),
               "--file", str(small_file), "--pairs", "2", "--tmp", str(tmp_path)]  # fmt: skip
    result = _run(*command)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    runs = [line for line in out.splitlines() if line.strip().startswith("pair ")]
    # in turn: old first in the first pair, new first in the second
    assert [r.split()[2].rstrip(":") for r in runs] == ["old", "new", "new", "old"]
    assert all("peak RSS" in r and "sys" in r for r in runs)
    assert "old: wall" in out and "new: wall" in out and "600 k deals/s" not in out
    assert "new/old per pair: wall median" in out
    assert list(tmp_path.iterdir()) == []  # each run's store deleted


def test_the_ingest_ab_refuses_an_old_install_that_is_not_there(tmp_path: Path) -> None:
    result = _run(sys.executable, str(BENCH / "bench_ingest_ab.py"), "--old",
                  str(tmp_path / "nothing"))  # fmt: skip
    assert result.returncode == 1 and "no such command" in result.stderr


def test_the_ingest_timeline_prints_each_phase_and_the_whole_adds_up(
    small_file: Path, tmp_path: Path
) -> None:
    command = [sys.executable, str(BENCH / "bench_ingest_timeline.py"), "--file",
               str(small_file), "--tmp", str(tmp_path), "--spans"]  # fmt: skip
    result = _run(*command)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "deals in 1 batches" in lines[0]
    walls = {}
    for line in lines[2:8]:
        name, wall, used, cores, *_ = line.split()
        walls[name] = float(wall)
        assert float(used) >= 0 and float(cores) >= 0
    assert list(walls) == ["open", "fill", "steady", "drain", "close", "whole"]
    parts = sum(v for k, v in walls.items() if k != "whole")
    assert abs(parts - walls["whole"]) < 0.02
    assert sum(1 for line in lines if line.strip().startswith(("prepare", "write"))) == 2
    assert list(tmp_path.iterdir()) == []


def test_the_questions_ab_builds_a_store_by_each_install_and_asks_both_in_turn(
    small_file: Path, tmp_path: Path
) -> None:
    command = [sys.executable, str(BENCH / "bench_questions_ab.py"), "--old", str(KINGREC),
               "--file", str(small_file), "--rounds", "3", "--tmp", str(tmp_path)]  # fmt: skip
    result = _run(*command)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert out.count("built with") == 2
    stores = [line for line in out.splitlines() if "row groups:" in line]
    assert [s.split()[0] for s in stores] == ["old:", "new:"]
    assert all("plays_base 1" in s for s in stores)
    assert out.count("new/old: cold") == 3  # one line per question of bench_store
    assert "rıfkı deals ending before trick 5" in out
    assert list(tmp_path.iterdir()) == []  # both stores deleted


def test_the_most_led_question_gives_a_tie_to_the_lower_card_as_kingrec_stats_does() -> None:
    """Two stores of the same file must give bench_questions_ab the same answer: a tie in
    the count of leads goes to the lower card code, whatever order the rows come in."""
    import duckdb

    sys.path.insert(0, str(BENCH))
    from bench_store import QUESTIONS

    con = duckdb.connect()
    con.execute("CREATE MACRO card_name(c) AS c::VARCHAR")
    con.execute("CREATE TABLE plays (contract VARCHAR, card INTEGER, position INTEGER)")
    # every card led three times in rıfkı (a 52-way tie), 51 and 50 twice in koz
    leads = [("RIFKI", card) for card in range(52)] * 3 + [("KOZ", 51), ("KOZ", 50)] * 2
    for seed in range(5):
        random.Random(seed).shuffle(leads)
        con.execute("DELETE FROM plays")
        con.executemany("INSERT INTO plays VALUES (?, ?, 0)", leads)
        rows = con.execute(QUESTIONS["most-led card in each contract"]).fetchall()
        assert rows == [("KOZ", "50", 2), ("RIFKI", "0", 3)]
