"""bench/census_par_leaf.py: the census of the nodes by tricks left counts the reference's
own tree (docs/ANALYSIS.md, "The last tricks")."""

from __future__ import annotations

import random
import re
import subprocess
import sys
from pathlib import Path

import pytest
from test_par import _random_ending

from kingrec.analysis import _par_py

ROOT = Path(__file__).resolve().parent.parent


def test_the_leaf_census_counts_the_reference_tree_node_for_node(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.syspath_prepend(str(ROOT / "bench"))
    from census_par_leaf import BUCKETS, LeafCensus, _check

    rng = random.Random(77)
    seen = set()
    for _ in range(40):
        deal, _rules = _random_ending(rng, rng.choice((3, 4, 5)))
        seat = rng.randrange(4)
        searches = [
            twin(deal.contract, deal.trump, deal.flags) for twin in (_par_py.ParSearch, LeafCensus)
        ]
        values = [
            s.units_left(seat, deal.held, deal.leader, deal.trick, deal.played, len(deal.winners))
            for s in searches
        ]
        reference, census = searches
        assert isinstance(census, LeafCensus)
        assert values[0] == values[1]
        assert (census.nodes, census.tt_probes, census.tt_cuts) == (
            reference.nodes,
            reference.tt_probes,
            reference.tt_cuts,
        )
        _check(census)  # the rows add up to the search's own counters
        for at, row in census.census.items():
            assert at in BUCKETS
            assert row["opened"] + row["cuts"] <= row["nodes"]
            assert row["cuts"] <= row["hits"] <= row["probes"] <= row["starts"]
            if row["nodes"]:
                seen.add(at)
    assert {"1", "2", "3", "4", "5+"} <= seen


def test_a_node_past_the_last_trick_counts_with_the_last_trick(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.syspath_prepend(str(ROOT / "bench"))
    from census_par_leaf import LeafCensus

    rng = random.Random(5)
    endings = (_random_ending(rng, 1)[0] for _ in range(100))
    # the last trick's fourth card to play
    deal = next(d for d in endings if len(d.trick) == 3 and len(d.winners) == 12)
    census = LeafCensus(deal.contract, deal.trump, deal.flags)
    census.units_left(0, deal.held, deal.leader, deal.trick, deal.played, len(deal.winners))
    assert census.nodes == 2  # the fourth card, then the deal over
    assert dict(census.census)["1"]["nodes"] == 2 and set(census.census) == {"1"}


def _census(*args: str) -> str:
    result = subprocess.run(
        [sys.executable, "census_par_leaf.py", "--deals", "2", "--tricks", "10", "--nodes",
         "5000", *args],
        capture_output=True, text=True, cwd=ROOT / "bench", check=False, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return re.sub(r"\(\d+ s CPU\)", "(CPU)", result.stdout)


def test_the_leaf_census_runs_on_the_bench_deals_and_on_another_builds_reference() -> None:
    own = _census()
    assert own.startswith("from trick 10 (CPU):\n")
    assert "  all (" in own and " 2 left: " in own
    reference = ROOT / "kingrec" / "analysis" / "_par_py.py"
    assert _census("--reference", str(reference)) == own  # the same twin, loaded apart
