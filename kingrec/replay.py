"""A match replayed for viewers: every trick with who played what, who won, the points.

Built on ``kingrec.events.deal_events``. Unlike the validator this does not judge; it lays
out what happened, so it also serves records with illegal plays (they are replayed as
played, and each card carries the rule it broke).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from .boundary import end_to_proto, ruleset_from_proto
from .events import CardPlayed, DealEnded, DealStarted, TrickWon, deal_events
from .rules import Ruleset
from .v1 import record_pb2 as pb

__all__ = ["DealView", "TrickView", "replay_match"]


@dataclass(frozen=True)
class TrickView:
    number: int  # 1-based
    leader: int
    cards: tuple[int, ...]  # in order of play, leader first
    winner: int | None  # None for an unfinished trick
    units: int  # scoring units the winner took
    plays: tuple[CardPlayed, ...] = ()  # the cards with their legal sets and broken rules


@dataclass
class DealView:
    number: int
    declarer: int
    contract: int
    trump: int  # engine suit 0..3, -1 for none
    hands: tuple[int, ...]  # 52 card codes, seat s at [13s:13s+13]
    tricks: list[TrickView] = field(default_factory=list)
    scores: list[int] = field(default_factory=lambda: [0, 0, 0, 0])
    totals: list[int] = field(default_factory=lambda: [0, 0, 0, 0])  # running, after this deal
    end: int = 0  # kingrec.v1.DealEnd of the replay
    revoker: int = -1
    playable: bool = True  # False when the record's deal cannot be replayed


def replay_match(match: pb.Match, rules: Ruleset | None = None) -> Iterator[DealView]:
    """The deals of ``match`` with their tricks and running totals.

    ``rules`` defaults to the match's own ruleset (``RulesetError`` when it has none usable).
    """
    if rules is None:
        rules = ruleset_from_proto(match.ruleset)
    totals = [0, 0, 0, 0]
    for deal in match.deals:
        view: DealView | None = None
        open_trick: list[CardPlayed] = []
        for event in deal_events(deal, rules):
            if isinstance(event, DealStarted):
                view = DealView(
                    event.number, event.declarer, event.contract, event.trump, event.hands
                )
                view.playable = event.playable
            elif isinstance(event, CardPlayed):
                open_trick.append(event)
            elif isinstance(event, TrickWon):
                assert view is not None
                view.tricks.append(
                    TrickView(
                        event.trick,
                        event.leader,
                        event.cards,
                        event.winner,
                        event.units,
                        tuple(open_trick),
                    )
                )
                open_trick = []
            elif isinstance(event, DealEnded):
                assert view is not None
                if open_trick:
                    first = open_trick[0]
                    cards = tuple(p.card for p in open_trick)
                    view.tricks.append(
                        TrickView(first.trick, first.seat, cards, None, 0, tuple(open_trick))
                    )
                if view.playable:
                    view.scores = list(event.scores)
                    view.end, view.revoker = end_to_proto(event.end), event.revoker
                totals = [a + b for a, b in zip(totals, view.scores, strict=True)]
                view.totals = list(totals)
        assert view is not None
        yield view
