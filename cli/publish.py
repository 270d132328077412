"""``kingrec publish``: play a recorded match into a server as live events."""

from __future__ import annotations

import time
from collections.abc import Iterator

import click

from kingrec.v1 import record_pb2 as pb
from kingrec.v1 import service_pb2 as svc

from .client import (
    connect,
    pace_of,
    pace_options,
    pick_match,
    rpc_errors,
    token_metadata,
)
from .errors import EXIT_CLOSED_PIPE, EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_OK, EXIT_UNREADABLE
from .helptext import Command, epilog
from .server_options import server_options


def live_requests(match: pb.Match, pace: svc.Pace, match_id: str) -> Iterator[svc.PublishRequest]:
    """The Publish stream of a recorded match: its start, each deal and card, its end, each
    card after its pause."""
    header = pb.Match()
    header.CopyFrom(match)
    del header.deals[:]
    del header.claimed_totals[:]
    header.status = pb.MATCH_STATUS_UNSPECIFIED
    header.status_reason = ""
    header.match_id = match_id
    yield svc.PublishRequest(start=header)
    mode = pace.WhichOneof("mode")
    for recorded in match.deals:
        deal = pb.Deal()
        deal.CopyFrom(recorded)
        deal.plays = b""
        deal.ClearField("think_ms")
        deal.ClearField("auto_plays")
        deal.ClearField("claimed_scores")
        deal.ClearField("revoke_play")
        deal.ClearField("end")
        if mode == "think_time_factor" and recorded.HasField("trump_think_ms"):
            time.sleep(recorded.trump_think_ms * pace.think_time_factor / 1000)
        yield svc.PublishRequest(deal=deal)
        for index, card in enumerate(recorded.plays):
            live = svc.LiveCard(card=card, auto_play=index in recorded.auto_plays)
            if index < len(recorded.think_ms):
                live.think_ms = recorded.think_ms[index]
            if mode == "fixed_delay_ms":
                time.sleep(pace.fixed_delay_ms / 1000)
            elif mode == "think_time_factor" and live.HasField("think_ms"):
                time.sleep(live.think_ms * pace.think_time_factor / 1000)
            yield svc.PublishRequest(card=live)
    yield svc.PublishRequest(end=svc.LiveEnd(status=match.status, reason=match.status_reason))


@click.command(
    cls=Command,
    epilog=epilog(
        [
            (
                "kingrec publish games.krec --fast --token s3cret",
                "play the first match live at once",
            ),
            (
                "kingrec publish games.krec --match m7 --as demo --speed 0.1",
                "10x faster, as 'demo'",
            ),
        ],
        (
            (EXIT_OK, "published"),
            (EXIT_UNREADABLE, "FILE unreadable, the server unreachable or refusing, or bad usage"),
            EXIT_INTERNAL,
            EXIT_INTERRUPTED,
            EXIT_CLOSED_PIPE,
        ),
    ),
)
@click.argument("file", type=click.Path(allow_dash=True, dir_okay=False))
@click.option("--match", "match_id", metavar="ID", help="Publish the match with this id.")
@click.option(
    "--index", type=click.IntRange(min=1), metavar="N", help="Publish the N-th match of FILE."
)
@click.option(
    "--as", "live_id", metavar="ID", help="The live match's id (default: the record's own)."
)
@pace_options
@server_options(token=True)
def publish(
    file: str,
    match_id: str | None,
    index: int | None,
    live_id: str | None,
    speed: float,
    delay: int | None,
    fast: bool,
    server: str,
    tls_ca: str | None,
    token: str | None,
) -> None:
    """Play a recorded match into a server as a live match, card by card.

    Each card goes out after its recorded think time (times --speed), a fixed --delay, or at
    once (--fast); viewers follow it with `kingrec watch`. The server checks every event
    with the rules engine and refuses what the rules do not allow, so a record with an
    illegal card stops there. For demos and tests.
    """
    match = pick_match(file, match_id, index)
    live_id = live_id or match.match_id
    stub = connect(server, tls_ca)
    with rpc_errors(server):
        response = stub.Publish(
            live_requests(match, pace_of(speed, delay, fast), live_id),
            metadata=token_metadata(token),
        )
    state = "finished" if response.finished else "still open"
    click.echo(f"published match {response.match_id}: {response.events} events, {state}")
