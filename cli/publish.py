"""``kingrec publish``: play a recorded match into a server as live events."""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from typing import Any

import click
import grpc

from kingrec.v1 import record_pb2 as pb
from kingrec.v1 import service_pb2 as svc
from kingrec_service.live import published_events

from .client import (
    connected,
    error_code,
    pace_of,
    pace_options,
    pick_match,
    rpc_errors,
    token_metadata,
)
from .errors import (
    EXIT_CLOSED_PIPE,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_UNREADABLE,
    Failed,
    user_errors,
)
from .helptext import Command, epilog
from .server_options import server_options


def live_requests(
    match: pb.Match, pace: svc.Pace, match_id: str, after: int = 0
) -> Iterator[svc.PublishRequest]:
    """The Publish stream of a recorded match: its start, each deal and card, its end, each
    card after its pause; without its first ``after`` messages (the ones a server already
    took), and their pauses."""
    for n, (pause, request) in enumerate(_timed_requests(match, pace, match_id)):
        if n < after:
            continue
        if pause > 0:
            time.sleep(pause)
        yield request


def _timed_requests(
    match: pb.Match, pace: svc.Pace, match_id: str
) -> Iterator[tuple[float, svc.PublishRequest]]:
    """Each message of the stream with the pause before it (seconds)."""
    header = pb.Match()
    header.CopyFrom(match)
    del header.deals[:]
    del header.claimed_totals[:]
    header.status = pb.MATCH_STATUS_UNSPECIFIED
    header.status_reason = ""
    header.match_id = match_id
    yield 0.0, svc.PublishRequest(start=header)
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
        pause = 0.0
        if mode == "think_time_factor" and recorded.HasField("trump_think_ms"):
            pause = recorded.trump_think_ms * pace.think_time_factor / 1000
        yield pause, svc.PublishRequest(deal=deal)
        for index, card in enumerate(recorded.plays):
            live = svc.LiveCard(card=card, auto_play=index in recorded.auto_plays)
            if index < len(recorded.think_ms):
                live.think_ms = recorded.think_ms[index]
            pause = 0.0
            if mode == "fixed_delay_ms":
                pause = pace.fixed_delay_ms / 1000
            elif mode == "think_time_factor" and live.HasField("think_ms"):
                pause = live.think_ms * pace.think_time_factor / 1000
            yield pause, svc.PublishRequest(card=live)
    end = svc.LiveEnd(status=match.status, reason=match.status_reason)
    yield 0.0, svc.PublishRequest(end=end)


def _last_event(stub: Any, live_id: str, metadata: tuple[tuple[str, str], ...]) -> int:
    """The live match's last event, as the server has it: a resume from event 0, which no
    match has, is refused with it (and claims nothing)."""
    probe = svc.PublishRequest(resume=live_id, resume_from=0)
    try:
        stub.Publish(iter([probe]), metadata=metadata)
    except grpc.RpcError as exc:
        trailers: Any = exc.trailing_metadata() if isinstance(exc, grpc.Call) else None
        last = dict(trailers or ()).get("kingrec-resume-from")
        if error_code(exc) == "OUT_OF_ORDER" and last is not None:
            return int(last)
        raise
    raise Failed(f"match {live_id}: the server took a resume from event 0")


def _resumed(
    stub: Any,
    match: pb.Match,
    pace: svc.Pace,
    live_id: str,
    metadata: tuple[tuple[str, str], ...],
) -> Iterator[svc.PublishRequest]:
    """The rest of the stream after what the server took, behind a resume that names the
    match's last event (so nothing goes twice and nothing is skipped). Asks the server here,
    not while the stream is being sent, so that its refusals reach the user."""
    with user_errors():  # a record the server would refuse is refused here, the same way
        counts = published_events(live_requests(match, svc.Pace(), live_id))
    last = _last_event(stub, live_id, metadata)
    if last not in counts:
        raise Failed(
            f"the live match {live_id} stands at event {last}, where no message of this "
            "record ends: it is not this record's match"
        )
    taken = counts.index(last) + 1
    click.echo(
        f"resuming match {live_id} after event {last}: {taken} of the record's "
        f"{len(counts)} messages were taken"
    )
    head = svc.PublishRequest(resume=live_id, resume_from=last)
    return itertools.chain([head], live_requests(match, pace, live_id, after=taken))


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
@click.option(
    "--resume",
    is_flag=True,
    help="Go on with the live match of that id (one whose publisher went away) from its "
    "last event: the messages the server took are not sent again.",
)
@click.option(
    "--abandon",
    is_flag=True,
    help="Give up the live match of that id instead: it ends abandoned (and is stored) now, "
    "not when the server tires of waiting for its publisher.",
)
@pace_options
@server_options(token=True)
def publish(
    file: str,
    match_id: str | None,
    index: int | None,
    live_id: str | None,
    resume: bool,
    abandon: bool,
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
    illegal card stops there. A stream that breaks leaves the match open: --resume goes on
    from where the server has it, --abandon gives it up. For demos and tests.
    """
    if resume and abandon:
        raise click.UsageError("--resume and --abandon ask for opposite things; give one")
    match = pick_match(file, match_id, index)
    live_id = live_id or match.match_id
    pace, metadata = pace_of(speed, delay, fast), token_metadata(token)
    with connected(server, tls_ca) as stub, rpc_errors(server):
        if abandon:
            end = svc.LiveEnd(status=pb.MATCH_STATUS_ABANDONED, reason="given up by its publisher")
            requests: Iterator[svc.PublishRequest] = iter(
                [svc.PublishRequest(resume=live_id), svc.PublishRequest(end=end)]
            )
        elif resume:
            requests = _resumed(stub, match, pace, live_id, metadata)
        else:
            requests = live_requests(match, pace, live_id)
        response = stub.Publish(requests, metadata=metadata)
    state = "finished" if response.finished else "still open"
    done = "abandoned" if abandon else "published"
    click.echo(f"{done} match {response.match_id}: {response.events} events, {state}")
