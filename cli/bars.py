"""The columns of the commands' progress bars, made only when a bar is drawn.

Each function here is a ``terminal.Columns``: ``Terminal.progress`` calls it when it draws
the bar, so rich.progress (tens of milliseconds to import) is loaded only by a run that
shows one; a run into a pipe or with ``--no-progress`` never loads it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.progress import ProgressColumn

__all__ = ["deal_columns", "file_columns", "match_columns"]


def file_columns() -> tuple[ProgressColumn, ...]:
    """Files read through (validate, ingest): the file's name, the bar, bytes, time left."""
    from rich.progress import BarColumn, DownloadColumn, TextColumn, TimeRemainingColumn

    return (TextColumn("{task.description}"), BarColumn(), DownloadColumn(), TimeRemainingColumn())


def match_columns() -> tuple[ProgressColumn, ...]:
    """Matches simulated, of a known number: the bar, done of all, time left."""
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeRemainingColumn

    return (
        TextColumn("simulating"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("matches"),
        TimeRemainingColumn(),
    )


def deal_columns(label: str) -> Callable[[], tuple[ProgressColumn, ...]]:
    """Deals analysed, of a number not known ahead: a spinner, ``label``, the count, time."""

    def columns() -> tuple[ProgressColumn, ...]:
        from rich.progress import MofNCompleteColumn, SpinnerColumn, TextColumn, TimeElapsedColumn

        return (SpinnerColumn(), TextColumn(label), MofNCompleteColumn(), TimeElapsedColumn())

    return columns
