"""What the commands that talk to a kingrec server share: connecting, options, errors, and
the play-by-play printer for replays and live matches."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import click
import grpc
from rich.console import Console

from kingrec.cards import SUIT_SYMBOLS, card_symbol
from kingrec.contracts import Contract
from kingrec.records import Damage, open_records
from kingrec.v1 import record_pb2 as pb
from kingrec.v1 import service_pb2 as svc
from kingrec_service._pb.service_pb2_grpc import KingrecServiceStub

from . import teardown
from .errors import Failed, user_errors
from .terminal import escape

__all__ = [
    "EventPrinter",
    "connected",
    "pace_options",
    "pick_match",
    "rpc_errors",
]

F = TypeVar("F", bound=Callable[..., Any])


def pace_options(command: F) -> F:
    """``--speed`` / ``--delay`` / ``--fast``: how fast cards are played out."""
    command = click.option("--fast", is_flag=True, help="As fast as possible.")(command)
    command = click.option(
        "--delay",
        type=click.IntRange(min=0),
        metavar="MS",
        help="Wait this long before each card instead of the recorded think times.",
    )(command)
    return click.option(
        "--speed",
        type=click.FloatRange(min=0, max=1000),
        default=1.0,
        show_default=True,
        metavar="FACTOR",
        help="Wait the recorded think times times FACTOR (1: real time, 0.5: twice as fast).",
    )(command)


def pace_of(speed: float, delay: int | None, fast: bool) -> svc.Pace:
    if fast and delay is not None:
        raise click.UsageError("--fast and --delay contradict each other")
    if fast:
        return svc.Pace()
    if delay is not None:
        return svc.Pace(fixed_delay_ms=delay)
    return svc.Pace(think_time_factor=speed)


# How long a command waits, once its channel is closed, for gRPC's own threads to end.
THREADS_GRACE_S = 2.0


@contextmanager
def connected(server: str, tls_ca: str | None) -> Iterator[KingrecServiceStub]:
    """A stub for the server at ``server`` (TLS when given the CA certificate); on the way
    out the channel is closed and the threads gRPC started for it are let finish.

    Why: gRPC runs a call's completion queue, and a stream's requests, in daemon threads of
    its own. Left running at interpreter exit, such a thread is frozen wherever it is, even
    holding the channel's lock, and the channel's finalizer then waits for that lock forever:
    a client that has printed its error and never exits. Closing the channel cancels what
    is still open, so the threads end at once (one blocked reading standard input cannot be
    joined, and holds no lock while it waits)."""
    teardown.needless(teardown.ALWAYS)  # the process then ends without it, whatever happens
    before = set(threading.enumerate())
    if tls_ca is not None:
        credentials = grpc.ssl_channel_credentials(root_certificates=Path(tls_ca).read_bytes())
        channel = grpc.secure_channel(server, credentials)
    else:
        channel = grpc.insecure_channel(server)
    try:
        yield KingrecServiceStub(channel)
    finally:
        channel.close()
        deadline = time.monotonic() + THREADS_GRACE_S
        for thread in set(threading.enumerate()) - before:
            if thread.daemon and thread is not threading.current_thread():
                thread.join(max(0.0, deadline - time.monotonic()))


def token_metadata(token: str | None) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {token}"),) if token else ()


def error_code(error: grpc.RpcError) -> str:
    """The ``kingrec-code`` trailer of a failed call ("" when there is none)."""
    trailers: Any = error.trailing_metadata() if isinstance(error, grpc.Call) else None
    for key, value in trailers or ():
        if key == "kingrec-code":
            return str(value)
    return ""


@contextmanager
def rpc_errors(server: str) -> Iterator[None]:
    """A failed call as one clear line (exit status 2)."""
    try:
        yield
    except grpc.RpcError as exc:
        assert isinstance(exc, grpc.Call)
        code = exc.code()
        if code == grpc.StatusCode.UNAVAILABLE and not error_code(exc):
            raise Failed(f"cannot reach a kingrec server at {server}: {exc.details()}") from None
        name = code.name if code is not None else "UNKNOWN"
        raise Failed(f"{server}: {name}: {exc.details()}", error_code(exc) or name) from None


def pick_match(path: str, match_id: str | None, index: int | None) -> pb.Match:
    """One match of a record file: by id, or the ``index``-th (default the first)."""
    with user_errors(), open_records(path) as records:
        n = 0
        for item in records:
            if isinstance(item, Damage):
                continue
            n += 1
            if (match_id is not None and item.match.match_id == match_id) or (
                match_id is None and n == (index or 1)
            ):
                return item.match
    wanted = f"match {match_id!r}" if match_id is not None else f"match number {index or 1}"
    raise Failed(f"{path}: no {wanted} (the file holds {n} readable match(es))")


# -- the play-by-play printer ------------------------------------------------------------------

_STATUS = {
    pb.MATCH_STATUS_COMPLETE: "complete",
    pb.MATCH_STATUS_ABANDONED: "abandoned",
    pb.MATCH_STATUS_IN_PROGRESS: "in progress",
}
_END = {
    pb.DEAL_END_EARLY: "ended early: the last penalty card fell",
    pb.DEAL_END_ABANDONED: "abandoned",
    pb.DEAL_END_REVOKE: "stopped by a revoke",
}


def card_text(card: int) -> str:
    colour = "red" if card // 13 in (1, 2) else "default"
    return f"[{colour}]{card_symbol(card)}[/]"


def contract_text(contract: int, trump: int) -> str:
    try:
        label = Contract(contract).label
    except ValueError:
        label = f"contract {contract}"
    if 1 <= trump <= 4:
        label += f" {SUIT_SYMBOLS[trump - 1]}"
    return label


def _scores(values: Iterator[int] | list[int]) -> str:
    return "  ".join(f"{v:+d}" if v else "0" for v in values)


class EventPrinter:
    """Prints a match's events as they come: each card as it is played, a line per trick."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.names = [f"seat {s}" for s in range(4)]
        self.last = 0  # the number of the last event printed
        self.trick = 0  # the trick whose cards are being printed (0: none)

    def name(self, seat: int) -> str:
        return escape(self.names[seat]) if seat < 4 else f"seat {seat}"

    def show(self, event: svc.MatchEvent) -> None:
        self.last = event.seq
        kind = event.WhichOneof("event")
        out = self.console
        if kind == "match_started":
            started = event.match_started
            for p in started.players:
                if p.seat < 4 and (p.name or p.id):
                    self.names[p.seat] = f"{p.name or p.id} ({p.seat})"
            out.print(
                f"[bold]Match {escape(started.match_id or '(no id)')}[/]  ruleset "
                f"{escape(started.ruleset.preset or '?')} · {started.deal_count} deals"
            )
            out.print("  players: " + ", ".join(self.name(s) for s in range(4)))
        elif kind == "deal_started":
            deal = event.deal_started
            out.print(f"\n[bold]Deal {deal.deal}[/] — declarer {self.name(deal.declarer)}")
            for seat, hand in enumerate(deal.hands):
                if hand.cards:
                    cards = " ".join(card_text(c) for c in sorted(hand.cards))
                    out.print(f"  {self.name(seat)}: {cards}")
        elif kind == "contract_chosen":
            chosen = event.contract_chosen
            out.print(f"  contract: {escape(contract_text(chosen.contract, chosen.trump))}")
        elif kind == "card_played":
            card = event.card_played
            if card.position == 0:
                self.trick = card.trick
                out.print(f"  {card.trick:>2}  {self.name(card.seat)} leads ", end="")
            text = card_text(card.card)
            if card.broke:
                text += f" [red]✗ {card.broke}[/]"
            out.print(text + " ", end="")
        elif kind == "trick_won":
            won = event.trick_won
            points = f"  {won.points:+d}" if won.points else ""
            if self.trick != won.trick:  # a replay that starts later in the deal
                cards = " ".join(card_text(c) for c in won.cards)
                out.print(f"  {won.trick:>2}  {self.name(won.leader)} leads {cards} ", end="")
            self.trick = 0
            out.print(f" → {self.name(won.winner)}{points}")
        elif kind == "deal_ended":
            ended = event.deal_ended
            if ended.end in _END:
                out.print(f"  {_END[ended.end]}")
            out.print(
                f"  score: {_scores(list(ended.scores))}   running: {_scores(list(ended.totals))}"
            )
        elif kind == "match_ended":
            ended_match = event.match_ended
            status = _STATUS.get(ended_match.status, "over")
            reason = f" ({escape(ended_match.reason)})" if ended_match.reason else ""
            out.print(
                f"\n[bold]Match over[/]: {status}{reason} after {ended_match.deals} deal(s); "
                f"totals {_scores(list(ended_match.totals))}"
            )


def stdout_console() -> Console:
    return Console(highlight=False, soft_wrap=True)
