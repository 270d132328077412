"""What ``--jobs 2`` could reach on this machine: two independent validates at once.

    python bench/bench_jobs_ceiling.py --file F.krec [--rounds 9]

Issue 17's target 3b asks ``kingrec validate --jobs 2`` for 1.8x one job. Two cores shared
with other tenants do not give two processes twice the work of one: each round here times
one ``kingrec validate`` alone, then two of the same started together (till both are
done), then one ``--jobs 2``. Two alone at once take the ceiling: 2 x alone / together is
what no split of the work can beat; ``--jobs 2`` is set beside it, with the start-up it
cannot split. Medians of ``--rounds``, and of each round's ratios.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import time
from pathlib import Path

from compiled_only import refuse_pure_twins
from in_turn import NEW


def wall(commands: list[list[str]]) -> float:
    """The wall time from starting ``commands`` at once till the last has ended."""
    started = time.perf_counter()
    running = [(c, subprocess.Popen(c, stdout=subprocess.DEVNULL)) for c in commands]
    for command, process in running:
        if process.wait() != 0:
            raise SystemExit(f"{' '.join(command)} ended with {process.returncode}")
    return time.perf_counter() - started


def main() -> None:
    refuse_pure_twins()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--file", type=Path, required=True, help="a .krec file")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--kingrec", type=Path, default=NEW, help="the install to run")
    args = parser.parse_args()
    one = [str(args.kingrec), "validate", "--no-progress", str(args.file)]
    split = [*one[:2], "--jobs", "2", *one[2:]]
    alone, together, jobs = [], [], []
    for _ in range(args.rounds):
        alone.append(wall([one]))
        together.append(wall([one, one]))
        jobs.append(wall([split]))
    a, t, j = (statistics.median(x) for x in (alone, together, jobs))
    ceiling = statistics.median(2 * x / y for x, y in zip(alone, together, strict=True))
    reached = statistics.median(x / y for x, y in zip(alone, jobs, strict=True))
    print(f"{args.file}: {args.rounds} rounds, load average {os.getloadavg()[0]:.1f}")
    print(f"  one validate alone {a:.3f} s; two at once {t:.3f} s (both done); --jobs 2 {j:.3f} s")
    print(f"  the machine's ceiling for two processes: {2 * a / t:.2f}x (per round {ceiling:.2f})")
    print(f"  --jobs 2 over one job: {a / j:.2f}x (per round {reached:.2f})")


if __name__ == "__main__":
    main()
