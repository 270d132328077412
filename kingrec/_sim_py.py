"""The match simulator's deals, pure Python: the readable reference twin of ``_sim_c``.

``play_match`` plays every deal of one match with the bots of ``kingrec.bots`` and returns
what the record needs, one tuple per deal; ``kingrec.simulate`` builds the ``Match`` from
them. ``match_tail`` (and ``TailWriter``, from a match's seed) answers the compiled twin's
faster question, the record's bytes of those deals, here written through the protobuf
message itself. Both twins take the same two random streams (the match's and the
think-time clock's, as ``random.Random().getstate()``) and give identical tuples.
``play_deals`` also plays the reference-only variants: a match abandoned partway and a deal
stopped by a penalized revoke.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, NamedTuple

from . import _engine_py
from ._engine_types import CLOCK_SEED, END_INCOMPLETE, END_REVOKE, PlayedDeal
from .bots import choose_contract, choose_play, choose_trump
from .boundary import deal_to_proto
from .cards import SUIT_MASKS, mask_of
from .contracts import Contract
from .game import DealPlay
from .rules import FirstDeclarerRule, Ruleset
from .schedule import ScheduleTally
from .v1 import record_pb2 as pb

if TYPE_CHECKING:
    from .simulate import RecordForm

__all__ = [
    "CLOCK_SEED",
    "Clock",
    "DealResult",
    "PlayedDeal",
    "Streams",
    "TailWriter",
    "deal_hands",
    "match_tail",
    "play_deals",
    "play_match",
    "streams",
]


class DealResult(NamedTuple):
    plays: bytes
    think_ms: list[int]
    auto_plays: list[int]
    end: int  # engine END_* code
    scores: list[int]
    revoke_play: int = -1


class Clock:
    """Plausible think times, from an rng of their own so they never change the play."""

    def __init__(self, rules: Ruleset, state: object | None) -> None:
        self.rng = random.Random()
        self.enabled = state is not None
        if state is not None:
            self.rng.setstate(state)  # type: ignore[arg-type]
        self.limit = rules.play_timeout_ms
        self.trump_limit = rules.trump_timeout_ms

    def play(self, choices: int) -> tuple[int, bool]:
        """Think time of one play among ``choices`` legal cards, and whether it was auto-played."""
        rng = self.rng
        if self.limit > 0 and rng.random() < 0.004:
            return self.limit, True
        if choices == 1:
            ms = rng.randint(120, 900)
        else:
            ms = int(rng.lognormvariate(6.9 + 0.08 * min(choices, 8), 0.65))
        return min(ms, self.limit), False

    def trump(self) -> int:
        return min(int(self.rng.lognormvariate(8.0, 0.5)), self.trump_limit)


def deal_hands(rng: random.Random) -> bytes:
    """Shuffle the deck and deal 13 cards to each seat, each hand sorted."""
    deck = list(range(52))
    rng.shuffle(deck)
    return b"".join(bytes(sorted(deck[13 * s : 13 * s + 13])) for s in range(4))


def play_deal(
    rules: Ruleset,
    hands: bytes,
    declarer: int,
    contract: int,
    trump: int,
    rng: random.Random,
    clock: Clock,
    *,
    stop: str = "",
) -> DealResult | None:
    """Play one deal with the bots.

    ``stop="abandon"`` cuts the deal off partway (scores of its complete tricks);
    ``stop="revoke"`` makes one follower fail to follow suit at some point and ends the deal
    there (None when no such moment came).
    """
    state = DealPlay(rules, hands, declarer, contract, trump, engine=_engine_py)
    think: list[int] = []
    auto: list[int] = []
    snapshots = [[0, 0, 0, 0]]  # units after each complete trick
    revoke_from = rng.randrange(1, 24) if stop == "revoke" else -1
    while not state.over:
        legal = state.legal_plays()
        if revoke_from >= 0 and len(state.plays) >= revoke_from and state.trick:
            hand = state.held[state.to_play]
            led = SUIT_MASKS[state.trick[0] // 13]
            off_suit = hand & ~led
            if hand & led and off_suit:
                card = rng.choice([c for c in range(52) if off_suit >> c & 1])
                index = len(state.plays)
                if clock.enabled:
                    think.append(clock.play(legal.bit_count())[0])
                scores = rules.deal_scores(contract, state.units, revoker=state.to_play)
                plays = bytes(state.plays) + bytes([card])
                return DealResult(plays, think, auto, END_REVOKE, scores, revoke_play=index)
        card = choose_play(state, rng, legal)
        if clock.enabled:
            ms, was_auto = clock.play(legal.bit_count())
            think.append(ms)
            if was_auto:
                auto.append(len(state.plays))
        if state.push(card, legal) is not None:
            snapshots.append(state.units)
    if revoke_from >= 0:
        return None
    plays = bytes(state.plays)
    if stop == "abandon":
        total = len(plays)
        cut = rng.randrange(4 if total > 4 else 1, total)
        scores = rules.deal_scores(contract, snapshots[cut // 4])
        return DealResult(
            plays[:cut], think[:cut], [i for i in auto if i < cut], END_INCOMPLETE, scores
        )
    return DealResult(plays, think, auto, state.end, state.scores())


def _choose_and_play(
    rules: Ruleset,
    number: int,
    first: int,
    tally: ScheduleTally,
    rng: random.Random,
    clock: Clock,
    stop: str,
) -> tuple[int, Contract, int, bytes, DealResult]:
    """Deal, choose the contract (and trumps) and play deal ``number``.

    A deal that must hold a revoke is dealt again until a moment to revoke comes.
    """
    for _attempt in range(1000):
        hands = deal_hands(rng)
        if number == 1 and rules.first_declarer is FirstDeclarerRule.HOLDER_OF_CARD:
            first = hands.index(rules.first_declarer_card) // 13
        declarer = (first + number - 1) % 4
        hand_mask = mask_of(hands[13 * declarer : 13 * declarer + 13])
        contract = choose_contract(rules, hand_mask, tally.allowed(declarer, number), rng)
        trump = choose_trump(hand_mask, rng) if contract == Contract.KOZ else -1
        result = play_deal(rules, hands, declarer, contract, trump, rng, clock, stop=stop)
        if result is not None:
            return declarer, contract, trump, hands, result
    raise RuntimeError(f"found no moment to revoke in deal {number}")  # pragma: no cover


def play_deals(
    rules: Ruleset,
    rng: random.Random,
    clock: Clock,
    first: int,
    *,
    abandon_after: int | None = None,
    revoke_in_deal: int | None = None,
) -> Iterator[PlayedDeal]:
    """The deals of one match in order (up to ``abandon_after``, which is cut off)."""
    tally = ScheduleTally(rules)
    last = abandon_after if abandon_after is not None else rules.deal_count
    for number in range(1, last + 1):
        stop = (
            "abandon" if number == abandon_after else "revoke" if number == revoke_in_deal else ""
        )
        declarer, contract, trump, hands, result = _choose_and_play(
            rules, number, first, tally, rng, clock, stop
        )
        first = (declarer - number + 1) % 4
        tally.add(declarer, contract)
        trump_ms = clock.trump() if contract == Contract.KOZ and clock.enabled else -1
        yield PlayedDeal(
            declarer,
            contract,
            trump,
            hands,
            result.plays,
            result.think_ms,
            result.auto_plays,
            result.end,
            result.scores,
            trump_ms,
            result.revoke_play,
        )


def play_match(
    rules: Ruleset, rng_state: object, clock_state: object | None, first: int
) -> list[PlayedDeal]:
    """Play every deal of one plain match (``_sim_c.play_match`` gives the same tuples).

    ``rng_state`` and ``clock_state`` are ``getstate()`` of the match's rng and of its
    think-time rng (``clock_state`` None: no think times); ``first`` is the first declarer
    by lot (a HOLDER_OF_CARD ruleset looks at deal 1's hands instead).
    """
    rng = random.Random()
    rng.setstate(rng_state)  # type: ignore[arg-type]
    return list(play_deals(rules, rng, Clock(rules, clock_state), first))


def match_tail(rules: Ruleset, rng_state: object, clock_state: object | None, first: int) -> bytes:
    """The wire bytes of one plain match's ``deals`` and ``claimed_totals`` (fields 8 and 9
    of ``Match``), the deals played as ``play_match`` plays them.

    Protobuf writes a message's fields in number order, so these bytes, after those of the
    match's fields 1..7, are the whole match's serialization: ``kingrec.simulate`` puts the
    head before them. ``_sim_c.match_tail`` writes the same bytes without the message.
    """
    tail = pb.Match()
    totals = [0, 0, 0, 0]
    for number, played in enumerate(play_match(rules, rng_state, clock_state, first), 1):
        deal_to_proto(tail.deals.add(), rules, number, played)
        totals = [total + score for total, score in zip(totals, played.scores, strict=True)]
    tail.claimed_totals.extend(totals)
    return tail.SerializeToString(deterministic=True)


class Streams(NamedTuple):
    """The random streams a match's deals are played from."""

    rng: random.Random  # the match's rng, the first declarer already drawn from it
    clock_state: object | None  # the think-time rng's state; None: no think times
    first: int  # the first declarer by lot


def streams(seed: int, think_times: bool) -> Streams:
    """The random streams of the match played from ``seed``."""
    rng = random.Random(seed)
    clock_rng = random.Random(f"{CLOCK_SEED}{seed}")
    first = rng.randrange(4)  # by lot; HOLDER_OF_CARD looks at deal 1's hands instead
    return Streams(rng, clock_rng.getstate() if think_times else None, first)


class TailWriter:
    """The tails (``match_tail``) of plain matches under one ruleset, each played from its
    seed. ``_sim_c.TailWriter`` seeds its streams in C and gives the same bytes."""

    def __init__(self, rules: Ruleset) -> None:
        self.rules = rules

    def tail(self, seed: int, think_times: bool) -> bytes:
        rng, clock_state, first = streams(seed, think_times)
        return match_tail(self.rules, rng.getstate(), clock_state, first)

    def records(self, seeds: Iterable[int], think_times: bool, form: RecordForm) -> list[bytes]:
        """The whole record of the plain match played from each seed: ``form``'s head and
        fixed fields, then the tail (``_sim_c`` writes the head from ``form``'s parts)."""
        return [form.head(seed) + form.fixed + self.tail(seed, think_times) for seed in seeds]

    def bot_play(self, seed: int, think_times: bool) -> int:
        """The same deals as ``tail`` with nothing recorded: the number of plays."""
        rng, clock_state, first = streams(seed, think_times)
        return sum(len(d.plays) for d in play_match(self.rules, rng.getstate(), clock_state, first))
