"""Building a record from a game a client played: ``MatchBuilder`` and ``build_match``.

A client hands over what happened at the table — the players, the ruleset, and per deal the
hands, the declarer, the contract, the trumps and the cards in order — and gets back a
complete ``kingrec.v1.Match``: deals numbered, dealers set by the ruleset's dealer rule, each
deal's end and scores computed, the match totals and status filled in, and the ruleset spelled
out in full. Everything is checked as it comes in, so a record the builder returns is one the
validator accepts without an error::

    b = MatchBuilder(["Ayşe", "Mehmet", "Zeynep", "Emre"], "short")
    d = b.deal(hands, declarer=0, contract="koz", trump="S")
    d.play("AS")  # ... every card, in order of play
    ...
    match = b.finish()  # or b.abandon("Emre left the table") for an unfinished match

``build_match`` does the same in one call from a list of deals. Cards are card names
(``"QS"``, ``"10H"``, ``"♠Q"``) or card codes (0..51); contracts are names (``"koz"``,
``"kiz"``, ``"Kız almaz"``) or ``Contract``; trumps are suit names (``"S"``, ``"spades"``,
``"♠"``) or suit numbers 0..3 (clubs, diamonds, hearts, spades).

What the builder refuses, each naming the deal (1-based) and the play (0-based, as in the
record and the validator's findings):

* ``IllegalPlayError`` — a card the rules do not allow now, with the rule it breaks
  (``verdict``) and the cards that were legal (``legal``);
* ``RecordBuildError`` — anything else that cannot make a valid record: hands that do not
  partition the deck, a declarer the rotation does not give, a contract the schedule does not
  allow, koz without trumps or trumps outside koz, a card played after the deal ended, think
  times for some plays but not others, a new deal before the last one is over, more deals
  than the ruleset has, finishing a match with deals missing;
* ``LimitError`` — a name, tag or reason over one of the bounds of ``kingrec.limits``;
* ``RulesetError`` — an unknown preset name.

A failed call changes nothing: the client may correct the input and call again. Think times
are recorded as given; one over the ruleset's clock on a play not marked as auto-played is
what happened at the table, so the record keeps it and the validator warns (``OVER_TIME``).
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import NotRequired, TypedDict

from . import _twins
from ._engine_types import LEGAL, NOT_IN_HAND
from .boundary import end_to_proto, ruleset_to_proto, trump_to_proto
from .cards import SUIT_NAMES, SUIT_SYMBOLS, card_symbol, mask_of, parse_card
from .contracts import Contract, parse_contract
from .errors import (
    CardError,
    ContractError,
    IllegalPlayError,
    LimitError,
    RecordBuildError,
)
from .findings import CODES, symbols
from .game import DealPlay
from .limits import check_match_limits
from .rules import DealerRule, FirstDeclarerRule, RevokeRule, Ruleset, preset
from .schedule import ScheduleTally
from .v1 import record_pb2 as pb

__all__ = ["DealBuilder", "DealInput", "MatchBuilder", "PlayerInfo", "build_match"]

_FORMAT_VERSION = 1  # kingrec.v1 records
_UINT32 = 1 << 32

CardLike = str | int
"""A card as a client has it: a name (``"QS"``, ``"10H"``, ``"♠Q"``) or a code 0..51."""


class PlayerInfo(TypedDict, total=False):
    """One player, when more than a display name is known. ``seat`` defaults to the
    player's position in the list."""

    id: str
    name: str
    seat: int
    seat_name: str


class DealInput(TypedDict):
    """One deal for ``build_match``: what ``MatchBuilder.deal`` and ``DealBuilder.play`` take.

    ``hands`` are seat 0's 13 cards, then seat 1's, 2's and 3's; ``plays`` the cards in order
    of play from the declarer's lead; ``think_ms`` one think time per play (or none);
    ``auto_plays`` the indexes of plays the server made for a player out of time;
    ``revoke_play`` the index of a penalized revoke (the deal's last play, under
    ``revoke=PENALIZE``).
    """

    hands: Sequence[Sequence[CardLike] | str]
    declarer: int
    contract: str | int
    trump: NotRequired[str | int | None]
    trump_think_ms: NotRequired[int | None]
    plays: NotRequired[Sequence[CardLike]]
    think_ms: NotRequired[Sequence[int] | None]
    auto_plays: NotRequired[Iterable[int]]
    revoke_play: NotRequired[int | None]


_DEAL_KEYS = frozenset(DealInput.__annotations__)
_PLAYER_KEYS = frozenset(PlayerInfo.__annotations__)

_ENDED = {
    pb.DEAL_END_ALL_TRICKS: "after thirteen tricks",
    pb.DEAL_END_EARLY: "when the last penalty card fell",
    pb.DEAL_END_REVOKE: "at the revoke",
}

_DIRECTIONS = {
    "anticlockwise": pb.DIRECTION_ANTICLOCKWISE,
    "counterclockwise": pb.DIRECTION_ANTICLOCKWISE,
    "clockwise": pb.DIRECTION_CLOCKWISE,
}


# -- reading the client's values ------------------------------------------------------------


def _card(value: object, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise RecordBuildError(f"{where}: {value!r} is not a card (a name like 'QS' or a code)")
    if isinstance(value, int):
        if not 0 <= value < 52:
            raise RecordBuildError(f"{where}: {value} is not a card code (0..51)")
        return value
    try:
        return parse_card(value)
    except CardError as exc:
        raise RecordBuildError(f"{where}: {exc}") from None


def _suit(value: object, where: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 3:
        return value
    if isinstance(value, str):
        text = value.strip().lower()
        for suit in range(4):
            if text in (SUIT_NAMES[suit], SUIT_NAMES[suit][:-1], SUIT_NAMES[suit][0]):
                return suit
            if text == SUIT_SYMBOLS[suit]:
                return suit
    raise RecordBuildError(
        f"{where}: {value!r} is not a suit (C D H S, clubs … spades, ♣ ♦ ♥ ♠ or 0..3)"
    )


def _milliseconds(value: object, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < _UINT32:
        raise RecordBuildError(f"{where}: {value!r} is not a time in milliseconds (0..2³²-1)")
    return value


def _text(value: object, where: str) -> str:
    if not isinstance(value, str):
        raise RecordBuildError(f"{where} must be text, not {type(value).__name__}")
    return value


def _contract(value: object, where: str) -> Contract:
    try:
        if isinstance(value, str):
            return parse_contract(value)
        if isinstance(value, int) and not isinstance(value, bool):
            return Contract(value)
    except (ContractError, ValueError) as exc:
        detail = str(exc) if isinstance(exc, ContractError) else f"{value} is not a contract"
        raise RecordBuildError(f"{where}: {detail}") from None
    raise RecordBuildError(f"{where}: {value!r} is not a contract")


def _hands(hands: object, where: str) -> bytes:
    """The 52 card bytes of four hands, checked to partition the deck."""
    if isinstance(hands, str | bytes) or not isinstance(hands, Sequence) or len(hands) != 4:
        raise RecordBuildError(f"{where}: hands must be four hands of 13 cards, seat 0 first")
    cards: list[int] = []
    for seat, hand in enumerate(hands):
        held = hand.replace(",", " ").split() if isinstance(hand, str) else hand
        if not isinstance(held, Sequence):
            raise RecordBuildError(f"{where}: seat {seat}'s hand is not a list of cards")
        if len(held) != 13:
            raise RecordBuildError(f"{where}: seat {seat}'s hand holds {len(held)} cards, not 13")
        cards += (_card(c, f"{where}, seat {seat}'s hand") for c in held)
    if mask_of(cards) != (1 << 52) - 1:
        doubled = mask_of(c for c, k in Counter(cards).items() if k > 1)
        missing = (1 << 52) - 1 & ~mask_of(cards)
        raise RecordBuildError(
            f"{where}: the four hands do not partition the deck: {symbols(doubled)} dealt "
            f"twice and {symbols(missing)} missing"
        )
    return bytes(cards)


def _players(players: object) -> list[pb.Player]:
    if isinstance(players, str | bytes) or not isinstance(players, Sequence) or len(players) != 4:
        raise RecordBuildError("players must be a list of four players, seat 0 first")
    out: list[pb.Player] = []
    for i, player in enumerate(players):
        if isinstance(player, str):
            out.append(pb.Player(name=player, seat=i))
            continue
        if not isinstance(player, Mapping):
            raise RecordBuildError(f"player #{i} is {player!r}; give a name or a mapping")
        unknown = sorted(set(player) - _PLAYER_KEYS)
        if unknown:
            raise RecordBuildError(
                f"player #{i} has unknown key(s) {', '.join(map(repr, unknown))} "
                f"(known: {', '.join(sorted(_PLAYER_KEYS))})"
            )
        seat = player.get("seat", i)
        if isinstance(seat, bool) or not isinstance(seat, int) or not 0 <= seat <= 3:
            raise RecordBuildError(f"player #{i}: seat {seat!r} does not exist (0..3)")
        out.append(
            pb.Player(
                id=_text(player.get("id", ""), f"player #{i}'s id"),
                name=_text(player.get("name", ""), f"player #{i}'s name"),
                seat=seat,
                seat_name=_text(player.get("seat_name", ""), f"player #{i}'s seat_name"),
            )
        )
    seats = sorted(p.seat for p in out)
    if seats != [0, 1, 2, 3]:
        raise RecordBuildError(f"the players must fill seats 0, 1, 2 and 3 once each, not {seats}")
    return out


def _check_limits(match: pb.Match) -> None:
    problem = check_match_limits(match)
    if problem is not None:
        raise LimitError(f"the record would be over one of kingrec's bounds: {problem}")


# -- one deal -------------------------------------------------------------------------------


class DealBuilder:
    """One deal of a ``MatchBuilder`` being played, card by card (``MatchBuilder.deal``).

    ``play`` each card in order; the deal ends by itself after thirteen tricks or when the
    last penalty card falls (ruleset ``early_end``). ``legal_cards`` says what the seat to
    play may play. Once ``over``, the match builder takes the next deal.
    """

    def __init__(
        self,
        owner: MatchBuilder,
        number: int,
        hands: bytes,
        declarer: int,
        contract: Contract,
        trump: int,
        trump_think_ms: int | None,
        play: DealPlay,
    ) -> None:
        self._owner = owner
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
        code = _card(card, where)
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
        code = _card(card, where)
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
        self._owner._check_open()
        index = len(self._plays)
        where = self._where(index)
        if self.over:
            end = end_to_proto(self._state.end)
            raise RecordBuildError(
                f"{where}: the deal ended {_ENDED.get(end, 'already')} ({index} plays); "
                f"{card!r} comes after its end"
            )
        if think_ms is not None:
            _milliseconds(think_ms, f"{where}, think_ms")
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
            self._owner._close_deal(self)

    def _record(self) -> pb.Deal:
        """The deal as the record holds it (once it is over)."""
        state, rules = self._state, self._state.rules
        deal = pb.Deal(
            number=self.number,
            declarer=self.declarer,
            contract=pb.Contract.ValueType(self.contract),
            hands=self._hands,
            plays=bytes(self._plays),
            end=pb.DEAL_END_ABANDONED if self._abandoned else end_to_proto(state.end),
        )
        before = rules.dealer is DealerRule.SEAT_BEFORE_DECLARER
        deal.dealer = (self.declarer + 3) % 4 if before else self.declarer
        if self.contract == Contract.KOZ:
            deal.trump = trump_to_proto(self.trump)
            if self._trump_think_ms is not None:
                deal.trump_think_ms = self._trump_think_ms
        deal.think_ms.extend(self._think)
        deal.auto_plays.extend(self._auto)
        if self._revoke_play >= 0:
            deal.revoke_play = self._revoke_play
        deal.claimed_scores.extend(self.scores)
        return deal


# -- the match ------------------------------------------------------------------------------


class MatchBuilder:
    """A match record built deal by deal as a client plays it.

    ``players`` are four names or ``PlayerInfo`` mappings (seat 0 first); ``rules`` a preset
    name (``"classic"``, ``"short"``, …) or a ``Ruleset``. The metadata is optional;
    ``match_id`` defaults to a fresh UUID and ``start_time`` must carry its time zone.
    ``deal`` starts each deal; ``finish`` returns the complete ``kingrec.v1.Match``,
    ``abandon`` an unfinished one. ``twins`` picks the engine twin (default: the active one).
    """

    def __init__(
        self,
        players: Sequence[str | PlayerInfo],
        rules: str | Ruleset,
        *,
        match_id: str | None = None,
        event: str = "",
        site: str = "",
        start_time: datetime | None = None,
        client_name: str = "",
        client_version: str = "",
        tags: Mapping[str, str] | None = None,
        direction: str | None = None,
        twins: _twins.Twins | None = None,
    ) -> None:
        if isinstance(rules, str):
            rules = preset(rules)
        elif not isinstance(rules, Ruleset):
            raise RecordBuildError(f"rules must be a preset name or a Ruleset, not {rules!r}")
        self.rules = rules
        """The ruleset the match is played and judged by."""
        match = pb.Match(
            format_version=_FORMAT_VERSION,
            match_id=_text(match_id, "match_id") if match_id is not None else str(uuid.uuid4()),
        )
        meta = match.metadata
        meta.event = _text(event, "event")
        meta.site = _text(site, "site")
        meta.client_name = _text(client_name, "client_name")
        meta.client_version = _text(client_version, "client_version")
        if start_time is not None:
            if not isinstance(start_time, datetime) or start_time.utcoffset() is None:
                raise RecordBuildError(
                    "start_time must be a datetime with its time zone "
                    "(e.g. datetime.now(timezone.utc))"
                )
            meta.start_time.FromDatetime(start_time)
        for key, value in (tags or {}).items():
            meta.tags[_text(key, "a tag's key")] = _text(value, f"tag {key!r}")
        if direction is not None:
            known = _DIRECTIONS.get(str(direction).lower())
            if known is None:
                raise RecordBuildError(
                    f"direction {direction!r} is not 'clockwise' or 'anticlockwise'"
                )
            meta.direction = known
        match.players.extend(_players(players))
        match.ruleset.CopyFrom(ruleset_to_proto(rules))
        _check_limits(match)
        self._match = match
        self._engine = (twins or _twins.ACTIVE).engine
        self._tally = ScheduleTally(rules)
        self._first: int | None = None  # the seat that declared deal 1
        self._current: DealBuilder | None = None
        self._started = 0
        self._totals = [0, 0, 0, 0]
        self._closed = ""  # "finished" or "abandoned" once the record is out

    @property
    def match_id(self) -> str:
        """The record's match id."""
        return self._match.match_id

    @property
    def totals(self) -> list[int]:
        """The match totals per seat over the deals played out so far."""
        return list(self._totals)

    @property
    def next_declarer(self) -> int | None:
        """The seat that declares the next deal; None when the ruleset leaves it open (the
        first deal by lot, or by who holds the first declarer's card)."""
        return None if self._first is None else (self._first + self._started) % 4

    def deal(
        self,
        hands: Sequence[Sequence[CardLike] | str],
        declarer: int,
        contract: str | int,
        trump: str | int | None = None,
        *,
        trump_think_ms: int | None = None,
    ) -> DealBuilder:
        """Start the next deal: seat 0's 13 cards then seat 1's, 2's and 3's, the declarer's
        seat, the contract, and for koz the trump suit (``trump_think_ms``: how long the
        declarer took to name it). Play its cards on the ``DealBuilder`` this returns."""
        self._check_open()
        number = self._started + 1
        where = f"deal {number}"
        current = self._current
        if current is not None and not current.over:
            raise RecordBuildError(
                f"{where}: deal {current.number} is not over ({len(current.plays)} plays); "
                "play it out, or abandon the match"
            )
        rules = self.rules
        if number > rules.deal_count:
            raise RecordBuildError(
                f"{where}: the ruleset ({rules.preset}) has {rules.deal_count} deals, all "
                "played; finish() the match"
            )
        cards = _hands(hands, where)
        if isinstance(declarer, bool) or not isinstance(declarer, int) or not 0 <= declarer <= 3:
            raise RecordBuildError(f"{where}: declarer seat {declarer!r} does not exist (0..3)")
        first = self._first
        if number == 1 and rules.first_declarer is FirstDeclarerRule.HOLDER_OF_CARD:
            first = cards.index(rules.first_declarer_card) // 13
            why = f"the holder of {card_symbol(rules.first_declarer_card)} declares first"
        else:
            why = "the declarer moves one seat on each deal"
        if first is not None and declarer != (first + number - 1) % 4:
            raise RecordBuildError(
                f"{where}: seat {declarer} may not declare; seat {(first + number - 1) % 4} "
                f"does ({why})"
            )
        chosen = _contract(contract, where)
        where = f"deal {number} ({chosen.label})"
        breach = self._tally.breach(number, declarer, chosen)
        if breach is not None:
            raise RecordBuildError(
                f"{where}: seat {declarer} may not declare {chosen.label} ({breach.code}): "
                f"{breach.reason}"
            )
        if chosen == Contract.KOZ:
            if trump is None:
                raise RecordBuildError(f"{where}: koz needs a trump suit")
            suit = _suit(trump, f"{where}, trump")
        elif trump is not None:
            raise RecordBuildError(f"{where}: only koz has trumps; trump must be None")
        else:
            suit = -1
        if trump_think_ms is not None:
            if chosen != Contract.KOZ:
                raise RecordBuildError(f"{where}: trump_think_ms without trumps to name")
            _milliseconds(trump_think_ms, f"{where}, trump_think_ms")
        state = DealPlay(rules, cards, declarer, chosen, suit, engine=self._engine)
        # Nothing can fail from here on: the builder changes only now.
        self._tally.add(declarer, chosen)
        if self._first is None:
            self._first = declarer
        self._started = number
        self._current = DealBuilder(
            self, number, cards, declarer, chosen, suit, trump_think_ms, state
        )
        return self._current

    def finish(self) -> pb.Match:
        """The complete record: every deal of the ruleset played out (status COMPLETE)."""
        self._check_open()
        current = self._current
        if current is not None and not current.over:
            raise RecordBuildError(
                f"deal {current.number} is not over ({len(current.plays)} plays); play it "
                "out, or abandon(reason) the match"
            )
        count = self.rules.deal_count
        if self._started < count:
            raise RecordBuildError(
                f"the match has {self._started} of the ruleset's {count} deals; play them "
                "all, or abandon(reason) an unfinished match"
            )
        return self._close(pb.MATCH_STATUS_COMPLETE, "")

    def abandon(self, reason: str) -> pb.Match:
        """The record of a match stopped before its end (status ABANDONED, with ``reason``).

        A deal in progress is kept as played so far (its end ABANDONED, the scores of its
        complete tricks).
        """
        self._check_open()
        reason = _text(reason, "the reason")
        current = self._current
        if self._started == self.rules.deal_count and (current is None or current.over):
            raise RecordBuildError(
                f"all {self._started} deals are played; finish() the match instead"
            )
        probe = pb.Match(status_reason=reason)
        _check_limits(probe)
        if current is not None and not current.over:
            current._abandoned = True
            self._close_deal(current)
        return self._close(pb.MATCH_STATUS_ABANDONED, reason)

    def _check_open(self) -> None:
        if self._closed:
            raise RecordBuildError(f"the match is {self._closed}; start a new MatchBuilder")

    def _close_deal(self, deal: DealBuilder) -> None:
        record = deal._record()
        self._match.deals.append(record)
        for seat, score in enumerate(record.claimed_scores):
            self._totals[seat] += score

    def _close(self, status: pb.MatchStatus.ValueType, reason: str) -> pb.Match:
        match = self._match
        match.status = status
        match.status_reason = reason
        match.claimed_totals.extend(self._totals)
        self._closed = "finished" if status == pb.MATCH_STATUS_COMPLETE else "abandoned"
        return match


# -- in one call ---------------------------------------------------------------------------


def build_match(
    *,
    players: Sequence[str | PlayerInfo],
    rules: str | Ruleset,
    deals: Iterable[DealInput],
    abandoned: str | None = None,
    match_id: str | None = None,
    event: str = "",
    site: str = "",
    start_time: datetime | None = None,
    client_name: str = "",
    client_version: str = "",
    tags: Mapping[str, str] | None = None,
    direction: str | None = None,
    twins: _twins.Twins | None = None,
) -> pb.Match:
    """A whole record in one call: ``MatchBuilder`` fed every deal of ``deals`` (see
    ``DealInput``), then finished — or abandoned with the reason ``abandoned``, when the
    match stopped early (the last deal may then stop partway)."""
    builder = MatchBuilder(
        players,
        rules,
        match_id=match_id,
        event=event,
        site=site,
        start_time=start_time,
        client_name=client_name,
        client_version=client_version,
        tags=tags,
        direction=direction,
        twins=twins,
    )
    for spec in deals:
        where = f"deal {builder._started + 1}"
        if not isinstance(spec, Mapping):
            raise RecordBuildError(f"{where}: {type(spec).__name__} is no deal (a mapping)")
        unknown = sorted(set(spec) - _DEAL_KEYS)
        missing = sorted({"hands", "declarer", "contract"} - set(spec))
        if unknown or missing:
            problem = f"unknown key(s) {unknown}" if unknown else f"missing key(s) {missing}"
            raise RecordBuildError(f"{where}: {problem} (keys: {', '.join(sorted(_DEAL_KEYS))})")
        deal = builder.deal(
            spec["hands"],
            spec["declarer"],
            spec["contract"],
            spec.get("trump"),
            trump_think_ms=spec.get("trump_think_ms"),
        )
        plays = list(spec.get("plays", ()))
        think = spec.get("think_ms")
        if think is not None and len(think) != len(plays):
            raise RecordBuildError(f"{where}: {len(think)} think times for {len(plays)} plays")
        auto = set(spec.get("auto_plays", ()))
        if any(not isinstance(i, int) or not 0 <= i < len(plays) for i in auto):
            raise RecordBuildError(f"{where}: auto_plays {sorted(auto)} point past the plays")
        revoke = spec.get("revoke_play")
        if revoke is not None and revoke != len(plays) - 1:
            raise RecordBuildError(
                f"{where}: revoke_play {revoke} is not the last play ({len(plays) - 1}); a "
                "revoke ends the deal"
            )
        for i, card in enumerate(plays):
            ms = None if think is None else think[i]
            if i == revoke:
                deal.revoke(card, think_ms=ms, auto=i in auto)
            else:
                deal.play(card, think_ms=ms, auto=i in auto)
    return builder.finish() if abandoned is None else builder.abandon(abandoned)
