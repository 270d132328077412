"""Where the nodes lie by tricks left, and what the table and the bounds answer there.

A bench-only instrument (the shipped twins carry no counter): the pure twin's ``ParSearch``
subclassed (the same tree, the same order) so that each node is counted by the tricks left
in the deal (the trick being played counts as left: 1 is the last trick), and by what
became of it: opened (its moves searched), settled by the table (a look whose bounds cut),
or settled before any move by a bound, a leaf or the last trick's closed form. The looks
into the table and their hits are counted where they are made (trick starts).

    python bench/census_par_leaf.py --deals 20 --tricks 5 --nodes 300000

``--reference FILE`` takes the census of another build's pure twin (a ``_par_py.py``: main's,
from ``git show``, or a variant being weighed), loaded inside the package for its relative
imports.

It runs on the bench's classic deals (``bench_par``'s, seed 18), par for all four seats from
the first play of the given trick, each deal within a node budget (the deals cut by it are
counted as far as they got).
"""

from __future__ import annotations

import argparse
import time
import types
from collections import defaultdict
from pathlib import Path
from typing import Any

from bench_par import CLASSIC, _deals
from reference_twin import reference_from_argv

from kingrec.analysis.par import Budget, Solver, deal_par
from kingrec.boundary import engine_trump
from kingrec.contracts import Contract

NAMES = {int(c): c.name.lower() for c in Contract}
BUCKETS = ("1", "2", "3", "4", "5+")
FIELDS = ("nodes", "starts", "opened", "probes", "hits", "cuts")


REFERENCE = reference_from_argv("_par_leaf_census")


def _bucket(deal: Any) -> str:
    """The tricks left (a deal over after the last trick, below a root inside it, counts
    with the last trick)."""
    left = max(13 - len(deal.winners), 1)
    return BUCKETS[min(left, 5) - 1]


class LeafCensus(REFERENCE.ParSearch):  # type: ignore[name-defined,misc]
    """The pure twin, counting its nodes by tricks left."""

    def __init__(self, contract: int, trump: int, flags: int) -> None:
        super().__init__(contract, trump, flags)
        self.census: dict[str, dict[str, int]] = defaultdict(lambda: dict.fromkeys(FIELDS, 0))
        self._at = "5+"  # where the node under way lies (its look is counted there)

    def _search(self, deal: Any, alpha: int, beta: int) -> int:
        at = _bucket(deal)
        row = self.census[at]
        row["nodes"] += 1
        if not deal.trick:
            row["starts"] += 1
        self._at = at
        return int(super()._search(deal, alpha, beta))

    def _moves(self, deal: Any) -> list[int]:
        self.census[_bucket(deal)]["opened"] += 1
        return list(super()._moves(deal))

    def _find(self, key: Any, codes: Any, played: int, alpha: int, beta: int) -> Any:
        found = super()._find(key, codes, played, alpha, beta)
        row = self.census[self._at]
        row["probes"] += 1
        if found is not None:
            row["hits"] += 1
            low, high = found[0], found[1]
            if low == high or low >= beta or high <= alpha:
                row["cuts"] += 1
        return found


def _check(search: LeafCensus) -> None:
    """The census must add up to the search's own counters (a slip in the subclass would
    otherwise print figures of another tree)."""
    rows = search.census.values()
    counted = (
        sum(r["nodes"] for r in rows),
        sum(r["probes"] for r in rows),
        sum(r["hits"] for r in rows),
        sum(r["cuts"] for r in rows),
    )
    own = (search.nodes, search.tt_probes, search.tt_hits, search.tt_cuts)
    if counted != own:
        raise SystemExit(
            f"the census counted {counted} (nodes, looks, hits, cuts); the search {own}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deals", type=int, default=20, help="bench deals (bench_par's)")
    parser.add_argument("--seed", type=int, default=18)
    parser.add_argument("--tricks", type=int, nargs="+", default=[5], help="par from these")
    parser.add_argument("--nodes", type=int, default=300_000, help="node budget per deal")
    parser.add_argument(
        "--reference", type=Path, help="another build's _par_py.py (default: this tree's)"
    )
    args = parser.parse_args()
    module = types.ModuleType("leaf_census_twin")
    module.ParSearch = LeafCensus  # type: ignore[attr-defined]
    for trick in args.tricks:
        at_play = 4 * (trick - 1)
        totals: dict[str, dict[str, dict[str, int]]] = defaultdict(
            lambda: defaultdict(lambda: dict.fromkeys(FIELDS, 0))
        )
        solved: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        began = time.process_time()
        for deal in _deals(args.deals, args.seed):
            if len(deal.plays) <= at_play:
                continue
            contract = int(deal.contract)
            flags = CLASSIC.deal_flags(contract)
            solver = Solver(
                contract, engine_trump(deal), flags, Budget(ms=0, nodes=args.nodes), twin=module
            )
            result = deal_par(deal, CLASSIC, at_play=at_play, solver=solver)
            search = solver._search
            assert isinstance(search, LeafCensus)
            _check(search)
            for name in (NAMES[contract], "all"):
                solved[name][0] += result.solved
                solved[name][1] += 1
                for at, row in search.census.items():
                    for field, count in row.items():
                        totals[name][at][field] += count
        print(f"from trick {trick} ({time.process_time() - began:.0f} s CPU):")
        for name in sorted(totals, key=lambda n: (n == "all", n)):
            rows = totals[name]
            nodes = sum(rows[at]["nodes"] for at in BUCKETS) or 1
            print(f"  {name} ({solved[name][0]} of {solved[name][1]} solved, {nodes:,} nodes)")
            for at in BUCKETS:
                r = rows[at]
                settled = r["nodes"] - r["opened"] - r["cuts"]
                print(
                    f"    {at:>2} left: {r['nodes']:>10,} nodes ({r['nodes'] / nodes:6.1%}), "
                    f"starts {r['starts']:>9,}, opened {r['opened']:>9,}, bound/leaf "
                    f"{settled:>9,}; looks {r['probes']:>8,}, hits {r['hits']:>8,}, "
                    f"cuts {r['cuts']:>8,}"
                )


if __name__ == "__main__":
    main()
