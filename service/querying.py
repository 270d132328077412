"""A Query: the store's read-only SQL (``Store.query``), its rows as response messages.

The store refuses anything but one query on a connection that reaches no files, network,
extensions or settings, and cuts the result at its time, row and byte limits; the client's
limits and deadline can only lower the server's. Rows go out as they come, each Arrow batch
cut so that no message passes ``CHUNK_BYTES``: as an Arrow IPC stream (schema and one batch)
or as JSON Lines. The first message names the columns and their types; the last says
whether the result was cut.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Iterator

import pyarrow as pa

from kingrec.store import Store
from kingrec.store.query import json_rows
from kingrec.v1 import service_pb2 as svc

from .storage import QueryLimits, StoreGateway

__all__ = ["CHUNK_BYTES", "query_responses", "query_stream"]

CHUNK_BYTES = 1 << 20  # rows per message, by size: well under gRPC's 4 MiB


def _limits(request: svc.QueryRequest, server: QueryLimits, remaining: float | None) -> QueryLimits:
    timeout = server.timeout_s if remaining is None else min(server.timeout_s, remaining)
    rows = min(request.max_rows, server.max_rows) if request.max_rows else server.max_rows
    size = min(request.max_bytes, server.max_bytes) if request.max_bytes else server.max_bytes
    return QueryLimits(max(timeout, 0.001), rows, size)


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


def _messages(
    batch: pa.RecordBatch, form: svc.QueryRequest.Format.ValueType
) -> Iterator[svc.QueryResponse]:
    if form == svc.QueryRequest.FORMAT_JSON:
        lines: list[str] = []
        size = 0
        for line in json_rows(batch):
            if lines and size + len(line) > CHUNK_BYTES:
                yield svc.QueryResponse(json="\n".join(lines) + "\n")
                lines, size = [], 0
            lines.append(line)
            size += len(line) + 1
        if lines:
            yield svc.QueryResponse(json="\n".join(lines) + "\n")
        return
    for piece in _pieces(batch):
        yield svc.QueryResponse(arrow=_arrow(piece))


def query_responses(
    store: Store, request: svc.QueryRequest, limits: QueryLimits
) -> Iterator[svc.QueryResponse]:
    """The responses of one query on ``store`` (blocking: run it in a reader thread)."""
    result = store.query(
        request.sql,
        timeout_s=limits.timeout_s,
        max_rows=limits.max_rows,
        max_bytes=limits.max_bytes,
    )
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
    """``query_responses`` stepped in the gateway's reader threads; ``remaining`` is the
    client's deadline, in seconds from now."""
    limits = _limits(request, gateway.limits, remaining)
    steps = gateway.steps(lambda store: query_responses(store, request, limits))
    try:
        while True:
            more, message = await steps.next()
            if not more or message is None:
                return
            yield message
    finally:
        steps.close()
