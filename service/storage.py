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

Reads (queries, listings, a stored record) run on connections of their own
(``Store.reader``) in a small thread pool, so they see committed data and never wait for
the writer, and the event loop never waits for DuckDB.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Generic, TypeVar

import duckdb

from kingrec.errors import StoreError
from kingrec.findings import Location
from kingrec.store import Store
from kingrec.store.ingest import Batch, Prepared, RecordVerdict
from kingrec.store.pipeline import IngestPipeline
from kingrec.store.store import BATCH_MATCHES

__all__ = ["QueryLimits", "StoreGateway"]

T = TypeVar("T")

READERS = 4  # threads for queries and reads; DuckDB runs each query on its own threads too


@dataclass(frozen=True)
class QueryLimits:
    """What one Query may take: its time, and how much of its result comes back."""

    timeout_s: float = 30.0
    max_rows: int = 100_000
    max_bytes: int = 64 << 20


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

    def __init__(self, store: Store, limits: QueryLimits) -> None:
        self.store = store
        self.path = store.path
        self.limits = limits
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
    def open(cls, path: str, limits: QueryLimits | None = None) -> StoreGateway:
        """The store at ``path`` (created when new), opened for this process alone."""
        return cls(Store.open(path), limits or QueryLimits())

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

        return await asyncio.get_running_loop().run_in_executor(self._readers, run)

    def steps(self, items: Callable[[Store], Iterator[T]]) -> _Steps[T]:
        """An iterator made in a reader thread and stepped there, one item per ``await``."""
        return _Steps(self, items)

    # -- stopping -------------------------------------------------------------------------

    def close(self) -> None:
        """Commit what is queued, then close the store (DuckDB checkpoints the file)."""
        self._jobs.put(None)
        self._writer.join()
        self._readers.shutdown(wait=True, cancel_futures=False)
        self._root.close()
        self.store.close()


class _Steps(Generic[T]):
    """Steps a blocking iterator (a query's batches) in the gateway's reader threads.

    ``close`` waits, in a reader thread, for a step in progress before closing the iterator
    (and its connection): a client that goes away mid-query never closes a generator that
    another thread is running.
    """

    def __init__(self, gateway: StoreGateway, items: Callable[[Store], Iterator[T]]) -> None:
        self._gateway = gateway
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
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._gateway._readers, self._next)

    def _close(self) -> None:
        with self._lock:
            close = getattr(self._iterator, "close", None)
            if close is not None:
                close()
            if self._reader is not None:
                self._reader.close()

    def close(self) -> None:
        """Close the iterator and its connection once no step runs (does not wait)."""
        self._gateway._readers.submit(self._close)


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
