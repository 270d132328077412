"""A recorded deal, play by play: the one event stream for viewers, the store and live play.

``deal_events(deal, rules)`` replays one ``kingrec.v1.Deal`` through an engine twin and
yields what happened in order: the deal starting (declarer, contract, trumps, hands), each
card with its seat, its trick, the cards that were legal and the rule it broke if it broke
one, each trick won with its points, and the deal's end with the scores. It does not judge
the match (that is the validator's work) and replays illegal plays as played, so it serves
invalid records too. ``kingrec show``, ``kingrec.replay`` and, through them, the replay
stream and the store's pure-Python rows are built on it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from types import ModuleType

from . import _twins
from ._engine_types import END_INCOMPLETE, END_PLAYING, END_UNREADABLE, VERDICT_NAMES
from .boundary import engine_trump, replay_args, replayable
from .cards import cards_in
from .rules import Ruleset
from .v1 import record_pb2 as pb

__all__ = ["CardPlayed", "DealEnded", "DealEvent", "DealStarted", "TrickWon", "deal_events"]


@dataclass(frozen=True, slots=True)
class DealStarted:
    number: int  # 1-based
    declarer: int
    contract: int  # kingrec.v1.Contract number
    trump: int  # the suit the deal is played with, 0..3; -1 for none
    hands: tuple[int, ...]  # the card bytes as recorded, seat s at [13s:13s+13]
    playable: bool  # False: the record's deal cannot be replayed (bad deck, seat, contract)


@dataclass(frozen=True, slots=True)
class CardPlayed:
    play: int  # index into the deal's plays
    trick: int  # 1-based
    position: int  # 0 = led, 3 = last to the trick
    seat: int
    card: int
    legal: int  # mask of the cards that were legal
    broke: str | None  # the finding code of the rule the card broke, None when none

    @property
    def legal_cards(self) -> tuple[int, ...]:
        return tuple(cards_in(self.legal))


@dataclass(frozen=True, slots=True)
class TrickWon:
    trick: int  # 1-based
    leader: int
    cards: tuple[int, int, int, int]  # in order of play, leader first
    winner: int
    units: int  # scoring units the winner took (tricks, penalty cards, last tricks)
    points: int  # units times the contract's unit score


@dataclass(frozen=True, slots=True)
class DealEnded:
    end: int  # engine END_* code
    consumed: int  # plays that belong to the deal
    scores: tuple[int, int, int, int]
    revoker: int  # seat of a penalized revoke, or -1


DealEvent = DealStarted | CardPlayed | TrickWon | DealEnded


def deal_events(
    deal: pb.Deal, rules: Ruleset, *, number: int | None = None, engine: ModuleType | None = None
) -> Iterator[DealEvent]:
    """The events of one recorded deal, replayed under ``rules``.

    ``number`` overrides the deal's own number (the position in the match); ``engine`` picks
    an engine twin (default: ``kingrec._twins.ACTIVE``).
    """
    playable = replayable(deal)
    contract = int(deal.contract)
    start = DealStarted(
        deal.number if number is None else number,
        deal.declarer,
        contract,
        engine_trump(deal),
        tuple(deal.hands),
        playable,
    )
    yield start
    if not playable:
        yield DealEnded(END_UNREADABLE, 0, (0, 0, 0, 0), -1)
        return
    twin = engine or _twins.ACTIVE.engine
    args = replay_args(deal, rules)
    state = twin.Deal(args.hands, args.declarer, contract, args.trump, args.flags)
    unit = rules.unit_score(contract)
    trick: list[int] = []
    for index, card in enumerate(args.plays):
        seat, leader, tricks = state.to_play, state.leader, len(state.winners)
        code, legal = state.step(card, index == args.revoke_play)
        if card < 52:
            broke = VERDICT_NAMES[code] if code else None
            yield CardPlayed(index, tricks + 1, len(trick), seat, card, legal, broke)
            trick.append(card)
        if len(state.winners) > tricks:
            cards = (trick[0], trick[1], trick[2], trick[3])
            units = twin.trick_units(cards, tricks, contract)
            winner = state.winners[tricks]
            yield TrickWon(tricks + 1, leader, cards, winner, units, units * unit)
            trick.clear()
        if state.end != END_PLAYING:
            break
    else:
        state.end = END_INCOMPLETE
    scores = rules.deal_scores(contract, state.units, state.revoker)
    yield DealEnded(
        state.end, state.nplays, (scores[0], scores[1], scores[2], scores[3]), state.revoker
    )
