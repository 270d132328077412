"""Messages as the HTTP API writes them: protobuf's JSON mapping with the proto field names,
fields without presence written at their default, cards as arrays of codes; and the one
JSON writer, whose text can never become markup.

Cards and tricks, nine events in ten, are written straight as JSON text from their fields
(``_card``, ``_trick``: the text of what ``event_dict`` gives, held to it by the tests);
everything else goes through ``json_format``.
"""

from __future__ import annotations

import json
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import Message

from kingrec.v1 import service_pb2 as svc

from ..events import Event

__all__ = ["dumps", "event_dict", "event_json", "message_dict"]

# Outside strings JSON is ASCII and holds none of these, so replacing them everywhere only
# touches strings: `</script>` in a name stays text wherever a page puts it.
_MARKUP = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026"})


def dumps(obj: object) -> bytes:
    """``obj`` as compact JSON: ASCII only (U+2028 and U+2029 escaped with the rest), and
    ``<``, ``>``, ``&`` escaped. Raises ValueError for NaN or an infinity."""
    text = json.dumps(obj, ensure_ascii=True, separators=(",", ":"), allow_nan=False)
    if "<" in text or ">" in text or "&" in text:
        text = text.translate(_MARKUP)
    return text.encode("ascii")


def message_dict(message: Message) -> dict[str, Any]:
    """A message in protobuf's JSON mapping: proto field names, enums by name, every field
    without presence written even at its default."""
    return json_format.MessageToDict(
        message, preserving_proto_field_name=True, always_print_fields_with_no_presence=True
    )


def _card(seq: int, played: svc.CardPlayed) -> bytes:
    broke = dumps(played.broke) if played.broke else b'""'
    think = b',"think_ms":%d' % played.think_ms if played.HasField("think_ms") else b""
    return (
        b'{"seq":%d,"card_played":{"deal":%d,"trick":%d,"position":%d,"seat":%d,"card":%d,'
        b'"play":%d,"broke":%s,"legal":[%s]%s,"auto_play":%s}}'
        % (
            seq,
            played.deal,
            played.trick,
            played.position,
            played.seat,
            played.card,
            played.play,
            broke,
            b",".join([_NUMBERS[c] for c in played.legal]),
            think,
            b"true" if played.auto_play else b"false",
        )
    )


def _trick(seq: int, won: svc.TrickWon) -> bytes:
    return (
        b'{"seq":%d,"trick_won":{"deal":%d,"trick":%d,"leader":%d,"cards":[%s],'
        b'"winner":%d,"units":%d,"points":%d}}'
        % (
            seq,
            won.deal,
            won.trick,
            won.leader,
            b",".join([_NUMBERS[c] for c in won.cards]),
            won.winner,
            won.units,
            won.points,
        )
    )


_NUMBERS = [b"%d" % n for n in range(256)]  # a card byte's JSON


def event_dict(event: svc.MatchEvent) -> dict[str, Any]:
    """A ``MatchEvent`` as the API writes it: the card fields (``Hand.cards``,
    ``CardPlayed.legal``, ``TrickWon.cards``) as arrays of card codes, not base64."""
    kind = event.WhichOneof("event")
    out = message_dict(event)
    if kind == "deal_started":
        hands = out[kind]["hands"]
        for hand, message in zip(hands, event.deal_started.hands, strict=True):
            hand["cards"] = list(message.cards)
    elif kind == "card_played":
        out[kind]["legal"] = list(event.card_played.legal)
    elif kind == "trick_won":
        out[kind]["cards"] = list(event.trick_won.cards)
    return out


def _entry_body(data: bytes) -> bytes:
    """The MatchEvent inside one encoded entry of a response's ``events`` (tag, length)."""
    pos = 1
    while data[pos] & 0x80:
        pos += 1
    return data[pos + 1 :]


def event_json(event: Event, seat: int | None = None) -> bytes:
    """The JSON text of one written event, as ``seat`` sees it (None: everything): the text
    of ``event_dict``, cards and tricks written straight from their fields."""
    message = svc.MatchEvent.FromString(_entry_body(event.view(seat)))
    if event.kind == "card_played":
        return _card(message.seq, message.card_played)
    if event.kind == "trick_won":
        return _trick(message.seq, message.trick_won)
    return dumps(event_dict(message))
