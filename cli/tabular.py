"""Rows for people and for programs: a query's columns and row batches as a table, CSV or JSON.

One module for every command that prints rows (``query``, ``stats``, and ``query --server``
later): the rows come as batches — Arrow record batches, as the store streams them, or
lists of row tuples — and are written as they come for ``csv`` and ``json``; a ``table`` is
laid out once all its rows are in (its columns must be measured), so it is for results a
person reads. Values are written the same way in every format: NULL as an empty CSV field,
JSON ``null`` or a dim ``NULL`` in a table; lists as ``[1, 2]``; BLOBs in hex (``\\x00ff``,
in JSON a plain hex string); times in ISO 8601. A table can carry a bar chart of one numeric
column (``kingrec stats``).
"""

from __future__ import annotations

import csv
import decimal
import math
from collections.abc import Iterable, Sequence
from typing import Any, Literal

from rich import box
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from kingrec.store.values import Rows, json_value, rows_of, value_text

from .streams import can_encode, is_terminal
from .terminal import Terminal

__all__ = ["FORMATS", "Format", "Rows", "bar_text", "rows_of", "write_rows"]

Format = Literal["table", "csv", "json"]
FORMATS: tuple[Format, ...] = ("table", "csv", "json")

BAR_WIDTH = 24  # characters for the longest bar: the same chart on any terminal and in a pipe
_EIGHTHS = " ▏▎▍▌▋▊▉█"


def write_rows(
    term: Terminal,
    fmt: Format,
    columns: Sequence[str],
    batches: Iterable[Rows],
    *,
    bar: str | None = None,
    title: str | None = None,
    tag: dict[str, Any] | None = None,
) -> int:
    """Write the rows in ``fmt`` on standard output; the number of rows written.

    ``bar`` names a numeric column to chart beside a table (ignored in csv and json);
    ``tag`` holds fields that lead each JSON object (``{"stat": "forced"}``).
    """
    if fmt == "csv":
        return _csv(term, columns, batches)
    if fmt == "json":
        return _json(term, columns, batches, tag or {})
    rows = [row for batch in batches for row in rows_of(batch)]
    _print_table(term, _table(term, columns, rows, bar, title))
    return len(rows)


def _print_table(term: Terminal, table: Table) -> None:
    """The table line by line, without the spaces rich pads its last column with."""
    console = term.out
    options = console.options
    if not is_terminal(term.stdout):  # as wide as it needs: no terminal to fold it to
        options = options.update(width=1 << 16)
        options = options.update(width=Measurement.get(console, options, table).maximum)
    for line in console.render_lines(table, options, pad=False):
        text = Text()
        for segment in line:
            if not segment.control:
                text.append(segment.text, segment.style)
        text.rstrip()
        console.print(text, crop=False, overflow="ignore", no_wrap=True)


# -- the formats --------------------------------------------------------------------------------


class _Lines:
    """The file object csv writes to: each line straight to standard output."""

    def __init__(self, term: Terminal) -> None:
        self.term = term

    def write(self, text: str) -> int:
        self.term.stdout.write(text)
        return len(text)


def _csv(term: Terminal, columns: Sequence[str], batches: Iterable[Rows]) -> int:
    writer = csv.writer(_Lines(term), lineterminator="\n")
    writer.writerow(columns)
    count = 0
    for batch in batches:
        for row in rows_of(batch):
            writer.writerow(["" if v is None else value_text(v) for v in row])
            count += 1
    return count


def _json(
    term: Terminal, columns: Sequence[str], batches: Iterable[Rows], tag: dict[str, Any]
) -> int:
    count = 0
    for batch in batches:
        for row in rows_of(batch):
            term.json(
                {**tag, **{name: json_value(v) for name, v in zip(columns, row, strict=True)}}
            )
            count += 1
    return count


def bar_text(value: float, top: float, *, blocks: bool = True) -> Text:
    """A bar ``BAR_WIDTH`` characters long at ``top``, in eighths of a character (or ``#``
    where the stream cannot write blocks); red for a negative value."""
    if not top or value is None or not math.isfinite(value):
        return Text("")
    eighths = round(abs(value) / top * BAR_WIDTH * 8)
    if blocks:
        drawn = "█" * (eighths // 8) + (_EIGHTHS[eighths % 8] if eighths % 8 else "")
    else:
        drawn = "#" * round(eighths / 8)
    return Text(drawn, style="red" if value < 0 else "cyan")


def _table(
    term: Terminal,
    columns: Sequence[str],
    rows: list[Sequence[Any]],
    bar: str | None,
    title: str | None,
) -> Table:
    lines = can_encode(term.stdout, "─│┼")
    table = Table(
        title=title,
        title_justify="left",
        box=box.SIMPLE_HEAD if lines else box.ASCII2,
        show_edge=False,
        pad_edge=False,
        highlight=False,
    )
    numeric = [
        bool(rows) and all(isinstance(r[i], int | float | decimal.Decimal) or r[i] is None
                           for r in rows) and not all(r[i] is None for r in rows)
        for i in range(len(columns))
    ]  # fmt: skip
    for name, is_number in zip(columns, numeric, strict=True):
        table.add_column(name, justify="right" if is_number else "left", overflow="fold")
    where = list(columns).index(bar) if bar is not None and bar in columns else None
    top = 0.0
    if where is not None:
        top = max((abs(float(r[where])) for r in rows if r[where] is not None), default=0.0)
        table.add_column("", justify="left", no_wrap=True)
    blocks = can_encode(term.stdout, _EIGHTHS)
    for row in rows:
        cells: list[Text | str] = [
            Text("NULL", style="dim") if v is None else term.sentence(value_text(v)) for v in row
        ]
        if where is not None:
            value = row[where]
            cells.append(bar_text(float(value), top, blocks=blocks) if value is not None else "")
        table.add_row(*cells)
    return table
