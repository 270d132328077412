"""A recorded deal play by play (kingrec.events) and a match laid out for viewers
(kingrec.replay), on both engine twins."""

from __future__ import annotations

from types import ModuleType

from kingrec._engine_types import END_EARLY, END_REVOKE, END_UNREADABLE
from kingrec.boundary import ruleset_from_proto
from kingrec.events import CardPlayed, DealEnded, DealStarted, TrickWon, deal_events
from kingrec.replay import replay_match
from kingrec.rules import RevokeRule, preset
from kingrec.simulate import simulate_match
from kingrec.v1 import record_pb2 as pb


def _events(deal: pb.Deal, match: pb.Match, twin: ModuleType) -> list[object]:
    return list(deal_events(deal, ruleset_from_proto(match.ruleset), engine=twin))


def test_a_deal_is_its_start_every_card_every_trick_and_its_end(twin: ModuleType) -> None:
    match = simulate_match(preset("classic"), 11)
    for deal in match.deals:
        events = _events(deal, match, twin)
        start, end = events[0], events[-1]
        assert isinstance(start, DealStarted) and start.playable
        assert isinstance(end, DealEnded)
        cards = [e for e in events if isinstance(e, CardPlayed)]
        tricks = [e for e in events if isinstance(e, TrickWon)]
        assert bytes(c.card for c in cards) == deal.plays
        assert all(c.broke is None and c.legal >> c.card & 1 for c in cards)
        assert [c.position for c in cards] == [i % 4 for i in range(len(cards))]
        assert len(tricks) == len(cards) // 4
        assert [t.cards for t in tricks] == [
            tuple(deal.plays[i : i + 4]) for i in range(0, len(cards), 4)
        ]
        assert list(end.scores) == list(deal.claimed_scores)
        assert sum(t.points for t in tricks) == sum(end.scores)
        assert end.consumed == len(deal.plays)


def test_an_illegal_card_carries_the_rule_it_broke_and_play_goes_on(twin: ModuleType) -> None:
    match = simulate_match(preset("classic"), 4)
    deal = match.deals[2]
    plays = bytearray(deal.plays)
    plays[1], plays[5] = plays[5], plays[1]  # the second card of trick 1 swapped with trick 2's
    deal.plays = bytes(plays)
    cards = [e for e in _events(deal, match, twin) if isinstance(e, CardPlayed)]
    broken = [c for c in cards if c.broke]
    assert broken and broken[0].play in (1, 5)
    assert broken[0].broke in {"MUST_FOLLOW_SUIT", "NOT_IN_HAND", "MUST_GIVE_PENALTY_CARD"}
    assert broken[0].card not in broken[0].legal_cards


def test_a_byte_that_is_no_card_ends_the_replay(twin: ModuleType) -> None:
    match = simulate_match(preset("short"), 2)
    deal = match.deals[0]
    deal.plays = deal.plays[:6] + b"\x60" + deal.plays[7:]
    events = _events(deal, match, twin)
    assert isinstance(events[-1], DealEnded) and events[-1].end == END_UNREADABLE
    assert events[-1].consumed == 6
    assert len([e for e in events if isinstance(e, CardPlayed)]) == 6


def test_an_unplayable_deal_starts_and_ends(twin: ModuleType) -> None:
    match = simulate_match(preset("short"), 2)
    deal = match.deals[0]
    deal.hands = deal.hands[:50]
    events = _events(deal, match, twin)
    assert [type(e) for e in events] == [DealStarted, DealEnded]
    assert isinstance(events[0], DealStarted) and not events[0].playable


def test_a_penalized_revoke_ends_the_deal_with_the_revokers_penalty(twin: ModuleType) -> None:
    rules = preset("classic").replace(revoke=RevokeRule.PENALIZE)
    match = simulate_match(rules, 3, revoke_in_deal=2)
    end = _events(match.deals[1], match, twin)[-1]
    assert isinstance(end, DealEnded) and end.end == END_REVOKE and end.revoker >= 0
    assert list(end.scores) == list(match.deals[1].claimed_scores)


def test_replay_match_lays_out_tricks_and_running_totals_with_the_matchs_own_rules() -> None:
    match = simulate_match(preset("classic"), 8)
    views = list(replay_match(match))
    assert len(views) == 20
    assert views[-1].totals == list(match.claimed_totals)
    early = [v for v in views if v.end == pb.DEAL_END_EARLY]
    assert all(len(v.tricks) < 13 for v in early)
    assert all(t.winner is not None for v in views for t in v.tricks)
    assert END_EARLY == pb.DEAL_END_EARLY
