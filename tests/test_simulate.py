"""Tests for the bots (kingrec.bots) and the match simulator (kingrec.simulate)."""

from __future__ import annotations

import functools
import random
from collections.abc import Callable, Sequence

import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from kingrec.bots import choose_contract, choose_play, choose_trump
from kingrec.cards import SUIT_MASKS, mask_of, parse_card, parse_cards
from kingrec.contracts import PENALTY_CONTRACTS, Contract
from kingrec.game import DealPlay
from kingrec.rules import (
    PRESETS,
    RevokeRule,
    Ruleset,
    Schedule,
    preset,
)
from kingrec.simulate import (
    allowed_contracts,
    derive_seed,
    simulate_match,
    simulate_matches,
)
from kingrec.v1 import record_pb2 as pb
from kingrec.validator import _Schedule, validate_match

from rulesets import ER, HOUSE, KI, KU, E, K, R, S


def _assert_clean(match: pb.Match) -> None:
    report = validate_match(match)
    assert report.findings == [], [f.message for f in report.findings]


# -- whole matches validate ------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(PRESETS))
@pytest.mark.parametrize("seed", [0, 1, 2, 3, 1234567])
def test_presets_simulate_clean(name: str, seed: int) -> None:
    rules = PRESETS[name]
    match = simulate_match(rules, seed)
    _assert_clean(match)
    assert match.format_version == 1
    assert match.status == pb.MATCH_STATUS_COMPLETE
    assert match.match_id == f"sim-{seed}"
    assert match.metadata.client_name == "kingrec-simulate"
    assert match.metadata.tags["seed"] == str(seed)
    assert [p.id for p in match.players] == ["bot-0", "bot-1", "bot-2", "bot-3"]
    assert [p.seat for p in match.players] == [0, 1, 2, 3]
    assert Ruleset.from_proto(match.ruleset) == rules
    assert len(match.deals) == rules.deal_count
    for i, deal in enumerate(match.deals):
        assert deal.number == i + 1
        assert len(deal.hands) == 52
        for s in range(4):
            hand = list(deal.hands[13 * s : 13 * s + 13])
            assert hand == sorted(hand)
        assert len(deal.think_ms) == len(deal.plays)
        assert all(ms <= rules.play_timeout_ms for ms in deal.think_ms)
        assert deal.end in (pb.DEAL_END_ALL_TRICKS, pb.DEAL_END_EARLY)
        assert (deal.trump != pb.SUIT_UNSPECIFIED) == (deal.contract == pb.CONTRACT_KOZ)
        assert deal.dealer == deal.declarer  # classic etc. leave the dealer unchecked
    totals = [sum(d.claimed_scores[s] for d in match.deals) for s in range(4)]
    assert list(match.claimed_totals) == totals


@pytest.mark.parametrize("name", ["classic", "kahvehane", "plain"])
def test_zero_sum_presets(name: str) -> None:
    for match in simulate_matches(PRESETS[name], 4, seed=7):
        assert sum(match.claimed_totals) == 0
        _assert_clean(match)


def test_rotation_declares_every_contract_once() -> None:
    match = simulate_match(preset("rotation"), 5)
    chosen = sorted((d.declarer, d.contract) for d in match.deals)
    assert chosen == sorted((s, int(c)) for s in range(4) for c in Contract)


_VARIANTS = HOUSE


@pytest.mark.parametrize("name", sorted(_VARIANTS))
def test_house_variants_simulate_clean(name: str) -> None:
    rules = _VARIANTS[name]
    for match in simulate_matches(rules, 3, seed=11):
        _assert_clean(match)
        assert len(match.deals) == rules.deal_count


def test_fixed_order_is_followed() -> None:
    rules = _VARIANTS["fixed"]
    match = simulate_match(rules, 3)
    assert [d.contract for d in match.deals] == [int(c) for c in rules.fixed_order * 2]


def test_holder_of_card_declares_first_and_dealer_rule() -> None:
    rules = _VARIANTS["holder"]
    for seed in range(5):
        match = simulate_match(rules, seed)
        first = match.deals[0]
        assert first.hands.index(rules.first_declarer_card) // 13 == first.declarer
        for deal in match.deals:
            assert deal.declarer == (first.declarer + deal.number - 1) % 4
            assert deal.dealer == (deal.declarer + 3) % 4


# -- abandon and revoke ----------------------------------------------------------------


@pytest.mark.parametrize("deal", [1, 9, 20])
def test_abandoned_match_validates(deal: int) -> None:
    rules = preset("classic")
    for seed in range(4):
        match = simulate_match(rules, seed, abandon_after=deal)
        _assert_clean(match)
        assert match.status == pb.MATCH_STATUS_ABANDONED
        assert match.status_reason
        assert len(match.deals) == deal
        last = match.deals[-1]
        assert last.end == pb.DEAL_END_ABANDONED
        assert 0 < len(last.plays) < 52
        assert len(last.think_ms) == len(last.plays)
        # The complete deals are the same as in the full match up to there.
        full = simulate_match(rules, seed)
        for a, b in zip(match.deals[:-1], full.deals, strict=False):
            assert a == b


@pytest.mark.parametrize("deal", [1, 4, 13, 20])
def test_penalized_revoke_validates(deal: int) -> None:
    rules = preset("classic").replace(revoke=RevokeRule.PENALIZE)
    for seed in range(5):
        match = simulate_match(rules, seed, revoke_in_deal=deal)
        _assert_clean(match)
        assert len(match.deals) == rules.deal_count
        d = match.deals[deal - 1]
        assert d.end == pb.DEAL_END_REVOKE
        assert d.HasField("revoke_play")
        assert d.revoke_play == len(d.plays) - 1
        # The revoker held the led suit and played another one.
        state = DealPlay(rules, d.hands, d.declarer, d.contract, d.trump - 1)
        for card in d.plays[:-1]:
            state.push(card)
        revoker = state.to_play
        led = state.trick[0] // 13
        card = d.plays[-1]
        assert card // 13 != led and state.held[revoker] & SUIT_MASKS[led]
        expected = [0, 0, 0, 0]
        expected[revoker] = -abs(rules.full_total(d.contract))
        assert list(d.claimed_scores) == expected
        assert sum(1 for x in match.deals if x.HasField("revoke_play")) == 1


def test_revoke_needs_penalize() -> None:
    with pytest.raises(ValueError, match="PENALIZE"):
        simulate_match(preset("classic"), 1, revoke_in_deal=3)
    with pytest.raises(ValueError):
        simulate_match(preset("classic"), 1, abandon_after=21)


# -- determinism -----------------------------------------------------------------------


def test_deterministic() -> None:
    rules = preset("kahvehane")
    a = simulate_match(rules, 42).SerializeToString()
    b = simulate_match(rules, 42).SerializeToString()
    assert a == b
    assert simulate_match(rules, 43).SerializeToString() != a
    pen = rules.replace(revoke=RevokeRule.PENALIZE)
    assert (
        simulate_match(pen, 5, revoke_in_deal=2).SerializeToString()
        == simulate_match(pen, 5, revoke_in_deal=2).SerializeToString()
    )
    assert (
        simulate_match(rules, 5, abandon_after=3).SerializeToString()
        == simulate_match(rules, 5, abandon_after=3).SerializeToString()
    )


def test_think_times_do_not_change_play() -> None:
    rules = preset("classic")
    timed = simulate_match(rules, 9)
    plain = simulate_match(rules, 9, think_times=False)
    assert [d.plays for d in timed.deals] == [d.plays for d in plain.deals]
    assert all(not d.think_ms and not d.HasField("trump_think_ms") for d in plain.deals)
    _assert_clean(plain)


def test_simulate_matches_seeds() -> None:
    rules = preset("short")
    matches = list(simulate_matches(rules, 3, seed=99, think_times=False))
    assert len({m.match_id for m in matches}) == 3
    for i, match in enumerate(matches):
        seed = derive_seed(99, i)
        assert match.metadata.tags["seed"] == str(seed)
        again = simulate_match(rules, seed, think_times=False)
        assert again.SerializeToString() == match.SerializeToString()


# -- the schedule ----------------------------------------------------------------------


def _history(*choices: Contract, first: int = 0) -> list[tuple[int, int]]:
    return [((first + i) % 4, c) for i, c in enumerate(choices)]


def test_penalty_quota_used_forces_koz() -> None:
    rules = preset("classic")
    # Seat 0 declared penalties in deals 1, 5 and 9; the others declared koz.
    hist = _history(KU, K, K, K, ER, K, K, K, KI, KU, ER, KI)
    assert allowed_contracts(rules, 0, 13, hist) == [K]


def test_koz_quota_used_forces_penalty() -> None:
    rules = preset("classic")
    hist = _history(K, E, E, KU, K, KU, ER, ER)
    allowed = allowed_contracts(rules, 0, 9, hist)
    assert K not in allowed
    # El almaz and kupa were chosen twice already (the limit), so they are gone too.
    assert allowed == [KI, R, S]


def test_limit_per_penalty_contract() -> None:
    rules = preset("classic")
    hist = _history(KI, KI)
    allowed = allowed_contracts(rules, 2, 3, hist)
    assert KI not in allowed
    assert set(allowed) == {K, E, KU, ER, R, S}


def test_no_koz_in_penalty_only_deals() -> None:
    rules = preset("classic").replace(penalty_only_deals=4)
    for number in range(1, 5):
        assert K not in allowed_contracts(
            rules, (number - 1) % 4, number, _history(*[E, KU, ER][: number - 1])
        )
    assert K in allowed_contracts(rules, 0, 5, _history(E, KU, ER, KI))


def test_lookahead_avoids_dead_end() -> None:
    # 16 deals, 3 koz + 2 penalties each, each penalty contract once: 6 penalty deals in all.
    rules = preset("classic").replace(
        deal_count=16, koz_quota=3, penalty_quota=2, max_per_penalty=1
    )
    hist = _history(
        KU,
        KI,
        R,
        K,  # deals 1-4
        ER,
        K,
        S,
        K,  # deals 5-8
        K,
        K,
        K,
        K,  # deals 9-12
        K,
    )  # deal 13
    # Seat 1 may still take el almaz by its own quota, but seat 3 must take a penalty in deal
    # 16 (its koz quota is used) and el almaz is the only one left: seat 1 must choose koz.
    assert allowed_contracts(rules, 1, 14, hist) == [K]
    assert allowed_contracts(rules, 3, 16, [*hist, (1, K), (2, K)]) == [E]


def test_fixed_and_rotation_schedules() -> None:
    rules = preset("classic").replace(schedule=Schedule.FIXED, fixed_order=(KU, K))
    assert allowed_contracts(rules, 0, 1, []) == [KU]
    assert allowed_contracts(rules, 1, 2, _history(KU)) == [K]
    assert allowed_contracts(rules, 2, 3, _history(KU, K)) == [KU]
    rot = preset("rotation")
    hist = _history(K, K, K, K, E)
    assert allowed_contracts(rot, 0, 9, hist) == [KU, ER, KI, R, S]
    assert allowed_contracts(rot, 1, 6, hist) == [E, KU, ER, KI, R, S]


def _completable(
    rules: Ruleset, first: int
) -> Callable[[int, tuple[int, ...], tuple[int, ...], tuple[int, ...]], bool]:
    """Brute force: can deals number+1 .. deal_count still be declared within the quotas?"""

    @functools.cache
    def done(number: int, koz: tuple[int, ...], pen: tuple[int, ...], per: tuple[int, ...]) -> bool:
        if number == rules.deal_count:
            return True
        nxt = number + 1
        seat = (first + nxt - 1) % 4
        if nxt > rules.penalty_only_deals and koz[seat] < rules.koz_quota:
            k = list(koz)
            k[seat] += 1
            if done(nxt, tuple(k), pen, per):
                return True
        if pen[seat] < rules.penalty_quota:
            p = list(pen)
            p[seat] += 1
            for i in sorted(set(range(6)), key=lambda i: per[i]):
                if per[i] < rules.max_per_penalty:
                    q = list(per)
                    q[i] += 1
                    if done(nxt, koz, tuple(p), tuple(sorted(q))):
                        return True
        return False

    return done


def _expected_choices(
    rules: Ruleset,
    seat: int,
    number: int,
    history: list[tuple[int, int]],
    done: Callable[[int, tuple[int, ...], tuple[int, ...], tuple[int, ...]], bool],
) -> list[Contract]:
    """The validator's checks now, and a brute-force look at the rest of the match."""
    out = []
    for c in Contract:
        koz, pen = [0] * 4, [0] * 4
        per: dict[int, int] = dict.fromkeys(PENALTY_CONTRACTS, 0)
        for s, x in [*history, (seat, c)]:
            if x == Contract.KOZ:
                koz[s] += 1
            else:
                pen[s] += 1
                per[Contract(x)] += 1
        if c == Contract.KOZ:
            ok = number > rules.penalty_only_deals and koz[seat] <= rules.koz_quota
        else:
            ok = pen[seat] <= rules.penalty_quota and per[c] <= rules.max_per_penalty
        if ok and done(number, tuple(koz), tuple(pen), tuple(sorted(per.values()))):
            out.append(c)
    return out


@settings(max_examples=100, deadline=None)
@example(
    deal_count=8, koz_quota=1, penalty_quota=2, max_per_penalty=1, penalty_only_deals=0, first=0
)
@example(
    deal_count=9, koz_quota=2, penalty_quota=2, max_per_penalty=1, penalty_only_deals=3, first=2
)
@given(
    deal_count=st.integers(4, 9),
    koz_quota=st.integers(0, 2),
    penalty_quota=st.integers(0, 2),
    max_per_penalty=st.integers(0, 2),
    penalty_only_deals=st.integers(0, 5),
    first=st.integers(0, 3),
)
def test_quota_schedule_offers_exactly_the_completable_choices(
    deal_count: int,
    koz_quota: int,
    penalty_quota: int,
    max_per_penalty: int,
    penalty_only_deals: int,
    first: int,
) -> None:
    # Every reachable schedule state of a small quota ruleset: allowed_contracts offers a
    # choice exactly when the validator accepts it now and the match can still be finished.
    rules = preset("classic").replace(
        deal_count=deal_count,
        koz_quota=koz_quota,
        penalty_quota=penalty_quota,
        max_per_penalty=max_per_penalty,
        penalty_only_deals=penalty_only_deals,
    )
    done = _completable(rules, first)
    assume(done(0, (0,) * 4, (0,) * 4, (0,) * 6))
    seen: set[tuple[int, ...]] = set()
    stack: list[list[tuple[int, int]]] = [[]]
    while stack:
        history = stack.pop()
        number = len(history) + 1
        koz, pen = [0] * 4, [0] * 4
        per: dict[int, int] = dict.fromkeys(PENALTY_CONTRACTS, 0)
        for s, c in history:
            if c == Contract.KOZ:
                koz[s] += 1
            else:
                pen[s] += 1
                per[Contract(c)] += 1
        key = (number, *koz, *pen, *per.values())
        if number > deal_count or key in seen:
            continue
        seen.add(key)
        seat = (first + number - 1) % 4
        allowed = allowed_contracts(rules, seat, number, history)
        assert allowed == _expected_choices(rules, seat, number, history, done)
        assert allowed  # never a dead end
        schedule = _Schedule(rules)
        for i, (s, c) in enumerate([*history, (seat, allowed[0])]):
            assert schedule.check(i + 1, s, c) is None
        stack.extend([*history, (seat, c)] for c in allowed)


@pytest.mark.parametrize("seed", range(3))
def test_quota_schedule_long_playouts(seed: int) -> None:
    # Random playouts of the 20-deal presets and variants never dead-end.
    rng = random.Random(seed)
    for rules in [
        preset("classic"),
        preset("kahvehane"),
        *(_VARIANTS[n] for n in ("penalty_only_4", "tight")),
    ]:
        for _ in range(30):
            schedule = _Schedule(rules)
            history: list[tuple[int, int]] = []
            first = rng.randrange(4)
            for number in range(1, rules.deal_count + 1):
                seat = (first + number - 1) % 4
                allowed = allowed_contracts(rules, seat, number, history)
                contract = rng.choice(allowed)
                assert schedule.check(number, seat, contract) is None
                history.append((seat, contract))


# -- the bots --------------------------------------------------------------------------


def _hands(fixed: dict[int, Sequence[int]]) -> bytes:
    """52 hand bytes: the fixed cards, then the rest of the deck to the seats in order."""
    seats = [sorted(fixed.get(s, ())) for s in range(4)]
    used = mask_of(c for cards in seats for c in cards)
    rest = [c for c in range(52) if not used >> c & 1]
    for s in range(4):
        while len(seats[s]) < 13:
            seats[s].append(rest.pop(0))
    return b"".join(bytes(sorted(cards)) for cards in seats)


def _cards(text: str) -> list[int]:
    return parse_cards(text)


def test_choose_trump_longest_then_strongest() -> None:
    rng = random.Random(0)
    hand = mask_of(_cards("2C 3C 4C 5C 6C AD KD QD JD AH KH 2S 3S"))
    assert choose_trump(hand, rng) == 0  # five clubs beat four strong diamonds
    hand = mask_of(_cards("2C 3C 4C 5C AD KD QD JD AH KH 2S 3S 4S"))
    assert choose_trump(hand, rng) == 1  # four each: the diamonds are stronger


def test_koz_declarers_name_their_longest_suit() -> None:
    for match in simulate_matches(preset("classic"), 3, seed=5, think_times=False):
        for deal in match.deals:
            if deal.contract != pb.CONTRACT_KOZ:
                continue
            hand = deal.hands[13 * deal.declarer : 13 * deal.declarer + 13]
            lengths = [sum(1 for c in hand if c // 13 == s) for s in range(4)]
            assert lengths[deal.trump - 1] == max(lengths)


def test_choose_contract() -> None:
    rules = preset("classic")
    spades = mask_of(range(39, 52))
    bare_king = mask_of(_cards("KH 2C 3C 4C 5C 6C 7C 2D 3D 4D 5D 6D 7D"))
    for seed in range(20):
        rng = random.Random(seed)
        assert choose_contract(rules, spades, list(Contract), rng) is K
        assert choose_contract(rules, bare_king, [R, KU], rng) is KU
        assert choose_contract(rules, bare_king, [KI], rng) is KI
    with pytest.raises(ValueError):
        choose_contract(rules, spades, [], random.Random(0))


def test_kiz_discards_queen_under_winning_card() -> None:
    # Seat 0 leads ♣A, seat 1 follows ♣2; seat 2 has no clubs and the ♠Q: it throws the
    # queen, which the ♣A wins for seat 0. Under `plain` nothing forces it to.
    hands = _hands(
        {
            0: _cards("AC 3C 4C 5C 6C 7C 8C 9C TC JC QC KC AD"),
            1: _cards("2C 2H 3H 4H 5H 6H 7H 8H 9H TH JH QH KH"),
            2: _cards("QS 2D 3D 4D 5D 6D 7D 8D 9D TD JD QD KD"),
        }
    )
    for name in ("plain", "classic"):
        state = DealPlay(preset(name), hands, 0, Contract.KIZ)
        state.push(parse_card("AC"))
        state.push(parse_card("2C"))
        assert choose_play(state, random.Random(1)) == parse_card("QS")


def test_kiz_gives_queen_under_a_higher_card() -> None:
    hands = _hands(
        {
            0: _cards("KS 2C 3C 4C 5C 6C 7C 8C 9C TC JC QC KC"),
            1: _cards("QS 3S 2D 3D 4D 5D 6D 7D 8D 9D TD JD QD"),
        }
    )
    state = DealPlay(preset("plain"), hands, 0, Contract.KIZ)
    state.push(parse_card("KS"))
    assert choose_play(state, random.Random(0)) == parse_card("QS")


def test_penalty_duck_and_shed() -> None:
    # El almaz: following ♦9 with ♦8 and ♦T in hand, the bot ducks with the ♦8; last to play
    # with only higher cards it wins with the highest.
    hands = _hands(
        {
            0: _cards("9D"),
            1: _cards("8D TD"),
            3: _cards("QD KD"),
            2: _cards("2D"),
        }
    )
    state = DealPlay(preset("classic"), hands, 0, Contract.EL_ALMAZ)
    state.push(parse_card("9D"))
    assert choose_play(state, random.Random(0)) == parse_card("8D")
    state.push(parse_card("TD"))
    state.push(parse_card("2D"))
    assert choose_play(state, random.Random(0)) == parse_card("KD")


def test_koz_wins_cheaply_or_throws_low() -> None:
    rules = preset("classic")
    spades = 3
    # Last to play, following: the lowest diamond that beats the ♦8.
    hands = _hands(
        {
            0: _cards("5D"),
            1: _cards("8D"),
            2: _cards("2D"),
            3: _cards("9D JD AD 2C 3C 4C 5C 6C 7C 8C 9C TC JC"),
        }
    )
    state = DealPlay(rules, hands, 0, Contract.KOZ, spades)
    for card in ("5D", "8D", "2D"):
        state.push(parse_card(card))
    assert choose_play(state, random.Random(0)) == parse_card("9D")
    # Void without trumps and beaten: the lowest card, from the shorter suit on a tie.
    hands = _hands(
        {
            0: _cards("5D"),
            1: _cards("8D"),
            2: _cards("AD"),
            3: _cards("2C 3C 4C 5C 6C 7C 2H 3H 4H 5H 6H 7H 8H"),
        }
    )
    state = DealPlay(rules, hands, 0, Contract.KOZ, spades)
    for card in ("5D", "8D", "AD"):
        state.push(parse_card(card))
    assert choose_play(state, random.Random(0)) == parse_card("2C")
    # Void with trumps: ruff, and overruff with the cheapest trump that wins.
    hands = _hands(
        {
            0: _cards("5D"),
            1: _cards("8D"),
            2: _cards("4S 2H 3H 4H 5H 6H 7H 8H 9H TH JH QH KH"),
            3: _cards("3S 9S KS 2C 3C 4C 5C 6C 7C 8C 9C TC JC"),
        }
    )
    state = DealPlay(rules, hands, 0, Contract.KOZ, spades)
    for card in ("5D", "8D", "4S"):
        state.push(parse_card(card))
    assert choose_play(state, random.Random(0)) == parse_card("9S")


def test_bots_play_whole_deals_legally() -> None:
    # Every preset and contract, random deals: the bots only pick legal cards.
    rng = random.Random(3)
    for rules in PRESETS.values():
        for contract in Contract:
            deck = list(range(52))
            rng.shuffle(deck)
            trump = rng.randrange(4) if contract == Contract.KOZ else -1
            state = DealPlay(rules, bytes(deck), rng.randrange(4), contract, trump)
            while not state.over:
                card = choose_play(state, rng)
                assert state.legal_plays() >> card & 1
                state.push(card)


def test_a_koz_deal_without_trumps_cannot_be_played() -> None:
    with pytest.raises(ValueError, match="trump suit"):
        DealPlay(preset("classic"), bytes(range(52)), 0, Contract.KOZ)
