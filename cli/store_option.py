"""``--db``, the store a command works on: one option, worded once, for every command."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

__all__ = ["store_option"]

F = TypeVar("F", bound=Callable[..., Any])

# kingrec.store.db.DEFAULT_DB, spelled out: importing the store here would load DuckDB into
# every command's start, also those that never open a store.
_DEFAULT = "$KINGREC_DB, else kingrec.duckdb"


def store_option(about: str = "The store", *, metavar: str | None = None) -> Callable[[F], F]:
    """``--db PATH`` (None: ``kingrec.store.db.default_path()`` decides), described as
    ``about`` followed by the default."""
    return click.option(
        "--db",
        type=click.Path(dir_okay=False),
        default=None,
        metavar=metavar,
        help=f"{about} (default: {_DEFAULT}).",
    )
