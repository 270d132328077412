"""Playing a deal card by card: the state bots, clients and live matches step through.

``DealPlay`` keeps the hands, the trick on the table and the tricks won (an engine twin's
``Deal`` underneath) and only accepts legal cards: a card that breaks a rule raises
``IllegalPlayError`` naming the rule and the legal cards. Records of illegal play are judged
by the validator, not built here.
"""

from __future__ import annotations

from types import ModuleType

from . import _twins
from ._engine_types import END_PLAYING, VERDICT_NAMES
from .cards import card_symbol, cards_in, mask_of
from .contracts import Contract
from .errors import IllegalPlayError
from .rules import Ruleset

__all__ = ["DealPlay", "IllegalPlayError"]


class DealPlay:
    """One deal in progress, from the declarer's lead to its end."""

    def __init__(
        self,
        rules: Ruleset,
        hands: bytes,
        declarer: int,
        contract: int,
        trump: int = -1,
        *,
        engine: ModuleType | None = None,
    ) -> None:
        if len(hands) != 52 or max(hands) >= 52 or mask_of(hands) != (1 << 52) - 1:
            raise ValueError("hands must be 52 bytes that partition the deck")
        if contract == Contract.KOZ and not 0 <= trump <= 3:
            raise ValueError("a koz deal needs a trump suit (0..3)")
        if not 0 <= declarer <= 3:
            raise ValueError(f"declarer seat {declarer} does not exist (0..3)")
        self.rules = rules
        self.contract = contract
        self.trump = trump if contract == Contract.KOZ else -1
        self.flags = rules.deal_flags(contract)
        self.deal = (engine or _twins.ACTIVE.engine).Deal(
            hands, declarer, contract, self.trump, self.flags
        )
        self.plays = bytearray()

    # The deal's state, read by bots and viewers.
    @property
    def held(self) -> list[int]:
        return self.deal.held  # type: ignore[no-any-return]

    @property
    def trick(self) -> list[int]:
        return self.deal.trick  # type: ignore[no-any-return]

    @property
    def played(self) -> int:
        return self.deal.played  # type: ignore[no-any-return]

    @property
    def leader(self) -> int:
        return self.deal.leader  # type: ignore[no-any-return]

    @property
    def winners(self) -> bytes:
        return bytes(self.deal.winners)

    @property
    def units(self) -> list[int]:
        return list(self.deal.units)

    @property
    def end(self) -> int:
        return self.deal.end  # type: ignore[no-any-return]

    @property
    def to_play(self) -> int:
        return self.deal.to_play  # type: ignore[no-any-return]

    @property
    def over(self) -> bool:
        return self.deal.end != END_PLAYING  # type: ignore[no-any-return]

    def legal_plays(self) -> int:
        """The mask of cards the seat to play may play."""
        return self.deal.legal()  # type: ignore[no-any-return]

    def legal_cards(self) -> list[int]:
        """The cards the seat to play may play, as card codes, lowest first (none once the
        deal is over): ``[card_name(c) for c in play.legal_cards()] == ['2C', 'QC']``."""
        if self.deal.end != END_PLAYING:
            return []
        return list(cards_in(self.deal.legal()))

    def push(self, card: int, legal: int | None = None) -> int | None:
        """Play ``card`` for the seat to play; returns the trick's winner when it completes.

        ``legal`` may pass ``legal_plays()`` of this very state when the caller already has
        it, which saves asking the engine again.
        """
        deal = self.deal
        if not 0 <= card < 52:
            raise IllegalPlayError(f"{card} is not a card code (0..51)", "NOT_A_CARD")
        if deal.end != END_PLAYING:
            raise IllegalPlayError("the deal is over", "PLAY_AFTER_DEAL_END")
        if legal is None or not legal >> card & 1:
            code, legal = deal.judge(card)
            if code:
                raise IllegalPlayError(
                    f"seat {deal.to_play} may not play {card_symbol(card)} now",
                    VERDICT_NAMES[code],
                    tuple(cards_in(legal)),
                )
        self.plays.append(card)
        winner: int = deal.push(card)
        return None if winner < 0 else winner

    def scores(self) -> list[int]:
        return self.rules.deal_scores(self.contract, self.deal.units)
