"""When an ingest's two cores are busy, and with what: its timeline, phase by phase (issue 17).

    python bench/bench_ingest_timeline.py                       # the 2 M-deal bench file
    python bench/bench_ingest_timeline.py --file small.krec --every 0.1 --spans

``kingrec ingest`` stands on two cores: at 250,000 deals/s wall it must keep both busy
from start to end. This runs ``Store.ingest_file`` in this process into a fresh store (in
``--tmp``), notes when each batch's preparation (``prepare_batch``, in the submitting
thread) and each batch's transaction (``write_prepared``, in a writer thread) began and
ended, samples the process's CPU time (user + system, every thread: DuckDB's too) every
``--every`` seconds, and prints the cores used in each phase:

* open: the store opened (created), nothing read yet (``--serial``; by default the store
  is opened beside the reading of the first batch, as ``kingrec ingest`` does, and this
  phase is nil: the open is in the next);
* fill: the first batch read and prepared, no transaction beside it;
* steady: from the first transaction's start to the last preparation's end;
* drain: the last transactions, no preparation beside them;
* close: ``ingest_file`` returned, the store closed (the checkpoint that ends an ingest).

Wall seconds, CPU seconds and cores (CPU / wall) of each, then of the whole; a whole at 2.0
cores is a perfect overlap on two. ``--spans`` lists every batch's spans. The imports are
before the clock starts (``bench_ingest_ab.py`` times the command as a whole).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from compiled_only import refuse_pure_twins

from kingrec.store import Store
from kingrec.store import pipeline as pipeline_module

DEFAULT_FILE = Path("/work/bench-data/classic-100000.krec")


def cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class Timeline:
    """The spans of each batch's preparation and transaction, and CPU samples."""

    def __init__(self, every: float) -> None:
        self.t0 = time.perf_counter()
        self.spans: list[tuple[str, float, float]] = []
        self.samples: list[tuple[float, float]] = [(0.0, cpu())]
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._every = every
        self._sampler = threading.Thread(target=self._sample, daemon=True)

    def now(self) -> float:
        return time.perf_counter() - self.t0

    def _sample(self) -> None:
        while not self._stop.wait(self._every):
            self.samples.append((self.now(), cpu()))

    def start(self) -> None:
        self._sampler.start()

    def stop(self) -> None:
        self._stop.set()
        self._sampler.join()
        self.samples.append((self.now(), cpu()))

    def spanning(self, kind: str, call: Any) -> Any:
        def spanned(*args: Any, **kwargs: Any) -> Any:
            began = self.now()
            try:
                return call(*args, **kwargs)
            finally:
                with self._lock:
                    self.spans.append((kind, began, self.now()))

        return spanned

    def cpu_between(self, start: float, end: float) -> float:
        """CPU seconds used between two times (the samples' CPU, interpolated)."""

        def at(t: float) -> float:
            before = max((s for s in self.samples if s[0] <= t), default=self.samples[0])
            after = min((s for s in self.samples if s[0] >= t), default=self.samples[-1])
            if after[0] == before[0]:
                return before[1]
            share = (t - before[0]) / (after[0] - before[0])
            return before[1] + share * (after[1] - before[1])

        return at(end) - at(start)


def main() -> None:
    refuse_pure_twins()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--file", type=Path, default=DEFAULT_FILE, help="a .krec file")
    parser.add_argument("--every", type=float, default=0.05, help="seconds between samples")
    parser.add_argument("--tmp", help="the folder for the store (default: the system's)")
    parser.add_argument("--spans", action="store_true", help="list every batch's spans")
    parser.add_argument(
        "--serial",
        action="store_true",
        help="open the store first, then read (Store.open); by default it is opened beside "
        "the first batch's reading, as kingrec ingest does (Store.open_beside)",
    )
    args = parser.parse_args()
    folder = tempfile.mkdtemp(prefix="ingest-timeline-", dir=args.tmp)
    line = Timeline(args.every)
    # The pipeline's own names for the two calls, wrapped (and put back after).
    names = vars(pipeline_module)
    originals = {name: names[name] for name in ("prepare_batch", "write_prepared")}
    names["prepare_batch"] = line.spanning("prepare", originals["prepare_batch"])
    names["write_prepared"] = line.spanning("write", originals["write_prepared"])
    try:
        line.start()
        opener = Store.open if args.serial else Store.open_beside
        with opener(str(Path(folder, "s.duckdb"))) as store:
            opened = line.now()
            summary = store.ingest_file(str(args.file))
            returned = line.now()
        closed = line.now()
        line.stop()
    finally:
        names.update(originals)
        shutil.rmtree(folder, ignore_errors=True)
    prepares = sorted(s for s in line.spans if s[0] == "prepare")
    writes = sorted(s for s in line.spans if s[0] == "write")
    began = writes[0][1]  # the first transaction's start
    prepared = max(began, prepares[-1][2])  # the last preparation's end (one batch: none)
    phases = [
        ("open", 0.0, opened),
        ("fill", opened, began),
        ("steady", began, prepared),
        ("drain", prepared, returned),
        ("close", returned, closed),
        ("whole", 0.0, closed),
    ]
    deals = summary.deals
    how = "opened first" if args.serial else "opened beside the first batch's reading"
    print(
        f"{args.file}: {deals} deals in {len(prepares)} batches, the store {how}; "
        f"load average {_load()}"
    )
    print(f"  {'phase':<8} {'wall s':>8} {'CPU s':>8} {'cores':>6}   µs a deal: wall, CPU")
    for name, start, end in phases:
        wall = max(end - start, 1e-9)
        used = max(0.0, line.cpu_between(start, end))
        print(
            f"  {name:<8} {wall:8.2f} {used:8.2f} {used / wall:6.2f}   "
            f"{wall / deals * 1e6:8.2f} {used / deals * 1e6:8.2f}"
        )
    if args.spans:
        for kind, start, end in sorted(line.spans, key=lambda s: s[1]):
            print(f"    {kind:<8} {start:7.2f} -> {end:7.2f}  ({end - start:.2f} s)")


def _load() -> str:
    return f"{os.getloadavg()[0]:.1f}"


if __name__ == "__main__":
    main()
