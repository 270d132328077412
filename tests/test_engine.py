"""The rules engine, option by option (RULES.md), on both twins."""

from __future__ import annotations

from types import ModuleType

import pytest

from kingrec._engine_types import (
    END_ALL_TRICKS,
    END_EARLY,
    END_INCOMPLETE,
    END_REVOKE,
    HEART_LEAD_BANNED,
    LEGAL,
    MUST_DISCARD_PENALTY_CARD,
    MUST_FOLLOW_SUIT,
    MUST_GIVE_PENALTY_CARD,
    MUST_OVERTRUMP,
    MUST_RAISE_TRUMP,
    MUST_RUFF,
    NOT_IN_HAND,
    REVOKE_MARK_ON_LEGAL_PLAY,
    TRUMP_LEAD_BANNED,
)
from kingrec.cards import CLUBS, DIAMONDS, HEARTS, SPADES, mask_of, parse_card, parse_cards
from kingrec.contracts import Contract
from kingrec.rules import RevokeRule, preset

CLASSIC = preset("classic")
KOZ, KIZ, KUPA, RIFKI, ERKEK = (
    Contract.KOZ,
    Contract.KIZ,
    Contract.KUPA,
    Contract.RIFKI,
    Contract.ERKEK,
)


def hand(text: str) -> int:
    return mask_of(parse_cards(text))


def judge(
    twin: ModuleType,
    held: str,
    trick: str,
    card: str,
    contract: int,
    trump: int = -1,
    rules: object = CLASSIC,
    played: str = "",
) -> tuple[int, set[str]]:
    flags = rules.deal_flags(contract)  # type: ignore[attr-defined]
    code, legal = twin.judge_play(
        hand(held), parse_cards(trick), parse_card(card), contract, trump, flags, hand(played)
    )
    names = {n for n in held.split() if legal >> parse_card(n) & 1}
    return code, names


# -- following suit and the worked example ------------------------------------------------


def test_kiz_worked_example_void_player_discards_a_queen(twin: ModuleType) -> None:
    code, legal = judge(twin, "QS 3D QD", "2C 5C 9C", "QS", KIZ)
    assert code == LEGAL
    assert legal == {"QS", "QD"}


def test_kiz_worked_example_covered_queen_must_be_given(twin: ModuleType) -> None:
    code, legal = judge(twin, "QD 3D 4S", "AD", "3D", KIZ)
    assert code == MUST_GIVE_PENALTY_CARD
    assert legal == {"QD"}


def test_queen_above_the_trick_may_be_saved(twin: ModuleType) -> None:
    code, legal = judge(twin, "QD 3D", "9D", "3D", KIZ)
    assert code == LEGAL
    assert legal == {"QD", "3D"}


def test_must_follow_suit_when_holding_it(twin: ModuleType) -> None:
    code, legal = judge(twin, "2C 7C KH", "AC", "KH", Contract.EL_ALMAZ)
    assert code == MUST_FOLLOW_SUIT
    assert legal == {"2C", "7C"}


def test_card_not_in_hand_is_reported_first(twin: ModuleType) -> None:
    code, legal = judge(twin, "2C 7C", "AC", "KH", Contract.EL_ALMAZ)
    assert code == NOT_IN_HAND
    assert legal == {"2C", "7C"}


def test_leader_may_play_anything_without_bans(twin: ModuleType) -> None:
    code, legal = judge(twin, "2C AH QS", "", "AH", Contract.SON_IKI)
    assert (code, legal) == (LEGAL, {"2C", "AH", "QS"})


# -- koz options --------------------------------------------------------------------------


def test_must_ruff_when_void_and_holding_trump(twin: ModuleType) -> None:
    code, legal = judge(twin, "2S 9H 3D", "AC", "3D", KOZ, SPADES)
    assert code == MUST_RUFF
    assert legal == {"2S"}


def test_underruff_is_fine_without_overtrump(twin: ModuleType) -> None:
    code, legal = judge(twin, "2S 9S 3D", "AC KS", "2S", KOZ, SPADES)
    assert code == LEGAL
    assert legal == {"2S", "9S"}


def test_without_must_ruff_a_void_player_may_discard(twin: ModuleType) -> None:
    rules = CLASSIC.replace(must_ruff=False)
    code, _ = judge(twin, "2S 3D", "AC", "3D", KOZ, SPADES, rules)
    assert code == LEGAL


def test_must_overtrump_a_trump_on_the_trick(twin: ModuleType) -> None:
    rules = CLASSIC.replace(must_overtrump=True)
    code, legal = judge(twin, "2S AS 3D", "AC KS", "2S", KOZ, SPADES, rules)
    assert code == MUST_OVERTRUMP
    assert legal == {"AS"}


def test_overtrump_rule_skipped_when_no_higher_trump(twin: ModuleType) -> None:
    rules = CLASSIC.replace(must_overtrump=True)
    code, legal = judge(twin, "2S 3S 3D", "AC KS", "2S", KOZ, SPADES, rules)
    assert code == LEGAL
    assert legal == {"2S", "3S"}


def test_must_raise_on_trump_lead(twin: ModuleType) -> None:
    rules = preset("kahvehane")
    code, legal = judge(twin, "2H QH AH", "JH", "2H", KOZ, HEARTS, rules)
    assert code == MUST_RAISE_TRUMP
    assert legal == {"QH", "AH"}


def test_raise_rule_skipped_when_no_higher_trump(twin: ModuleType) -> None:
    rules = preset("kahvehane")
    code, _ = judge(twin, "2H 3H 4C", "JH", "2H", KOZ, HEARTS, rules)
    assert code == LEGAL


def test_trump_lead_banned_until_broken(twin: ModuleType) -> None:
    rules = preset("kahvehane")
    code, legal = judge(twin, "2D 5C", "", "2D", KOZ, DIAMONDS, rules)
    assert code == TRUMP_LEAD_BANNED
    assert legal == {"5C"}


def test_trump_lead_allowed_once_broken_or_only_trumps(twin: ModuleType) -> None:
    rules = preset("kahvehane")
    assert judge(twin, "2D 5C", "", "2D", KOZ, DIAMONDS, rules, played="9D")[0] == LEGAL
    assert judge(twin, "2D 5D", "", "2D", KOZ, DIAMONDS, rules)[0] == LEGAL


# -- penalty options ----------------------------------------------------------------------


@pytest.mark.parametrize("contract", [KUPA, RIFKI])
def test_heart_lead_banned_until_broken(twin: ModuleType, contract: Contract) -> None:
    code, legal = judge(twin, "2H 5C", "", "2H", contract)
    assert code == HEART_LEAD_BANNED
    assert legal == {"5C"}


def test_hearts_may_be_led_after_a_heart_fell_or_with_only_hearts(twin: ModuleType) -> None:
    assert judge(twin, "2H 5C", "", "2H", KUPA, played="9H")[0] == LEGAL
    assert judge(twin, "2H 5H", "", "2H", KUPA)[0] == LEGAL


def test_heart_lead_ban_is_off_in_plain(twin: ModuleType) -> None:
    assert judge(twin, "2H 5C", "", "2H", KUPA, rules=preset("plain"))[0] == LEGAL


def test_heart_lead_ban_does_not_apply_in_kiz(twin: ModuleType) -> None:
    assert judge(twin, "2H 5C", "", "2H", KIZ)[0] == LEGAL


def test_erkek_covered_jack_must_be_given(twin: ModuleType) -> None:
    code, legal = judge(twin, "JC KC 2C", "AC", "2C", ERKEK)
    assert code == MUST_GIVE_PENALTY_CARD
    assert legal == {"JC", "KC"}


def test_withholding_off_in_plain(twin: ModuleType) -> None:
    assert judge(twin, "QD 3D", "AD", "3D", KIZ, rules=preset("plain"))[0] == LEGAL


def test_rifki_void_player_must_discard_king_of_hearts(twin: ModuleType) -> None:
    code, legal = judge(twin, "KH 2H 9S", "4C", "2H", RIFKI)
    assert code == MUST_DISCARD_PENALTY_CARD
    assert legal == {"KH"}


def test_rifki_heart_after_king_forces_a_heart(twin: ModuleType) -> None:
    rules = preset("rotation")
    code, legal = judge(twin, "2H 9S", "4C", "9S", RIFKI, rules=rules)
    assert code == MUST_DISCARD_PENALTY_CARD
    assert legal == {"2H"}
    assert judge(twin, "2H 9S", "4C", "9S", RIFKI)[0] == LEGAL  # classic: no such rule


def test_rifki_covered_king_of_hearts_must_be_given(twin: ModuleType) -> None:
    code, legal = judge(twin, "KH 2H", "AH", "2H", RIFKI)
    assert code == MUST_GIVE_PENALTY_CARD
    assert legal == {"KH"}


def test_kupa_void_player_must_discard_a_heart(twin: ModuleType) -> None:
    code, legal = judge(twin, "2H TH 9S", "4C", "9S", KUPA)
    assert code == MUST_DISCARD_PENALTY_CARD
    assert legal == {"2H", "TH"}


def test_void_discard_off_lets_a_void_player_keep_penalty_cards(twin: ModuleType) -> None:
    assert judge(twin, "2H 9S", "4C", "9S", KUPA, rules=preset("plain"))[0] == LEGAL


# -- trick winner and deal replay ---------------------------------------------------------


def test_highest_of_led_suit_wins_without_trumps(twin: ModuleType) -> None:
    assert twin.trick_winner(parse_cards("2C 5C 9C QS"), -1) == 2


def test_any_trump_beats_the_led_suit(twin: ModuleType) -> None:
    assert twin.trick_winner(parse_cards("AC 2S KC 3S"), SPADES) == 3
    assert twin.trick_winner(parse_cards("AC 2D KC 3H"), SPADES) == 0


def _deal_by_suits() -> bytes:
    """Seat s holds every card of suit s: clubs, diamonds, hearts, spades."""
    return bytes(range(52))


def _deal_by_ranks() -> bytes:
    """Seat s holds ranks 2..A of... each seat gets one card of every rank, suits rotated."""
    cards = []
    for seat in range(4):
        cards += [((seat + r) % 4) * 13 + r for r in range(13)]
    return bytes(cards)


def test_replay_counts_tricks_in_koz(twin: ModuleType) -> None:
    hands = _deal_by_suits()
    # Each seat leads its own suit top-down; the others must ruff? Only trumps: spades (seat 3).
    plays = bytearray()
    leader = 0
    for _ in range(13):
        plays += bytes([0])  # placeholder, rebuilt below
    # A legal full deal: seat 0 leads clubs, everyone else is void; seat 3 ruffs each trick.
    plays = bytearray()
    for r in range(13):
        trick = [CLUBS * 13 + r, DIAMONDS * 13 + r, HEARTS * 13 + r, SPADES * 13 + r]
        if leader == 3:
            trick = trick[3:] + trick[:3]
        plays += bytes(trick)
        leader = 3
    result = twin.replay_deal(hands, bytes(plays), 0, KOZ, SPADES, CLASSIC.deal_flags(KOZ), -1)
    assert result.end == END_ALL_TRICKS
    assert result.units == (0, 0, 0, 13)
    assert result.violations == []


def test_replay_ends_rifki_when_the_king_of_hearts_falls(twin: ModuleType) -> None:
    hands = _deal_by_ranks()
    # seat 0 holds 2C 3D 4H 5S 6C ...: lead the 2C; seat 1 holds 2D..., void in clubs? No:
    # every seat holds cards of every suit, so replay the lowest legal card greedily.
    flags = CLASSIC.deal_flags(RIFKI)
    plays = _greedy(twin, hands, 0, RIFKI, -1, flags)
    result = twin.replay_deal(hands, plays, 0, RIFKI, -1, flags, -1)
    assert result.violations == []
    assert result.end == END_EARLY
    assert result.consumed == len(plays) < 52
    assert sum(result.units) == 1
    assert parse_card("KH") in plays[result.consumed - 4 : result.consumed]


def test_replay_without_early_end_plays_all_thirteen(twin: ModuleType) -> None:
    hands = _deal_by_ranks()
    rules = CLASSIC.replace(early_end=frozenset())
    flags = rules.deal_flags(RIFKI)
    plays = _greedy(twin, hands, 0, RIFKI, -1, flags)
    result = twin.replay_deal(hands, plays, 0, RIFKI, -1, flags, -1)
    assert len(plays) == 52
    assert result.end == END_ALL_TRICKS


def test_replay_reports_illegal_play_and_goes_on(twin: ModuleType) -> None:
    hands = _deal_by_ranks()
    flags = CLASSIC.deal_flags(Contract.EL_ALMAZ)
    plays = bytearray(_greedy(twin, hands, 0, Contract.EL_ALMAZ, -1, flags))
    # Swap the second card of trick 1 for another card of the same hand off-suit.
    result_ok = twin.replay_deal(hands, bytes(plays), 0, Contract.EL_ALMAZ, -1, flags, -1)
    assert result_ok.violations == []
    seat1 = [c for c in hands[13:26] if c // 13 != plays[0] // 13 and c not in plays[:8]]
    plays[1] = seat1[0]
    result = twin.replay_deal(hands, bytes(plays), 0, Contract.EL_ALMAZ, -1, flags, -1)
    assert result.violations[0].code == MUST_FOLLOW_SUIT
    assert result.violations[0].play == 1 and result.violations[0].seat == 1
    assert len(result.winners) == 13 or result.end == END_INCOMPLETE


def test_replay_stops_at_a_penalized_revoke(twin: ModuleType) -> None:
    hands = _deal_by_ranks()
    rules = CLASSIC.replace(revoke=RevokeRule.PENALIZE)
    flags = rules.deal_flags(Contract.EL_ALMAZ)
    plays = bytearray(_greedy(twin, hands, 0, Contract.EL_ALMAZ, -1, flags)[:2])
    plays[1] = next(c for c in hands[13:26] if c // 13 != plays[0] // 13)
    result = twin.replay_deal(hands, bytes(plays), 0, Contract.EL_ALMAZ, -1, flags, 1)
    assert result.end == END_REVOKE
    assert result.revoker == 1
    assert result.violations == []
    legal_marked = twin.replay_deal(hands, bytes(plays[:1]), 0, Contract.EL_ALMAZ, -1, flags, 0)
    assert legal_marked.violations[0].code == REVOKE_MARK_ON_LEGAL_PLAY


def test_son_iki_scores_only_the_last_two_tricks(twin: ModuleType) -> None:
    hands = _deal_by_ranks()
    flags = CLASSIC.deal_flags(Contract.SON_IKI)
    plays = _greedy(twin, hands, 0, Contract.SON_IKI, -1, flags)
    result = twin.replay_deal(hands, plays, 0, Contract.SON_IKI, -1, flags, -1)
    assert sum(result.units) == 2
    assert result.units[result.winners[11]] >= 1 and result.units[result.winners[12]] >= 1


def _greedy(
    twin: ModuleType, hands: bytes, leader: int, contract: int, trump: int, flags: int
) -> bytes:
    """A legal deal: every seat plays its lowest legal card, until the engine ends it."""
    held = [mask_of(hands[13 * s : 13 * s + 13]) for s in range(4)]
    plays = bytearray()
    played = 0
    penalty_left = True
    for _ in range(13):
        trick: list[int] = []
        for i in range(4):
            seat = (leader + i) % 4
            legal = twin.legal_plays(held[seat], trick, contract, trump, flags, played)
            card = (legal & -legal).bit_length() - 1
            held[seat] &= ~(1 << card)
            trick.append(card)
        plays += bytes(trick)
        leader = (leader + twin.trick_winner(trick, trump)) % 4
        played |= mask_of(trick)
        result = twin.replay_deal(
            hands, bytes(plays), plays and hands.index(plays[0]) // 13, contract, trump, flags, -1
        )
        penalty_left = result.end == END_INCOMPLETE
        if not penalty_left:
            break
    return bytes(plays)


# -- who wins a closed trick (the core closes it from the trick's card set) ----------------

# Seat s holds the whole suit s (cards 13s .. 13s+12): every seat is void in the others.
_SUIT_HANDS = bytes(range(52))


def test_a_closed_trick_goes_to_the_highest_trump_else_the_highest_card_led(
    twin: ModuleType,
) -> None:
    # Koz, suit 1 trumps. Seat 0 leads its top card and seat 1 ruffs with its lowest trump:
    # seat 1. Seat 1 leads a trump: seat 1 again. Seat 1 leads a trump that seat 2 also
    # records (not its card): the card wins where it first fell, seat 1.
    koz = bytes([12, 13, 26, 39, 14, 27, 40, 11, 15, 15, 41, 10])
    replay = twin.replay_deal(_SUIT_HANDS, koz, 0, int(Contract.KOZ), 1, 0)
    assert list(replay.winners) == [1, 1, 1]
    assert [v.play for v in replay.violations] == [9]  # seat 2's card not in its hand
    # No trumps: the highest card of the suit led, whatever is discarded on it.
    plain = bytes([5, 25, 38, 51, 6, 24, 37, 50])
    replay = twin.replay_deal(_SUIT_HANDS, plain, 0, int(Contract.EL_ALMAZ), -1, 0)
    assert list(replay.winners) == [0, 0]
    assert replay.units[0] == 2
