"""Where the penalty contracts' nodes go: a census of the trick starts the search had to open.

A bench-only instrument (the shipped twins are untouched): the pure twin's ``ParSearch``
subclassed so that each trick start that the bounds and the table did not settle is
recorded with its window, the value the search returned, the nodes below it (those not
below another opened trick start: each node is counted once), and what the position looks
like (the hero on lead or not, its failing suits with ``_failing_suits``, their lengths and
how many of the hero's cards of each cannot be paired under one of the others', the best
ceiling the existing bounds give). Each one is then re-searched exactly by the compiled
twin (a node budget each) for its true value.

    python bench/census_par_gap.py --deals 20 --tricks 5 --out /tmp/par-gap/census5.jsonl
    python bench/census_par_gap.py --summary /tmp/par-gap/census5.jsonl

It runs on the bench's classic deals (``bench_par``'s, seed 18), penalty contracts only,
par for all four seats from the first play of the given trick.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import inspect
import json
import sys
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


def unpaired(mine: int, theirs: int) -> int:
    """How many of the hero's cards of a suit cannot each be paired with a higher card of
    the others' (each used once): the hero's cards the three can make win, at most."""
    hs = [c for c in range(52) if mine >> c & 1]
    os_ = [c for c in range(52) if theirs >> c & 1]
    pairs, j = 0, 0
    for h in hs:  # the lowest h first takes the lowest o above it (the most pairs)
        while j < len(os_) and os_[j] < h:
            j += 1
        if j < len(os_):
            pairs += 1
            j += 1
    return len(hs) - pairs


REFERENCE = reference_from_argv("_par_census")
SUIT_MASKS = REFERENCE.SUIT_MASKS
_HEARTS = REFERENCE._HEARTS


class CensusSearch(REFERENCE.ParSearch):  # type: ignore[name-defined,misc]
    """The pure twin, recording the trick starts it opens (the same tree, the same order)."""

    def __init__(self, contract: int, trump: int, flags: int) -> None:
        super().__init__(contract, trump, flags)
        self.stack: list[list[Any]] = []
        self.records: list[dict[str, Any]] = []

    def _find(
        self, key: tuple[int, ...], codes: tuple[int, ...], played: int, alpha: int, beta: int
    ) -> Any:
        found = super()._find(key, codes, played, alpha, beta)
        opened = True
        if found is not None:
            low, high = found[0], found[1]
            if low == high or low >= beta or high <= alpha:
                opened = False
        if self.stack:
            self.stack[-1][1] = opened
        return found

    def _search(self, deal: Any, alpha: int, beta: int) -> int:
        if deal.trick:
            return int(super()._search(deal, alpha, beta))
        began = self.nodes
        by_card = list(self.nodes_by_card)
        self.stack.append([deal, False, 0, [0, 0, 0, 0]])
        value = int(super()._search(deal, alpha, beta))
        frame = self.stack.pop()
        inclusive = self.nodes - began
        if frame[1]:
            cards = [self.nodes_by_card[i] - by_card[i] - frame[3][i] for i in range(4)]
            own = inclusive - frame[2]
            self.records.append(self._describe(deal, alpha, beta, value, own, cards))
        if self.stack:
            self.stack[-1][2] += inclusive
            for i in range(4):
                self.stack[-1][3][i] += self.nodes_by_card[i] - by_card[i]
        return value

    def _describe(
        self, deal: Any, alpha: int, beta: int, value: int, own: int, cards: list[int]
    ) -> dict[str, Any]:
        seat, held, penalty = self.seat, deal.held, self.penalty
        hero = held[seat]
        hands = [held[(seat + k) % 4] for k in (1, 2, 3)]
        others = hands[0] | hands[1] | hands[2]
        forced = bool(self.flags & (REFERENCE.F_WITHHOLDING | REFERENCE.F_VOID_DISCARD))
        # main's twin pooled the three's cards; this tree's takes their hands
        pooled = "others" in inspect.signature(REFERENCE._failing_suits).parameters
        failing = REFERENCE._failing_suits(hero, others if pooled else hands, penalty, forced)
        most = self._units_in_play(deal)
        _floor, this_ceiling = self._this_trick(deal, most)
        exits = self._exits_after_this_trick(deal, most)
        ceiling = min(most, this_ceiling, exits if exits >= 0 else 99)
        suits = []
        for suit, mask in enumerate(SUIT_MASKS):
            if failing & mask:
                suits.append(
                    {
                        "suit": suit,
                        "mine": (hero & mask).bit_count(),
                        "theirs": [(h & mask).bit_count() for h in hands],
                        "unpaired": unpaired(hero & mask, others & mask),
                        "pen_mine": (hero & mask & penalty).bit_count(),
                    }
                )
        return {
            "contract": self.contract,
            "seat": seat,
            "ntricks": len(deal.winners),
            "leader": (deal.leader - seat) % 4,  # 0: the hero leads
            "alpha": alpha,
            "beta": beta,
            "value": value,
            "most": most,
            "ceiling": ceiling,
            "exits": exits,
            "failing": suits,
            "hero_suits": [(hero & m).bit_count() for m in SUIT_MASKS],
            "unpaired_all": sum(unpaired(hero & m, others & m) for m in SUIT_MASKS if others & m),
            "voids_theirs": sum(1 for m in SUIT_MASKS if hero & m and not others & m),
            "nodes": own,
            "by_card": cards,
            "held": list(held),
            "leader_abs": deal.leader,
            "played": deal.played,
            "hearts_broken": bool(deal.played & _HEARTS),
        }


def census(deals: int, seed: int, trick: int, out: Path, node_limit: int, exact: int) -> None:
    compiled = importlib.import_module("kingrec.analysis._par_c")
    module = types.ModuleType("census_twin")
    module.ParSearch = CensusSearch  # type: ignore[attr-defined]
    at_play = 4 * (trick - 1)
    with out.open("w") as sink:
        for number, deal in enumerate(_deals(deals, seed)):
            contract = int(deal.contract)
            if contract == Contract.KOZ:
                continue
            flags = CLASSIC.deal_flags(contract)
            trump = engine_trump(deal)
            solver = Solver(contract, trump, flags, Budget(nodes=node_limit), twin=module)
            began = time.process_time()
            try:
                result = deal_par(deal, CLASSIC, at_play=at_play, solver=solver)
            except ValueError:
                continue  # the deal ended (early) before that trick
            search = solver._search
            assert isinstance(search, CensusSearch)
            exact_search = compiled.ParSearch(contract, trump, flags)
            for record in search.records:
                limit = exact_search.nodes + exact
                v = exact_search.units_left(
                    record["seat"],
                    record["held"],
                    record["leader_abs"],
                    [],
                    record["played"],
                    record["ntricks"],
                    limit,
                )
                record["exact"] = v  # -1: past the re-search's budget
                record["deal"] = number
                record["trick_from"] = trick
                record["solved"] = result.solved
                sink.write(json.dumps(record) + "\n")
            print(
                f"deal {number} {NAMES[contract]}: {search.nodes} nodes, "
                f"{len(search.records)} opened, solved {result.solved}, "
                f"{time.process_time() - began:.1f} s",
                file=sys.stderr,
                flush=True,
            )


def summary(paths: list[Path]) -> None:
    rows = [json.loads(line) for path in paths for line in path.open()]
    total = sum(r["nodes"] for r in rows)
    print(f"{len(rows)} opened trick starts, {total} nodes below them (each counted once)")
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        nfail = len(r["failing"])
        low = r["exact"] >= 0 and r["exact"] <= r["alpha"]
        lead = "lead" if r["leader"] == 0 else "other"
        groups[(NAMES[r["contract"]], lead, nfail, low)].append(r)
    print(
        f"{'contract':9} {'lead':5} {'fail':>4} {'low':>5} {'starts':>7} {'nodes':>9} "
        f"{'%':>5} {'v=0':>5} {'v<=a<c':>7} {'mean v':>6} {'unp':>4}"
    )
    for key in sorted(groups, key=lambda k: -sum(r["nodes"] for r in groups[k])):
        g = groups[key]
        nodes = sum(r["nodes"] for r in g)
        missed = sum(1 for r in g if 0 <= r["exact"] <= r["alpha"] < r["ceiling"])
        zero = sum(1 for r in g if r["exact"] == 0)
        mean_v = sum(max(r["exact"], 0) for r in g) / len(g)
        unp = sum(r["unpaired_all"] for r in g) / len(g)
        print(
            f"{key[0]:9} {key[1]:5} {key[2]:>4} {key[3]!s:>5} {len(g):>7} {nodes:>9} "
            f"{100 * nodes / total:>5.1f} {zero:>5} {missed:>7} {mean_v:>6.2f} {unp:>4.1f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deals", type=int, default=20)
    parser.add_argument("--seed", type=int, default=18)
    parser.add_argument("--tricks", type=int, default=5, help="par from this trick")
    parser.add_argument("--nodes", type=int, default=3_000_000, help="node budget per deal")
    parser.add_argument("--exact", type=int, default=2_000_000, help="nodes per re-search")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--summary", type=Path, nargs="+")
    parser.add_argument("--reference", type=Path, help="another build's _par_py.py to census")
    args = parser.parse_args()
    if args.summary:
        summary(args.summary)
        return
    if args.out is None:
        raise SystemExit("--out or --summary")
    census(args.deals, args.seed, args.tricks, args.out, args.nodes, args.exact)


if __name__ == "__main__":
    main()
