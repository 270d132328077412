"""The HTTP API's JSON forms: cards and tricks written straight as text must be what the
general path (``event_dict``, protobuf's JSON mapping) gives, in every view (the same keys and
values; key order is no part of JSON); and no text from a record can become markup."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kingrec.records import Record, read_records
from kingrec.v1 import service_pb2 as svc
from kingrec_service.events import Event
from kingrec_service.http.jsonforms import dumps, event_dict, event_json
from kingrec_service.replaying import replay_events

SAMPLES = Path(__file__).resolve().parent.parent / "samples"


def _events(path: Path) -> list[tuple[Event, svc.MatchEvent]]:
    out = []
    for record in read_records(str(path)):
        assert isinstance(record, Record)
        for event in replay_events(record.match, 0, 0):
            out.append((event, event.message()))
    return out


@pytest.mark.parametrize(
    "sample",
    ["valid/classic.krec", "valid/abandoned.krec", "invalid/must-follow-suit.krec"],
)
@pytest.mark.parametrize("seat", [None, 0, 3])
def test_each_event_as_text_is_the_json_of_its_message_in_every_view(
    sample: str, seat: int | None
) -> None:
    events = _events(SAMPLES / sample)
    kinds = set()
    for event, _ in events:
        message = svc.ReplayResponse.FromString(event.view(seat)).events[0]
        text = event_json(event, seat)
        assert json.loads(text) == event_dict(message)  # the same keys and values
        kinds.add(message.WhichOneof("event"))
    assert {"card_played", "trick_won", "deal_started", "match_ended"} <= kinds


def test_think_times_auto_plays_and_broken_rules_are_written() -> None:
    events = [m for _, m in _events(SAMPLES / "invalid" / "must-follow-suit.krec")]
    played = [event_dict(m)["card_played"] for m in events if m.HasField("card_played")]
    assert any(p["broke"] == "MUST_FOLLOW_SUIT" for p in played)
    assert all(isinstance(p["legal"], list) for p in played)
    think = [m for m in events if m.HasField("card_played") and m.card_played.HasField("think_ms")]
    assert think
    for event, message in _events(SAMPLES / "valid" / "classic.krec")[:60]:
        if message.HasField("card_played") and message.card_played.HasField("think_ms"):
            written = json.loads(event_json(event))["card_played"]
            assert written["think_ms"] == message.card_played.think_ms


def test_markup_and_line_separators_never_survive_as_raw_text() -> None:
    text = dumps({"name": "</script><img src=x onerror=alert(1)>&\u2028\u2029\u202e"})
    assert text.isascii()
    for raw in (b"<", b">", b"&"):
        assert raw not in text
    assert json.loads(text)["name"] == "</script><img src=x onerror=alert(1)>&\u2028\u2029\u202e"
