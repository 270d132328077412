"""Validate and ValidateStream: verdicts of records, in responses that fit gRPC's limit.

The library judges (``kingrec_service.records``); this module only puts the verdicts into
responses, encoded here: each verdict is encoded once and a response is the concatenation of
its fields (``kingrec_service.wire``), the bytes ``SerializeToString`` gives for the same
message. A record the compiled checker vouched for (``records.Vouched``) is encoded as its
report without a report being made, a report without findings without its message
(``convert.report_bytes``). A response's verdicts are kept to ``VERDICT_BYTES``, well under
the 4 MiB a client receives by default (``kingrec_service.server.MAX_RESPONSE_BYTES``): a
4 MiB request of tiny frames can hold hundreds of thousands of records, each with a verdict.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import lru_cache
from typing import NamedTuple

from kingrec.container import FILE_HEADER_SIZE
from kingrec.errors import LimitError
from kingrec.findings import Location, MatchReport
from kingrec.jsonl import clean_line, clean_place
from kingrec.records import Damage
from kingrec.v1 import service_pb2 as svc

from .convert import (
    clean_report_bytes,
    clean_report_wire,
    located_bytes,
    location_bytes,
    report_bytes,
    report_json,
    verdict_into,
)
from .records import (
    Vouched,
    frame_verdicts,
    one_match,
    record_verdicts,
    stream_verdicts,
    vouch,
)
from .stream_request import Frames
from .wire import delimited, varint

__all__ = [
    "VERDICT_BYTES",
    "match_response",
    "stream_responses",
    "validate_response",
    "verdict_bytes",
]

VERDICT_BYTES = 3 << 20  # a response's verdicts at most, leaving room for the rest

# Field keys (number << 3 | wire type 2, length-delimited; 0 for a varint).
_REPORT = b"\x0a"  # ValidateResponse.report = 1, Verdict.report = 1
_REPORT_JSON = b"\x12"  # ValidateResponse.report_json = 2
_VERDICT = b"\x1a"  # ValidateResponse.verdicts = 3
_STREAM_REQUEST = b"\x08"  # ValidateStreamResponse.request = 1 (varint)
_STREAM_VERDICT = b"\x12"  # ValidateStreamResponse.verdicts = 2
_STREAM_DONE = b"\x18\x01"  # ValidateStreamResponse.done = 3, true


def _one_report(report: bytes, line: str) -> bytes:
    """The answer of a record holding one match: its report (encoded once, sent twice, as
    ValidateResponse.report and as the report of its one verdict: both are field 1) and its
    JSON line."""
    field = delimited(_REPORT, report)
    text = line.encode("utf-8")
    return b"".join(
        (field, _REPORT_JSON, varint(len(text)), text, _VERDICT, varint(len(field)), field)
    )


def validate_response(record: svc.Record) -> bytes:
    """Validate's answer, encoded: the report of a record holding one match, else every
    verdict."""
    answer = match_response(record)
    return _judged_response(record) if answer is None else answer


def match_response(record: svc.Record) -> bytes | None:
    """``validate_response`` of a record given as one match (a message or a frame's bytes):
    judged at once, in the time of the compiled checker (the service answers it on the event
    loop). None for a whole .krec file or JSON text, which may hold thousands of records.
    A match the checker vouches for (most) is answered from its id and deals alone: no
    report, location or JSON object made."""
    payload = one_match(record)
    if payload is None:
        return None
    verdict = vouch(payload)
    if verdict is None:
        return _judged_response(record)
    deals, match_id = verdict
    name = record.name
    frame = _frame_zero(name) if len(name) <= CACHED_NAME else _frame(name)
    # ``_one_report`` and ``_fitting`` written out here: a busy server runs this with its
    # caches cold, where each function called costs more than its work (service/README.md).
    report = clean_report_wire(match_id, frame.located, deals)
    field = _REPORT + varint(len(report)) + report
    text = clean_line(match_id.decode("utf-8"), frame.place, deals).encode("utf-8")
    answer = b"".join(
        (field, _REPORT_JSON, varint(len(text)), text, _VERDICT, varint(len(field)), field)
    )
    return answer if len(answer) <= VERDICT_BYTES else _fitting(answer, 1, name)


def _judged_response(record: svc.Record) -> bytes:
    """Validate's answer from the reports and damage the library makes."""
    items = record_verdicts(record)
    if len(items) == 1 and isinstance(items[0], MatchReport):
        encoded = _one_report(report_bytes(items[0]), report_json(items[0]))
    else:
        encoded = b"".join([delimited(_VERDICT, verdict_bytes(item)) for item in items])
    return _fitting(encoded, len(items), record.name)


class _Frame(NamedTuple):
    """Frame 0 of a file ``name``, where a record given as one match is, as a clean report
    of it holds it: encoded (``convert.located_bytes``) and in its JSON line
    (``kingrec.jsonl.clean_place``)."""

    located: bytes
    place: str


def _frame(name: str) -> _Frame:
    place = Location(name, 0, FILE_HEADER_SIZE)
    return _Frame(located_bytes(location_bytes(place)), clean_place(place))


CACHED_NAME = 256  # names kept encoded at most this long: the cache's size stays small
_frame_zero = lru_cache(maxsize=64)(_frame)  # a client names its records alike, call on call


def _fitting(encoded: bytes, items: int, name: str) -> bytes:
    """``encoded``, unless it is over ``VERDICT_BYTES`` (a huge name or id, sent three times in
    a report's answer, or a file of many verdicts): ``LimitError``."""
    if len(encoded) > VERDICT_BYTES:
        raise LimitError(
            f"the verdicts of the {items} records and damaged stretches of "
            f"{name or 'the file'} do not fit in one response ({VERDICT_BYTES} "
            "bytes); send the file in pieces through ValidateStream"
        )
    return encoded


def stream_responses(index: int, records: Sequence[svc.Record] | Frames) -> Iterator[bytes]:
    """The encoded responses to the ``index``-th request of a ValidateStream (0-based), of
    its records (or its ``Frames``): its verdicts in order, in as many responses as they
    need; the last one ``done``."""
    head = _STREAM_REQUEST + varint(index) if index else b""  # proto3 leaves out a 0
    parts = [head]
    size = 0
    entries = _frame_entries(records) if isinstance(records, Frames) else _entries(records)
    for entry in entries:
        if size + len(entry) > VERDICT_BYTES and len(parts) > 1:
            yield b"".join(parts)  # this verdict goes first into the next response
            parts, size = [head], 0
        parts.append(entry)
        size += len(entry)
    parts.append(_STREAM_DONE)
    yield b"".join(parts)


def _entries(records: Sequence[svc.Record]) -> Iterator[bytes]:
    """Each verdict of a request's records, encoded as a ``ValidateStreamResponse.verdicts``."""
    places: dict[str, bytes] = {}  # a vouched-for record's location, by its name
    for item in stream_verdicts(records):
        yield delimited(_STREAM_VERDICT, verdict_bytes(item, places))


def _frame_entries(frames: Frames) -> Iterator[bytes]:
    """``_entries`` of a request of frames' bytes: a record the checker vouched for is
    encoded from its id and deals as ``verdict_bytes`` encodes its ``Vouched``, written out
    here (hundreds of thousands of records a second)."""
    names = frames.names
    places: dict[str, bytes] = {}  # a name's location, encoded (``_Frame.located``)
    for name, item in zip(names, frame_verdicts(frames.payloads, names), strict=True):
        if isinstance(item, tuple):  # a report is no tuple
            deals, match_id = item
            located = places.get(name)
            if located is None:
                located = places[name] = _frame(name).located
            report = clean_report_wire(match_id, located, deals)
            verdict = _REPORT + varint(len(report)) + report
            yield _STREAM_VERDICT + varint(len(verdict)) + verdict
        else:
            yield delimited(_STREAM_VERDICT, verdict_bytes(item))


def verdict_bytes(
    item: MatchReport | Damage | Vouched, places: dict[str, bytes] | None = None
) -> bytes:
    """The encoded ``Verdict`` of a report, damage or vouched-for record: what
    ``convert.verdict_into`` fills in for it, serialized (``places``: the encoded locations
    of vouched-for records, by name, kept between calls)."""
    if type(item) is Vouched:
        place = None if places is None else places.get(item.name)
        if place is None:
            place = location_bytes(Location(item.name, 0, FILE_HEADER_SIZE))
            if places is not None:
                places[item.name] = place
        return delimited(_REPORT, clean_report_bytes(item.match_id, place, item.deals))
    if type(item) is MatchReport:
        return delimited(_REPORT, report_bytes(item))
    assert isinstance(item, Damage)
    msg = svc.Verdict()
    verdict_into(msg, item)
    return msg.SerializeToString()
