"""A match replayed for viewers: every trick with who played what, who won, the points.

Unlike the validator this does not judge; it lays out what happened, so it also serves
records with illegal plays (they are replayed as played).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from . import engine
from .contracts import Contract
from .rules import Ruleset
from .v1 import record_pb2 as pb
from .validator import compute_deal_scores

__all__ = ["DealView", "TrickView", "replay_match"]


@dataclass(frozen=True)
class TrickView:
    number: int  # 1-based
    leader: int
    cards: tuple[int, ...]  # in order of play, leader first
    winner: int | None  # None for an unfinished trick
    units: int  # scoring units the winner took


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


def replay_match(match: pb.Match, rules: Ruleset) -> Iterator[DealView]:
    """The deals of ``match`` with their tricks and running totals."""
    totals = [0, 0, 0, 0]
    for deal in match.deals:
        trump = deal.trump - 1 if 1 <= deal.trump <= 4 else -1
        view = DealView(deal.number, deal.declarer, deal.contract, trump, tuple(deal.hands))
        if (
            len(deal.hands) != 52
            or len(set(deal.hands)) != 52
            or max(deal.hands) >= 52
            or deal.contract not in Contract._value2member_map_
            or deal.declarer > 3
            or (int(deal.contract) == Contract.KOZ and trump < 0)
        ):
            view.playable = False
            view.totals = list(totals)
            yield view
            continue
        revoke = deal.revoke_play if deal.HasField("revoke_play") else -1
        result = engine.replay_deal(
            deal.hands,
            deal.plays,
            deal.declarer,
            deal.contract,
            trump,
            rules.deal_flags(deal.contract),
            revoke,
        )
        leader = deal.declarer
        plays = deal.plays[: result.consumed]
        for t in range(0, len(plays), 4):
            cards = tuple(plays[t : t + 4])
            number = t // 4 + 1
            if len(cards) == 4 and number <= len(result.winners):
                winner = result.winners[number - 1]
                units = engine.trick_units(cards, number - 1, deal.contract)
                view.tricks.append(TrickView(number, leader, cards, winner, units))
                leader = winner
            else:
                view.tricks.append(TrickView(number, leader, cards, None, 0))
        view.scores = compute_deal_scores(result, rules, deal.contract)
        view.end, view.revoker = result.end, result.revoker
        totals = [a + b for a, b in zip(totals, view.scores, strict=True)]
        view.totals = list(totals)
        yield view
