"""The server's store: one DuckDB file the server owns, one writer thread, readers beside it.

DuckDB lets one process write a file, and one connection holds one transaction at a time, so
every write (uploads from every stream, finished live matches) goes through ONE thread that
owns the store (``kingrec.store.Store``). Requests waiting for it are taken together, up to
``BATCH_MATCHES`` records of one source, into one transaction (group commit: many small
messages cost what one large one does), and fed to the same pipelined ingest as ``kingrec
ingest`` (``kingrec.store.pipeline``): a transaction is judged and built while the ones
before it are written. Each request's future is resolved with its verdicts only once its
transaction is committed, so nothing is acknowledged that a crash could lose; a failed
transaction fails the requests in it and those prepared behind it (nothing of them stored).

Reads run on connections of their own (``Store.reader``), so they see committed data and
never wait for the writer, and the event loop never waits for DuckDB. Listings and stored
records (``read``) have a pool of their own; Queries (``query_steps``) have another,
``QueryLimits.threads`` wide, so slow queries can never take the threads ListMatches,
GetMatch and Replay need. At most ``QueryLimits.in_flight`` queries are admitted at once
(running or waiting for a thread); one more is refused at once (``QueryBusyError``,
RESOURCE_EXHAUSTED) rather than queued without end. A query's time limit counts from its
arrival (``clock``, injectable), so waiting for a thread is part of it. ``stop_queries``
interrupts every admitted query (the server's stop: nothing holds it past its grace).
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Generic, TypeVar

import duckdb

from kingrec.errors import KingrecError, StoreError
from kingrec.findings import Location
from kingrec.store import Store
from kingrec.store.ingest import Batch, Prepared, RecordVerdict
from kingrec.store.pipeline import IngestPipeline
from kingrec.store.query import QueryStop
from kingrec.store.store import BATCH_MATCHES

from .errors import QueryBusyError, ShuttingDownError

__all__ = ["QueryLimits", "StoreGateway"]

T = TypeVar("T")

READERS = 4  # threads for listings and stored records (short reads)


@dataclass(frozen=True)
class QueryLimits:
    """What one Query may take: its time (from its arrival), how much of its result comes
    back, how large one row may be; and how many queries the server runs at once
    (``threads``) and admits at once (``in_flight``, running or waiting)."""

    timeout_s: float = 30.0
    max_rows: int = 100_000
    max_bytes: int = 64 << 20
    # A row goes out in one message, under gRPC's 4 MiB: 1 MiB leaves room for its
    # encoding (JSON escapes, Arrow's framing). Checked inside DuckDB (kingrec.store.query).
    max_row_bytes: int = 1 << 20
    threads: int = 2  # DuckDB runs each query on its own threads too
    in_flight: int = 8


@dataclass
class _Job:
    """Records of one request, waiting for the writer."""

    source: str
    payloads: Sequence[bytes]
    locations: Sequence[Location]
    done: asyncio.Future[list[RecordVerdict]]
    loop: asyncio.AbstractEventLoop


class StoreGateway:
    """The store as the servicers use it: ``ingest`` (writes, through the writer thread) and
    ``read`` (a function of a reading ``Store``, in a reader thread)."""

    def __init__(
        self, store: Store, limits: QueryLimits, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.store = store
        self.path = store.path
        self.limits = limits
        self.clock = clock  # what a query's time limit is counted on (tests inject one)
        self._queries = ThreadPoolExecutor(limits.threads, thread_name_prefix="kingrec-query")
        self._admitted: set[QueryStop] = set()
        self._admit_lock = threading.Lock()
        self._stopping: KingrecError | None = None
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        # Made here, before any reader: the writer thread is the only one that submits to it.
        self._pipeline = store.pipeline(stop_on_failure=False)
        self._writer = threading.Thread(target=self._write_loop, name="kingrec-store-writer")
        self._readers = ThreadPoolExecutor(READERS, thread_name_prefix="kingrec-store-reader")
        # Readers are made from a connection that runs nothing, never from the writer's.
        self._root = store.reader()
        self._root_lock = threading.Lock()
        self._writer.start()

    @classmethod
    def open(
        cls,
        path: str,
        limits: QueryLimits | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> StoreGateway:
        """The store at ``path`` (created when new), opened for this process alone."""
        return cls(Store.open(path), limits or QueryLimits(), clock)

    # -- writes ---------------------------------------------------------------------------

    def ingest(
        self, payloads: Sequence[bytes], source: str, locations: Sequence[Location]
    ) -> asyncio.Future[list[RecordVerdict]]:
        """Queue serialized matches for storing; the future is their verdicts, in order, once
        their transaction is committed (``StoreError`` if it could not be)."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[list[RecordVerdict]] = loop.create_future()
        # A stream that went away no longer awaits its answer: no "never retrieved" noise.
        done.add_done_callback(_retrieved)
        if not payloads:
            done.set_result([])
        else:
            self._jobs.put(_Job(source, payloads, locations, done, loop))
        return done

    def _write_loop(self) -> None:
        try:
            self._gather(self._pipeline)
        finally:
            # Waits for every commit; each failure went to its requests already.
            with contextlib.suppress(Exception):
                self._pipeline.close()

    def _gather(self, pipeline: IngestPipeline) -> None:
        held: _Job | None = None  # a job taken that belongs to the next transaction
        while True:
            job = held if held is not None else self._jobs.get()
            held = None
            if job is None:
                return
            jobs = [job]
            size = len(job.payloads)
            while size < BATCH_MATCHES:  # whatever else waits, of the same source
                try:
                    more = self._jobs.get_nowait()
                except queue.Empty:
                    break
                if more is None:  # stop, once this transaction is committed
                    self._submit(pipeline, jobs)
                    return
                if more.source != job.source:
                    held = more
                    break
                jobs.append(more)
                size += len(more.payloads)
            self._submit(pipeline, jobs)

    def _submit(self, pipeline: IngestPipeline, jobs: list[_Job]) -> None:
        """Jobs into one transaction of the pipeline (prepared now, while the transactions
        before it are written); each job's future is settled once it is committed."""
        batch = Batch(
            jobs[0].source,
            [p for job in jobs for p in job.payloads],
            [loc for job in jobs for loc in job.locations],
        )
        try:
            prepared, written = pipeline.submit(batch)
        except duckdb.Error as exc:  # its lookups of stored records failed
            _fail_all(jobs, self._store_error(exc))
            return
        except BaseException as exc:  # a bug: every request in the transaction hears of it
            _fail_all(jobs, exc)
            if not isinstance(exc, Exception):
                raise
            return
        written.add_done_callback(lambda done: self._settle(jobs, prepared, done))

    def _store_error(self, exc: duckdb.Error) -> StoreError:
        return StoreError(f"{self.path}: the store could not be written: {exc}")

    def _settle(self, jobs: list[_Job], prepared: Prepared, written: Future[None]) -> None:
        exc = written.exception()
        if isinstance(exc, duckdb.Error):
            exc = self._store_error(exc)
        if exc is not None:
            _fail_all(jobs, exc)
            return
        start = 0
        for job in jobs:
            end = start + len(job.payloads)
            job.loop.call_soon_threadsafe(_settle, job.done, prepared.verdicts[start:end])
            start = end

    # -- reads ----------------------------------------------------------------------------

    def reader(self) -> Store:
        """A reading ``Store`` on a connection of its own (close it after use)."""
        with self._root_lock:
            return self._root.reader()

    async def read(self, work: Callable[[Store], T]) -> T:
        """``work(reader)`` in a reader thread, on a connection of its own."""

        def run() -> T:
            reader = self.reader()
            try:
                return work(reader)
            finally:
                reader.close()

        return await _run_in(self._readers, run)

    def steps(self, items: Callable[[Store], Iterator[T]]) -> _Steps[T]:
        """An iterator made in a reader thread and stepped there, one item per ``await``."""
        return _Steps(self, items, self._readers)

    # -- queries --------------------------------------------------------------------------

    def admit(self) -> QueryStop:
        """A place for one more query, and what stops it (``release`` it once done); a
        ``QueryBusyError`` when ``in_flight`` queries hold every place."""
        stop = QueryStop()
        with self._admit_lock:
            if self._stopping is not None:
                raise ShuttingDownError(str(self._stopping))
            if len(self._admitted) >= self.limits.in_flight:
                raise QueryBusyError(
                    f"the server runs as many queries as it may ({self.limits.in_flight}); "
                    "try again shortly"
                )
            self._admitted.add(stop)
        return stop

    async def query(self, work: Callable[[Store, QueryStop], T]) -> T:
        """``work(reader, stop)`` as a query: admitted like one (``QueryBusyError`` past
        ``in_flight``), in the queries' own threads, interrupted by ``stop_queries``. For
        the questions the server asks for its callers (the HTTP API's stats), so that they,
        too, can never take the threads ListMatches, GetMatch and Replay need."""
        stop = self.admit()

        def run() -> T:
            reader = self.reader()
            try:
                return work(reader, stop)
            finally:
                reader.close()

        try:
            future = _submit(self._queries, run)
        except ShuttingDownError:
            self.release(stop)
            raise
        # The place is given back when the query is over, not when its caller is: a caller
        # that goes away (an HTTP client that disconnects) cannot leave a query running
        # outside the bound.
        future.add_done_callback(lambda _: self.release(stop))
        try:
            return await asyncio.wrap_future(future)
        except asyncio.CancelledError:
            stop.stop(KingrecError("the query's caller went away"))  # interrupted, no one hears
            future.cancel()  # and if it still waits for a thread, it never runs
            raise

    def release(self, stop: QueryStop) -> None:
        with self._admit_lock:
            self._admitted.discard(stop)

    @property
    def queries_in_flight(self) -> int:
        with self._admit_lock:
            return len(self._admitted)

    def query_steps(self, items: Callable[[Store], Iterator[T]]) -> _Steps[T]:
        """``steps``, in the queries' own threads."""
        return _Steps(self, items, self._queries)

    def stop_queries(self, reason: KingrecError) -> None:
        """Interrupt every admitted query with ``reason``, and admit no more."""
        with self._admit_lock:
            self._stopping = reason
            admitted = list(self._admitted)
        for stop in admitted:
            stop.stop(reason)

    # -- stopping -------------------------------------------------------------------------

    def close(self) -> None:
        """Commit what is queued, then close the store (DuckDB checkpoints the file)."""
        self.stop_queries(ShuttingDownError("the server is shutting down"))
        self._jobs.put(None)
        self._writer.join()
        self._queries.shutdown(wait=True, cancel_futures=True)
        self._readers.shutdown(wait=True, cancel_futures=False)
        self._root.close()
        self.store.close()


class _Steps(Generic[T]):
    """Steps a blocking iterator (a query's batches) in the gateway's reader threads.

    ``close`` waits, in a reader thread, for a step in progress before closing the iterator
    (and its connection): a client that goes away mid-query never closes a generator that
    another thread is running.
    """

    def __init__(
        self, gateway: StoreGateway, items: Callable[[Store], Iterator[T]], pool: Executor
    ) -> None:
        self._gateway = gateway
        self._pool = pool
        self._items = items
        self._reader: Store | None = None
        self._iterator: Iterator[T] | None = None
        self._lock = threading.Lock()

    def _next(self) -> tuple[bool, T | None]:
        with self._lock:
            if self._iterator is None:
                self._reader = self._gateway.reader()
                self._iterator = self._items(self._reader)
            for item in self._iterator:
                return True, item
            return False, None

    async def next(self) -> tuple[bool, T | None]:
        """(True, the next item) or (False, None) at the end."""
        return await _run_in(self._pool, self._next)

    def _close(self) -> None:
        with self._lock:
            close = getattr(self._iterator, "close", None)
            if close is not None:
                close()
            if self._reader is not None:
                self._reader.close()

    def close(self) -> None:
        """Close the iterator and its connection once no step runs (does not wait)."""
        try:
            self._pool.submit(self._close)
        except RuntimeError:  # the pool was shut down, so no step runs: close it here
            self._close()


async def _run_in(pool: Executor, work: Callable[[], T]) -> T:
    """``work()`` in ``pool``; ``ShuttingDownError`` once the pool takes no more work."""
    return await asyncio.wrap_future(_submit(pool, work))


def _submit(pool: Executor, work: Callable[[], T]) -> Future[T]:
    """``work`` handed to ``pool``; ``ShuttingDownError`` once the pool takes no more work."""
    try:
        return pool.submit(work)
    except RuntimeError:  # "cannot schedule new futures after shutdown"
        raise ShuttingDownError("the server is shutting down") from None


def _fail_all(jobs: list[_Job], exc: BaseException) -> None:
    for job in jobs:
        job.loop.call_soon_threadsafe(_fail, job.done, exc)


def _retrieved(done: asyncio.Future[list[RecordVerdict]]) -> None:
    if not done.cancelled():
        done.exception()


def _settle(done: asyncio.Future[list[RecordVerdict]], verdicts: list[RecordVerdict]) -> None:
    if not done.done():
        done.set_result(verdicts)


def _fail(done: asyncio.Future[list[RecordVerdict]], exc: BaseException) -> None:
    if not done.done():
        done.set_exception(exc)
