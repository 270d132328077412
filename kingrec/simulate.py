"""Simulated matches: bots play whole matches through the engine and the result is a record.

``simulate_match(rules, seed)`` deals, lets the bots of ``kingrec.bots`` choose contracts,
trumps and cards, and returns a complete ``kingrec.v1.Match`` that the validator accepts
without a single finding. The same ruleset and seed always give the same bytes;
``simulate_match_bytes(rules, seed)`` gives those bytes faster, with no message for the deals
(the simulator twin writes their wire bytes).

The deals are played by a simulator twin (``kingrec._twins``): the compiled ``_sim_c`` when
it is built, else the pure-Python reference ``_sim_py``; both give byte-identical matches.
Abandoned matches and penalized revokes are played by the reference only.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator
from typing import NamedTuple

from . import __version__, _twins
from .boundary import deal_to_proto, ruleset_to_proto
from .rules import RevokeRule, Ruleset
from .schedule import allowed_contracts
from .v1 import record_pb2 as pb

__all__ = [
    "RecordForm",
    "RecordSimulator",
    "allowed_contracts",
    "default_match_id",
    "derive_seed",
    "simulate_match",
    "simulate_match_bytes",
    "simulate_matches",
]

PLAYER_NAMES = ("Ayşe", "Mehmet", "Zeynep", "Emre")
_EPOCH = 1_577_836_800  # 2020-01-01T00:00:00Z
_SPAN = 5 * 365 * 86_400  # start times fall in the five years after _EPOCH
_EVENT = "simulation"
_CLIENT = "kingrec-simulate"
_SEED_TAG = "seed"


def default_match_id(rules: Ruleset, seed: int) -> str:
    """The id a simulated match gets unless one is given: ``sim-<preset>-<seed>``.

    The preset is in it, so runs under different presets with the same seed (the default
    seed, say) never give two matches one id.
    """
    return f"sim-{rules.preset}-{seed}"


def derive_seed(seed: int, index: int) -> int:
    """The seed of match ``index`` of ``simulate_matches(..., seed)`` (a 63-bit int)."""
    digest = hashlib.blake2b(f"kingrec-simulate/{seed}/{index}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") >> 1


def _head(rules: Ruleset, seed: int, match_id: str | None) -> pb.Match:
    """Fields 1..3 of a simulated match: version, id and metadata."""
    if match_id is None:
        match_id = default_match_id(rules, seed)
    match = pb.Match(format_version=1, match_id=match_id)
    meta = match.metadata
    meta.event = _EVENT
    meta.client_name = _CLIENT
    meta.client_version = __version__
    meta.start_time.seconds = _EPOCH + seed % _SPAN
    meta.tags[_SEED_TAG] = str(seed)
    meta.direction = pb.DIRECTION_ANTICLOCKWISE
    return match


class RecordForm(NamedTuple):
    """What the records of plain matches under one ruleset share, for writing them whole.

    ``head(seed)`` is fields 1..3 as ``_head`` builds them (the pure-Python twin uses it);
    the compiled twin writes the same bytes from the parts, each a field (or fields) of the
    head serialized here by protobuf, around the start time and the seed's digits:
    ``lead`` (format_version), ``id_prefix`` (the default id before the seed), ``event``,
    ``clients`` (client name and version), ``tag_key`` (the tag that holds the seed) and
    ``direction`` of the metadata; start_time is ``epoch + seed % span`` seconds.
    ``fixed`` is fields 4..6 (players, ruleset, status), the same in every match.
    """

    head: Callable[[int], bytes]
    fixed: bytes
    lead: bytes
    id_prefix: bytes
    event: bytes
    clients: bytes
    tag_key: bytes
    direction: bytes
    epoch: int
    span: int


def _form(rules: Ruleset, fixed: bytes) -> RecordForm:
    meta = pb.MatchMetadata
    return RecordForm(
        head=lambda seed: _head(rules, seed, None).SerializeToString(),
        fixed=fixed,
        lead=pb.Match(format_version=1).SerializeToString(),
        id_prefix=default_match_id(rules, 0).removesuffix("0").encode(),
        event=meta(event=_EVENT).SerializeToString(),
        clients=meta(client_name=_CLIENT, client_version=__version__).SerializeToString(),
        tag_key=_SEED_TAG.encode(),
        direction=meta(direction=pb.DIRECTION_ANTICLOCKWISE).SerializeToString(),
        epoch=_EPOCH,
        span=_SPAN,
    )


def _add_seats_and_rules(match: pb.Match, rules: Ruleset) -> None:
    """Fields 4 and 5: the players and the ruleset, the same in every match under ``rules``."""
    for i in range(4):
        match.players.add(id=f"bot-{i}", name=PLAYER_NAMES[i], seat=i)
    match.ruleset.CopyFrom(ruleset_to_proto(rules))


_COMPLETE_BYTES = pb.Match(status=pb.MATCH_STATUS_COMPLETE).SerializeToString()  # field 6


def simulate_match(
    rules: Ruleset,
    seed: int,
    *,
    match_id: str | None = None,
    abandon_after: int | None = None,
    revoke_in_deal: int | None = None,
    think_times: bool = True,
    twins: _twins.Twins | None = None,
) -> pb.Match:
    """A whole match played by bots under ``rules``, as a complete record.

    ``abandon_after=k`` stops the match partway through deal ``k`` (status ABANDONED).
    ``revoke_in_deal=k`` (rules with ``revoke=PENALIZE``) has a player fail to follow suit
    in deal ``k``: the play is marked as the deal's revoke, the deal stops there and the
    revoker scores the contract's full total as a penalty. ``think_times`` adds a plausible
    think time to every play; it never changes the cards played. ``twins`` picks the
    simulator twin (default: ``kingrec._twins.ACTIVE``).
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
    from . import _sim_py  # only here: a run of records (RecordSimulator) does without it

    match = _head(rules, seed, match_id)
    _add_seats_and_rules(match, rules)
    rng, clock_state, first = _sim_py.streams(seed, think_times)
    if abandon_after is None and revoke_in_deal is None:
        sim = (twins or _twins.ACTIVE).sim
        deals = sim.play_match(rules, rng.getstate(), clock_state, first)
    else:
        deals = _sim_py.play_deals(
            rules,
            rng,
            _sim_py.Clock(rules, clock_state),
            first,
            abandon_after=abandon_after,
            revoke_in_deal=revoke_in_deal,
        )
    totals = [0, 0, 0, 0]
    for number, played in enumerate(deals, 1):
        deal_to_proto(match.deals.add(), rules, number, played)
        for s in range(4):
            totals[s] += played.scores[s]
    if abandon_after is not None:
        match.status = pb.MATCH_STATUS_ABANDONED
        match.status_reason = (
            f"abandoned during deal {abandon_after}: "
            f"{PLAYER_NAMES[rng.randrange(4)]} left the table"
        )
    else:
        match.status = pb.MATCH_STATUS_COMPLETE
    match.claimed_totals.extend(totals)
    return match


class RecordSimulator:
    """Simulated plain matches (complete, no revoke) under one ruleset, as record bytes:
    ``record(seed)`` is ``simulate_match(rules, seed).SerializeToString()``, written without
    building the message.

    Protobuf writes a message's fields in number order, so a record is its parts' bytes end
    to end: the head (fields 1..3: version, id, metadata) built as ``simulate_match`` builds
    it, the players, ruleset and status (4, 5, 6), serialized once, then the deals and
    totals (8, 9), which the simulator twin plays and writes (``TailWriter``).
    ``records(seeds)`` gives many at once; the compiled twin writes each whole, its head
    too (``RecordForm``).
    """

    def __init__(
        self, rules: Ruleset, *, think_times: bool = True, twins: _twins.Twins | None = None
    ) -> None:
        self.rules = rules
        self.think_times = think_times
        fixed = pb.Match()
        _add_seats_and_rules(fixed, rules)
        self._fixed = fixed.SerializeToString() + _COMPLETE_BYTES
        self._tails = (twins or _twins.ACTIVE).sim.TailWriter(rules)
        self._form = _form(rules, self._fixed)

    def record(self, seed: int, match_id: str | None = None) -> bytes:
        """The record of the match played from ``seed``."""
        head = _head(self.rules, seed, match_id).SerializeToString()
        tail: bytes = self._tails.tail(seed, self.think_times)
        return head + self._fixed + tail

    def records(self, seeds: Iterable[int]) -> list[bytes]:
        """``[self.record(seed) for seed in seeds]``, the default ids, in one call."""
        records: list[bytes] = self._tails.records(seeds, self.think_times, self._form)
        return records


def simulate_match_bytes(
    rules: Ruleset,
    seed: int,
    *,
    match_id: str | None = None,
    think_times: bool = True,
    twins: _twins.Twins | None = None,
) -> bytes:
    """The bytes of ``simulate_match(rules, seed, ...)`` (a plain match: complete, no revoke),
    as ``SerializeToString()`` writes them, without building the message
    (``RecordSimulator``, which a run of many matches under one ruleset uses once)."""
    return RecordSimulator(rules, think_times=think_times, twins=twins).record(seed, match_id)


def simulate_matches(
    rules: Ruleset,
    count: int,
    seed: int,
    *,
    abandon_after: int | None = None,
    revoke_in_deal: int | None = None,
    think_times: bool = True,
    twins: _twins.Twins | None = None,
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
            twins=twins,
        )
