"""``kingrec query``: one read-only SQL statement over the store, as a table, CSV or JSON."""

from __future__ import annotations

from collections.abc import Iterator

import click

from kingrec.store import Store
from kingrec.store.db import default_path

from .errors import (
    EXIT_CLOSED_PIPE,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_UNREADABLE,
    user_errors,
)
from .helptext import Command, epilog
from .server_options import server_options
from .stops import Stops
from .store_option import store_option
from .streams import is_terminal
from .tabular import FORMATS, Format, write_rows
from .terminal import Terminal

__all__ = ["default_format", "query"]

EXAMPLES = [
    (
        'kingrec query "SELECT contract, count(*) FROM deals GROUP BY ALL"',
        "a table on a terminal",
    ),
    ('kingrec query -f csv "SELECT * FROM matches WHERE NOT valid" > bad.csv', "CSV"),
    ('kingrec query -f json "SELECT * FROM findings" | jq .code', "a JSON object per row"),
    ('kingrec query --db club.duckdb "SELECT count(*) FROM plays"', "another store"),
    ("kingrec query 'FROM matches LIMIT 5' --server host:50051", "a kingrec server's store"),
]

TABLE_ROWS = 1_000  # a table is read by a person and laid out in memory
OTHER_ROWS = 100_000


def default_format(term: Terminal) -> Format:
    """A table for a person at a terminal, CSV for a program reading a pipe or a file."""
    return "table" if is_terminal(term.stdout) else "csv"


@click.command(
    cls=Command,
    epilog=epilog(
        EXAMPLES,
        (
            (EXIT_OK, "the rows written (the first --max-rows when there were more)"),
            (
                EXIT_UNREADABLE,
                "the SQL refused or wrong, past --timeout, the store missing or "
                "unusable, or bad usage",
            ),
            EXIT_INTERNAL,
            EXIT_INTERRUPTED,
            EXIT_CLOSED_PIPE,
        ),
    ),
)
@click.argument("sql")
@store_option()
@click.option(
    "-f",
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    default=None,
    help="table, csv (a header line, then a line per row) or json (one JSON object per row). "
    "Default: table on a terminal, csv otherwise.",
)
@click.option(
    "--max-rows",
    type=click.IntRange(min=1),
    default=None,
    help=f"Write at most this many rows (default: {TABLE_ROWS:,} as a table, {OTHER_ROWS:,} "
    "as csv or json); a note on standard error says when rows were left out.",
)
@server_options(optional=True)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=30.0,
    show_default=True,
    help="Stop the query after this many seconds.",
)
def query(
    sql: str,
    db: str | None,
    fmt: Format | None,
    max_rows: int | None,
    server: str | None,
    tls_ca: str | None,
    timeout: float,
) -> None:
    """Run one read-only SQL statement (a SELECT) over the store and write its rows.

    The store is opened read-only, and SQL can reach nothing but the store: no files, no
    network, no extensions, no settings, one statement (SELECT, WITH ... SELECT, VALUES,
    FROM ...). The tables are matches, players, deals, tricks, plays, findings, damage and
    cards, documented in docs/STORE.md and in the file itself (SELECT table_name,
    column_name, comment FROM duckdb_columns()). The macro card_name(card) names a card
    code (QS). `kingrec stats --sql NAME` prints ready queries to start from.
    """
    if server and db is not None:
        raise click.UsageError(_two_stores(click.get_current_context()))
    term = Terminal()
    fmt = fmt or default_format(term)
    limit = max_rows or (TABLE_ROWS if fmt == "table" else OTHER_ROWS)
    if server:
        _remote(term, fmt, server, tls_ca, sql, limit)
        return
    stops = Stops(at_once=True)
    with stops.installed(), stops.stopped(), user_errors():
        _run(term, fmt, db, sql, limit, timeout)


def _two_stores(ctx: click.Context) -> str:
    """Why --db and --server together are refused: each names the store to ask."""
    source = ctx.get_parameter_source("server")
    if source == click.core.ParameterSource.ENVIRONMENT:
        return (
            "--db asks a store file, but $KINGREC_SERVER asks a server's store: give one "
            "(unset KINGREC_SERVER to query the file)"
        )
    return "--db and --server each name the store to ask: give one"


def _run(term: Terminal, fmt: Format, db: str | None, sql: str, limit: int, timeout: float) -> None:
    with (
        Store.open(db or default_path(), read_only=True) as store,
        store.query(sql, max_rows=limit, timeout_s=timeout) as result,  # closed before the store
    ):
        names = [name for name, _ in result.columns]
        count = write_rows(term, fmt, names, result.batches())
    if result.truncated:
        term.note(f"showing the first {count} row(s); --max-rows for more")


def _remote(
    term: Terminal, fmt: Format, server: str, tls_ca: str | None, sql: str, limit: int
) -> None:
    import pyarrow as pa

    from kingrec.v1 import service_pb2 as svc

    from .client import connected, rpc_errors

    request = svc.QueryRequest(sql=sql, format=svc.QueryRequest.FORMAT_ARROW, max_rows=limit)
    cut: list[bool] = []
    columns: list[str] = []

    def batches(responses: Iterator[svc.QueryResponse]) -> Iterator[pa.RecordBatch]:
        for response in responses:
            if response.columns:
                columns[:] = [c.name for c in response.columns]
            if response.arrow:
                yield from pa.ipc.open_stream(response.arrow)
            if response.truncated:
                cut.append(True)

    with connected(server, tls_ca) as stub, rpc_errors(server):
        stream = batches(stub.Query(request))
        first = next(stream, None)  # the columns come with the first message
        rest = stream if first is None else _chain(first, stream)
        count = write_rows(term, fmt, columns, rest)
    if cut:
        term.note(f"showing the first {count} row(s); the server's limits or --max-rows")


def _chain(first: object, rest: Iterator[object]) -> Iterator[object]:
    yield first
    yield from rest
