"""A match as numbered ``kingrec.v1.MatchEvent`` messages, built on ``kingrec.events``.

``EventWriter`` numbers and translates: the match's start, each deal's events as
``kingrec.events.deal_events`` gives them (a deal's start becomes ``deal_started`` and
``contract_chosen``), the match's end. Replays write a whole record at once
(``record_events``); the live hub writes the same events as the match grows, so a live
match's events are numbered exactly as a replay of its finished record numbers them.

``seat_view`` turns an event into what one seat's player sees; ``from_position`` starts a
replay at a deal or trick. Neither judges anything: the library decided what happened.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from kingrec.boundary import end_to_proto
from kingrec.events import CardPlayed, DealEnded, DealEvent, DealStarted, TrickWon, deal_events
from kingrec.rules import Ruleset
from kingrec.v1 import record_pb2 as pb
from kingrec.v1 import service_pb2 as svc

__all__ = ["EventWriter", "framed", "from_position", "record_events", "seat_view"]

# The cards of a 13-bit suit mask as bytes, per suit: legal sets without a loop per card.
_SUIT_BYTES = [
    [bytes(13 * suit + r for r in range(13) if bits >> r & 1) for bits in range(1 << 13)]
    for suit in range(4)
]


def _mask_bytes(mask: int) -> bytes:
    clubs, diamonds, hearts, spades = _SUIT_BYTES
    return (
        clubs[mask & 0x1FFF]
        + diamonds[mask >> 13 & 0x1FFF]
        + hearts[mask >> 26 & 0x1FFF]
        + spades[mask >> 39 & 0x1FFF]
    )


def framed(event: svc.MatchEvent) -> bytes:
    """``event`` as one entry of the ``events`` field (number 1) of ReplayResponse and
    WatchResponse: a response's bytes are such entries one after another, so one event is
    serialized once whoever receives it."""
    body = event.SerializeToString()
    size = len(body)
    head = bytearray(b"\x0a")
    while size >= 0x80:
        head.append(size & 0x7F | 0x80)
        size >>= 7
    head.append(size)
    return bytes(head) + body


class EventWriter:
    """Numbers a match's events and keeps its running totals."""

    def __init__(self) -> None:
        self.seq = 0
        self.totals = [0, 0, 0, 0]
        # The think times and auto-plays of the deal of the last card, as plain values.
        self._deal: tuple[pb.Deal | None, int] = (None, 0)
        self._think: list[int] = []
        self._auto: set[int] = set()

    def _event(self) -> svc.MatchEvent:
        self.seq += 1
        return svc.MatchEvent(seq=self.seq)

    def match_started(self, match: pb.Match, rules: Ruleset) -> svc.MatchEvent:
        event = self._event()
        started = event.match_started
        started.match_id = match.match_id
        started.metadata.CopyFrom(match.metadata)
        started.players.extend(match.players)
        started.ruleset.CopyFrom(match.ruleset)
        started.deal_count = rules.deal_count
        return event

    def deal_event(self, deal: pb.Deal, number: int, item: DealEvent) -> list[svc.MatchEvent]:
        """The messages of one of ``deal_events``' items for ``deal``, at position ``number``."""
        if isinstance(item, CardPlayed):
            return [self._card(deal, number, item)]
        if isinstance(item, TrickWon):
            event = self._event()
            won = event.trick_won
            won.deal, won.trick, won.leader = number, item.trick, item.leader
            won.cards, won.winner = bytes(item.cards), item.winner
            won.units, won.points = item.units, item.points
            return [event]
        if isinstance(item, DealStarted):
            return self._deal_started(deal, number, item)
        return [self._deal_ended(number, item)]

    def _deal_started(self, deal: pb.Deal, number: int, item: DealStarted) -> list[svc.MatchEvent]:
        start = self._event()
        started = start.deal_started
        started.deal, started.declarer, started.playable = number, item.declarer, item.playable
        if deal.HasField("dealer"):
            started.dealer = deal.dealer
        hands = bytes(item.hands)  # seat s at [13s:13s+13]; a bad deck's extra bytes go to seat 3
        for seat in range(4):
            started.hands.add(cards=hands[13 * seat : 13 * seat + 13 if seat < 3 else None])
        started.totals.extend(self.totals)
        chosen_event = self._event()
        chosen = chosen_event.contract_chosen
        chosen.deal, chosen.declarer = number, item.declarer
        chosen.contract = pb.Contract.ValueType(item.contract)
        chosen.trump = deal.trump  # as declared (the engine ignores a trump outside koz)
        if deal.HasField("trump_think_ms"):
            chosen.think_ms = deal.trump_think_ms
        return [start, chosen_event]

    def _card(self, deal: pb.Deal, number: int, item: CardPlayed) -> svc.MatchEvent:
        if self._deal[0] is not deal or self._deal[1] != len(deal.plays):
            self._deal = (deal, len(deal.plays))
            self._think, self._auto = list(deal.think_ms), set(deal.auto_plays)
        self.seq += 1
        event = svc.MatchEvent(seq=self.seq)
        card = event.card_played
        card.deal, card.trick, card.position = number, item.trick, item.position
        card.seat, card.card, card.play = item.seat, item.card, item.play
        if item.broke:
            card.broke = item.broke
        card.legal = _mask_bytes(item.legal)
        play = item.play
        if play < len(self._think):
            card.think_ms = self._think[play]
        if play in self._auto:
            card.auto_play = True
        return event

    def _deal_ended(self, number: int, item: DealEnded) -> svc.MatchEvent:
        event = self._event()
        ended = event.deal_ended
        ended.deal, ended.plays = number, item.consumed
        ended.end = end_to_proto(item.end)
        ended.scores.extend(item.scores)
        self.totals = [a + b for a, b in zip(self.totals, item.scores, strict=True)]
        ended.totals.extend(self.totals)
        if item.revoker >= 0:
            ended.revoker = item.revoker
        return event

    def match_ended(self, match: pb.Match) -> svc.MatchEvent:
        event = self._event()
        ended = event.match_ended
        ended.status, ended.reason = match.status, match.status_reason
        ended.deals = len(match.deals)
        ended.totals.extend(self.totals)
        return event


def record_events(match: pb.Match, rules: Ruleset) -> Iterator[svc.MatchEvent]:
    """Every event of a recorded match, numbered from 1, replayed under ``rules``."""
    writer = EventWriter()
    yield writer.match_started(match, rules)
    for number, deal in enumerate(match.deals, 1):
        for item in deal_events(deal, rules, number=number):
            yield from writer.deal_event(deal, number, item)
    yield writer.match_ended(match)


def _deal_of(event: svc.MatchEvent) -> tuple[str, int]:
    kind = event.WhichOneof("event") or ""
    if kind in ("match_started", "match_ended", ""):
        return kind, 0
    deal: int = getattr(event, kind).deal
    return kind, deal


def from_position(
    events: Iterable[svc.MatchEvent], deal: int, trick: int
) -> Iterator[svc.MatchEvent]:
    """The events a replay from trick ``trick`` of deal ``deal`` sends (1-based; 0 counts as
    1): the match's start, that deal's start and contract, its earlier tricks as
    ``trick_won`` events only, and everything from there on."""
    if deal <= 1 and trick <= 1:
        yield from events
        return
    for event in events:
        kind, number = _deal_of(event)
        if number and number < deal:
            continue
        early = kind == "card_played" and event.card_played.trick < trick
        if number == deal and early:
            continue
        yield event


def seat_view(event: svc.MatchEvent, seat: int) -> svc.MatchEvent:
    """``event`` as the player at ``seat`` sees it: other seats' hands hidden until their
    cards are played, and their legal cards never shown. The event itself when it shows
    nothing hidden; else a copy."""
    kind = event.WhichOneof("event")
    if kind == "deal_started":
        hands = event.deal_started.hands
        if all(not hands[s].cards for s in range(len(hands)) if s != seat):
            return event
        shown = svc.MatchEvent()
        shown.CopyFrom(event)
        for s, hand in enumerate(shown.deal_started.hands):
            if s != seat:
                hand.hidden += len(hand.cards)
                hand.cards = b""
        return shown
    if kind == "card_played" and event.card_played.seat != seat and event.card_played.legal:
        shown = svc.MatchEvent()
        shown.CopyFrom(event)
        shown.card_played.legal = b""
        return shown
    return event
