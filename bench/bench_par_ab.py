"""Par with two builds of the compiled twin side by side, in one process, on the same deals.

A change to the search is measured against the build before it: ``--old`` names the
``_par_c`` extension module of that build (built, say, from ``git show main:...`` into a
folder of its own: the module's file name must stay ``_par_c.<abi>.so``). Each deal's
positions are searched by the old build, then by the one installed, alternately, so load
and the machine's drift fall on both alike. Node counts do not depend on load; the CPU
time is per deal, on ``time.process_time``.

It prints per contract the total and median nodes, the CPU time, the deals solved within
the budget and the null-window passes (MTD(f)) of each build, and stops with an error
when the two give different pars: a bound may only make a search shorter.

    python bench/bench_par_ab.py --old /tmp/old/oldpar/_par_c.cpython-311-x86_64-linux-gnu.so \
        --deals 20 --tricks 3 5

``--budget-ms 0 --budget-nodes N`` gives both builds the same nodes (trick 1, where most
deals run to the budget): the CPU a node of each, on the same tree.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path
from types import ModuleType
from typing import Any

from bench_par import CLASSIC, _deals
from compiled_only import refuse_pure_twins

from kingrec.analysis.par import Budget, Solver, deal_par, par_twin
from kingrec.boundary import engine_trump
from kingrec.v1 import record_pb2 as pb


def _load(path: Path) -> ModuleType:
    """The extension module at ``path`` under a name of its own (its init keeps _par_c)."""
    spec = importlib.util.spec_from_file_location("par_old._par_c", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"{path}: not an extension module")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    refuse_pure_twins()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", type=Path, required=True, help="the old build's _par_c module")
    parser.add_argument("--deals", type=int, default=20, help="bench deals (bench_par's)")
    parser.add_argument("--seed", type=int, default=18)
    parser.add_argument("--tricks", type=int, nargs="+", default=[3, 5], help="par from these")
    parser.add_argument("--budget-ms", type=int, default=2000, help="CPU budget per deal")
    parser.add_argument(
        "--budget-nodes",
        type=int,
        default=0,
        help="node budget per deal (0: none); with --budget-ms 0 both builds search the same "
        "nodes of an unsolved deal, so their CPU per node compares",
    )
    args = parser.parse_args()
    # This tree's twin first: loaded after the old build, the import of kingrec's own
    # _par_c hands back the old module (one extension of that name per process).
    this = par_twin()
    twins = {"old": _load(args.old), "new": this}
    if twins["old"] is this or Path(str(twins["old"].__file__)) == Path(str(this.__file__)):
        raise SystemExit(f"{args.old}: the old build must be another module than this tree's")
    deals = _deals(args.deals, args.seed)
    for trick in args.tricks:
        at_play = 4 * (trick - 1)
        nodes: dict[str, dict[str, list[int]]] = {n: defaultdict(list) for n in twins}
        cpu: dict[str, dict[str, list[float]]] = {n: defaultdict(list) for n in twins}
        passes: dict[str, dict[str, int]] = {n: defaultdict(int) for n in twins}
        solved: dict[str, dict[str, int]] = {n: defaultdict(int) for n in twins}
        for deal in deals:
            if len(deal.plays) <= at_play:
                continue
            contract = pb.Contract.Name(deal.contract).removeprefix("CONTRACT_").lower()
            pars = {}
            for name, twin in twins.items():
                budget = Budget(
                    ms=args.budget_ms,
                    nodes=args.budget_nodes,
                    clock=lambda: int(time.process_time() * 1e9),
                )
                flags = CLASSIC.deal_flags(int(deal.contract))
                solver = Solver(int(deal.contract), engine_trump(deal), flags, budget, twin=twin)
                began = time.process_time()
                result = deal_par(deal, CLASSIC, at_play=at_play, solver=solver)
                search: Any = solver._search  # (both twins count their passes)
                spent = (time.process_time() - began) * 1000
                for key in (contract, "all"):
                    nodes[name][key].append(result.stats.nodes)
                    cpu[name][key].append(spent)
                    passes[name][key] += search.passes
                    solved[name][key] += result.solved
                pars[name] = [s.par for s in result.seats] if result.solved else None
            if pars["old"] is not None and pars["new"] is not None and pars["old"] != pars["new"]:
                raise SystemExit(f"deal {deal.number}: pars differ {pars}")
        print(f"from trick {trick} ({len(nodes['old']['all'])} deals, all four seats):")
        for key in sorted(nodes["old"], key=lambda k: (k == "all", k)):
            old, new = nodes["old"][key], nodes["new"][key]
            old_ms, new_ms = cpu["old"][key], cpu["new"][key]
            print(
                f"  {key:<9} nodes {sum(old):>12,} -> {sum(new):>12,} "
                f"({sum(new) / sum(old) - 1:+6.1%}), median {statistics.median(old):>11,.0f} -> "
                f"{statistics.median(new):>11,.0f}; CPU {sum(old_ms) / 1000:7.2f} -> "
                f"{sum(new_ms) / 1000:7.2f} s (median {statistics.median(old_ms):.1f} -> "
                f"{statistics.median(new_ms):.1f} ms; {sum(old_ms) * 1e6 / sum(old):.0f} -> "
                f"{sum(new_ms) * 1e6 / sum(new):.0f} ns a node); solved {solved['old'][key]} -> "
                f"{solved['new'][key]} of {len(old)}; passes {passes['old'][key]} -> "
                f"{passes['new'][key]}"
            )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
