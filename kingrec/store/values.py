"""A query's values for people and for programs: as text (CSV, tables) and as JSON holds
them. One place, so that ``kingrec stats --format json`` and the HTTP API's stats rows are
the same values."""

from __future__ import annotations

import datetime as dt
import decimal
import math
from collections.abc import Iterator, Sequence
from typing import Any, TypeAlias

import pyarrow as pa

__all__ = ["Rows", "json_value", "rows_of", "value_text"]

# A batch of rows: an Arrow record batch, or row tuples in the order of the column names.
Rows: TypeAlias = "pa.RecordBatch | Sequence[Sequence[Any]]"


def rows_of(batch: Rows) -> Iterator[Sequence[Any]]:
    """The rows of one batch as sequences of Python values."""
    if isinstance(batch, pa.RecordBatch):
        columns = [column.to_pylist() for column in batch.columns]
        yield from zip(*columns, strict=True)
    else:
        yield from batch


def value_text(value: Any) -> str:
    """A value as CSV and a table write it (NULL aside)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, bytes | bytearray | memoryview):
        return "\\x" + bytes(value).hex()
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat(sep=" ") if isinstance(value, dt.datetime) else value.isoformat()
    if isinstance(value, list | tuple):
        return "[" + ", ".join("NULL" if v is None else value_text(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {value_text(v)}" for k, v in value.items()) + "}"
    return str(value)


def json_value(value: Any) -> Any:
    """A value as JSON holds it."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).hex()
    if isinstance(value, list | tuple):
        return [json_value(v) for v in value]
    if isinstance(value, dict):
        return {str(k): json_value(v) for k, v in value.items()}
    return value_text(value)
