"""``kingrec stats``: ready answers from the store, as tables with a bar chart."""

from __future__ import annotations

import click

from kingrec.store import Store
from kingrec.store.db import default_path
from kingrec.store.stats import STATS, run_stat, stat

from .errors import (
    EXIT_CLOSED_PIPE,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_UNREADABLE,
    user_errors,
)
from .helptext import Command, epilog
from .query import default_format
from .stops import Stops
from .store_option import store_option
from .tabular import FORMATS, Format, write_rows
from .terminal import Terminal, escape

__all__ = ["stats"]

EXAMPLES = [
    ("kingrec stats --list", "the questions answered, by name"),
    ("kingrec stats rifki-end", "on which trick the rıfkı deal ends"),
    ("kingrec stats", "every answer, one table after another"),
    ("kingrec stats --sql koz-trump > q.sql", "the SQL, to adapt (runs in the duckdb CLI)"),
    ("kingrec stats -f csv forced", "as CSV"),
]


@click.command(
    cls=Command,
    epilog=epilog(
        EXAMPLES,
        (
            (EXIT_OK, "answered"),
            (EXIT_UNREADABLE, "no such stats NAME, the store missing or unusable, or bad usage"),
            EXIT_INTERNAL,
            EXIT_INTERRUPTED,
            EXIT_CLOSED_PIPE,
        ),
        "Names:\n" + "\n".join(f"  {s.name:<12}  {s.title}" for s in STATS.values()),
    ),
)
@click.argument("names", nargs=-1)
@store_option()
@click.option("--list", "listing", is_flag=True, help="List the names, titles and questions.")
@click.option(
    "--sql", "print_sql", is_flag=True, help="Print each NAME's SQL instead of running it."
)
@click.option(
    "-f",
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    default=None,
    help="table (with a bar chart), csv or json. Default: table on a terminal, csv otherwise.",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=60.0,
    show_default=True,
    help="Stop a query after this many seconds.",
)
def stats(
    names: tuple[str, ...],
    db: str | None,
    listing: bool,
    print_sql: bool,
    fmt: Format | None,
    timeout: float,
) -> None:
    """Answer the common questions from the store: each NAME is a documented SQL query.

    Without NAME, every answer. The answers count valid records only (matches.valid). Each
    query is plain SQL over the store's tables: --sql prints it, to adapt and run with
    `kingrec query` or in the stock DuckDB CLI (duckdb -readonly kingrec.duckdb).
    """
    term = Terminal()
    with user_errors():
        chosen = [stat(name) for name in names] or list(STATS.values())
    if listing:
        for item in chosen:
            term.report(f"[bold]{item.name}[/]  {escape(item.title)}")
            term.report(f"  {escape(item.description)}")
        return
    if print_sql:
        for item in chosen:
            term.stdout.write(f"-- {item.name}: {item.title}\n{item.sql}")
            if len(chosen) > 1:
                term.stdout.write("\n")
        return
    fmt = fmt or default_format(term)
    stops = Stops(at_once=True)
    with (
        stops.installed(),
        stops.stopped(),
        user_errors(),
        Store.open(db or default_path(), read_only=True) as store,
    ):
        for n, item in enumerate(chosen):
            result = run_stat(store, item.name, timeout_s=timeout)
            columns = [name for name, _ in result.columns]
            if fmt == "table":
                if n:
                    term.report()
                title = f"[bold]{escape(item.title)}[/] ({item.name})"
                write_rows(term, fmt, columns, result.batches(), bar=item.bar, title=title)
            elif fmt == "json":
                write_rows(term, fmt, columns, result.batches(), tag={"stat": item.name})
            else:
                if n:
                    term.stdout.write("\n")
                write_rows(term, fmt, columns, result.batches())
