"""Frame reading throughput: the pure-Python frame loop, the compiled one, and frame batches.

    python bench/bench_frames.py                 # bench/out/classic-100000.krec, if there
    python bench/bench_frames.py --matches 20000 # else simulates a file of this many matches

Reads one .krec file (from the page cache: it is read once before timing) and prints, side
by side, frames/s and MB/s of:

* ``read_frames`` on the pure-Python frame loop (``kingrec._frames_py``, what
  ``KINGREC_PURE_PYTHON=1`` runs), one ``Frame`` per frame;
* ``read_frames`` on the compiled loop (``kingrec._frames_c``);
* ``read_frame_runs`` on the compiled loop: the container's runs, no object per frame;
* ``RecordFile.raw_frame_batches()``: (Location, payload) batches, what the validator reads.

Each is timed best of --repeat rounds, the rounds interleaved so machine noise hits all alike,
by the wall clock and by CPU time (``time.process_time``; on a shared machine compare those).
"""

from __future__ import annotations

import argparse
import importlib
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from bench_validate import OUT, ensure_file
from compiled_only import refuse_pure_twins

from kingrec import _frames_py
from kingrec.container import Frame, FrameRun, ScanFrames, read_frame_runs, read_frames, reader
from kingrec.records import open_records

BIG = OUT / "classic-100000.krec"


@contextmanager
def frame_loop(scan: ScanFrames) -> Iterator[None]:
    """Make the reader use ``scan``, as the twin selection at import would."""
    chosen = reader._scan_frames
    reader._scan_frames = scan
    try:
        yield
    finally:
        reader._scan_frames = chosen


def count_frames(path: Path) -> int:
    return sum(1 for item in read_frames(path) if isinstance(item, Frame))


def count_runs(path: Path) -> int:
    return sum(len(run.payloads) for run in read_frame_runs(path) if isinstance(run, FrameRun))


def count_batches(path: Path) -> int:
    with open_records(str(path)) as records:
        return sum(len(batch) for batch in records.raw_frame_batches())


def main() -> None:
    refuse_pure_twins()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--matches",
        type=int,
        default=10_000,
        help=f"matches to simulate when {BIG.name} is not in bench/out (default 10000)",
    )
    parser.add_argument("--repeat", type=int, default=3, help="rounds; the best counts")
    parser.add_argument(
        "--jobs", type=int, default=os.cpu_count() or 1, help="processes for the simulation"
    )
    args = parser.parse_args()

    path = BIG if BIG.exists() else OUT / f"classic-{args.matches}.krec"
    ensure_file(path, args.matches, args.jobs)
    size = path.stat().st_size
    path.read_bytes()  # into the page cache, so every variant reads from memory alike

    try:
        compiled: ScanFrames | None = importlib.import_module("kingrec._frames_c").scan_frames
    except ImportError:
        compiled = None
        print("(the compiled frame loop is not built: pip install -e .)")
    variants: list[tuple[str, ScanFrames, Callable[[Path], int]]] = [
        ("read_frames, pure-Python loop", _frames_py.scan_frames, count_frames)
    ]
    if compiled is not None:
        variants += [
            ("read_frames, compiled loop", compiled, count_frames),
            ("read_frame_runs, compiled loop", compiled, count_runs),
            ("RecordFile.raw_frame_batches, compiled loop", compiled, count_batches),
        ]

    print(f"file: {path} ({size / 1e6:.0f} MB), best of {args.repeat} rounds", flush=True)
    best = {label: float("inf") for label, _, _ in variants}
    best_cpu = dict(best)
    frames = 0
    for _ in range(args.repeat):
        for label, scan, count in variants:
            with frame_loop(scan):
                start, start_cpu = time.perf_counter(), time.process_time()
                frames = count(path)
                best[label] = min(best[label], time.perf_counter() - start)
                best_cpu[label] = min(best_cpu[label], time.process_time() - start_cpu)
    print()
    print(f"  {'':<46} {'wall: frames/s':>15} {'MB/s':>6}   {'CPU: frames/s':>14} {'MB/s':>6}")
    for label, seconds in best.items():
        cpu = best_cpu[label]
        print(
            f"  {label:<46} {frames / seconds:>15,.0f} {size / seconds / 1e6:>6,.0f}   "
            f"{frames / cpu:>14,.0f} {size / cpu / 1e6:>6,.0f}  ({seconds:.2f} s, {cpu:.2f} s CPU)"
        )


if __name__ == "__main__":
    main()
