"""``kingrec replay``: a match played out in the terminal, streamed from a server."""

from __future__ import annotations

from pathlib import Path

import click

from kingrec.v1 import service_pb2 as svc

from .client import (
    EventPrinter,
    connected,
    pace_of,
    pace_options,
    pick_match,
    rpc_errors,
    stdout_console,
)
from .errors import EXIT_CLOSED_PIPE, EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_OK, EXIT_UNREADABLE
from .helptext import Command, epilog
from .server_options import server_options


@click.command(
    cls=Command,
    epilog=epilog(
        [
            ("kingrec replay games.krec --fast", "the first match of a file, at once"),
            ("kingrec replay classic-0 --seat 2 --speed 0.5", "a stored match as seat 2 saw it"),
        ],
        (
            (EXIT_OK, "replayed"),
            (EXIT_UNREADABLE, "SOURCE unreadable or unknown, the server unreachable, or bad usage"),
            EXIT_INTERNAL,
            EXIT_INTERRUPTED,
            EXIT_CLOSED_PIPE,
        ),
    ),
)
@click.argument("source")
@click.option("--match", "match_id", metavar="ID", help="In a FILE: the match with this id.")
@click.option("--index", type=click.IntRange(min=1), metavar="N", help="In a FILE: the N-th match.")
@click.option("--deal", type=click.IntRange(min=1), default=1, metavar="N", help="Start at deal N.")
@click.option(
    "--trick", type=click.IntRange(1, 13), default=1, metavar="N", help="Start at trick N."
)
@click.option(
    "--seat",
    type=click.IntRange(0, 3),
    help="Show what this seat's player saw: its own hand, other cards only as they fall.",
)
@pace_options
@server_options()
def replay(
    source: str,
    match_id: str | None,
    index: int | None,
    deal: int,
    trick: int,
    seat: int | None,
    speed: float,
    delay: int | None,
    fast: bool,
    server: str,
    tls_ca: str | None,
) -> None:
    """Replay a match card by card, as the server streams it.

    SOURCE is a record file (.krec or JSON; the record is sent to the server) or the id of
    a match stored on the server. Cards come at their recorded think times (times
    --speed), after a fixed --delay, or at once (--fast); illegal cards are marked with
    the rule they broke.
    """
    request = svc.ReplayRequest(
        start_deal=deal, start_trick=trick, pace=pace_of(speed, delay, fast)
    )
    if seat is not None:
        request.seat = seat
    if Path(source).is_file() or source == "-":
        request.record.match.CopyFrom(pick_match(source, match_id, index))
    else:
        request.match_id = source
    printer = EventPrinter(stdout_console())
    with connected(server, tls_ca) as stub, rpc_errors(server):
        for response in stub.Replay(request):
            for event in response.events:
                printer.show(event)
