"""Where the time of validate and ingest goes, layer by layer, per deal (issue 17).

    python bench/bench_breakdown.py                    # bench/out/classic-20000.krec
    python bench/bench_breakdown.py --file big.krec    # any .krec file of yours

Each layer is timed on its own, in this process, one after the other on the same frames,
by CPU time (user + system of every thread of the process, ``resource.getrusage``: DuckDB
appends on threads of its own) and by wall time; on a shared machine the CPU figures are
the ones to compare. A layer's figure is what it adds to the one beneath it:

* validate: reading the frames (file, checksums, framing), the compiled checker on them
  (``check_run``: replay every deal, key every record), both at once where the frames lie
  (``check_frames`` over blocks of the file, as ``kingrec validate`` on one job reads a
  regular file), the Python around them (``validate_records``), and ``kingrec validate``
  end to end in a process of its own, and its start-up (the command on a 1-match file);
* ingest: reading, judging (the same checker), the sha256 identity of each record, the
  column builder (records to Arrow), the rest of a batch's tables (``prepare_batch`` as the
  pipeline calls it: the builder in a thread of its own, off the GIL, while the judge
  runs, so its wall time is under its CPU time), and DuckDB's append and commit of a
  batch, one transaction at a time on one connection (and each statement of it: the INSERT
  into each table, the COMMIT), the checkpoint when the store is closed; then ``kingrec
  ingest`` end to end (pipelined: a batch is prepared while the two before it are
  written).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from compiled_only import refuse_pure_twins

from kingrec import _twins
from kingrec.container import FILE_HEADER_SIZE
from kingrec.fastcheck import PIECE_FRAMES, checker_of
from kingrec.findings import Location
from kingrec.judges import _HERE_BLOCK
from kingrec.limits import MAX_FRAME_BYTES
from kingrec.records import open_records
from kingrec.simrun import simulate_to_file
from kingrec.store import Store
from kingrec.store.ingest import WRITES, Batch, _build, _judge, new_builder, prepare_batch
from kingrec.store.store import BATCH_MATCHES
from kingrec.validation import validate_records

OUT = Path(__file__).resolve().parent / "out"
KINGREC = Path(sys.executable).parent / "kingrec"
T = TypeVar("T")


def cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def timed(work: Callable[[], T]) -> tuple[T, float, float]:
    """``work()``, its wall and CPU seconds."""
    wall, used = time.perf_counter(), cpu()
    out = work()
    return out, time.perf_counter() - wall, cpu() - used


def child(command: list[str]) -> tuple[float, float, int]:
    """A command in a process of its own: wall, CPU seconds, peak RSS (KiB)."""
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    assert os.waitstatus_to_exitcode(status) in (0, 1), command
    return time.perf_counter() - started, usage.ru_utime + usage.ru_stime, usage.ru_maxrss


def runs(path: Path) -> list[Any]:
    with open_records(str(path)) as records:
        return list(records.raw_frame_runs())


def batches(path: Path, size: int) -> Iterator[Batch]:
    batch = Batch(path.name)
    for run in runs(path):
        for i, payload in enumerate(run.payloads):
            batch.payloads.append(payload)
            batch.locations.append(Location(path.name, run.first + i, run.offsets[i]))
            if len(batch.payloads) == size:
                yield batch
                batch = Batch(path.name)
    if batch.payloads:
        yield batch


def write_steps(
    con: Any,
    prepared: Any,
    steps: dict[str, tuple[float, float]],
    after: Callable[[str], None] | None = None,
) -> None:
    """``write_prepared``'s transaction, each statement timed into ``steps`` (wall, CPU);
    ``after(name)`` is called once each statement has run (untimed)."""
    con.execute("BEGIN")
    for name, table in prepared.tables.items():
        con.register(name, table)
    for name, statement in [*WRITES.items(), ("COMMIT", "COMMIT")]:
        _, wall, used = timed(partial(con.execute, statement))
        steps[name] = (steps[name][0] + wall, steps[name][1] + used)
        if after is not None:
            after(name)
    for name in prepared.tables:
        con.unregister(name)
    prepared.release()


def ingest_rows(path: Path, rows: list[tuple[str, float, float]]) -> None:
    """The layers of ingest, appended to ``rows``."""
    groups = list(batches(path, BATCH_MATCHES))
    _, wall, used = timed(lambda: [_judge(b, _twins.ACTIVE) for b in groups])
    rows.append(("ingest: judge (the same checker, batch by batch)", wall, used))
    _, wall, used = timed(
        lambda: [[hashlib.sha256(p).digest() for p in b.payloads] for b in groups]
    )
    rows.append(("ingest: sha256 identity of each record", wall, used))
    builder = new_builder()

    def build() -> None:
        for b in groups:
            keep = list(range(len(b.payloads)))
            _build(b, keep, {i: i + 1 for i in keep}, builder)

    _, wall, used = timed(build)
    rows.append(("ingest: column builder (records to Arrow)", wall, used))
    with (
        tempfile.TemporaryDirectory() as folder,
        Store.open(str(Path(folder, "b.duckdb"))) as s,
        ThreadPoolExecutor(1) as helper,
    ):
        lookups, writer = s.con.cursor(), s.con.cursor()
        key = 1
        prepare = write = (0.0, 0.0)
        steps = dict.fromkeys([*WRITES, "COMMIT"], (0.0, 0.0))
        for b in groups:  # each batch written once prepared: one batch in memory at a time
            p, w, u = timed(partial(prepare_batch, lookups, b, key, builder=builder, helper=helper))
            prepare = (prepare[0] + w, prepare[1] + u)
            key += p.stored
            _, w, u = timed(partial(write_steps, writer, p, steps))
            write = (write[0] + w, write[1] + u)
        rows.append(("ingest: prepare_batch whole (judge ‖ build, keys, tables)", *prepare))
        rows.append(("ingest: DuckDB append + commit, one batch at a time", *write))
        rows += [(f"  of which INSERT INTO {name}", *steps[name]) for name in WRITES]
        rows.append(("  of which COMMIT", *steps["COMMIT"]))
        lookups.close()
        writer.close()
        _, wall, used = timed(lambda: s.con.execute("CHECKPOINT"))
        rows.append(("ingest: DuckDB checkpoint at close (the log into the file)", wall, used))


def main() -> None:
    refuse_pure_twins()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--file", type=Path, help="a .krec file (default: simulated once)")
    parser.add_argument("--matches", type=int, default=20_000, help="matches to simulate")
    parser.add_argument("--validate-only", action="store_true", help="only the layers of validate")
    args = parser.parse_args()
    path = args.file or OUT / f"classic-{args.matches}.krec"
    if not path.exists():
        OUT.mkdir(parents=True, exist_ok=True)
        print(f"simulating {args.matches} classic matches into {path}…", flush=True)
        simulate_to_file(str(path), "classic", args.matches, 2026, fmt="krec", jobs=1)
    checker = checker_of(_twins.ACTIVE)
    assert checker is not None, "the breakdown needs the compiled twins: pip install -e ."

    # The commands first, while this process is small: a child's peak RSS counts what it
    # shares with its parent until it has started the command.
    ends: list[tuple[str, float, float]] = []
    wall, used, rss = child([str(KINGREC), "validate", "--no-progress", str(path)])
    ends.append((f"kingrec validate, a process ({rss / 1024:.0f} MiB peak)", wall, used))
    with tempfile.TemporaryDirectory() as folder:
        one = Path(folder, "one.krec")  # start-up: the command on a file of one match
        simulate_to_file(str(one), "classic", 1, 2026, fmt="krec", jobs=1)
        command = [str(KINGREC), "validate", "--no-progress", str(one)]
        starts = sorted((child(command) for _ in range(5)), key=lambda run: run[1])
    wall, used, _ = starts[2]  # the median by CPU time
    ends.append(("kingrec validate start-up (a 1-match file, median of 5)", wall, used))
    if not args.validate_only:
        with tempfile.TemporaryDirectory() as folder:
            db = str(Path(folder, "i.duckdb"))
            command = [str(KINGREC), "ingest", "--no-progress", "--db", db, str(path)]
            wall, used, rss = child(command)
        ends.append((f"kingrec ingest, a process ({rss / 1024:.0f} MiB peak)", wall, used))

    rows: list[tuple[str, float, float]] = []
    read, wall, used = timed(lambda: runs(path))
    matches = sum(len(r.payloads) for r in read)
    rows.append(("read frames (file, checksums, framing)", wall, used))
    checked, wall, used = timed(lambda: [checker.check_run(r.payloads) for r in read])
    deals = sum(c[1] for c in checked)
    rows.append(("compiled checker (check_run: replay, content keys)", wall, used))

    def in_place() -> int:
        """The frames judged where they lie, a block at a time (``judges.validate_here``'s
        loop without the Python around it): read, checksums, checker, content keys."""
        deals, block, pos = 0, bytearray(_HERE_BLOCK), FILE_HEADER_SIZE
        with open(path, "rb") as f:
            while got := os.preadv(f.fileno(), [block], pos):
                stop, _, _, found, _, _, _ = checker.check_frames(
                    block, 0, got, MAX_FRAME_BYTES, PIECE_FRAMES
                )
                if stop == 0:
                    break
                deals, pos = deals + found, pos + stop
        return deals

    _, wall, used = timed(in_place)
    rows.append(("frames judged where they lie (check_frames, block by block)", wall, used))

    def validate() -> int:
        with open_records(str(path)) as records:
            return sum(1 for _ in validate_records(records, count_clean=True))

    _, wall, used = timed(validate)
    rows.append(("validate_records end to end (read + check + Python)", wall, used))

    if not args.validate_only:
        ingest_rows(path, rows)

    rows += ends
    print(f"{path}: {matches} matches, {deals} deals; load average {os.getloadavg()[0]:.1f}")
    print(f"  {'layer':<62} {'µs/deal CPU':>11} {'µs/deal wall':>12} {'M deals/CPU s':>13}")
    for label, wall, used in rows:
        print(
            f"  {label:<62} {used / deals * 1e6:>11.2f} {wall / deals * 1e6:>12.2f} "
            f"{deals / used / 1e6 if used else 0:>13.2f}"
        )


if __name__ == "__main__":
    main()
