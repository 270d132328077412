"""``kingrec query``: one read-only SQL statement over a store, its rows printed."""

from __future__ import annotations

from collections.abc import Iterator

import click
import pyarrow as pa

from kingrec.v1 import service_pb2 as svc

from .client import connect, rpc_errors, server_options
from .errors import EXIT_CLOSED_PIPE, EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_OK, EXIT_UNREADABLE
from .helptext import Command, epilog
from .rows import FORMATS, print_rows
from .terminal import Terminal


def _remote(
    responses: Iterator[svc.QueryResponse], into: list[tuple[str, str]], cut: list[bool]
) -> Iterator[pa.RecordBatch]:
    """The record batches of a Query stream; the columns go to ``into`` as soon as the first
    message names them, ``cut`` learns whether the result was cut at a limit."""
    for response in responses:
        if response.columns:
            into[:] = [(c.name, c.type) for c in response.columns]
        if response.arrow:
            yield from pa.ipc.open_stream(response.arrow)
        if response.truncated:
            cut.append(True)


@click.command(
    cls=Command,
    epilog=epilog(
        [
            ("kingrec query 'FROM matches LIMIT 5' --server host:50051", "the first five matches"),
            (
                "kingrec query 'SELECT preset, count(*) FROM matches GROUP BY 1' --format csv",
                "as CSV (with $KINGREC_SERVER set)",
            ),
        ],
        (
            (EXIT_OK, "the rows printed"),
            (EXIT_UNREADABLE, "the SQL refused or invalid, the server unreachable, or bad usage"),
            EXIT_INTERNAL,
            EXIT_INTERRUPTED,
            EXIT_CLOSED_PIPE,
        ),
    ),
)
@click.argument("sql")
@click.option(
    "--format",
    "form",
    type=click.Choice(FORMATS),
    default="table",
    show_default=True,
    help="How to print the rows: a table, CSV (a header line first) or JSON Lines.",
)
@click.option(
    "--max-rows",
    type=click.IntRange(min=1),
    metavar="N",
    help="Print at most N rows (the server has a limit of its own).",
)
@server_options(required=True)
def query(sql: str, form: str, max_rows: int | None, server: str, tls_ca: str | None) -> None:
    """Run SQL, one read-only statement, over the store of a kingrec server (--server).

    Only a query (SELECT, WITH … SELECT, …) over the store's tables runs: files, network,
    extensions and settings are out of reach, and the server limits the time, rows and bytes
    of a result. Tables and columns: `kingrec query "FROM duckdb_tables()"`.
    """
    terminal = Terminal()
    stub = connect(server, tls_ca)
    request = svc.QueryRequest(sql=sql, format=svc.QueryRequest.FORMAT_ARROW)
    if max_rows is not None:
        request.max_rows = max_rows
    with rpc_errors(server):
        responses = stub.Query(request)
        columns: list[tuple[str, str]] = []
        cut: list[bool] = []
        batches = _remote(responses, columns, cut)
        first = next(batches, None)  # the columns come with the first message
        rows = print_rows(terminal, columns, _chain(first, batches), form)
    if cut:
        terminal.note(f"the result was cut at {rows} row(s) (a limit of the server, or --max-rows)")


def _chain(
    first: pa.RecordBatch | None, rest: Iterator[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    if first is not None:
        yield first
    yield from rest
