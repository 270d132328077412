"""The rules engine, pure Python: the readable reference twin.

Everything is plain ints: cards 0..51, hands and card sets as 52-bit masks,
suits 0..3 (trump -1 when there is none), contracts as ``kingrec.v1.Contract``
numbers, options as the ``F_*`` flag bits of ``kingrec.rules``. The Cython twin
(``_engine_c.pyx``) has the same functions with the same results.
"""

from __future__ import annotations

from collections.abc import Sequence

from ._engine_types import (
    END_ALL_TRICKS,
    END_EARLY,
    END_INCOMPLETE,
    END_REVOKE,
    END_UNREADABLE,
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
from .rules import (
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
)

__all__ = ["judge_play", "legal_plays", "replay_deal", "trick_units", "trick_winner"]

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
    held = [0, 0, 0, 0]
    for i in range(52):
        held[i // 13] |= 1 << hands[i]
    penalty = PENALTY_MASKS[contract]
    units = [0, 0, 0, 0]
    winners = bytearray()
    violations: list[Violation] = []
    played = 0  # cards of completed tricks
    trick: list[int] = []
    leader = declarer
    for index, card in enumerate(plays):
        seat = (leader + len(trick)) % 4
        if card >= 52:
            violations.append(Violation(index, seat, card, NOT_A_CARD, 0))
            return DealReplay(END_UNREADABLE, index, bytes(winners), (0, 0, 0, 0), -1, violations)
        code, legal = judge_play(held[seat], trick, card, contract, trump, flags, played)
        if index == revoke_play and flags & F_REVOKE_PENALIZE:
            if code in (LEGAL, NOT_IN_HAND):
                violations.append(
                    Violation(index, seat, card, code or REVOKE_MARK_ON_LEGAL_PLAY, legal)
                )
            return DealReplay(END_REVOKE, index + 1, bytes(winners), (0, 0, 0, 0), seat, violations)
        if code != LEGAL:
            violations.append(Violation(index, seat, card, code, legal))
        held[seat] &= ~(1 << card)
        trick.append(card)
        if len(trick) < 4:
            continue
        winner = (leader + trick_winner(trick, trump)) % 4
        units[winner] += trick_units(trick, len(winners), contract)
        winners.append(winner)
        for c in trick:
            played |= 1 << c
        trick.clear()
        leader = winner
        if len(winners) == 13:
            return DealReplay(
                END_ALL_TRICKS, index + 1, bytes(winners), _tuple4(units), -1, violations
            )
        if flags & F_EARLY_END and played & penalty == penalty:
            return DealReplay(END_EARLY, index + 1, bytes(winners), _tuple4(units), -1, violations)
    return DealReplay(END_INCOMPLETE, len(plays), bytes(winners), _tuple4(units), -1, violations)


def _tuple4(units: list[int]) -> tuple[int, int, int, int]:
    return (units[0], units[1], units[2], units[3])
