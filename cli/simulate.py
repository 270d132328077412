"""``kingrec simulate``: bots play whole matches and the matches are written as records.

Match ``i`` of a run is ``simulate_match(rules, derive_seed(seed, i))``, exactly what
``kingrec.simulate.simulate_matches`` yields, so a run is reproducible from its preset and
seed alone. Work is cut into chunks of consecutive match indices; each chunk is simulated
and serialized on its own (in a worker process with ``--jobs``) and the chunks are written
in index order, so the output bytes do not depend on the number of jobs. Only a bounded
window of chunks is in flight at any time: memory stays flat however many matches are
asked for.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from collections import deque
from collections.abc import Generator, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from typing import BinaryIO, Literal, Protocol

import click
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeRemainingColumn,
)

from kingrec import jsonl
from kingrec.container import KrecWriter
from kingrec.rules import PRESETS
from kingrec.simulate import derive_seed, simulate_match

from .errors import Failed

__all__ = ["simulate", "simulate_chunk"]

Format = Literal["krec", "jsonl"]

# Largest number of matches one chunk holds, and chunks in flight per job.
_MAX_CHUNK = 64
_WINDOW_PER_JOB = 3


def simulate_chunk(
    preset: str, seed: int, start: int, stop: int, fmt: Format
) -> tuple[list[bytes], int]:
    """Simulate matches ``start .. stop-1`` of a run and serialize them.

    Returns one payload per match (a serialized ``Match`` for ``krec``, a UTF-8 line with
    its newline for ``jsonl``) and the number of deals they hold. Runs in worker processes,
    so it takes only plain values.
    """
    rules = PRESETS[preset]
    out: list[bytes] = []
    deals = 0
    for index in range(start, stop):
        match = simulate_match(rules, derive_seed(seed, index))
        deals += len(match.deals)
        if fmt == "krec":
            out.append(match.SerializeToString())
        else:
            out.append((jsonl.dumps_match(match) + "\n").encode("utf-8"))
    return out, deals


def _ignore_interrupts() -> None:
    """Workers leave Ctrl-C to the parent, which stops them and removes the partial output."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _bounds(count: int, jobs: int) -> list[tuple[int, int]]:
    """Consecutive index ranges covering ``0 .. count-1``."""
    size = max(1, min(_MAX_CHUNK, -(-count // (jobs * 4))))
    return [(start, min(start + size, count)) for start in range(0, count, size)]


def _chunks(
    preset: str,
    seed: int,
    count: int,
    fmt: Format,
    jobs: int,
    executor: ProcessPoolExecutor | None,
) -> Generator[tuple[list[bytes], int], None, None]:
    """The chunks of the run in index order, with at most a bounded window in flight."""
    bounds = _bounds(count, jobs)
    if executor is None:
        for start, stop in bounds:
            yield simulate_chunk(preset, seed, start, stop, fmt)
        return
    pending: deque[Future[tuple[list[bytes], int]]] = deque()
    todo = deque(bounds)

    def submit() -> None:
        start, stop = todo.popleft()
        pending.append(executor.submit(simulate_chunk, preset, seed, start, stop, fmt))

    try:
        while todo and len(pending) < _WINDOW_PER_JOB * jobs:
            submit()
        while pending:
            result = pending.popleft().result()
            if todo:
                submit()
            yield result
    finally:
        for future in pending:
            future.cancel()


class _Sink(Protocol):
    def put(self, payloads: list[bytes]) -> None: ...


class _KrecSink:
    def __init__(self, writer: KrecWriter) -> None:
        self.writer = writer

    def put(self, payloads: list[bytes]) -> None:
        for payload in payloads:
            self.writer.write(payload)


class _StreamSink:
    def __init__(self, stream: BinaryIO) -> None:
        self.stream = stream

    def put(self, payloads: list[bytes]) -> None:
        self.stream.write(b"".join(payloads))


@contextlib.contextmanager
def _open_sink(path: str) -> Iterator[_Sink]:
    """Where the records go; a file appears under ``path`` only when complete."""
    if path == "-":
        yield _StreamSink(sys.stdout.buffer)
        sys.stdout.buffer.flush()
        return
    if os.path.isdir(path):
        raise Failed(f"{path}: is a directory")
    try:
        if path.endswith(".krec"):
            writer = KrecWriter.open(path)
        else:
            tmp = path + ".tmp"
            stream = open(tmp, "wb")  # noqa: SIM115 - closed below
    except OSError as exc:
        raise Failed(f"cannot write {path}: {exc.strerror or exc}") from None
    if path.endswith(".krec"):
        with writer:  # aborts (removes the temporary file) on any error
            yield _KrecSink(writer)
        return
    try:
        with stream:
            yield _StreamSink(stream)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise


@click.command()
@click.option(
    "--preset",
    type=click.Choice(sorted(PRESETS), case_sensitive=False),
    default="classic",
    show_default=True,
    help="Ruleset the matches are played under.",
)
@click.option(
    "--matches",
    "count",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="How many matches to simulate.",
)
@click.option(
    "--seed",
    type=int,
    default=0,
    show_default=True,
    help="Seed of the run; match i is played from a seed derived from it and i.",
)
@click.option(
    "-o",
    "--output",
    required=True,
    type=click.Path(allow_dash=True, dir_okay=False),
    help="Output file: .krec for a container, anything else for JSON Lines; "
    "- writes JSON Lines to standard output.",
)
@click.option(
    "-j",
    "--jobs",
    type=click.IntRange(min=0),
    default=1,
    show_default=True,
    help="Worker processes (0: one per CPU). The output does not depend on it.",
)
@click.option(
    "--progress/--no-progress",
    default=None,
    help="Show a progress bar (default: when standard error is a terminal).",
)
def simulate(
    preset: str, count: int, seed: int, output: str, jobs: int, progress: bool | None
) -> None:
    """Simulate matches played by bots and write them as records to OUTPUT.

    The bots choose contracts, trumps and cards; every match is complete and valid under
    the preset's rules. Runs are reproducible: the same preset, seed and number of matches
    give byte-identical output whatever --jobs is, and match i of a run carries its own
    seed, so it can be replayed alone. The output is written to a temporary file and moved
    into place only when complete.

    Exit status: 0 done, 2 bad usage or the output could not be written.
    """
    preset = preset.lower()
    fmt: Format = "krec" if output.endswith(".krec") else "jsonl"
    jobs = jobs or os.cpu_count() or 1
    jobs = min(jobs, count)
    err_console = Console(stderr=True)
    show_progress = err_console.is_terminal if progress is None else progress
    bar = Progress(
        TextColumn("simulating"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("matches"),
        TimeRemainingColumn(),
        console=err_console,
        transient=True,
        disable=not show_progress,
    )
    began = time.perf_counter()
    deals = 0
    done = 0
    try:
        with contextlib.ExitStack() as stack:
            sink = stack.enter_context(_open_sink(output))
            executor = None
            if jobs > 1:
                executor = stack.enter_context(
                    ProcessPoolExecutor(jobs, initializer=_ignore_interrupts)
                )
            chunks = _chunks(preset, seed, count, fmt, jobs, executor)
            stack.callback(chunks.close)  # cancel what is still queued on failure
            with bar:
                task = bar.add_task("simulate", total=count)
                for payloads, chunk_deals in chunks:
                    sink.put(payloads)
                    done += len(payloads)
                    deals += chunk_deals
                    bar.update(task, completed=done)
    except BrokenPipeError:
        # The reader of standard output went away: stop quietly, like other filters.
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)
    except OSError as exc:
        raise Failed(f"cannot write {output}: {exc.strerror or exc}") from None
    seconds = time.perf_counter() - began
    rate = deals / seconds if seconds > 0 else 0.0
    click.echo(
        f"simulated {done} matches ({deals} deals) in {seconds:.2f} s, {rate:.0f} deals/s",
        err=True,
    )
