"""How fast par is found: per deal, per review, and ``kingrec analyse`` over whole matches.

Run ``python bench/bench_par.py`` (``--help`` for the options). On classic deals simulated
by the bots (seeded, so every run analyses the same deals) it prints:

* par for all four seats of a deal, at its start, on one core: the median, p90 and p99 of
  the CPU time per deal, how many deals ran past the budget (unsolved: their time is
  counted as the budget, so a percentile above it reads "> budget"), the median node count
  and the transposition table's hit rate;
* the same from later tricks (``--later-tricks``, default 5 and 7: what
  ``kingrec analyse --from-trick`` does);
* every card's cost for a whole deal (``review_deal``): the same figures on fewer deals;
* ``kingrec analyse --par-only --jobs 2`` on a few whole matches, end to end, with the
  time 1,000 matches would take at that rate.

The issue's targets: par for four seats median <= 100 ms and p99 <= 2 s; a whole deal's
card costs median <= 2 s; 1,000 classic matches par-only in <= 20 minutes with --jobs 2.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from compiled_only import refuse_pure_twins

from kingrec.analysis.par import Budget, DealPar, deal_par
from kingrec.analysis.review import review_deal
from kingrec.rules import PRESETS
from kingrec.simulate import derive_seed, simulate_match, simulate_matches
from kingrec.v1 import record_pb2 as pb

CLASSIC = PRESETS["classic"]


def _deals(count: int, seed: int) -> list[pb.Deal]:
    deals: list[pb.Deal] = []
    i = 0
    while len(deals) < count:
        deals.extend(simulate_match(CLASSIC, derive_seed(seed, i)).deals)
        i += 1
    return deals[:count]


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _ms(value: float, budget_ms: int) -> str:
    return f"> {budget_ms} ms" if value >= budget_ms else f"{value:.1f} ms"


def _measure(
    name: str, deals: list[pb.Deal], budget_ms: int, analyse: Callable[[pb.Deal], DealPar]
) -> None:
    if not deals:
        print(f"{name}: no deals")
        return
    times: list[float] = []
    nodes: list[int] = []
    probes = hits = unsolved = 0
    by_card = [0, 0, 0, 0]
    tt_cuts = searched_starts = 0
    by_contract: dict[str, list[float]] = {}
    nodes_by_contract: dict[str, list[int]] = {}
    for deal in deals:
        began = time.process_time()
        result = analyse(deal)
        spent = (time.process_time() - began) * 1000
        if not result.solved:
            unsolved += 1
            spent = max(spent, budget_ms)
        times.append(spent)
        nodes.append(result.stats.nodes)
        probes += result.stats.tt_probes
        hits += result.stats.tt_hits
        by_card = [a + b for a, b in zip(by_card, result.stats.nodes_by_card, strict=True)]
        tt_cuts += result.stats.tt_cuts
        searched_starts += result.stats.searched_starts
        by_contract.setdefault(pb.Contract.Name(deal.contract), []).append(spent)
        nodes_by_contract.setdefault(pb.Contract.Name(deal.contract), []).append(result.stats.nodes)
    print(f"{name}: {len(deals)} classic deals, budget {budget_ms} ms each (CPU time)")
    print(
        f"  median {_ms(statistics.median(times), budget_ms)}, "
        f"p90 {_ms(_percentile(times, 0.9), budget_ms)}, "
        f"p99 {_ms(_percentile(times, 0.99), budget_ms)}; "
        f"{unsolved} unsolved ({100 * unsolved / len(deals):.0f}%)"
    )
    print(
        f"  nodes: median {statistics.median(nodes):,.0f}, max {max(nodes):,}; "
        f"table hit rate {hits / probes if probes else 0:.1%} of {probes:,} probes"
    )
    total = sum(by_card) or 1
    print(
        f"  where the nodes go: trick starts {by_card[0] / total:.0%} (answered by the table "
        f"{tt_cuts / total:.0%}, searched {searched_starts / total:.0%}, the rest by a bound, "
        f"the last trick or the deal's end), 2nd card {by_card[1] / total:.0%}, "
        f"3rd {by_card[2] / total:.0%}, 4th {by_card[3] / total:.0%}"
    )
    for contract, per_deal in sorted(by_contract.items()):
        solved = sum(1 for t in per_deal if t < budget_ms)
        print(
            f"    {contract:<17} {len(per_deal):>3} deals, median "
            f"{_ms(statistics.median(per_deal), budget_ms)}, {solved} solved, median nodes "
            f"{statistics.median(nodes_by_contract[contract]):,.0f}"
        )


def _par_from(deal: pb.Deal, at_play: int, budget: Budget) -> DealPar:
    return deal_par(deal, CLASSIC, at_play=at_play, budget=budget)


def _review(deal: pb.Deal, budget: Budget) -> DealPar:
    review = review_deal(deal, CLASSIC, budget=budget)
    return dataclasses.replace(review.par, solved=review.solved)


def _command(matches: int, jobs: int, budget_ms: int, seed: int) -> None:
    kingrec = Path(sys.executable).parent / "kingrec"
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.krec"
        import kingrec as library

        library.write_records(path, simulate_matches(CLASSIC, matches, seed))
        args = [str(kingrec), "analyse", "--no-progress", "--json", "--par-only"]
        args += ["--jobs", str(jobs), "--budget-ms", str(budget_ms), str(path)]
        began = time.perf_counter()
        result = subprocess.run(args, capture_output=True, text=True, check=False)
        wall = time.perf_counter() - began
    summary = json.loads(result.stdout.splitlines()[-1])
    print(
        f"kingrec analyse --par-only --jobs {jobs} --budget-ms {budget_ms}: {matches} matches "
        f"({summary['deals']} deals) in {wall:.1f} s wall, {summary['unsolved']} unsolved; "
        f"1,000 matches at this rate: {wall * 1000 / matches / 60:.1f} min"
    )


def main() -> None:
    refuse_pure_twins()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deals", type=int, default=40, help="deals for the par figures")
    parser.add_argument("--reviews", type=int, default=6, help="deals for the card costs")
    parser.add_argument("--matches", type=int, default=2, help="matches for the command")
    parser.add_argument("--budget-ms", type=int, default=2000, help="budget per deal")
    parser.add_argument("--seed", type=int, default=18)
    parser.add_argument(
        "--later-tricks",
        type=int,
        nargs="*",
        default=[5, 7],
        help="also par from the start of these tricks (deals that reach them)",
    )
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    budget = Budget(ms=args.budget_ms, clock=lambda: int(time.process_time() * 1e9))
    deals = _deals(max(args.deals, args.reviews), args.seed)
    _measure(
        "par, four seats",
        deals[: args.deals],
        args.budget_ms,
        lambda d: deal_par(d, CLASSIC, budget=budget),
    )
    for trick in args.later_tricks:
        _measure(
            f"par, four seats, from trick {trick}",
            [d for d in deals[: args.deals] if len(d.plays) > 4 * (trick - 1)],
            args.budget_ms,
            functools.partial(_par_from, at_play=4 * (trick - 1), budget=budget),
        )
    _measure(
        "every card's cost",
        deals[: args.reviews],
        args.budget_ms,
        lambda d: _review(d, budget),
    )
    if args.matches:
        _command(args.matches, args.jobs, args.budget_ms, args.seed)


if __name__ == "__main__":
    main()
