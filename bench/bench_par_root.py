"""Par's root, side by side: the four seats' bounds on and off, and MTD(f)'s first guesses.

Each bench deal's four seats are searched at the start of a trick by every variant in turn,
in one process, on the compiled twin (a fresh table each): ``deal_par``'s own way (the
first guess what the seat took as played, the other seats' pars bounding it through
``four_seat_bounds``), the same without the bounds, and with each first guess named by
``--guess`` (the bounds stay on; those from the pars so far start the first seat at its
guess as played, ``zero`` and ``top`` are every seat's). It
prints per contract the nodes, the null-window passes, the CPU time and the deals solved
within the budget, and stops with an error when two variants give different pars.

    python bench/bench_par_root.py --deals 60 --tricks 5 7 9 11
    python bench/bench_par_root.py --deals 40 --tricks 5 --guess zero previous top
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from bench_par import CLASSIC, _deals
from compiled_only import refuse_pure_twins

from kingrec.analysis.par import (
    Budget,
    OutOfBudgetError,
    Solver,
    four_seat_bounds,
    replay_course,
)
from kingrec.boundary import engine_trump
from kingrec.contracts import UNITS_PER_DEAL, Contract
from kingrec.v1 import record_pb2 as pb

# A later seat's first guess from the pars (units from the position on) found so far and
# its own as played.
Guess = Callable[[list[int], int], int]
GUESSES: dict[str, Guess] = {
    "played": lambda pars, played: played,
    "zero": lambda pars, played: 0,
    "top": lambda pars, played: 13,
    "previous": lambda pars, played: pars[-1] if pars else played,
    "previous-1": lambda pars, played: max(0, pars[-1] - 1) if pars else played,
    "highest": lambda pars, played: max(pars) if pars else played,
    "mean": lambda pars, played: round(statistics.mean(pars)) if pars else played,
}


def _seats(
    deal: pb.Deal, at_play: int, guess: Guess, bounded: bool, budget_ms: int
) -> tuple[list[int] | None, int, int]:
    """The four seats' units from ``at_play`` on (None past the budget), nodes, passes."""
    contract = int(deal.contract)
    course = replay_course(deal, CLASSIC)
    assert course.actual is not None  # (the bots play every deal out)
    position = course.positions[at_play]
    clock = lambda: int(time.process_time() * 1e9)  # noqa: E731
    solver = Solver(
        contract,
        engine_trump(deal),
        CLASSIC.deal_flags(contract),
        Budget(ms=budget_ms, clock=clock),
    )
    search: Any = solver._search  # (both twins count their passes)
    in_play = UNITS_PER_DEAL[Contract(contract)] - sum(position.units)
    known: dict[int, int] = {}
    for seat in range(4):
        played = course.actual[seat] - position.units[seat]
        floor, ceiling = four_seat_bounds(contract, in_play, known, seat) if bounded else (0, 13)
        try:
            known[seat] = solver.units_left(
                position, seat, guess(list(known.values()), played), floor, ceiling
            )
        except OutOfBudgetError:
            return None, search.nodes, search.passes
    return list(known.values()), search.nodes, search.passes


def main() -> None:
    refuse_pure_twins()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deals", type=int, default=40, help="bench deals (bench_par's)")
    parser.add_argument("--seed", type=int, default=18)
    parser.add_argument("--tricks", type=int, nargs="+", default=[5], help="par from these")
    parser.add_argument("--budget-ms", type=int, default=0, help="CPU budget per deal (0: none)")
    parser.add_argument(
        "--guess", nargs="*", default=[], choices=sorted(GUESSES), help="more first guesses"
    )
    args = parser.parse_args()
    variants = {"deal_par": ("played", True), "no bounds": ("played", False)}
    variants.update({f"guess {name}": (name, True) for name in args.guess})
    deals = _deals(args.deals, args.seed)
    for trick in args.tricks:
        at_play = 4 * (trick - 1)
        nodes: dict[str, dict[str, int]] = {v: defaultdict(int) for v in variants}
        passes: dict[str, dict[str, int]] = {v: defaultdict(int) for v in variants}
        cpu: dict[str, dict[str, float]] = {v: defaultdict(float) for v in variants}
        solved: dict[str, dict[str, int]] = {v: defaultdict(int) for v in variants}
        counted: dict[str, int] = defaultdict(int)
        for deal in deals:
            if len(deal.plays) <= at_play:
                continue
            contract = pb.Contract.Name(deal.contract).removeprefix("CONTRACT_").lower()
            counted[contract] += 1
            counted["all"] += 1
            pars = {}
            for variant, (guess, bounded) in variants.items():
                began = time.process_time()
                values, spent_nodes, spent_passes = _seats(
                    deal, at_play, GUESSES[guess], bounded, args.budget_ms
                )
                spent = time.process_time() - began
                for key in (contract, "all"):
                    nodes[variant][key] += spent_nodes
                    passes[variant][key] += spent_passes
                    cpu[variant][key] += spent
                    solved[variant][key] += values is not None
                if values is not None:
                    pars[variant] = values
            if len(set(map(tuple, pars.values()))) > 1:
                raise SystemExit(f"deal {deal.number}: pars differ {pars}")
        print(f"from trick {trick} ({counted['all']} deals, all four seats):")
        for key in sorted(counted, key=lambda k: (k == "all", k)):
            print(f"  {key} ({counted[key]} deals)")
            base = nodes["deal_par"][key]
            for variant in variants:
                print(
                    f"    {variant:<18} nodes {nodes[variant][key]:>12,} "
                    f"({nodes[variant][key] / base - 1 if base else 0:+6.1%}) passes "
                    f"{passes[variant][key]:>5} CPU {cpu[variant][key]:7.2f} s solved "
                    f"{solved[variant][key]}"
                )


if __name__ == "__main__":
    main()
