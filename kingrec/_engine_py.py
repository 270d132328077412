"""The rules engine, pure Python: the readable reference twin (the spec in code).

Everything is plain ints: cards 0..51, hands and card sets as 52-bit masks, suits 0..3
(trump -1 when there is none), contracts as ``kingrec.v1.Contract`` numbers, options as the
``F_*`` flag bits of ``kingrec._engine_types``. The compiled twin (``_engine_c.pyx`` over
``_core.pxd``) has the same functions and class with the same results.

``judge_play`` is the filter chain of RULES.md "Which rule a bad card breaks"; ``Deal`` plays
one deal card by card (closing tricks, ending early); ``replay_deal`` judges a recorded deal.
"""

from __future__ import annotations

from collections.abc import Sequence

from ._engine_types import (
    END_ALL_TRICKS,
    END_EARLY,
    END_INCOMPLETE,
    END_PLAYING,
    END_REVOKE,
    END_UNREADABLE,
    F_EARLY_END,
    F_HEART_LEAD_BAN,
    F_MUST_OVERTRUMP,
    F_MUST_RUFF,
    F_RAISE_ON_TRUMP_LEAD,
    F_REVOKE_PENALIZE,
    F_RIFKI_HEART_AFTER_KING,
    F_TRUMP_LEAD_BREAK,
    F_VOID_DISCARD,
    F_WITHHOLDING,
    HEART_LEAD_BANNED,
    LEGAL,
    MUST_DISCARD_PENALTY_CARD,
    MUST_FOLLOW_SUIT,
    MUST_GIVE_PENALTY_CARD,
    MUST_OVERTRUMP,
    MUST_RAISE_TRUMP,
    MUST_RUFF,
    NOT_A_CARD,
    NOT_IN_HAND,
    REVOKE_MARK_ON_LEGAL_PLAY,
    TRUMP_LEAD_BANNED,
    DealReplay,
    Violation,
)
from .cards import HEARTS, SUIT_MASKS
from .contracts import PENALTY_MASKS, Contract

__all__ = ["Deal", "judge_play", "legal_plays", "replay_deal", "trick_units", "trick_winner"]

_HEARTS = SUIT_MASKS[HEARTS]


def _above(card: int) -> int:
    """The cards of ``card``'s suit that outrank it."""
    return SUIT_MASKS[card // 13] & ~((2 << card) - 1)


def _below(card: int) -> int:
    """The cards of ``card``'s suit that it outranks."""
    return SUIT_MASKS[card // 13] & ((1 << card) - 1)


def _highest_of_suit(trick: Sequence[int], suit: int) -> int:
    best = -1
    for card in trick:
        if card // 13 == suit and card > best:
            best = card
    return best


def judge_play(
    hand: int, trick: Sequence[int], card: int, contract: int, trump: int, flags: int, played: int
) -> tuple[int, int]:
    """Judge ``card`` played from ``hand`` onto ``trick`` (cards so far, leader first).

    ``played`` is the mask of cards in earlier tricks. Returns the verdict (``LEGAL`` or the
    code of the first filter that removed the card) and the mask of legal cards. Each filter
    keeps only the cards it names and is skipped when it would keep none.
    """
    code = LEGAL if hand >> card & 1 else NOT_IN_HAND
    cands = hand

    def keep(subset: int, reason: int) -> None:
        nonlocal cands, code
        if subset:
            if code == LEGAL and cands >> card & 1 and not subset >> card & 1:
                code = reason
            cands = subset

    koz = contract == Contract.KOZ
    if not trick:
        if koz and flags & F_TRUMP_LEAD_BREAK and not played & SUIT_MASKS[trump]:
            keep(cands & ~SUIT_MASKS[trump], TRUMP_LEAD_BANNED)
        elif not koz and flags & F_HEART_LEAD_BAN and not played & _HEARTS:
            keep(cands & ~_HEARTS, HEART_LEAD_BANNED)
        return code, cands

    led = trick[0] // 13
    following = cands & SUIT_MASKS[led]
    if following:
        keep(following, MUST_FOLLOW_SUIT)
        if koz and led == trump and flags & F_RAISE_ON_TRUMP_LEAD:
            keep(cands & _above(_highest_of_suit(trick, trump)), MUST_RAISE_TRUMP)
        elif not koz and flags & F_WITHHOLDING:
            covered = PENALTY_MASKS[contract] & _below(_highest_of_suit(trick, led))
            keep(cands & covered, MUST_GIVE_PENALTY_CARD)
    elif koz:
        if flags & F_MUST_RUFF:
            keep(cands & SUIT_MASKS[trump], MUST_RUFF)
        top_trump = _highest_of_suit(trick, trump)
        if flags & F_MUST_OVERTRUMP and top_trump >= 0:
            keep(cands & _above(top_trump), MUST_OVERTRUMP)
    elif flags & F_VOID_DISCARD:
        penalty = cands & PENALTY_MASKS[contract]
        if penalty:
            keep(penalty, MUST_DISCARD_PENALTY_CARD)
        elif flags & F_RIFKI_HEART_AFTER_KING:
            keep(cands & _HEARTS, MUST_DISCARD_PENALTY_CARD)
    return code, cands


def legal_plays(
    hand: int, trick: Sequence[int], contract: int, trump: int, flags: int, played: int
) -> int:
    """The mask of cards ``hand`` may play onto ``trick``."""
    # Judging a card the hand does not hold changes no filter, only the verdict.
    return judge_play(hand, trick, 52, contract, trump, flags, played)[1]


def trick_winner(trick: Sequence[int], trump: int) -> int:
    """Position in ``trick`` (0 = leader) of the card that wins it."""
    best = 0
    for i in range(1, len(trick)):
        card, top = trick[i], trick[best]
        if card // 13 == top // 13:
            if card > top:
                best = i
        elif card // 13 == trump:
            best = i
    return best


def trick_units(trick: Sequence[int], trick_index: int, contract: int) -> int:
    """Scoring units the winner of a complete trick takes (tricks, penalty cards, last tricks)."""
    if contract == Contract.KOZ or contract == Contract.EL_ALMAZ:
        return 1
    if contract == Contract.SON_IKI:
        return 1 if trick_index >= 11 else 0
    mask = PENALTY_MASKS[contract]
    return sum(1 for card in trick if mask >> card & 1)


class Deal:
    """One deal being played, card by card, from the declarer's lead to its end.

    ``hands`` is 52 card codes (seat s holds ``hands[13*s:13*s+13]``); the caller checks
    that they partition the deck. ``push`` plays a card as played (legal or not); ``step``
    plays a recorded card the way a record is judged. ``end`` is ``END_PLAYING`` until the
    deal is over.
    """

    __slots__ = (
        "contract",
        "end",
        "flags",
        "held",
        "leader",
        "nplays",
        "penalty",
        "played",
        "revoker",
        "trick",
        "trump",
        "units",
        "winners",
    )

    def __init__(
        self, hands: Sequence[int], declarer: int, contract: int, trump: int, flags: int
    ) -> None:
        held = [0, 0, 0, 0]
        for i in range(52):
            held[i // 13] |= 1 << hands[i]
        self.held = held  # each seat's cards still in hand
        self.played = 0  # cards of completed tricks
        self.penalty = PENALTY_MASKS[contract]
        self.flags = flags
        self.contract = contract
        self.trump = trump
        self.leader = declarer  # the seat that led the trick on the table
        self.trick: list[int] = []  # the trick on the table, leader first
        self.winners = bytearray()  # winning seat of each completed trick
        self.units = [0, 0, 0, 0]  # scoring units taken per seat
        self.end = END_PLAYING
        self.revoker = -1  # seat of a penalized revoke
        self.nplays = 0  # plays that belong to the deal

    @property
    def to_play(self) -> int:
        return (self.leader + len(self.trick)) % 4

    def judge(self, card: int) -> tuple[int, int]:
        """The verdict on ``card`` played now by the seat to play, and the legal cards."""
        return judge_play(
            self.held[self.to_play],
            self.trick,
            card,
            self.contract,
            self.trump,
            self.flags,
            self.played,
        )

    def legal(self) -> int:
        """The mask of cards the seat to play may play."""
        return self.judge(52)[1]

    def push(self, card: int) -> int:
        """Play ``card`` for the seat to play, as played; close the trick on its fourth card.

        Returns the trick's winning seat, or -1 while the trick is open. The deal ends after
        thirteen tricks, or early once every penalty card has fallen (``F_EARLY_END``).
        """
        trick = self.trick
        self.held[(self.leader + len(trick)) % 4] &= ~(1 << card)
        trick.append(card)
        self.nplays += 1
        if len(trick) < 4:
            return -1
        winner = (self.leader + trick_winner(trick, self.trump)) % 4
        self.units[winner] += trick_units(trick, len(self.winners), self.contract)
        self.winners.append(winner)
        for c in trick:
            self.played |= 1 << c
        trick.clear()
        self.leader = winner
        if len(self.winners) == 13:
            self.end = END_ALL_TRICKS
        elif self.flags & F_EARLY_END and self.played & self.penalty == self.penalty:
            self.end = END_EARLY
        return winner

    def step(self, card: int, revoke_mark: bool = False) -> tuple[int, int]:
        """One recorded play, judged and played as played: (finding code, legal cards).

        The code is ``LEGAL`` when the play gives no finding. A byte that is no card stops
        the replay (``END_UNREADABLE``, scores void). A play the record marks as a revoke
        under ``F_REVOKE_PENALIZE`` ends the deal there (``END_REVOKE``): the revoker will
        score the contract's full total and the deal's other scores are void; the mark is a
        finding only when the card was in fact legal (or not even held).
        """
        if card >= 52:
            self.end = END_UNREADABLE
            self.units = [0, 0, 0, 0]
            return NOT_A_CARD, 0
        seat = self.to_play
        code, legal = self.judge(card)
        if revoke_mark and self.flags & F_REVOKE_PENALIZE:
            self.end = END_REVOKE
            self.revoker = seat
            self.nplays += 1
            self.units = [0, 0, 0, 0]
            if code == LEGAL:
                return REVOKE_MARK_ON_LEGAL_PLAY, legal
            return (NOT_IN_HAND if code == NOT_IN_HAND else LEGAL), legal
        self.push(card)
        return code, legal


def replay_deal(
    hands: bytes,
    plays: bytes,
    declarer: int,
    contract: int,
    trump: int,
    flags: int,
    revoke_play: int = -1,
) -> DealReplay:
    """Replay one deal's plays from the declarer's lead, judging every card.

    ``hands`` is 52 bytes (seat s holds ``hands[13*s:13*s+13]``) and must partition the
    deck; the caller checks that. Illegal plays are recorded and play goes on as played.
    ``revoke_play`` is the index of a play the record marks as a penalized revoke (-1: none).
    """
    deal = Deal(hands, declarer, contract, trump, flags)
    violations: list[Violation] = []
    for index, card in enumerate(plays):
        seat = deal.to_play
        code, legal = deal.step(card, index == revoke_play)
        if code != LEGAL:
            violations.append(Violation(index, seat, card, code, legal))
        if deal.end != END_PLAYING:
            break
    else:
        deal.end = END_INCOMPLETE
    units = deal.units
    return DealReplay(
        deal.end,
        deal.nplays,
        bytes(deal.winners),
        (units[0], units[1], units[2], units[3]),
        deal.revoker,
        violations,
    )
