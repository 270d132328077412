"""Playing a deal card by card: the state bots, the simulator and viewers step through.

``DealPlay`` keeps the hands, the trick on the table and the tricks won, and asks the
engine which cards are legal. It only accepts legal cards: records of illegal play are
judged by the validator, not built here.
"""

from __future__ import annotations

from . import engine
from ._engine_types import END_ALL_TRICKS, END_EARLY
from .cards import card_symbol, mask_of
from .contracts import PENALTY_MASKS, Contract
from .rules import F_EARLY_END, Ruleset

__all__ = ["DealPlay", "IllegalPlayError"]


class IllegalPlayError(ValueError):
    """A card that may not be played now."""


class DealPlay:
    """One deal in progress, from the declarer's lead to its end."""

    def __init__(
        self, rules: Ruleset, hands: bytes, declarer: int, contract: int, trump: int = -1
    ) -> None:
        if len(hands) != 52 or mask_of(hands) != (1 << 52) - 1:
            raise ValueError("hands must be 52 bytes that partition the deck")
        if contract == Contract.KOZ and not 0 <= trump <= 3:
            raise ValueError("a koz deal needs a trump suit (0..3)")
        self.rules = rules
        self.contract = contract
        self.trump = trump if contract == Contract.KOZ else -1
        self.flags = rules.deal_flags(contract)
        self.held = [mask_of(hands[13 * s : 13 * s + 13]) for s in range(4)]
        self.leader = declarer
        self.trick: list[int] = []
        self.played = 0  # cards of completed tricks
        self.plays = bytearray()
        self.winners = bytearray()
        self.units = [0, 0, 0, 0]
        self.end = 0  # END_ALL_TRICKS or END_EARLY once over

    @property
    def to_play(self) -> int:
        return (self.leader + len(self.trick)) % 4

    @property
    def over(self) -> bool:
        return self.end != 0

    def legal_plays(self) -> int:
        """The mask of cards the seat to play may play."""
        legal: int = engine.legal_plays(
            self.held[self.to_play], self.trick, self.contract, self.trump, self.flags, self.played
        )
        return legal

    def push(self, card: int, legal: int | None = None) -> int | None:
        """Play ``card`` for the seat to play; returns the trick's winner when it completes.

        ``legal`` may pass ``legal_plays()`` of this very state when the caller already has
        it, which saves asking the engine again.
        """
        if self.end:
            raise IllegalPlayError("the deal is over")
        trick = self.trick
        seat = (self.leader + len(trick)) % 4
        if legal is None:
            legal = self.legal_plays()
        if not legal >> card & 1:
            raise IllegalPlayError(f"seat {seat} may not play {card_symbol(card)} now")
        self.held[seat] &= ~(1 << card)
        trick.append(card)
        self.plays.append(card)
        if len(trick) < 4:
            return None
        winner: int = (self.leader + engine.trick_winner(trick, self.trump)) % 4
        self.units[winner] += engine.trick_units(trick, len(self.winners), self.contract)
        self.winners.append(winner)
        self.played |= (1 << trick[0]) | (1 << trick[1]) | (1 << trick[2]) | (1 << trick[3])
        trick.clear()
        self.leader = winner
        if len(self.winners) == 13:
            self.end = END_ALL_TRICKS
        elif (
            self.flags & F_EARLY_END
            and self.played & PENALTY_MASKS[self.contract] == PENALTY_MASKS[self.contract]
        ):
            self.end = END_EARLY
        return winner

    def scores(self) -> list[int]:
        unit = self.rules.unit_score(self.contract)
        return [u * unit for u in self.units]
