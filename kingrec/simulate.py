"""Simulated matches: bots play whole matches through the engine and the result is a record.

``simulate_match(rules, seed)`` deals, lets the bots of ``kingrec.bots`` choose contracts,
trumps and cards, and returns a complete ``kingrec.v1.Match`` that the validator accepts
without a single finding. The same ruleset and seed always give the same bytes.
``allowed_contracts`` is the schedule the simulator follows: it agrees with the
validator's checks and never offers a choice that would make the schedule impossible to
finish.

The deals of a plain match (no abandon, no revoke) are played by the compiled twin
``_sim_c`` when it is built: the same bots, schedule and random streams in C, giving
byte-identical matches. ``KINGREC_PURE_PYTHON=1`` forces this pure-Python reference.
"""

from __future__ import annotations

import functools
import hashlib
import os
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from types import ModuleType

from . import __version__
from ._engine_types import END_ALL_TRICKS, END_EARLY
from .bots import choose_contract, choose_play, choose_trump
from .cards import SUIT_MASKS, mask_of
from .contracts import PENALTY_CONTRACTS, PENALTY_MASKS, Contract
from .game import DealPlay
from .rules import DealerRule, FirstDeclarerRule, RevokeRule, Ruleset, Schedule
from .v1 import record_pb2 as pb

__all__ = ["TWIN", "allowed_contracts", "derive_seed", "simulate_match", "simulate_matches"]

_PLAYER_NAMES = ("Ayşe", "Mehmet", "Zeynep", "Emre")
_EPOCH = 1_577_836_800  # 2020-01-01T00:00:00Z
_END_CODES = {END_ALL_TRICKS: pb.DEAL_END_ALL_TRICKS, END_EARLY: pb.DEAL_END_EARLY}


def _load_twin(pure: bool) -> ModuleType | None:
    """The compiled deal loop (``_sim_c``) unless ``pure`` or it is not built."""
    if pure:
        return None
    try:
        from . import _sim_c  # type: ignore[attr-defined]
    except ImportError:
        return None
    return _sim_c  # type: ignore[no-any-return]


# Like the engine, ``KINGREC_PURE_PYTHON=1`` forces the pure-Python reference. Both twins
# give byte-identical matches; ``TWIN`` says which one plays the deals.
_twin = _load_twin(os.environ.get("KINGREC_PURE_PYTHON", "") not in ("", "0"))
TWIN = "python" if _twin is None else "cython"


# -- the schedule ---------------------------------------------------------------------


def allowed_contracts(
    rules: Ruleset, seat: int, number: int, history: Sequence[tuple[int, int]]
) -> list[Contract]:
    """The contracts ``seat`` may declare in deal ``number`` (1-based).

    ``history`` holds the (seat, contract) choices of deals 1 .. number-1. The checks are
    the validator's: FIXED plays ``fixed_order[(number-1) % len]``; ROTATION lets each
    seat declare each contract once; QUOTA counts koz and penalty declarations per seat
    (``koz_quota``, ``penalty_quota``), each penalty contract in the match
    (``max_per_penalty``) and bans koz in the first ``penalty_only_deals`` deals. Under
    QUOTA a choice is only offered when the rest of the match can still be declared
    within the quotas (declarers move one seat on each deal).

    A ruleset whose schedule cannot be completed at all (say quotas smaller than the
    deals a seat declares) gets the choices that break no check now, or else every
    contract: the simulation then goes on and the validator reports the breach.
    """
    if rules.schedule is Schedule.FIXED:
        return [rules.fixed_order[(number - 1) % len(rules.fixed_order)]]
    if rules.schedule is Schedule.ROTATION:
        used = {c for s, c in history if s == seat}
        left = [c for c in Contract if c not in used]
        return left or list(Contract)
    koz = [0, 0, 0, 0]
    pen = [0, 0, 0, 0]
    per: dict[int, int] = dict.fromkeys(PENALTY_CONTRACTS, 0)
    for s, c in history:
        if c == Contract.KOZ:
            koz[s] += 1
        else:
            pen[s] += 1
            per[c] = per.get(c, 0) + 1
    now_ok = [c for c in Contract if _quota_ok(rules, seat, number, c, koz, pen, per)]
    feasible = []
    for c in now_ok:
        if c == Contract.KOZ:
            koz[seat] += 1
        else:
            pen[seat] += 1
            per[c] += 1
        if _quota_feasible(rules, seat, number, koz, pen, per):
            feasible.append(c)
        if c == Contract.KOZ:
            koz[seat] -= 1
        else:
            pen[seat] -= 1
            per[c] -= 1
    return feasible or now_ok or list(Contract)


def _quota_ok(
    rules: Ruleset,
    seat: int,
    number: int,
    contract: Contract,
    koz: list[int],
    pen: list[int],
    per: dict[int, int],
) -> bool:
    """Whether declaring ``contract`` now passes the validator's quota checks."""
    if contract == Contract.KOZ:
        return number > rules.penalty_only_deals and koz[seat] < rules.koz_quota
    return pen[seat] < rules.penalty_quota and per[contract] < rules.max_per_penalty


def _quota_feasible(
    rules: Ruleset, seat: int, number: int, koz: list[int], pen: list[int], per: dict[int, int]
) -> bool:
    """Whether deals number+1 .. deal_count can all be declared within the quotas.

    Seat ``s`` still declares ``R[s]`` deals, ``E[s]`` of them late enough for koz. It can
    take at most ``min(koz left, E[s])`` of them as koz and must take the rest as penalty
    contracts, within its penalty quota; any seat may take any penalty contract, so the
    penalty deals fit when they are no more than the per-contract room left in all.
    """
    remaining = [0, 0, 0, 0]
    koz_eligible = [0, 0, 0, 0]
    for j in range(number + 1, rules.deal_count + 1):
        s = (seat + j - number) % 4
        remaining[s] += 1
        if j > rules.penalty_only_deals:
            koz_eligible[s] += 1
    penalty_deals = 0
    for s in range(4):
        koz_left = rules.koz_quota - koz[s]
        pen_left = rules.penalty_quota - pen[s]
        if koz_left < 0 or pen_left < 0:
            return False
        most_koz = min(koz_left, koz_eligible[s], remaining[s])
        if remaining[s] - most_koz > pen_left:
            return False
        penalty_deals += remaining[s] - most_koz
    room = sum(max(0, rules.max_per_penalty - per[c]) for c in PENALTY_CONTRACTS)
    return penalty_deals <= room


# -- one deal -------------------------------------------------------------------------


@dataclass
class _DealResult:
    plays: bytes
    think_ms: list[int]
    auto_plays: list[int]
    end: int  # pb.DealEnd
    scores: list[int]
    revoke_play: int = -1


class _Clock:
    """Plausible think times, from an rng of their own so they never change the play."""

    def __init__(self, rules: Ruleset, seed: int, enabled: bool) -> None:
        self.rng = random.Random(f"kingrec-simulate-think/{seed}")
        self.limit = rules.play_timeout_ms
        self.trump_limit = rules.trump_timeout_ms
        self.enabled = enabled

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


def _play_deal(
    rules: Ruleset,
    hands: bytes,
    declarer: int,
    contract: int,
    trump: int,
    rng: random.Random,
    clock: _Clock,
    *,
    stop: str = "",
) -> _DealResult | None:
    """Play one deal with the bots.

    ``stop="abandon"`` cuts the deal off partway (scores of its complete tricks);
    ``stop="revoke"`` makes one follower fail to follow suit at some point and ends the deal
    there (None when no such moment came).
    """
    state = DealPlay(rules, hands, declarer, contract, trump)
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
                cards = [c for c in range(52) if off_suit >> c & 1]
                card = rng.choice(cards)
                index = len(state.plays)
                if clock.enabled:
                    think.append(clock.play(legal.bit_count())[0])
                scores = [0, 0, 0, 0]
                scores[state.to_play] = -abs(rules.full_total(contract))
                return _DealResult(
                    bytes(state.plays) + bytes([card]),
                    think,
                    auto,
                    pb.DEAL_END_REVOKE,
                    scores,
                    revoke_play=index,
                )
        card = choose_play(state, rng, legal)
        if clock.enabled:
            ms, was_auto = clock.play(legal.bit_count())
            think.append(ms)
            if was_auto:
                auto.append(len(state.plays))
        if state.push(card, legal) is not None:
            snapshots.append(list(state.units))
    if revoke_from >= 0:
        return None
    plays = bytes(state.plays)
    if stop == "abandon":
        total = len(plays)
        cut = rng.randrange(4 if total > 4 else 1, total)
        unit = rules.unit_score(contract)
        return _DealResult(
            plays[:cut],
            think[:cut],
            [i for i in auto if i < cut],
            pb.DEAL_END_ABANDONED,
            [u * unit for u in snapshots[cut // 4]],
        )
    return _DealResult(plays, think, auto, _END_CODES[state.end], state.scores())


# -- whole matches --------------------------------------------------------------------


def derive_seed(seed: int, index: int) -> int:
    """The seed of match ``index`` of ``simulate_matches(..., seed)`` (a 63-bit int)."""
    digest = hashlib.blake2b(f"kingrec-simulate/{seed}/{index}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") >> 1


def _deal_hands(rng: random.Random) -> bytes:
    deck = list(range(52))
    rng.shuffle(deck)
    return b"".join(bytes(sorted(deck[13 * s : 13 * s + 13])) for s in range(4))


def _deal(
    rules: Ruleset,
    number: int,
    first: int,
    history: Sequence[tuple[int, int]],
    rng: random.Random,
    clock: _Clock,
    stop: str,
) -> tuple[int, Contract, int, bytes, _DealResult]:
    """Deal, choose the contract (and trumps) and play deal ``number``.

    A deal that must hold a revoke is dealt again until a moment to revoke comes.
    """
    for _attempt in range(1000):
        hands = _deal_hands(rng)
        if number == 1 and rules.first_declarer is FirstDeclarerRule.HOLDER_OF_CARD:
            first = hands.index(rules.first_declarer_card) // 13
        declarer = (first + number - 1) % 4
        hand_mask = mask_of(hands[13 * declarer : 13 * declarer + 13])
        allowed = allowed_contracts(rules, declarer, number, history)
        contract = choose_contract(rules, hand_mask, allowed, rng)
        trump = choose_trump(hand_mask, rng) if contract == Contract.KOZ else -1
        result = _play_deal(rules, hands, declarer, contract, trump, rng, clock, stop=stop)
        if result is not None:
            return declarer, contract, trump, hands, result
    raise RuntimeError(f"found no moment to revoke in deal {number}")  # pragma: no cover


@functools.lru_cache(maxsize=32)
def _twin_params(rules: Ruleset) -> tuple[object, ...]:
    """What ``_sim_c.play_match`` needs of ``rules``; lists are indexed by contract number."""
    contracts = range(8)  # 0 is no contract
    valid = set(Contract)
    return (
        rules.deal_count,
        rules.first_declarer_card
        if rules.first_declarer is FirstDeclarerRule.HOLDER_OF_CARD
        else -1,
        rules.play_timeout_ms,
        rules.trump_timeout_ms,
        [rules.deal_flags(c) if c in valid else 0 for c in contracts],
        [rules.unit_score(c) if c in valid else 0 for c in contracts],
        [PENALTY_MASKS.get(c, 0) for c in contracts],
        _twin_schedule(rules),
    )


def _twin_schedule(rules: Ruleset) -> tuple[object, ...] | None:
    """The schedule for the compiled ``allowed_contracts`` (None: ask the Python one)."""
    if len(rules.fixed_order) > 64 or rules.deal_count > 100_000:
        return None
    return (
        int(rules.schedule),
        rules.koz_quota,
        rules.penalty_quota,
        rules.max_per_penalty,
        rules.penalty_only_deals,
        [int(c) for c in rules.fixed_order],
    )


def _add_deal(
    match: pb.Match,
    rules: Ruleset,
    number: int,
    declarer: int,
    contract: int,
    trump: int,
    hands: bytes,
    result: _DealResult,
    trump_ms: int,
) -> None:
    """Append one played deal to the record (``trump_ms`` -1: no trump think time)."""
    deal = match.deals.add(
        number=number,
        declarer=declarer,
        contract=contract,
        hands=hands,
        plays=result.plays,
        end=result.end,
    )
    before = rules.dealer is DealerRule.SEAT_BEFORE_DECLARER
    deal.dealer = (declarer + 3) % 4 if before else declarer
    if contract == Contract.KOZ:
        deal.trump = trump + 1  # type: ignore[assignment]
        if trump_ms >= 0:
            deal.trump_think_ms = trump_ms
    deal.think_ms.extend(result.think_ms)
    deal.auto_plays.extend(result.auto_plays)
    if result.revoke_play >= 0:
        deal.revoke_play = result.revoke_play
    deal.claimed_scores.extend(result.scores)


def simulate_match(
    rules: Ruleset,
    seed: int,
    *,
    match_id: str | None = None,
    abandon_after: int | None = None,
    revoke_in_deal: int | None = None,
    think_times: bool = True,
) -> pb.Match:
    """A whole match played by bots under ``rules``, as a complete record.

    ``abandon_after=k`` stops the match partway through deal ``k`` (status ABANDONED).
    ``revoke_in_deal=k`` (rules with ``revoke=PENALIZE``) has a player fail to follow suit
    in deal ``k``: the play is marked as the deal's revoke, the deal stops there and the
    revoker scores the contract's full total as a penalty. ``think_times`` adds a plausible
    think time to every play; it never changes the cards played.
    """
    if abandon_after is not None and not 1 <= abandon_after <= rules.deal_count:
        raise ValueError(f"abandon_after must be a deal number 1..{rules.deal_count}")
    if revoke_in_deal is not None:
        if rules.revoke is not RevokeRule.PENALIZE:
            raise ValueError("revoke_in_deal needs a ruleset with revoke=PENALIZE")
        if not 1 <= revoke_in_deal <= rules.deal_count:
            raise ValueError(f"revoke_in_deal must be a deal number 1..{rules.deal_count}")
        if abandon_after is not None and revoke_in_deal > abandon_after:
            raise ValueError("revoke_in_deal comes after the match is abandoned")
    rng = random.Random(seed)
    clock = _Clock(rules, seed, think_times)

    match = pb.Match(format_version=1, match_id=match_id if match_id is not None else f"sim-{seed}")
    meta = match.metadata
    meta.event = "simulation"
    meta.client_name = "kingrec-simulate"
    meta.client_version = __version__
    meta.start_time.seconds = _EPOCH + seed % (5 * 365 * 86_400)
    meta.tags["seed"] = str(seed)
    meta.direction = pb.DIRECTION_ANTICLOCKWISE
    for i in range(4):
        match.players.add(id=f"bot-{i}", name=_PLAYER_NAMES[i], seat=i)
    match.ruleset.CopyFrom(rules.to_proto())

    totals = [0, 0, 0, 0]
    first = rng.randrange(4)  # by lot; HOLDER_OF_CARD looks at deal 1's hands instead
    if _twin is not None and abandon_after is None and revoke_in_deal is None:
        deals = _twin.play_match(
            _twin_params(rules),
            rng.getstate(),
            clock.rng.getstate() if think_times else None,
            first,
            functools.partial(allowed_contracts, rules),
        )
        for number, (
            declarer,
            contract,
            trump,
            hands,
            plays,
            think,
            auto,
            end,
            scores,
            trump_ms,
        ) in enumerate(deals, 1):
            result = _DealResult(plays, think, auto, _END_CODES[end], scores)
            _add_deal(match, rules, number, declarer, contract, trump, hands, result, trump_ms)
            for s in range(4):
                totals[s] += scores[s]
        match.status = pb.MATCH_STATUS_COMPLETE
        match.claimed_totals.extend(totals)
        return match

    history: list[tuple[int, int]] = []
    last_deal = abandon_after if abandon_after is not None else rules.deal_count
    for number in range(1, last_deal + 1):
        stop = (
            "abandon" if number == abandon_after else "revoke" if number == revoke_in_deal else ""
        )
        declarer, contract, trump, hands, result = _deal(
            rules, number, first, history, rng, clock, stop
        )
        first = (declarer - number + 1) % 4
        history.append((declarer, contract))
        trump_ms = clock.trump() if contract == Contract.KOZ and think_times else -1
        _add_deal(match, rules, number, declarer, contract, trump, hands, result, trump_ms)
        for s in range(4):
            totals[s] += result.scores[s]

    if abandon_after is not None:
        match.status = pb.MATCH_STATUS_ABANDONED
        match.status_reason = (
            f"abandoned during deal {abandon_after}: "
            f"{_PLAYER_NAMES[rng.randrange(4)]} left the table"
        )
    else:
        match.status = pb.MATCH_STATUS_COMPLETE
    match.claimed_totals.extend(totals)
    return match


def simulate_matches(
    rules: Ruleset,
    count: int,
    seed: int,
    *,
    abandon_after: int | None = None,
    revoke_in_deal: int | None = None,
    think_times: bool = True,
) -> Iterator[pb.Match]:
    """``count`` simulated matches: match ``i`` is ``simulate_match(rules, derive_seed(seed, i))``.

    Each match's ``seed`` tag and default id carry its own seed, so any one of them can be
    simulated again alone.
    """
    for i in range(count):
        yield simulate_match(
            rules,
            derive_seed(seed, i),
            abandon_after=abandon_after,
            revoke_in_deal=revoke_in_deal,
            think_times=think_times,
        )
