"""Rows of a query for people and programs: a table, CSV or JSON Lines.

``print_rows`` takes the column names and types and the rows as Arrow record batches, as
both a local store and a server hand them out, so every command that prints query results
prints them alike.
"""

from __future__ import annotations

import base64
import csv
from collections.abc import Iterable
from typing import Any

import pyarrow as pa
from rich.table import Table
from rich.text import Text

from kingrec.store.query import json_rows

from .terminal import Terminal

__all__ = ["FORMATS", "print_rows"]

FORMATS = ("table", "csv", "json")


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"  # as SQL and JSON write them
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    return str(value)


def _tuples(batch: pa.RecordBatch) -> Iterable[tuple[Any, ...]]:
    """The rows of a batch by position (two columns may share a name)."""
    return zip(*(column.to_pylist() for column in batch.columns), strict=True)


def print_rows(
    terminal: Terminal,
    columns: list[tuple[str, str]],
    batches: Iterable[pa.RecordBatch],
    form: str,
) -> int:
    """Print the rows in ``form`` (one of ``FORMATS``); the number of rows printed."""
    rows = 0
    if form == "json":
        for batch in batches:
            for line in json_rows(batch):
                terminal.stdout.write(line + "\n")
            rows += batch.num_rows
        return rows
    if form == "csv":
        writer = csv.writer(terminal.stdout, lineterminator="\n")
        writer.writerow([name for name, _ in columns])
        for batch in batches:
            writer.writerows([_cell(v) for v in row] for row in _tuples(batch))
            rows += batch.num_rows
        return rows
    table = Table(*(name for name, _ in columns), show_lines=False)
    for batch in batches:
        for row in _tuples(batch):
            table.add_row(*(Text(_cell(v)) for v in row))
        rows += batch.num_rows
    terminal.report(table)
    return rows
