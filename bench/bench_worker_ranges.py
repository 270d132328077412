"""What a ``validate --jobs`` worker spends judging a file's ranges: read into its buffer
or mapped (``kingrec.judges._maps_range``), side by side in one process.

    python bench/bench_worker_ranges.py --file /work/bench-data/classic-100000.krec --rounds 4

Every range of the file (as ``--jobs 2`` cuts it) is judged by ``_judge_range`` as a forked
worker judges it, the whole file once read and once mapped, in turn (the order swapped each
round), after one warm-up of each. Printed for each: medians of the user and system CPU
seconds (``getrusage``, this process alone) and of the minor page faults, and new/old
ratios (mapped/read). The CPU seconds of one process, not wall time: a loaded machine
stretches them less, and the two ways take turns.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
from pathlib import Path

from compiled_only import refuse_pure_twins

DEFAULT_FILE = Path("/work/bench-data/classic-100000.krec")


def judge_all(path: str, *, mapped: bool) -> tuple[float, float, int, int]:
    """(user s, system s, minor faults, frames) of judging every range of ``path`` once."""
    from kingrec import _twins, judges
    from kingrec.container import FILE_HEADER_SIZE

    info = os.stat(path)
    ident = (info.st_dev, info.st_ino)
    starts = judges._range_starts(info.st_size, judges.DEFAULT_CHUNK_BYTES, 4)
    stops = [*starts[1:], info.st_size]
    judges._MAP_RANGES = mapped
    before = resource.getrusage(resource.RUSAGE_SELF)
    frames = 0
    for start, stop in zip(starts, stops, strict=True):
        job = judges._Range(start, stop, start == FILE_HEADER_SIZE)
        taken = judges._judge_range(path, ident, path, job, True, _twins.ACTIVE.name)
        assert taken is not None
        frames += taken.frames
    after = resource.getrusage(resource.RUSAGE_SELF)
    return (
        after.ru_utime - before.ru_utime,
        after.ru_stime - before.ru_stime,
        after.ru_minflt - before.ru_minflt,
        frames,
    )


def main() -> None:
    refuse_pure_twins()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--file", type=Path, default=DEFAULT_FILE)
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()
    from kingrec import _twins, judges

    if not judges._can_map(_twins.ACTIVE):
        raise SystemExit("bench_worker_ranges: ranges are mapped only with the checksum in C")
    path = str(args.file)
    for mapped in (True, False):  # warm-up: the file in the page cache, the buffer grown
        judge_all(path, mapped=mapped)
    runs: dict[bool, list[tuple[float, float, int, int]]] = {True: [], False: []}
    for i in range(args.rounds):
        for mapped in (False, True) if i % 2 == 0 else (True, False):
            runs[mapped].append(judge_all(path, mapped=mapped))
    assert {run[3] for run in runs[True] + runs[False]} == {runs[True][0][3]}
    print(f"{path}: every range judged as a worker, {args.rounds} rounds, medians")
    print(f"  (load average {os.getloadavg()[0]:.1f}; {runs[True][0][3]:,} frames)")
    medians = {}
    for mapped in (False, True):
        user, sys_, faults = (statistics.median(run[k] for run in runs[mapped]) for k in range(3))
        medians[mapped] = (user, sys_)
        name = "mapped" if mapped else "read  "
        print(f"  {name}: user {user:.3f} s, system {sys_:.3f} s, minor faults {faults:,.0f}")
    for k, what in enumerate(("user", "system")):
        if medians[False][k] > 0:
            print(f"  mapped/read {what}: {medians[True][k] / medians[False][k]:.2f}")


if __name__ == "__main__":
    main()
