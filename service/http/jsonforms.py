"""Messages as the HTTP API writes them: protobuf's JSON mapping with the proto field names,
fields without presence written at their default, cards as arrays of codes; and the one
JSON writer, whose text can never become markup.

Cards and tricks, nine events in ten, are written field by field (``_card``, ``_trick``: the
same keys ``MessageToDict`` would give, held to it by the tests); everything else goes
through ``json_format``.
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


def _card(played: svc.CardPlayed) -> dict[str, Any]:
    out: dict[str, Any] = {
        "deal": played.deal,
        "trick": played.trick,
        "position": played.position,
        "seat": played.seat,
        "card": played.card,
        "play": played.play,
        "broke": played.broke,
        "legal": list(played.legal),
        "auto_play": played.auto_play,
    }
    if played.HasField("think_ms"):
        out["think_ms"] = played.think_ms
    return out


def _trick(won: svc.TrickWon) -> dict[str, Any]:
    return {
        "deal": won.deal,
        "trick": won.trick,
        "leader": won.leader,
        "cards": list(won.cards),
        "winner": won.winner,
        "units": won.units,
        "points": won.points,
    }


def event_dict(event: svc.MatchEvent) -> dict[str, Any]:
    """A ``MatchEvent`` as the API writes it: the card fields (``Hand.cards``,
    ``CardPlayed.legal``, ``TrickWon.cards``) as arrays of card codes, not base64."""
    kind = event.WhichOneof("event")
    if kind == "card_played":
        return {"seq": event.seq, kind: _card(event.card_played)}
    if kind == "trick_won":
        return {"seq": event.seq, kind: _trick(event.trick_won)}
    out = message_dict(event)
    if kind == "deal_started":
        hands = out[kind]["hands"]
        for hand, message in zip(hands, event.deal_started.hands, strict=True):
            hand["cards"] = list(message.cards)
    return out


def _entry_body(data: bytes) -> bytes:
    """The MatchEvent inside one encoded entry of a response's ``events`` (tag, length)."""
    pos = 1
    while data[pos] & 0x80:
        pos += 1
    return data[pos + 1 :]


def event_json(event: Event, seat: int | None = None) -> bytes:
    """The JSON text of one written event, as ``seat`` sees it (None: everything)."""
    message = svc.MatchEvent.FromString(_entry_body(event.view(seat)))
    return dumps(event_dict(message))
