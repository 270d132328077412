"""One build's par on fixed deals, alone in its process: the run to hand to cachegrind.

bench_par_ab.py compares two builds by CPU time in one process; instructions are counted
one build a process, on the same deals, with the same node budget (so both search the same
nodes), and the counts of ``_par_c``'s functions divided by the nodes printed:

    valgrind --tool=cachegrind --branch-sim=yes --cache-sim=no \\
        --cachegrind-out-file=/tmp/cg.old python bench/bench_par_cg.py --old OLD.so --tricks 5
    valgrind ... --cachegrind-out-file=/tmp/cg.new python bench/bench_par_cg.py --tricks 5
    cg_annotate /tmp/cg.old | grep _par_c.c:

The process's other instructions (start-up, the simulated deals) are the same for both.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from types import ModuleType

from bench_par import CLASSIC, _deals
from bench_par_ab import _load
from compiled_only import refuse_pure_twins

from kingrec.analysis.par import Budget, Solver, deal_par, par_twin
from kingrec.boundary import engine_trump


def main() -> None:
    refuse_pure_twins()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", type=Path, help="another build's _par_c module (default: this)")
    parser.add_argument("--deals", type=int, default=4, help="bench deals (bench_par's)")
    parser.add_argument("--seed", type=int, default=18)
    parser.add_argument("--tricks", type=int, default=5, help="par from this trick")
    parser.add_argument(
        "--budget-nodes", type=int, default=500_000, help="node budget per deal (0: none)"
    )
    args = parser.parse_args()
    twin: ModuleType = _load(args.old) if args.old else par_twin()
    at_play = 4 * (args.tricks - 1)
    nodes = deals = 0
    for deal in _deals(args.deals, args.seed):
        if len(deal.plays) <= at_play:
            continue
        flags = CLASSIC.deal_flags(int(deal.contract))
        budget = Budget(ms=0, nodes=args.budget_nodes)
        solver = Solver(int(deal.contract), engine_trump(deal), flags, budget, twin=twin)
        nodes += deal_par(deal, CLASSIC, at_play=at_play, solver=solver).stats.nodes
        deals += 1
    print(f"{twin.__file__}: {deals} deals from trick {args.tricks}, {nodes:,} nodes")


if __name__ == "__main__":
    main()
