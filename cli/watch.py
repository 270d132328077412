"""``kingrec watch``: follow a live match in the terminal as it is played."""

from __future__ import annotations

import time
from typing import Any

import click
import grpc
from rich.console import Console
from rich.live import Live
from rich.table import Table

from kingrec.v1 import service_pb2 as svc

from .client import (
    EventPrinter,
    card_text,
    connected,
    contract_text,
    error_code,
    rpc_errors,
    stdout_console,
)
from .errors import EXIT_CLOSED_PIPE, EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_OK, EXIT_UNREADABLE
from .helptext import Command, epilog
from .server_options import server_options
from .terminal import escape

RETRIES = 5  # reconnections in a row before giving up


class Board:
    """The table as the events so far leave it."""

    def __init__(self) -> None:
        self.match_id = ""
        self.names = [f"seat {s}" for s in range(4)]
        self.deal = 0
        self.contract = ""
        self.declarer = -1
        self.hands: list[list[int]] = [[] for _ in range(4)]
        self.hidden = [0, 0, 0, 0]
        self.trick: dict[int, int] = {}
        self.tricks = [0, 0, 0, 0]
        self.points = [0, 0, 0, 0]
        self.totals = [0, 0, 0, 0]
        self.note = "waiting for the match"

    def apply(self, event: svc.MatchEvent) -> None:
        kind = event.WhichOneof("event")
        if kind == "match_started":
            self.match_id = event.match_started.match_id
            for p in event.match_started.players:
                if p.seat < 4 and (p.name or p.id):
                    self.names[p.seat] = p.name or p.id
            self.note = "waiting for the first deal"
        elif kind == "deal_started":
            deal = event.deal_started
            self.deal, self.declarer = deal.deal, deal.declarer
            self.hands = [sorted(h.cards) for h in deal.hands]
            self.hidden = [h.hidden for h in deal.hands]
            self.trick, self.tricks, self.points = {}, [0] * 4, [0] * 4
            self.totals = list(deal.totals) or self.totals
            self.note = "choosing the contract"
        elif kind == "contract_chosen":
            chosen = event.contract_chosen
            self.contract = contract_text(chosen.contract, chosen.trump)
            self.note = "playing"
        elif kind == "card_played":
            card = event.card_played
            if card.position == 0:
                self.trick = {}
            self.trick[card.seat] = card.card
            if card.card in self.hands[card.seat]:
                self.hands[card.seat].remove(card.card)
            elif self.hidden[card.seat]:
                self.hidden[card.seat] -= 1
            self.note = f"trick {card.trick}" + (f", {card.broke}!" if card.broke else "")
        elif kind == "trick_won":
            won = event.trick_won
            self.tricks[won.winner] += 1
            self.points[won.winner] += won.points
            self.note = f"trick {won.trick} to {self.names[won.winner]}"
        elif kind == "deal_ended":
            self.totals = list(event.deal_ended.totals)
            self.points = list(event.deal_ended.scores)
            self.note = f"deal {event.deal_ended.deal} over"
        elif kind == "match_ended":
            self.totals = list(event.match_ended.totals)
            self.note = "match over"

    def table(self) -> Table:
        title = f"{escape(self.match_id)} · deal {self.deal} {escape(self.contract)} · {self.note}"
        table = Table(title=title, title_justify="left")
        for column in ("seat", "hand", "on the table", "tricks", "points", "total"):
            table.add_column(
                column, justify="right" if column in ("tricks", "points", "total") else "left"
            )
        for seat in range(4):
            name = escape(self.names[seat]) + (" *" if seat == self.declarer else "")
            hand = " ".join(card_text(c) for c in self.hands[seat])
            if self.hidden[seat]:
                hand = (hand + " " if hand else "") + f"[dim]{self.hidden[seat]} hidden[/]"
            played = card_text(self.trick[seat]) if seat in self.trick else ""
            table.add_row(
                name, hand, played, str(self.tricks[seat]), f"{self.points[seat]:+d}",
                f"{self.totals[seat]:+d}",
            )  # fmt: skip
        return table


@click.command(
    cls=Command,
    epilog=epilog(
        [
            ("kingrec watch demo", "follow the live match 'demo'"),
            ("kingrec watch demo --server host:50051", "on another server"),
        ],
        (
            (EXIT_OK, "the match ended"),
            (EXIT_UNREADABLE, "no such match, the server unreachable, or bad usage"),
            EXIT_INTERNAL,
            EXIT_INTERRUPTED,
            EXIT_CLOSED_PIPE,
        ),
    ),
)
@click.argument("match_id")
@click.option(
    "--delay",
    type=click.IntRange(min=0),
    default=0,
    metavar="MS",
    help="Show each event this long after it happened (a broadcast delay).",
)
@click.option(
    "--seat",
    type=click.IntRange(0, 3),
    help="Show what this seat's player sees: its own hand, other cards only as they fall.",
)
@server_options()
def watch(match_id: str, delay: int, seat: int | None, server: str, tls_ca: str | None) -> None:
    """Follow a live match as it is played: a table of hands, the trick and the scores.

    On a terminal the table updates in place; otherwise every card and trick is printed as
    it comes. A lost connection, or falling too far behind, is resumed where it stopped,
    without gaps or repeats. When the publisher goes away (and when it comes back) a line on
    standard error says so, with how long the server still waits for it.
    """
    console = stdout_console()
    board, printer = Board(), EventPrinter(console)
    live = Live(board.table(), console=console, auto_refresh=False) if console.is_terminal else None
    with connected(server, tls_ca) as stub, rpc_errors(server):
        if live is not None:
            with live:
                _follow(stub, match_id, delay, seat, board, printer, live)
        else:
            _follow(stub, match_id, delay, seat, board, printer, None)


def _presence(response: svc.WatchResponse) -> str:
    """What a viewer is told when the publisher goes or comes back."""
    if response.publisher == svc.PUBLISHER_GONE:
        wait = round(response.abandon_in_ms / 1000)
        return (
            f"the publisher is gone: the match waits for it to resume, and ends abandoned in "
            f"{wait} s unless it does"
        )
    return "the publisher is back: the match goes on"


def _follow(
    stub: Any,
    match_id: str,
    delay: int,
    seat: int | None,
    board: Board,
    printer: EventPrinter,
    live: Live | None,
) -> None:
    failures = 0
    publisher = svc.PUBLISHER_PUBLISHING  # what was last said of it
    while True:
        request = svc.WatchRequest(match_id=match_id, resume_from=printer.last, delay_ms=delay)
        if seat is not None:
            request.seat = seat
        try:
            for response in stub.Watch(request):
                failures = 0
                for event in response.events:
                    board.apply(event)
                    if live is None:
                        printer.show(event)
                    else:
                        printer.last = event.seq
                said = response.publisher
                if said != svc.PUBLISHER_UNSPECIFIED and said != publisher:
                    publisher = said
                    note = _presence(response)
                    Console(stderr=True, highlight=False, soft_wrap=True).print(
                        f"[yellow]{note}[/]"
                    )
                    board.note = note
                if live is not None:
                    live.update(board.table(), refresh=True)
            return
        except grpc.RpcError as exc:
            assert isinstance(exc, grpc.Call)
            resumable = (
                exc.code() == grpc.StatusCode.UNAVAILABLE or error_code(exc) == "FELL_BEHIND"
            )
            failures += 1
            if not resumable or failures > RETRIES or printer.last == 0:
                raise
            Console(stderr=True).print(f"[dim]resuming after event {printer.last}…[/]")
            time.sleep(min(0.2 * 2**failures, 5))
