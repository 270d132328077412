"""A match as numbered ``kingrec.v1.MatchEvent`` messages, built on ``kingrec.events``.

``EventWriter`` numbers and translates: the match's start, each deal's events as
``kingrec.events.deal_events`` gives them (a deal's start becomes ``deal_started`` and
``contract_chosen``), the match's end. Replays write a whole record at once
(``record_events``); the live hub writes the same events as the match grows, so a live
match's events are numbered exactly as a replay of its finished record numbers them.

Each event is encoded once, as it is written (``Event.data``): a ReplayResponse or
WatchResponse is its events' encodings one after another, however many viewers get them.
What one seat's player may see (``Event.view``) is encoded beside it where it differs: other
seats' hands hidden until their cards are played, their legal cards never shown. Cards and
tricks, nine events in ten, are encoded here directly (``_card_body``, ``_trick_body``:
proto3 wire format, held to protobuf's own encoding by the tests); the rest through the
generated messages. ``from_position`` starts a replay at a deal or trick. Nothing here
judges anything: the library decided what happened.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import NamedTuple

from kingrec.boundary import end_to_proto
from kingrec.events import CardPlayed, DealEnded, DealEvent, DealStarted, TrickWon, deal_events
from kingrec.rules import Ruleset
from kingrec.v1 import record_pb2 as pb
from kingrec.v1 import service_pb2 as svc

from .wire import VARINTS as _V
from .wire import varint as _varint

__all__ = ["Event", "EventWriter", "from_position", "record_events", "response"]


class Event(NamedTuple):
    """One written event: what replays and viewers need to choose and pace it, and its
    encoding as an entry of a response's ``events`` (field 1)."""

    seq: int
    kind: str  # the MatchEvent's oneof: "card_played", "trick_won", …
    deal: int  # 0 for the match's start and end
    trick: int  # card_played and trick_won: 1-based; else 0
    pause_ms: int  # the recorded think time before it (a card, naming trumps); -1: none
    data: bytes  # everything shown
    views: tuple[bytes, bytes, bytes, bytes] | None  # per seat, when a seat sees less

    def view(self, seat: int | None) -> bytes:
        """The encoding for a viewer at ``seat`` (None: everything)."""
        return self.data if seat is None or self.views is None else self.views[seat]

    def message(self) -> svc.MatchEvent:
        """The event as a message (for tests and tools; responses use ``data``)."""
        return svc.ReplayResponse.FromString(self.data).events[0]


def response(events: Iterable[Event], seat: int | None = None) -> bytes:
    """The encoded ReplayResponse (or WatchResponse) holding ``events`` as ``seat`` sees them."""
    if seat is None:
        return b"".join([e.data for e in events])
    return b"".join([e.view(seat) for e in events])


# -- the wire format -----------------------------------------------------------------------------


def _zigzag(n: int) -> int:
    return 2 * n if n >= 0 else -2 * n - 1


def _entry(event: bytes) -> bytes:
    """One MatchEvent's encoding as an entry of a response's ``events`` (field 1)."""
    return b"\x0a" + _varint(len(event)) + event


def _event_entry(seq: int, tag: bytes, body: bytes) -> bytes:
    """A MatchEvent of ``seq`` (never 0) whose oneof (``tag``: its key byte) holds ``body``."""
    event = b"\x08" + _varint(seq) + tag + _V[len(body)] + body
    return b"\x0a" + _V[len(event)] + event


def _message_entry(event: svc.MatchEvent) -> bytes:
    return _entry(event.SerializeToString())


_CARD = b"\x2a"  # MatchEvent.card_played = 5, length-delimited
_TRICK = b"\x32"  # MatchEvent.trick_won = 6, length-delimited


def _card_body(
    deal: int, item: CardPlayed, legal: bytes, think: int | None, auto: bool
) -> tuple[bytes, bytes]:
    """CardPlayed's encoding, and the same without the legal cards (what other seats see).
    Fields are written in number order, zeros left out (proto3), ``think_ms`` when present."""
    v = _V
    head = b"".join(
        [
            b"\x08" + v[deal] if deal else b"",  # deal = 1 (at most MAX_DEALS)
            b"\x10" + v[item.trick] if item.trick else b"",  # trick = 2
            b"\x18" + v[item.position] if item.position else b"",  # position = 3
            b"\x20" + v[item.seat] if item.seat else b"",  # seat = 4
            b"\x28" + v[item.card] if item.card else b"",  # card = 5
            b"\x30" + v[item.play] if item.play else b"",  # play = 6
        ]
    )
    if item.broke:  # broke = 7
        broke = item.broke.encode()
        head += b"\x3a" + v[len(broke)] + broke
    tail = b"\x48" + _varint(think) if think is not None else b""  # think_ms = 9, optional
    if auto:
        tail += b"\x50\x01"  # auto_play = 10
    shown = b"\x42" + v[len(legal)] + legal if legal else b""  # legal = 8
    return head + shown + tail, head + tail


def _trick_body(deal: int, item: TrickWon) -> bytes:
    v = _V
    return b"".join(
        [
            b"\x08" + v[deal] if deal else b"",  # deal = 1
            b"\x10" + v[item.trick] if item.trick else b"",  # trick = 2
            b"\x18" + v[item.leader] if item.leader else b"",  # leader = 3
            b"\x22\x04" + bytes(item.cards),  # cards = 4: always four
            b"\x28" + v[item.winner] if item.winner else b"",  # winner = 5
            b"\x30" + v[item.units] if item.units else b"",  # units = 6
            b"\x38" + _varint(_zigzag(item.points)) if item.points else b"",  # points = 7
        ]
    )


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


# -- writing a match's events -----------------------------------------------------------------


class EventWriter:
    """Numbers a match's events, encodes them, and keeps the running totals."""

    def __init__(self) -> None:
        self.seq = 0
        self.totals = [0, 0, 0, 0]
        # The think times and auto-plays of the deal of the last card, as plain values.
        self._deal: tuple[pb.Deal | None, int] = (None, 0)
        self._think: list[int] = []
        self._auto: set[int] = set()

    def _message(self) -> svc.MatchEvent:
        self.seq += 1
        return svc.MatchEvent(seq=self.seq)

    def _plain(self, event: svc.MatchEvent, deal: int = 0, pause_ms: int = -1) -> Event:
        kind = event.WhichOneof("event") or ""
        return Event(event.seq, kind, deal, 0, pause_ms, _message_entry(event), None)

    def match_started(self, match: pb.Match, rules: Ruleset) -> Event:
        event = self._message()
        started = event.match_started
        started.match_id = match.match_id
        started.metadata.CopyFrom(match.metadata)
        started.players.extend(match.players)
        started.ruleset.CopyFrom(match.ruleset)
        started.deal_count = rules.deal_count
        return self._plain(event)

    def deal_event(self, deal: pb.Deal, number: int, item: DealEvent) -> list[Event]:
        """The events of one of ``deal_events``' items for ``deal``, at position ``number``."""
        if isinstance(item, CardPlayed):
            return [self._card(deal, number, item)]
        if isinstance(item, TrickWon):
            self.seq += 1
            data = _event_entry(self.seq, _TRICK, _trick_body(number, item))
            return [Event(self.seq, "trick_won", number, item.trick, -1, data, None)]
        if isinstance(item, DealStarted):
            return self._deal_started(deal, number, item)
        return [self._deal_ended(number, item)]

    def _deal_started(self, deal: pb.Deal, number: int, item: DealStarted) -> list[Event]:
        start = self._message()
        started = start.deal_started
        started.deal, started.declarer, started.playable = number, item.declarer, item.playable
        if deal.HasField("dealer"):
            started.dealer = deal.dealer
        hands = bytes(item.hands)  # seat s at [13s:13s+13]; a bad deck's extra bytes go to seat 3
        for seat in range(4):
            started.hands.add(cards=hands[13 * seat : 13 * seat + 13 if seat < 3 else None])
        started.totals.extend(self.totals)
        views = []
        for viewer in range(4):
            shown = svc.MatchEvent()
            shown.CopyFrom(start)
            for seat, hand in enumerate(shown.deal_started.hands):
                if seat != viewer:
                    hand.hidden += len(hand.cards)
                    hand.cards = b""
            views.append(_message_entry(shown))
        data = _message_entry(start)
        seats = (views[0], views[1], views[2], views[3])
        started_event = Event(start.seq, "deal_started", number, 0, -1, data, seats)
        chosen_event = self._message()
        chosen = chosen_event.contract_chosen
        chosen.deal, chosen.declarer = number, item.declarer
        chosen.contract = pb.Contract.ValueType(item.contract)
        chosen.trump = deal.trump  # as declared (the engine ignores a trump outside koz)
        pause = -1
        if deal.HasField("trump_think_ms"):
            chosen.think_ms = pause = deal.trump_think_ms
        return [started_event, self._plain(chosen_event, number, pause)]

    def _card(self, deal: pb.Deal, number: int, item: CardPlayed) -> Event:
        if self._deal[0] is not deal or self._deal[1] != len(deal.plays):
            self._deal = (deal, len(deal.plays))
            self._think, self._auto = list(deal.think_ms), set(deal.auto_plays)
        self.seq += 1
        play = item.play
        think = self._think[play] if play < len(self._think) else None
        full, public = _card_body(number, item, _mask_bytes(item.legal), think, play in self._auto)
        data = _event_entry(self.seq, _CARD, full)
        views = None
        if public != full:
            hidden = _event_entry(self.seq, _CARD, public)
            seat = item.seat
            views = (
                data if seat == 0 else hidden,
                data if seat == 1 else hidden,
                data if seat == 2 else hidden,
                data if seat == 3 else hidden,
            )
        pause = -1 if think is None else think
        return Event(self.seq, "card_played", number, item.trick, pause, data, views)

    def _deal_ended(self, number: int, item: DealEnded) -> Event:
        event = self._message()
        ended = event.deal_ended
        ended.deal, ended.plays = number, item.consumed
        ended.end = end_to_proto(item.end)
        ended.scores.extend(item.scores)
        self.totals = [a + b for a, b in zip(self.totals, item.scores, strict=True)]
        ended.totals.extend(self.totals)
        if item.revoker >= 0:
            ended.revoker = item.revoker
        return self._plain(event, number)

    def match_ended(self, match: pb.Match) -> Event:
        event = self._message()
        ended = event.match_ended
        ended.status, ended.reason = match.status, match.status_reason
        ended.deals = len(match.deals)
        ended.totals.extend(self.totals)
        return self._plain(event)


def record_events(match: pb.Match, rules: Ruleset) -> Iterator[Event]:
    """Every event of a recorded match, numbered from 1, replayed under ``rules``."""
    writer = EventWriter()
    yield writer.match_started(match, rules)
    card, other = writer._card, writer.deal_event
    for number, deal in enumerate(match.deals, 1):
        for item in deal_events(deal, rules, number=number):
            if type(item) is CardPlayed:
                yield card(deal, number, item)
            else:
                yield from other(deal, number, item)
    yield writer.match_ended(match)


def from_position(events: Iterable[Event], deal: int, trick: int) -> Iterator[Event]:
    """The events a replay from trick ``trick`` of deal ``deal`` sends (1-based; 0 counts as
    1): the match's start, that deal's start and contract, its earlier tricks as
    ``trick_won`` events only, and everything from there on."""
    if deal <= 1 and trick <= 1:
        yield from events
        return
    for event in events:
        if event.deal and event.deal < deal:
            continue
        if event.deal == deal and event.kind == "card_played" and event.trick < trick:
            continue
        yield event
