"""A Query: the store's read-only SQL (``Store.query``), its rows as response messages.

The store refuses anything but one statement that only reads the store's tables and views
(its parse tree judged by allow-lists, then run in a READ ONLY transaction that is rolled
back: ``kingrec.store.query``), on a connection that reaches no files, network, extensions
or settings, and cuts the result at its time, row and byte limits; the client's limits and
deadline can only lower the server's. The time limit counts from the query's arrival: a
query admitted (``StoreGateway.admit``) but still waiting for a query thread when its time
is up ends without running. A client's deadline that comes first ends it as
DEADLINE_EXCEEDED (``QueryDeadlineError``), whichever side notices first. A row larger
than ``QueryLimits.max_row_bytes`` is refused inside DuckDB before it is read
(``QueryRowError``), and no message may pass ``MESSAGE_BYTES`` whatever its encoding.

Rows go out as they come, each Arrow batch cut so that no message passes ``CHUNK_BYTES``:
as an Arrow IPC stream (schema and one batch) or as JSON Lines. The first message names
the columns and their types; the last says whether the result was cut.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable, Iterator
from dataclasses import dataclass, replace

import pyarrow as pa

from kingrec.errors import KingrecError, QueryLimitError, QueryRowError
from kingrec.store import Store
from kingrec.store.query import QueryStop, json_rows
from kingrec.v1 import service_pb2 as svc

from .errors import QueryDeadlineError
from .storage import QueryLimits, StoreGateway

__all__ = ["CHUNK_BYTES", "MESSAGE_BYTES", "Deadline", "query_responses", "query_stream"]

CHUNK_BYTES = 1 << 20  # rows per message, by size: well under gRPC's 4 MiB
MESSAGE_BYTES = (4 << 20) - (16 << 10)  # server.MAX_RESPONSE_BYTES, less the envelope's room


@dataclass(frozen=True)
class Deadline:
    """When a query must be over, on the gateway's clock: the server's limit, counted from
    the query's arrival, and the client's deadline when it has one."""

    clock: Callable[[], float]
    server_at: float
    timeout_s: float
    client_at: float | None = None

    def left(self) -> tuple[float, QueryLimitError]:
        """Seconds left from now, and the error the query ends with when they run out."""
        now = self.clock()
        if self.client_at is not None and self.client_at < self.server_at:
            return self.client_at - now, QueryDeadlineError(
                "the query was still running at the client's deadline"
            )
        return self.server_at - now, QueryLimitError(
            f"the query ran past its time limit of {self.timeout_s:g} s "
            "(counted from its arrival, waiting included)"
        )


def _limits(request: svc.QueryRequest, server: QueryLimits) -> QueryLimits:
    rows = min(request.max_rows, server.max_rows) if request.max_rows else server.max_rows
    size = min(request.max_bytes, server.max_bytes) if request.max_bytes else server.max_bytes
    return replace(server, max_rows=rows, max_bytes=size)


def _arrow(batch: pa.RecordBatch) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, batch.schema) as writer:
        writer.write_batch(batch)
    return bytes(sink.getvalue().to_pybytes())


def _pieces(batch: pa.RecordBatch) -> Iterator[pa.RecordBatch]:
    """``batch`` in slices of about ``CHUNK_BYTES``."""
    if batch.num_rows <= 1 or batch.nbytes <= CHUNK_BYTES:
        yield batch
        return
    rows = max(1, batch.num_rows * CHUNK_BYTES // batch.nbytes)
    for start in range(0, batch.num_rows, rows):
        yield batch.slice(start, rows)


def _fits(message: svc.QueryResponse) -> svc.QueryResponse:
    """``message``, unless one row's encoding (JSON's escapes) took it past a message."""
    if message.ByteSize() > MESSAGE_BYTES:
        raise QueryRowError(
            f"a row of the result takes more than {MESSAGE_BYTES:,} bytes in one message: "
            "select fewer or shorter values (left(s, 1000), length(s))"
        )
    return message


def _messages(
    batch: pa.RecordBatch, form: svc.QueryRequest.Format.ValueType
) -> Iterator[svc.QueryResponse]:
    if form == svc.QueryRequest.FORMAT_JSON:
        lines: list[str] = []
        size = 0
        for line in json_rows(batch):
            if lines and size + len(line) > CHUNK_BYTES:
                yield _fits(svc.QueryResponse(json="\n".join(lines) + "\n"))
                lines, size = [], 0
            lines.append(line)
            size += len(line) + 1
        if lines:
            yield _fits(svc.QueryResponse(json="\n".join(lines) + "\n"))
        return
    for piece in _pieces(batch):
        yield _fits(svc.QueryResponse(arrow=_arrow(piece)))


def query_responses(
    store: Store,
    request: svc.QueryRequest,
    limits: QueryLimits,
    deadline: Deadline,
    stop: QueryStop,
) -> Iterator[svc.QueryResponse]:
    """The responses of one query on ``store`` (blocking: run it in a query thread)."""
    left, late = deadline.left()
    if left <= 0:  # its time ran out while it waited for a thread: it never runs
        raise late
    result = store.query(
        request.sql,
        timeout_s=left,
        max_rows=limits.max_rows,
        max_bytes=limits.max_bytes,
        max_row_bytes=limits.max_row_bytes,
        stop=stop,
        timeout_error=late,
    )
    with result:  # ended here, its rows read or not (the call may end first)
        columns = [svc.Column(name=name, type=kind) for name, kind in result.columns]
        for batch in result.batches():
            for message in _messages(batch, request.format):
                if columns:
                    message.columns.extend(columns)
                    columns = []
                yield message
    yield svc.QueryResponse(columns=columns, truncated=result.truncated)


async def query_stream(
    gateway: StoreGateway, request: svc.QueryRequest, remaining: float | None
) -> AsyncGenerator[svc.QueryResponse]:
    """``query_responses`` stepped in the gateway's query threads; ``remaining`` is the
    client's deadline, in seconds from now. Its time counts from now, its arrival."""
    arrival = gateway.clock()
    limits = _limits(request, gateway.limits)
    deadline = Deadline(
        gateway.clock,
        arrival + limits.timeout_s,
        limits.timeout_s,
        None if remaining is None else arrival + remaining,
    )
    stop = gateway.admit()
    try:
        steps = gateway.query_steps(
            lambda store: query_responses(store, request, limits, deadline, stop)
        )
        try:
            while True:
                more, message = await steps.next()
                if not more or message is None:
                    return
                yield message
        finally:
            # Over, or the client went away: a step still running is interrupted (with a
            # reason no one hears: the call is over).
            stop.stop(KingrecError("the query's call ended"))
            steps.close()
    finally:
        gateway.release(stop)
