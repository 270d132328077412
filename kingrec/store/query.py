"""Read-only SQL over a store: one statement that only reads, within time, row and size limits.

The connection a query runs on cannot reach files, the network, extensions or settings (the
store opens every connection that way, ``kingrec.store.db``). A query gets two walls more,
each enough alone against a write:

1. before it runs, its parse tree must only read the store's tables and views
   (``kingrec.store.readonly``: allow-lists of query nodes, relations and functions), so
   ``WITH d AS (DELETE …) SELECT …``, which DuckDB calls a SELECT, is refused unrun —
   a writing statement must not even take the write locks a concurrent upload would
   then conflict with;
2. it runs in a ``READ ONLY`` transaction that is always rolled back, where DuckDB itself
   refuses any write that got past the first wall.

Then a time limit (the query is interrupted; ``QueryStop`` lets a caller interrupt it too,
for its own reasons), a row and a byte limit on what comes back (the result is cut and
says so), and optionally a size limit on each row, checked inside DuckDB before the row
is handed over (``max_row_bytes``: a row too large is refused, never materialised here).
Anything else is a ``QueryRefusedError``, ``QueryLimitError`` or ``QueryError`` naming the
problem. ``json_value`` (``kingrec.store.values``) is THE mapping of SQL values to JSON,
for every JSON this project writes of query rows (the service's FORMAT_JSON, ``kingrec
query --format json``, the HTTP API's stats).
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field
from typing import Any

import duckdb
import pyarrow as pa

from ..errors import KingrecError, QueryError, QueryLimitError, QueryRefusedError, QueryRowError
from .readonly import check_read_only, store_relations
from .values import json_value

__all__ = ["QueryResult", "QueryStop", "json_rows", "json_value", "run_query"]

BATCH_ROWS = 10_000
_ROW_MARK = "kingrec-row-too-large:"  # what the size check inside DuckDB raises, and its size

# DuckDB types whose values have a fixed size (at most 16 bytes): no size check needed.
_FIXED = frozenset(
    {
        "boolean", "tinyint", "smallint", "integer", "bigint", "hugeint", "utinyint",
        "usmallint", "uinteger", "ubigint", "uhugeint", "float", "double", "decimal", "date",
        "time", "time with time zone", "timestamp", "timestamp_s", "timestamp_ms",
        "timestamp_ns", "timestamp with time zone", "uuid", "interval", "enum", "null",
    }
)  # fmt: skip


@dataclass
class QueryResult:
    """Column names and DuckDB types, and the rows as Arrow record batches (consume once).

    The query is over once its rows are read to their end, or at ``close`` (``with`` closes
    it too): its DuckDB result and its cursor closed, then and there, whether or not any
    row was read."""

    columns: list[tuple[str, str]]
    _batches: Generator[pa.RecordBatch] = field(repr=False)
    truncated: bool = False  # set once the rows were cut at a limit
    _end: Callable[[], None] = field(default=lambda: None, repr=False)

    def batches(self) -> Iterator[pa.RecordBatch]:
        yield from self._batches

    def close(self) -> None:
        """End the query now: no more rows (again: nothing more happens)."""
        self._batches.close()  # rows under way: ended through the generator's own finally
        self._end()  # none read yet: a generator never started has no finally to run

    def __enter__(self) -> QueryResult:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class QueryStop:
    """Stops a query from another thread, with the error it is to end with.

    Made before the query runs (so a stop that comes first is kept: the query then never
    starts); the first reason given wins. DuckDB forgets an interrupt that lands between
    two of the query's statements (the next one clears it), so the query is interrupted
    again and again until it is over.
    """

    REPEAT_S = 0.05  # how often an interrupt is repeated until the query is over
    REPEATS = 1200  # at most a minute of it

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cursor: duckdb.DuckDBPyConnection | None = None
        self._over = threading.Event()
        self.reason: KingrecError | None = None

    def stop(self, reason: KingrecError) -> None:
        with self._lock:
            if self.reason is None:
                self.reason = reason
            running = self._cursor is not None
        if running:
            threading.Thread(target=self._interrupt, name="kingrec-query-stop", daemon=True).start()

    def _interrupt(self) -> None:
        for _ in range(self.REPEATS):
            with self._lock:
                cursor = self._cursor
            if cursor is None:
                return
            with contextlib.suppress(duckdb.Error):  # closed meanwhile: the query is over
                cursor.interrupt()
            if self._over.wait(self.REPEAT_S):
                return

    def _attach(self, cursor: duckdb.DuckDBPyConnection | None) -> None:
        with self._lock:
            self._cursor = cursor
            reason = self.reason
        if cursor is None:
            self._over.set()
        elif reason is not None:
            raise reason

    def _raise(self) -> None:
        if self.reason is not None:
            raise self.reason


def _one_query(con: duckdb.DuckDBPyConnection, sql: str) -> str:
    """The one statement's text (no trailing semicolon)."""
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
    text = str(statements[0].query).rstrip()
    while text.endswith(";"):
        text = text[:-1].rstrip()
    return text


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
    max_row_bytes: int | None = None,
    stop: QueryStop | None = None,
    timeout_error: KingrecError | None = None,
) -> QueryResult:
    """Run one read-only query on ``con`` (a cursor of its own is used) within the limits.

    ``timeout_error`` is what a query past ``timeout_s`` ends with (by default a
    ``QueryLimitError`` naming the limit); ``stop`` lets another thread end it sooner.
    """
    text = _one_query(con, sql)
    stop = stop or QueryStop()
    late = timeout_error or QueryLimitError(f"the query ran past its time limit of {timeout_s:g} s")
    cursor = con.cursor()
    timer = threading.Timer(timeout_s, stop.stop, (late,))
    timer.daemon = True  # a result never read must not keep the process alive
    try:
        stop._attach(cursor)
        timer.start()
        try:
            # The second wall first: whatever runs on this cursor runs read-only.
            cursor.execute("BEGIN TRANSACTION READ ONLY").fetchall()
            database = str(cursor.execute("SELECT current_database()").fetchall()[0][0])
            relations = store_relations(cursor)
            check_read_only(cursor, text, relations, database)
            relation = cursor.sql(text)
            columns = [
                (str(n), str(t)) for n, t in zip(relation.columns, relation.types, strict=True)
            ]
            if max_row_bytes is not None and columns:
                capped = _capped(text, relation.types, columns, max_row_bytes)
                check_read_only(cursor, capped, relations, database)
                relation = cursor.sql(capped)
            reader = relation.to_arrow_reader(BATCH_ROWS)
        except duckdb.Error as exc:
            raise _error(exc, stop, max_row_bytes) from None
    except BaseException:
        _end(timer, cursor, stop)
        raise
    ended = threading.Event()

    def end() -> None:  # once, from whichever comes first: the rows' end or close()
        if not ended.is_set():
            ended.set()
            _end(timer, cursor, stop, reader)

    result = QueryResult(columns, _nothing(), _end=end)
    result._batches = _limited(reader, end, stop, result, max_rows, max_bytes, max_row_bytes)
    return result


def _nothing() -> Generator[pa.RecordBatch]:
    yield from ()


def _error(exc: duckdb.Error, stop: QueryStop, max_row_bytes: int | None) -> KingrecError:
    """What a DuckDB error in a query means to its caller."""
    if stop.reason is not None and (
        isinstance(exc, duckdb.InterruptException) or "interrupt" in str(exc).lower()
    ):
        return stop.reason
    text = str(exc)
    if _ROW_MARK in text and max_row_bytes is not None:
        size = text.split(_ROW_MARK, 1)[1].split()[0].strip("'\".,")
        return QueryRowError(
            f"a row of the result holds {size} bytes, over the limit of {max_row_bytes:,} "
            "bytes for one row: select fewer or shorter values (left(s, 1000), length(s))"
        )
    if isinstance(exc, duckdb.PermissionException):
        return QueryRefusedError(f"not allowed: {_first_line(exc)}")
    if isinstance(exc, duckdb.TransactionException) and "read-only" in text:
        return QueryRefusedError("a query may only read: the store is read-only to queries")
    return QueryError(_first_line(exc))


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _capped(text: str, types: list[Any], columns: list[tuple[str, str]], max_row_bytes: int) -> str:
    """``text`` with each row's size checked inside DuckDB: over ``max_row_bytes``, the
    query raises before the row leaves DuckDB."""
    inner = [f"kingrec_c{i}" for i in range(len(columns))]
    sizes = []
    for name, kind in zip(inner, types, strict=True):
        family = str(getattr(kind, "id", kind)).lower()
        if family in _FIXED:
            continue
        if family == "varchar":
            sizes.append(f"coalesce(strlen({name}), 0)")
        elif family in ("blob", "bit"):
            sizes.append(f"coalesce(octet_length({name}), 0)")
        else:  # lists, structs, maps, unions: their text is as long as their values
            sizes.append(f"coalesce(strlen(CAST({name} AS VARCHAR)), 0)")
    picked = ", ".join(f"{i} AS {_quoted(n)}" for i, (n, _) in zip(inner, columns, strict=True))
    # The statement on lines of its own: a trailing -- comment cannot swallow the ")".
    body = f"SELECT {picked} FROM (\n{text}\n) AS kingrec_q({', '.join(inner)})"
    if not sizes:
        return body
    size = " + ".join(sizes)
    return (
        f"{body} WHERE CASE WHEN ({size}) > {int(max_row_bytes)} "
        f"THEN error('{_ROW_MARK}' || ({size})::VARCHAR) ELSE true END"
    )


def _end(
    timer: threading.Timer,
    cursor: duckdb.DuckDBPyConnection,
    stop: QueryStop,
    reader: pa.RecordBatchReader | None = None,
) -> None:
    """The query is over: its result closed, no interrupt any more, its transaction rolled
    back, its cursor closed.

    The result first, and here: left to the garbage collector, the DuckDB result of an
    interrupted query can outlive its connection (the error raised from ``_limited`` keeps
    its frame, and the reader in it, alive in a cycle through ``QueryStop.reason``), and
    DuckDB's exit hook has then been seen waiting for ever on that result's cancelled
    tasks (``Result::EndIfRunning``)."""
    timer.cancel()
    if reader is not None:
        with contextlib.suppress(duckdb.Error, pa.ArrowException, OSError):
            reader.close()
    stop._attach(None)
    with contextlib.suppress(duckdb.Error):
        cursor.execute("ROLLBACK").fetchall()
    cursor.close()


def _limited(
    reader: pa.RecordBatchReader,
    end: Callable[[], None],
    stop: QueryStop,
    result: QueryResult,
    max_rows: int,
    max_bytes: int,
    max_row_bytes: int | None,
) -> Generator[pa.RecordBatch]:
    rows = size = 0
    try:
        while True:
            stop._raise()  # stopped between two batches: no more of it
            try:
                batch = reader.read_next_batch()
            except StopIteration:
                return
            except duckdb.Error as exc:
                raise _error(exc, stop, max_row_bytes) from None
            except (pa.ArrowException, OSError) as exc:  # DuckDB's errors, through Arrow's reader
                if stop.reason is not None and "interrupt" in str(exc).lower():
                    raise stop.reason from None
                if _ROW_MARK in str(exc):
                    inside = duckdb.InvalidInputException(str(exc))
                    raise _error(inside, stop, max_row_bytes) from None
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
        end()


def json_rows(batch: pa.RecordBatch) -> Iterator[str]:
    """Each row of ``batch`` as one JSON object (its values by ``json_value``)."""
    for row in batch.to_pylist():
        yield json.dumps({k: json_value(v) for k, v in row.items()}, ensure_ascii=False)
