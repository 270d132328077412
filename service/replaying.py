"""Replays: a record's events from where the viewer asked, paced as asked, in batches.

The events themselves are ``kingrec_service.events.record_events``; this module only decides
when each one leaves: paced replays wait the recorded think time of a card (times a factor)
or a fixed delay before it, and everything between two waits travels in one message; as fast
as possible, up to ``BATCH`` events travel together.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, Iterable, Iterator

from kingrec.boundary import ruleset_from_proto
from kingrec.v1 import record_pb2 as pb
from kingrec.v1 import service_pb2 as svc

from .errors import BadRequestError, ShuttingDownError
from .events import Event, from_position, record_events

__all__ = ["BATCH", "check_pace", "check_seat", "paced", "pause_of", "replay_events"]

BATCH = 512  # events in one message when nothing waits between them


def pause_of(event: Event, pace: svc.Pace) -> float:
    """Seconds to wait before ``event`` leaves."""
    mode = pace.WhichOneof("mode")
    if mode == "fixed_delay_ms":
        return pace.fixed_delay_ms / 1000 if event.kind == "card_played" else 0.0
    if mode == "think_time_factor" and event.pause_ms > 0:
        return event.pause_ms * pace.think_time_factor / 1000
    return 0.0


def check_pace(pace: svc.Pace) -> None:
    mode = pace.WhichOneof("mode")
    factor = pace.think_time_factor
    if mode == "think_time_factor" and not 0 <= factor <= 1000:  # NaN fails too
        raise BadRequestError(f"think_time_factor must be between 0 and 1000, not {factor}")


def check_seat(seat: int | None) -> int | None:
    """A viewer's seat (None: everything shown), refused unless one of the four."""
    if seat is not None and not 0 <= seat <= 3:
        raise BadRequestError(f"seat {seat} does not exist (0..3)")
    return seat


def replay_events(match: pb.Match, start_deal: int, start_trick: int) -> Iterator[Event]:
    """The events a replay of ``match`` from ``start_deal`` / ``start_trick`` sends (0 counts
    as 1); a start past the match's last deal or trick 13 is refused before any is sent."""
    rules = ruleset_from_proto(match.ruleset)
    start_deal, start_trick = max(start_deal, 1), max(start_trick, 1)
    if start_deal > max(len(match.deals), 1):
        raise BadRequestError(
            f"start_deal {start_deal} is past the match's last deal ({len(match.deals)})"
        )
    if start_trick > 13:
        raise BadRequestError(f"start_trick {start_trick} is past trick 13")
    return from_position(record_events(match, rules), start_deal, start_trick)


def _where(event: Event) -> str:
    if event.kind == "card_played":
        return f"start_deal={event.deal}, start_trick={event.trick}"
    if event.deal:
        return f"start_deal={event.deal}"
    return "the start"


async def paced(
    events: Iterable[Event], pace: svc.Pace, stopping: asyncio.Event
) -> AsyncGenerator[list[Event]]:
    """``events`` in batches, each leaving at its time. A stopping server ends the replay
    with ``ShuttingDownError`` saying where to start again."""
    batch: list[Event] = []
    fast = pace.WhichOneof("mode") is None
    for event in events:
        wait = 0.0 if fast else pause_of(event, pace)
        if wait > 0 or len(batch) >= BATCH:
            if batch:
                yield batch
                batch = []
            if wait > 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stopping.wait(), wait)
        if stopping.is_set():
            raise ShuttingDownError(
                f"the server is shutting down; replay again from {_where(event)}",
                event.seq - 1,
            )
        batch.append(event)
    if batch:
        yield batch
