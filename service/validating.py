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

from kingrec.container import FILE_HEADER_SIZE
from kingrec.errors import LimitError
from kingrec.findings import Location, MatchReport
from kingrec.jsonl import clean_report_line
from kingrec.records import Damage
from kingrec.v1 import service_pb2 as svc

from .convert import clean_report_bytes, location_bytes, report_bytes, report_json, verdict_into
from .records import Vouched, record_verdicts, stream_verdicts, vouched_frame
from .wire import delimited, varint

__all__ = ["VERDICT_BYTES", "stream_responses", "validate_response", "verdict_bytes"]

VERDICT_BYTES = 3 << 20  # a response's verdicts at most, leaving room for the rest

# Field keys (number << 3 | wire type 2, length-delimited; 0 for a varint).
_REPORT = b"\x0a"  # ValidateResponse.report = 1, Verdict.report = 1
_REPORT_JSON = b"\x12"  # ValidateResponse.report_json = 2
_VERDICT = b"\x1a"  # ValidateResponse.verdicts = 3
_STREAM_REQUEST = b"\x08"  # ValidateStreamResponse.request = 1 (varint)
_STREAM_VERDICT = b"\x12"  # ValidateStreamResponse.verdicts = 2
_STREAM_DONE = b"\x18\x01"  # ValidateStreamResponse.done = 3, true


def _one_report(report: bytes, line: str) -> bytes:
    """The answer of a record holding one match: its report (encoded once, sent twice) and
    its JSON line."""
    return b"".join(
        (
            delimited(_REPORT, report),
            delimited(_REPORT_JSON, line.encode("utf-8")),
            delimited(_VERDICT, delimited(_REPORT, report)),
        )
    )


def validate_response(record: svc.Record) -> bytes:
    """Validate's answer, encoded: the report of a record holding one match, else every
    verdict. A match the compiled checker vouches for (most) is answered from its id and
    deals alone: no report, no location, no JSON object made."""
    vouched = vouched_frame(record)
    if vouched is not None:
        return _vouched_response(vouched)
    items = record_verdicts(record)
    if len(items) == 1 and isinstance(items[0], MatchReport):
        encoded = _one_report(report_bytes(items[0]), report_json(items[0]))
    else:
        encoded = b"".join([delimited(_VERDICT, verdict_bytes(item)) for item in items])
    return _fitting(encoded, len(items), record.name)


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


def stream_responses(index: int, records: Sequence[svc.Record]) -> Iterator[bytes]:
    """The encoded responses to the ``index``-th request of a ValidateStream (0-based): its
    verdicts in order, in as many responses as they need; the last one ``done``."""
    head = _STREAM_REQUEST + varint(index) if index else b""  # proto3 leaves out a 0
    parts = [head]
    size = 0
    places: dict[str, bytes] = {}  # a vouched-for record's location, by its name
    for item in stream_verdicts(records):
        entry = delimited(_STREAM_VERDICT, verdict_bytes(item, places))
        if size + len(entry) > VERDICT_BYTES and len(parts) > 1:
            yield b"".join(parts)  # this verdict goes first into the next response
            parts, size = [head], 0
        parts.append(entry)
        size += len(entry)
    parts.append(_STREAM_DONE)
    yield b"".join(parts)


def _vouched_response(vouched: Vouched) -> bytes:
    """Validate's answer for a match the compiled checker vouched for
    (``records.vouched_frame``): its report, from its id and deals alone."""
    mid, deals, name = vouched.match_id, vouched.deals, vouched.name
    place, encoded = _frame_zero(name) if len(name) <= CACHED_NAME else _place(name)
    answer = _one_report(
        clean_report_bytes(mid, encoded, deals), clean_report_line(mid, place, deals)
    )
    return _fitting(answer, 1, name)


CACHED_NAME = 256  # names kept encoded at most this long: the cache's size stays small


def _place(name: str) -> tuple[Location, bytes]:
    """Where a record given as one match is, frame 0 of a file ``name``, and encoded."""
    place = Location(name, 0, FILE_HEADER_SIZE)
    return place, location_bytes(place)


_frame_zero = lru_cache(maxsize=64)(_place)  # a client names its records alike, call on call


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
