"""A match record built deal by deal (``MatchBuilder``) or in one call (``build_match``)."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime

from .. import _twins
from ..boundary import ruleset_to_proto
from ..cards import card_symbol
from ..contracts import Contract
from ..errors import RecordBuildError
from ..game import DealPlay
from ..rules import FirstDeclarerRule, Ruleset, preset
from ..schedule import ScheduleTally
from ..v1 import record_pb2 as pb
from .deal import DealBuilder
from .inputs import (
    DEAL_KEYS,
    CardLike,
    DealInput,
    PlayerInfo,
    check_limits,
    read_contract,
    read_hands,
    read_milliseconds,
    read_players,
    read_suit,
    read_text,
)

__all__ = ["MatchBuilder", "build_match"]

_FORMAT_VERSION = 1  # kingrec.v1 records

_DIRECTIONS = {
    "anticlockwise": pb.DIRECTION_ANTICLOCKWISE,
    "counterclockwise": pb.DIRECTION_ANTICLOCKWISE,
    "clockwise": pb.DIRECTION_CLOCKWISE,
}


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
            match_id=read_text(match_id, "match_id") if match_id is not None else str(uuid.uuid4()),
        )
        meta = match.metadata
        meta.event = read_text(event, "event")
        meta.site = read_text(site, "site")
        meta.client_name = read_text(client_name, "client_name")
        meta.client_version = read_text(client_version, "client_version")
        if start_time is not None:
            if not isinstance(start_time, datetime) or start_time.utcoffset() is None:
                raise RecordBuildError(
                    "start_time must be a datetime with its time zone "
                    "(e.g. datetime.now(timezone.utc))"
                )
            meta.start_time.FromDatetime(start_time)
        for key, value in (tags or {}).items():
            meta.tags[read_text(key, "a tag's key")] = read_text(value, f"tag {key!r}")
        if direction is not None:
            known = _DIRECTIONS.get(str(direction).lower())
            if known is None:
                raise RecordBuildError(
                    f"direction {direction!r} is not 'clockwise' or 'anticlockwise'"
                )
            meta.direction = known
        match.players.extend(read_players(players))
        match.ruleset.CopyFrom(ruleset_to_proto(rules))
        check_limits(match)
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
        cards = read_hands(hands, where)
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
        chosen = read_contract(contract, where)
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
            suit = read_suit(trump, f"{where}, trump")
        elif trump is not None:
            raise RecordBuildError(f"{where}: only koz has trumps; trump must be None")
        else:
            suit = -1
        if trump_think_ms is not None:
            if chosen != Contract.KOZ:
                raise RecordBuildError(f"{where}: trump_think_ms without trumps to name")
            read_milliseconds(trump_think_ms, f"{where}, trump_think_ms")
        state = DealPlay(rules, cards, declarer, chosen, suit, engine=self._engine)
        # Nothing can fail from here on: the builder changes only now.
        self._tally.add(declarer, chosen)
        if self._first is None:
            self._first = declarer
        self._started = number
        self._current = DealBuilder(
            self._check_open,
            self._close_deal,
            number,
            cards,
            declarer,
            chosen,
            suit,
            trump_think_ms,
            state,
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
        reason = read_text(reason, "the reason")
        current = self._current
        if self._started == self.rules.deal_count and (current is None or current.over):
            raise RecordBuildError(
                f"all {self._started} deals are played; finish() the match instead"
            )
        probe = pb.Match(status_reason=reason)
        check_limits(probe)
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
        unknown = sorted(set(spec) - DEAL_KEYS)
        missing = sorted({"hands", "declarer", "contract"} - set(spec))
        if unknown or missing:
            problem = f"unknown key(s) {unknown}" if unknown else f"missing key(s) {missing}"
            raise RecordBuildError(f"{where}: {problem} (keys: {', '.join(sorted(DEAL_KEYS))})")
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
