"""One deal of a match being built: ``DealBuilder``, played card by card."""

from __future__ import annotations

from collections.abc import Callable

from .._engine_types import END_INCOMPLETE, LEGAL, NOT_IN_HAND, PlayedDeal
from ..boundary import deal_to_proto, end_to_proto
from ..cards import card_symbol
from ..contracts import Contract
from ..errors import IllegalPlayError, RecordBuildError
from ..findings import CODES
from ..game import DealPlay
from ..rules import RevokeRule
from ..v1 import record_pb2 as pb
from .inputs import CardLike, read_card, read_milliseconds

__all__ = ["DealBuilder"]

_ENDED = {
    pb.DEAL_END_ALL_TRICKS: "after thirteen tricks",
    pb.DEAL_END_EARLY: "when the last penalty card fell",
    pb.DEAL_END_REVOKE: "at the revoke",
}


class DealBuilder:
    """One deal of a ``MatchBuilder`` being played, card by card (``MatchBuilder.deal``).

    ``play`` each card in order; the deal ends by itself after thirteen tricks or when the
    last penalty card falls (ruleset ``early_end``). ``legal_cards`` says what the seat to
    play may play. Once ``over``, the match builder takes the next deal.

    The match is known only through two calls it hands over, so the dependency runs one way
    (match.py builds deals; deal.py knows nothing of matches): ``check_open`` raises when the
    match is closed, ``on_over`` takes the deal once it has ended.
    """

    def __init__(
        self,
        check_open: Callable[[], None],
        on_over: Callable[[DealBuilder], None],
        number: int,
        hands: bytes,
        declarer: int,
        contract: Contract,
        trump: int,
        trump_think_ms: int | None,
        play: DealPlay,
    ) -> None:
        self._check_open = check_open
        self._on_over = on_over
        self.number = number
        """The deal's number in the match, 1-based."""
        self.declarer = declarer
        """The seat that declared the contract and leads the first trick."""
        self.contract = contract
        """The contract the deal is played in."""
        self.trump = trump
        """The trump suit 0..3 (clubs, diamonds, hearts, spades); -1 outside koz."""
        self._hands = hands
        self._trump_think_ms = trump_think_ms
        self._state = play
        self._plays = bytearray()
        self._timed: bool | None = None  # whether plays carry think times; None before any
        self._think: list[int] = []
        self._auto: list[int] = []
        self._revoke_play = -1
        self._abandoned = False

    # -- the deal's state, for the client ------------------------------------------------

    @property
    def to_play(self) -> int:
        """The seat whose card comes next."""
        return self._state.to_play

    @property
    def trick(self) -> list[int]:
        """The cards on the table, leader first (empty between tricks)."""
        return list(self._state.trick)

    @property
    def plays(self) -> tuple[int, ...]:
        """The cards played so far, in order, as card codes."""
        return tuple(self._plays)

    @property
    def over(self) -> bool:
        """Whether the deal has ended (thirteen tricks, the early end, a revoke, abandoned)."""
        return self._state.over or self._abandoned

    @property
    def scores(self) -> list[int]:
        """Points per seat so far (for an ended deal, its scores)."""
        return self._state.rules.deal_scores(
            self.contract, self._state.units, self._state.deal.revoker
        )

    def legal_cards(self) -> list[int]:
        """The cards the seat to play may play, as card codes, lowest first."""
        return [] if self.over else self._state.legal_cards()

    # -- playing -------------------------------------------------------------------------

    def play(
        self, card: CardLike, *, think_ms: int | None = None, auto: bool = False
    ) -> int | None:
        """Play ``card`` for the seat to play; returns the trick's winner when it completes.

        ``think_ms`` is how long the player took (give it for every play of the deal or for
        none); ``auto`` marks a card the server played for a player out of time. Raises
        ``IllegalPlayError`` (with the rule and the legal cards) for a card the rules do not
        allow, ``RecordBuildError`` when the deal is already over.
        """
        index, where = self._before_play(card, think_ms)
        code = read_card(card, where)
        try:
            winner = self._state.push(code)
        except IllegalPlayError as exc:
            legal = " ".join(card_symbol(c) for c in exc.legal) or "none"
            raise IllegalPlayError(
                f"{where}: seat {self.to_play} may not play {card_symbol(code)} ({exc.verdict}: "
                f"{CODES.get(exc.verdict, exc.verdict)}); legal: {legal}",
                exc.verdict,
                exc.legal,
            ) from None
        self._after_play(code, index, think_ms, auto)
        return winner

    def revoke(self, card: CardLike, *, think_ms: int | None = None, auto: bool = False) -> None:
        """Record ``card`` as a penalized revoke (rulesets with ``revoke=PENALIZE`` only).

        The seat to play played a card the rules did not allow and the table penalized it:
        the deal ends there and the revoker scores the contract's whole total against them.
        ``RecordBuildError`` when the ruleset rejects revokes, or the card was legal or not
        even held.
        """
        index, where = self._before_play(card, think_ms)
        code = read_card(card, where)
        rules = self._state.rules
        if rules.revoke is not RevokeRule.PENALIZE:
            raise RecordBuildError(
                f"{where}: the ruleset rejects illegal plays (revoke={rules.revoke.name}); "
                "a revoke cannot be recorded"
            )
        verdict, _legal = self._state.deal.judge(code)
        if verdict in (LEGAL, NOT_IN_HAND):
            why = "a legal play" if verdict == LEGAL else "not in their hand"
            raise RecordBuildError(
                f"{where}: seat {self.to_play}'s {card_symbol(code)} is {why}, so no revoke"
            )
        self._state.deal.step(code, True)  # ends the deal: END_REVOKE, the revoker set
        self._revoke_play = index
        self._after_play(code, index, think_ms, auto)

    def _where(self, index: int) -> str:
        return f"deal {self.number} ({self.contract.label}), play {index} (trick {index // 4 + 1})"

    def _before_play(self, card: object, think_ms: int | None) -> tuple[int, str]:
        """Checks common to every play; the play's index and how errors name it."""
        self._check_open()
        index = len(self._plays)
        where = self._where(index)
        if self.over:
            end = end_to_proto(self._state.end)
            raise RecordBuildError(
                f"{where}: the deal ended {_ENDED.get(end, 'already')} ({index} plays); "
                f"{card!r} comes after its end"
            )
        if think_ms is not None:
            read_milliseconds(think_ms, f"{where}, think_ms")
        if self._timed is not None and self._timed != (think_ms is not None):
            had = "a think time" if self._timed else "no think time"
            raise RecordBuildError(
                f"{where}: give a think time for every play of a deal or for none; the plays "
                f"before this one have {had}"
            )
        return index, where

    def _after_play(self, card: int, index: int, think_ms: int | None, auto: bool) -> None:
        self._plays.append(card)
        self._timed = think_ms is not None
        if think_ms is not None:
            self._think.append(think_ms)
        if auto:
            self._auto.append(index)
        if self._state.over:
            self._on_over(self)

    def _record(self) -> pb.Deal:
        """The deal as the record holds it (once it is over)."""
        state = self._state
        played = PlayedDeal(
            declarer=self.declarer,
            contract=self.contract,
            trump=self.trump,
            hands=self._hands,
            plays=bytes(self._plays),
            think_ms=self._think,
            auto_plays=self._auto,
            end=END_INCOMPLETE if self._abandoned else state.end,  # recorded as ABANDONED
            scores=self.scores,
            trump_think_ms=-1 if self._trump_think_ms is None else self._trump_think_ms,
            revoke_play=self._revoke_play,
        )
        deal = pb.Deal()
        deal_to_proto(deal, state.rules, self.number, played)
        return deal
