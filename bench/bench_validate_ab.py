"""``kingrec validate`` of two installs side by side, run after run (issue 17, target 3).

    python bench/bench_validate_ab.py --old /tmp/old-tree/.venv/bin/kingrec --pairs 7
    python bench/bench_validate_ab.py --old OLD --jobs 1 2 --tiny 20

On a loaded machine whose speed drifts only a ratio of runs taken in turn means anything:
this runs the old command line (``--old``: another checkout's installed ``kingrec``) and
this tree's, alternating which goes first, ``--pairs`` times on the file and, with
``--tiny N``, N times on a one-match file (the start-up: a CPU-second figure of what
``kingrec validate`` costs before and after its records). Each run's CPU time is the
command's user + system time from ``wait4``, its workers' included (they are its children
and it waits for them); wall time beside it. Both must print the same report.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

from compiled_only import refuse_pure_twins
from in_turn import in_turn, one_match_file, timed

DEFAULT_FILE = Path("/work/bench-data/classic-100000.krec")


def run(kingrec: Path, args: list[str]) -> tuple[float, float, bytes]:
    """(CPU seconds, wall seconds, standard output) of ``kingrec validate ARGS``."""
    done = timed([str(kingrec), "validate", "--no-progress", *args])
    assert done.code in (0, 1), (kingrec, args, done.code)
    return done.cpu, done.wall, done.out


def pairs(old: Path, args: list[str], count: int) -> dict[str, list[tuple[float, float]]]:
    """``count`` runs of each, in turn (``in_turn``)."""
    times: dict[str, list[tuple[float, float]]] = {"old": [], "new": []}
    outputs: dict[str, bytes] = {}
    for _, name, kingrec in in_turn(old, count):
        cpu, wall, out = run(kingrec, args)
        assert outputs.setdefault(name, out) == out
        times[name].append((cpu, wall))
    assert outputs["old"] == outputs["new"], outputs
    return times


def report(title: str, deals: int, times: dict[str, list[tuple[float, float]]]) -> None:
    print(f"{title}  (load average {os.getloadavg()[0]:.1f})")
    medians = {}
    for name, runs in times.items():
        cpu = statistics.median(c for c, _ in runs)
        wall = statistics.median(w for _, w in runs)
        medians[name] = (cpu, wall)
        rate = (
            f", {deals / wall / 1e6:.2f} M deals/s wall, {deals / cpu / 1e6:.2f} M deals per CPU s"
            if deals
            else ""
        )
        print(
            f"  {name}: CPU median {cpu:.3f} s, wall median {wall:.3f} s{rate}  "
            f"(CPU {' '.join(f'{c:.3f}' for c, _ in runs)}; "
            f"wall {' '.join(f'{w:.3f}' for _, w in runs)})"
        )
    ratios = [n[0] / o[0] for n, o in zip(times["new"], times["old"], strict=True)]
    print(
        f"  new/old CPU per pair: median {statistics.median(ratios):.3f}; "
        f"of the medians {medians['new'][0] / medians['old'][0]:.3f} "
        f"(wall {medians['new'][1] / medians['old'][1]:.3f})"
    )


def main() -> None:
    refuse_pure_twins()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--old", type=Path, required=True, help="the old install's kingrec")
    parser.add_argument("--file", type=Path, default=DEFAULT_FILE, help="a .krec file")
    parser.add_argument("--deals", type=int, default=2_000_000, help="deals in --file")
    parser.add_argument("--pairs", type=int, default=5, help="runs of each on the file")
    parser.add_argument("--jobs", type=int, nargs="+", default=[1], help="--jobs values")
    parser.add_argument("--tiny", type=int, default=0, help="runs of each on one match")
    args = parser.parse_args()
    if not args.old.exists():
        sys.exit(f"no such command: {args.old}")
    startup: dict[str, list[tuple[float, float]]] = {}
    if args.tiny:
        with tempfile.TemporaryDirectory(prefix="validate-ab-") as tmp:
            tiny = one_match_file(Path(tmp))
            startup = pairs(args.old, [str(tiny)], args.tiny)
            report("start-up: one match (20 deals)", 0, startup)
    by_jobs = {}
    for jobs in args.jobs:
        times = pairs(args.old, ["--jobs", str(jobs), str(args.file)], args.pairs)
        report(f"{args.file} --jobs {jobs}", args.deals, times)
        by_jobs[jobs] = times
    if startup and 1 in by_jobs and 2 in by_jobs:
        two_cores(startup, by_jobs[1], by_jobs[2])


def two_cores(
    startup: dict[str, list[tuple[float, float]]],
    one: dict[str, list[tuple[float, float]]],
    two: dict[str, list[tuple[float, float]]],
) -> None:
    """``--jobs 2`` against one job by CPU accounting, for a loaded machine: one job takes
    its CPU time on a free core; two jobs take the start-up (the serial part before the
    workers start) then the rest of their CPU shared by two free cores."""
    print("--jobs 2 over one job, on two free cores (by CPU: one job's CPU / (start-up + the")
    print("rest of two jobs' CPU / 2)), and by wall time here")
    for name in ("old", "new"):
        s = statistics.median(c for c, _ in startup[name])
        c1 = statistics.median(c for c, _ in one[name])
        c2 = statistics.median(c for c, _ in two[name])
        w1 = statistics.median(w for _, w in one[name])
        w2 = statistics.median(w for _, w in two[name])
        print(
            f"  {name}: start-up {s:.3f} s, one job {c1:.3f} s, two jobs {c2:.3f} s CPU: "
            f"{c1 / (s + (c2 - s) / 2):.2f}x predicted; wall {w1 / w2:.2f}x"
        )


if __name__ == "__main__":
    main()
