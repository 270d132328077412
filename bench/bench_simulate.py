"""How fast matches are simulated: deals per second, in-process and through ``kingrec simulate``.

Run ``python bench/bench_simulate.py`` (``--help`` for the options). It prints

* in-process, one core: ``simulate_match`` + serialization with each simulator twin
  (the compiled ``_sim_c`` when it is built, and the pure-Python reference);
* the command ``kingrec simulate`` end to end (process start, writing a .krec file and,
  separately, JSON Lines), with ``--jobs 1`` and ``--jobs 2``.

Rates are per wall second and per CPU second (``time.process_time`` in process; the
command's and its workers' user + system time): on a shared machine compare the CPU rates.

The issue's target is 20,000 deals/s per core for ``kingrec simulate``.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from compiled_only import refuse_pure_twins

from kingrec import _twins
from kingrec.rules import PRESETS
from kingrec.simulate import derive_seed, simulate_match


def in_process(preset: str, matches: int, twin: str) -> tuple[float, float]:
    """(deals per wall second, per CPU second) of simulating and serializing ``matches``
    matches in this process."""
    twins = _twins.PYTHON if twin == "python" else _twins.COMPILED
    rules = PRESETS[preset]
    began, began_cpu = time.perf_counter(), time.process_time()
    deals = 0
    for i in range(matches):
        match = simulate_match(rules, derive_seed(0, i), twins=twins)
        match.SerializeToString()
        deals += len(match.deals)
    return deals / (time.perf_counter() - began), deals / (time.process_time() - began_cpu)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def command(preset: str, matches: int, jobs: int, suffix: str) -> tuple[float, float, float]:
    """``kingrec simulate`` as a user runs it: deals/s over the wall clock, its own figure,
    and deals per CPU second of the command and its workers (user + system)."""
    kingrec = Path(sys.executable).parent / "kingrec"
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / f"bench{suffix}"
        args = [str(kingrec), "simulate", "--no-progress", "--preset", preset]
        args += ["--matches", str(matches), "--jobs", str(jobs), "-o", str(out)]
        began, began_cpu = time.perf_counter(), _children_cpu()
        result = subprocess.run(args, capture_output=True, check=True)
        wall, cpu = time.perf_counter() - began, _children_cpu() - began_cpu
    deals = matches * PRESETS[preset].deal_count
    reported = float(result.stderr.split(b" s, ")[-1].split()[0])
    return deals / wall, reported, deals / cpu


def main() -> None:
    refuse_pure_twins()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="classic", choices=sorted(PRESETS))
    parser.add_argument("--matches", type=int, default=2000, help="matches per measurement")
    parser.add_argument(
        "--python-matches", type=int, default=200, help="matches for the pure-Python twin"
    )
    args = parser.parse_args()
    preset, n = args.preset, args.matches

    print(f"preset {preset}, {os.cpu_count()} CPU(s), simulator twin {_twins.ACTIVE.name}")
    print("(deals per wall second / per CPU second: on a shared machine compare the CPU rates)")
    if _twins.COMPILED is not None:
        wall, cpu = in_process(preset, n, "cython")
        print(f"in-process, 1 core, compiled twin: {wall:9,.0f} / {cpu:9,.0f} deals/s")
    wall, cpu = in_process(preset, args.python_matches, "python")
    print(f"in-process, 1 core, pure Python:   {wall:9,.0f} / {cpu:9,.0f} deals/s")
    for suffix in (".krec", ".jsonl"):
        for jobs in (1, 2):
            wall, reported, cpu = command(preset, n, jobs, suffix)
            print(
                f"kingrec simulate -o *{suffix:6} --jobs {jobs}: {reported:9,.0f} deals/s "
                f"(command's own figure), {wall:9,.0f} / {cpu:9,.0f} deals/s including "
                "process start"
            )


if __name__ == "__main__":
    main()
