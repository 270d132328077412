"""Read-only SQL over a store: one statement, a SELECT, under a time limit and a row limit.

The connection a query runs on cannot reach files, the network, extensions or settings (the
store opens every connection that way, ``kingrec.store.db``); this module adds the rest:
exactly one statement, and only a query (``SELECT``, ``WITH``, ``VALUES``…); a time limit
(the query is interrupted); a row and a byte limit on what comes back (the result is cut and
says so). Anything else is a ``QueryRefusedError`` or ``QueryError`` naming the problem.
"""

from __future__ import annotations

import base64
import contextlib
import datetime as dt
import decimal
import json
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import duckdb
import pyarrow as pa

from ..errors import QueryError, QueryLimitError, QueryRefusedError

__all__ = ["QueryResult", "json_rows", "run_query"]

BATCH_ROWS = 10_000


@dataclass
class QueryResult:
    """Column names and DuckDB types, and the rows as Arrow record batches (consume once)."""

    columns: list[tuple[str, str]]
    _batches: Iterator[pa.RecordBatch] = field(repr=False)
    truncated: bool = False  # set once the rows were cut at a limit

    def batches(self) -> Iterator[pa.RecordBatch]:
        yield from self._batches


def _one_query(con: duckdb.DuckDBPyConnection, sql: str) -> None:
    try:
        statements = con.extract_statements(sql)
    except duckdb.Error as exc:
        raise QueryError(f"the SQL does not parse: {_first_line(exc)}") from None
    if len(statements) != 1:
        raise QueryRefusedError(f"one SQL statement at a time, please (got {len(statements)})")
    kind = statements[0].type
    if kind != duckdb.StatementType.SELECT:
        raise QueryRefusedError(
            f"only queries are allowed (SELECT, WITH … SELECT), not {kind.name.replace('_', ' ')}"
        )


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def run_query(
    con: duckdb.DuckDBPyConnection,
    sql: str,
    *,
    max_rows: int = 100_000,
    max_bytes: int = 64 << 20,
    timeout_s: float = 30.0,
) -> QueryResult:
    """Run one read-only query on ``con`` (a cursor of its own is used) within the limits."""
    _one_query(con, sql)
    cursor = con.cursor()
    timer = threading.Timer(timeout_s, _interrupt, (cursor,))
    timer.daemon = True  # a result never read must not keep the process alive
    timer.start()
    try:
        try:
            relation = cursor.sql(sql)
            columns = [
                (str(n), str(t)) for n, t in zip(relation.columns, relation.types, strict=True)
            ]
            reader = relation.to_arrow_reader(BATCH_ROWS)
        except duckdb.InterruptException:
            raise QueryLimitError(f"the query ran past its time limit of {timeout_s:g} s") from None
        except duckdb.PermissionException as exc:
            raise QueryRefusedError(f"not allowed: {_first_line(exc)}") from None
        except duckdb.Error as exc:
            raise QueryError(_first_line(exc)) from None
    except BaseException:
        timer.cancel()
        cursor.close()
        raise
    result = QueryResult(columns, iter(()))
    result._batches = _limited(reader, cursor, timer, result, max_rows, max_bytes, timeout_s)
    return result


def _interrupt(cursor: duckdb.DuckDBPyConnection) -> None:
    with contextlib.suppress(duckdb.Error):  # closed meanwhile: the query is over
        cursor.interrupt()


def _limited(
    reader: pa.RecordBatchReader,
    cursor: duckdb.DuckDBPyConnection,
    timer: threading.Timer,
    result: QueryResult,
    max_rows: int,
    max_bytes: int,
    timeout_s: float,
) -> Iterator[pa.RecordBatch]:
    rows = size = 0
    try:
        while True:
            try:
                batch = reader.read_next_batch()
            except StopIteration:
                return
            except (duckdb.InterruptException, pa.ArrowException) as exc:
                if "interrupt" in str(exc).lower() or isinstance(exc, duckdb.InterruptException):
                    raise QueryLimitError(
                        f"the query ran past its time limit of {timeout_s:g} s"
                    ) from None
                raise QueryError(_first_line(exc)) from None
            if rows + batch.num_rows > max_rows:
                batch = batch.slice(0, max_rows - rows)
                result.truncated = True
            size += batch.nbytes
            if size > max_bytes:
                result.truncated = True
                return
            rows += batch.num_rows
            if batch.num_rows:
                yield batch
            if result.truncated:
                return
    finally:
        timer.cancel()
        cursor.close()


def _jsonable(value: Any) -> Any:
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    if isinstance(value, decimal.Decimal | uuid.UUID):
        return str(value)
    raise TypeError(f"{type(value).__name__} has no JSON form")


def json_rows(batch: pa.RecordBatch) -> Iterator[str]:
    """Each row of ``batch`` as one JSON object (bytes in base64, times in ISO 8601)."""
    for row in batch.to_pylist():
        yield json.dumps(row, ensure_ascii=False, default=_jsonable)
