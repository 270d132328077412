"""Simulation runs: many matches, on several cores, written as one record file.

Match ``i`` of a run is ``simulate_match(rules, derive_seed(seed, i))``, exactly what
``kingrec.simulate.simulate_matches`` yields, so a run is reproducible from its preset and
seed alone. Work is cut into chunks of consecutive match indices; each chunk is simulated
and serialized on its own (in a worker process when ``jobs > 1``) and the chunks are written
in index order, so the output bytes do not depend on the number of jobs. Only a bounded
window of chunks is in flight at any time: memory stays flat however many matches are asked
for.

Worker processes die with the run: they are terminated when it fails or is interrupted, and
they end themselves if the parent process disappears (``kill -9``).
"""

from __future__ import annotations

import functools
import os
import time
from collections import deque
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import TYPE_CHECKING, BinaryIO

from .container import KrecWriter
from .formats import Format, format_for
from .rules import PRESETS
from .safefile import atomic_output
from .simulate import RecordSimulator, derive_seed, simulate_match

if TYPE_CHECKING:
    import multiprocessing.pool

__all__ = [
    "Format",
    "SimulationSummary",
    "cpu_seconds",
    "simulate_chunk",
    "simulate_to_file",
    "simulate_to_stream",
]

# Largest number of matches one chunk holds, and chunks in flight per job.
_MAX_CHUNK = 64
_WINDOW_PER_JOB = 3


def cpu_seconds() -> float:
    """CPU seconds (user and system) this process has used since it began, its interpreter's
    start-up included, with those of its child processes that have ended (a run's workers
    once its pool is joined)."""
    times = os.times()
    return time.process_time() + times.children_user + times.children_system


@dataclass(frozen=True)
class SimulationSummary:
    """A run: its matches and deals, its wall seconds and its CPU seconds (this process's
    and its workers', ``cpu_seconds`` across the run), neither counting what the process
    did before the run began."""

    matches: int
    deals: int
    seconds: float
    cpu: float = 0.0

    @property
    def deals_per_second(self) -> float:
        return self.deals / self.seconds if self.seconds > 0 else 0.0


def simulate_chunk(
    preset: str, seed: int, start: int, stop: int, fmt: Format
) -> tuple[list[bytes], int]:
    """Simulate matches ``start .. stop-1`` of a run and serialize them.

    Returns one payload per match (a serialized ``Match`` for ``krec``, a UTF-8 line with
    its newline for ``jsonl``) and the number of deals they hold. Runs in worker processes,
    so it takes only plain values.
    """
    rules = PRESETS[preset]
    if fmt == "krec":  # the records' bytes straight from the simulator: no message per deal
        out = _records(preset).records([derive_seed(seed, i) for i in range(start, stop)])
        return out, rules.deal_count * len(out)  # a plain match plays every deal
    from . import jsonl  # only here: a .krec run does without it

    out = []
    deals = 0
    for index in range(start, stop):
        match = simulate_match(rules, derive_seed(seed, index))
        deals += len(match.deals)
        out.append((jsonl.dumps_match(match) + "\n").encode("utf-8"))
    return out, deals


@functools.cache
def _records(preset: str) -> RecordSimulator:
    """The record simulator of a preset, made once per process (not once per chunk)."""
    return RecordSimulator(PRESETS[preset])


def _bounds(count: int, jobs: int) -> list[tuple[int, int]]:
    """Consecutive index ranges covering ``0 .. count-1``."""
    size = max(1, min(_MAX_CHUNK, -(-count // (jobs * 4))))
    return [(start, min(start + size, count)) for start in range(0, count, size)]


# -- workers --------------------------------------------------------------------------------


def _chunks(
    preset: str, seed: int, count: int, fmt: Format, jobs: int
) -> Generator[tuple[list[bytes], int], None, None]:
    """The chunks of the run in index order, with at most a bounded window in flight."""
    bounds = _bounds(count, jobs)
    if jobs <= 1:
        for start, stop in bounds:
            yield simulate_chunk(preset, seed, start, stop, fmt)
        return
    from .workers import run_pool  # only here: a run on one core does without it

    with run_pool(jobs) as pool:  # terminated on any failure or interrupt
        pending: deque[multiprocessing.pool.AsyncResult[tuple[list[bytes], int]]] = deque()
        todo = deque(bounds)
        while todo or pending:
            while todo and len(pending) < _WINDOW_PER_JOB * jobs:
                start, stop = todo.popleft()
                pending.append(pool.apply_async(simulate_chunk, (preset, seed, start, stop, fmt)))
            yield pending.popleft().get()


# -- runs -----------------------------------------------------------------------------------


def _run(
    put: Callable[[list[bytes]], object],
    preset: str,
    count: int,
    seed: int,
    fmt: Format,
    jobs: int,
    progress: Callable[[int], object] | None,
) -> SimulationSummary:
    began, began_cpu = time.perf_counter(), cpu_seconds()
    done = deals = 0
    chunks = _chunks(preset, seed, count, fmt, max(1, min(jobs, count)))
    try:
        for payloads, chunk_deals in chunks:
            put(payloads)
            done += len(payloads)
            deals += chunk_deals
            if progress is not None:
                progress(done)
    finally:
        chunks.close()  # stops the workers when the run ends early
    # After the pool is joined (the generator closed): its workers' CPU is counted.
    return SimulationSummary(done, deals, time.perf_counter() - began, cpu_seconds() - began_cpu)


def simulate_to_file(
    path: str,
    preset: str,
    count: int,
    seed: int,
    *,
    fmt: Format | None = None,
    jobs: int = 1,
    progress: Callable[[int], object] | None = None,
) -> SimulationSummary:
    """Simulate ``count`` matches into ``path`` (.krec, else JSON Lines, unless ``fmt``).

    The file appears only when complete (``kingrec.safefile``); ``progress(done)`` is called
    after each chunk. ``jobs`` worker processes (1: this process).
    """
    fmt = fmt or format_for(path)
    with atomic_output(path) as out:
        if fmt == "krec":
            writer = KrecWriter(out)
            return _run(writer.write_all, preset, count, seed, fmt, jobs, progress)
        return _run(lambda ps: out.write(b"".join(ps)), preset, count, seed, fmt, jobs, progress)


def simulate_to_stream(
    stream: BinaryIO,
    preset: str,
    count: int,
    seed: int,
    *,
    fmt: Format = "jsonl",
    jobs: int = 1,
    progress: Callable[[int], object] | None = None,
) -> SimulationSummary:
    """Simulate ``count`` matches onto an open binary stream (standard output, a socket)."""
    if fmt == "krec":
        writer = KrecWriter(stream)
        summary = _run(writer.write_all, preset, count, seed, fmt, jobs, progress)
    else:
        summary = _run(
            lambda ps: stream.write(b"".join(ps)), preset, count, seed, fmt, jobs, progress
        )
    stream.flush()
    return summary
