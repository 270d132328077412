"""The pipelined ingest: a batch judged and built while the batches before it are written.

``kingrec ingest`` (``Store.ingest_file``) and the server's Upload gateway both store through
an ``IngestPipeline``: ``submit`` prepares a batch (the calling thread judges it while
``BUILDERS`` threads, off the GIL, build its Arrow tables, a share of its records each) and
hands it to one of ``WRITERS`` threads, each writing a transaction on a connection of its
own: DuckDB lets go of the GIL while it appends, and while one transaction waits on the
disk at its commit the next one appends. ``queues`` tells where the threads waited.

Transactions commit in the order their batches were submitted, and a batch commits only once
every batch before it has: a batch is prepared against the ones still in flight (their
records count as stored for duplicates and reused ids, their keys are taken), so when one
fails, those prepared behind it are rolled back too (``StoreWriteAbortedError``). The store then
holds a prefix of the batches, each whole; a batch's future is done only once its
transaction is committed, so nothing is acknowledged that a crash could lose.
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING

import duckdb

from .. import _twins
from ..errors import StoreWriteAbortedError
from .ingest import Batch, Prepared, new_builder, prepare_batch, write_prepared

if TYPE_CHECKING:
    from .store import Store

__all__ = ["BUILDERS", "WRITERS", "IngestPipeline", "Queues"]

WRITERS = 2  # transactions in flight at once
# Threads building a batch's columns at once, a share of its records each, off the GIL. Two
# were measured side by side with one (issue 17, a machine at load 10-12): the judged batch
# waited half as long for its build (7.8-8.8 µs a deal, not 16-18) and an ingest in one
# process took 0.90-0.96x the wall time, but `kingrec ingest` of the 2 M-deal file took more
# system time (3.35 s, not 2.78 for main's) and its peak RSS rose from ~815 to 944 MiB,
# close to the 1 GB bound. One, until a quiet machine says two pay (bench_floor.py).
BUILDERS = 1


@dataclass
class Queues:
    """Where a pipeline's time went, in wall seconds summed over its batches: is DuckDB
    waiting on the batches' preparation, or the preparation on DuckDB? (bench_floor.py)"""

    preparing: float = 0.0  # submit: judging and building a batch (prepare_batch)
    builder: float = 0.0  # of which the judged batch waited for its build to end
    writer_slot: float = 0.0  # submit: a batch prepared, waiting for a writer to be free
    writing: float = 0.0  # the writers: appending and committing, summed over them
    commit_order: float = 0.0  # the writers: rows in, waiting for the one before to commit
    batches: int = 0


class IngestPipeline:
    """Batches into ``store``, pipelined; use as a context manager (leaving it waits for
    every write, and raises the first failure if nothing else is raised).

    With ``stop_on_failure`` (what a file's ingest wants) ``submit`` raises the first
    failure it sees instead of queuing more; without it (a server, whose requests are each
    their own) a failure is its batch's future's, and later batches go on.
    """

    def __init__(
        self, store: Store, twins: _twins.Twins | None = None, *, stop_on_failure: bool = True
    ) -> None:
        self._store = store
        self._stop = stop_on_failure
        self._twins = twins
        self._next_key = store._key()
        self._builder = new_builder(twins)  # a batch built again without the rejected
        self._parts = [new_builder(twins) for _ in range(BUILDERS)]
        self._lookups = store.con.cursor()  # prepare_batch's reads, beside the writes
        self._cursors: queue.SimpleQueue[duckdb.DuckDBPyConnection] = queue.SimpleQueue()
        self._all = [store.con.cursor() for _ in range(WRITERS)]
        for cursor in self._all:
            self._cursors.put(cursor)
        self._writer = ThreadPoolExecutor(WRITERS, thread_name_prefix="kingrec-ingest-writer")
        self._helper = ThreadPoolExecutor(BUILDERS, thread_name_prefix="kingrec-ingest-builder")
        self._writing: deque[tuple[Future[None], Prepared]] = deque()
        # Whether the last batch stored every record it held: then the next is bet to hold
        # only new ones too (``prepare_batch``'s ``all_new``), till one does not (a rerun).
        self._all_new = True
        self._closed = False
        self._timing = threading.Lock()
        self.queues = Queues()
        """Where the time went so far (wall seconds)."""
        self.failure: BaseException | None = None
        """The first failed write seen so far (by ``submit`` or ``close``), else None."""

    def submit(self, batch: Batch) -> tuple[Prepared, Future[None]]:
        """Prepare ``batch`` now and queue its transaction: its verdicts (final once the
        future is done without an exception) and the future of its commit. Waits while
        ``WRITERS`` transactions are in flight."""
        if self._closed:
            raise RuntimeError("the ingest pipeline is closed")
        # Those done are out of the count: committed, the lookups see their records; failed,
        # none of their records is stored. Only those still in flight are pending.
        self._take_done()
        pending = [prepared for _, prepared in self._writing]
        started = time.perf_counter()
        prepared = prepare_batch(
            self._lookups,
            batch,
            self._next_key,
            twins=self._twins,
            pending=pending,
            builder=self._builder,
            helper=self._helper,
            parts=self._parts,
            all_new=self._all_new,
        )
        self._all_new = prepared.stored == len(batch.payloads)
        self._next_key += prepared.stored
        prepared_at = time.perf_counter()
        if len(self._writing) == WRITERS:
            done, _ = self._writing.popleft()
            # Its failure is its own future's to report; ``failure`` keeps the first.
            self.failure = self.failure or _outcome(done)
        self._take_done()
        self.queues.preparing += prepared_at - started
        self.queues.builder += prepared.builder_wait
        self.queues.writer_slot += time.perf_counter() - prepared_at
        self.queues.batches += 1
        if self._stop and self.failure is not None:
            raise self.failure
        before = self._writing[-1][0] if self._writing else None
        written = self._writer.submit(self._write, prepared, before)
        self._writing.append((written, prepared))
        return prepared, written

    def _take_done(self) -> None:
        for entry in [entry for entry in self._writing if entry[0].done()]:
            self._writing.remove(entry)
            self.failure = self.failure or _outcome(entry[0])

    def _write(self, prepared: Prepared, before: Future[None] | None) -> None:
        cursor = self._cursors.get()
        started = time.perf_counter()
        ordered = [0.0]

        def in_order() -> None:
            waited = time.perf_counter()
            try:
                _after(before, self._store.path)
            finally:
                ordered[0] = time.perf_counter() - waited

        try:
            write_prepared(cursor, prepared, before=in_order)
        finally:
            prepared.release()
            self._cursors.put(cursor)
            with self._timing:
                self.queues.writing += time.perf_counter() - started - ordered[0]
                self.queues.commit_order += ordered[0]

    def close(self) -> None:
        """Wait for every write, then let go of the connections (the first failure, if any,
        is raised)."""
        if self._closed:
            return
        self._closed = True
        try:
            while self._writing:
                done, _ = self._writing.popleft()
                self.failure = self.failure or _outcome(done)
        finally:
            self._writer.shutdown(wait=True)
            self._helper.shutdown(wait=True)
            for cursor in [self._lookups, *self._all]:
                cursor.close()
            # Keys were taken ahead of failed batches: the store reads its next key anew.
            self._store._next_key = None
        if self.failure is not None:
            raise self.failure

    def __enter__(self) -> IngestPipeline:
        return self

    def __exit__(self, kind: type[BaseException] | None, *exc: object) -> None:
        if kind is None:
            self.close()
            return
        with contextlib.suppress(Exception):  # the exception already on its way says more
            self.close()


def _outcome(done: Future[None]) -> BaseException | None:
    try:
        done.result()
    except BaseException as exc:
        return exc
    return None


def _after(before: Future[None] | None, path: str) -> None:
    """Return once the transaction before has committed; raise if it failed."""
    if before is None:
        return
    exc = _outcome(before)
    if exc is not None:
        raise StoreWriteAbortedError(
            f"{path}: not written, because the transaction before it failed: {exc}"
        ) from exc
