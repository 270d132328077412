"""Validate and ValidateStream: verdicts of records, in responses that fit gRPC's limit.

The library judges (``kingrec_service.records``); this module only puts the verdicts into
responses. A response's verdicts are kept to ``VERDICT_BYTES``, well under the 4 MiB a
client receives by default (``kingrec_service.server.MAX_RESPONSE_BYTES``): a 4 MiB request
of tiny frames can hold hundreds of thousands of records, each with a verdict.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from kingrec.errors import LimitError
from kingrec.findings import MatchReport
from kingrec.v1 import service_pb2 as svc

from .convert import report_json, report_to_proto, verdict_into
from .records import record_verdicts, stream_verdicts

__all__ = ["VERDICT_BYTES", "stream_responses", "validate_response"]

VERDICT_BYTES = 3 << 20  # a response's verdicts at most, leaving room for the rest


def validate_response(record: svc.Record) -> svc.ValidateResponse:
    """Validate's answer: the report of a record holding one match, else every verdict."""
    items = record_verdicts(record)
    response = svc.ValidateResponse()
    if len(items) == 1 and isinstance(items[0], MatchReport):
        response.report.CopyFrom(report_to_proto(items[0]))
        response.report_json = report_json(items[0])
    for item in items:
        verdict_into(response.verdicts.add(), item)
    if response.ByteSize() > VERDICT_BYTES:
        raise LimitError(
            f"the verdicts of the {len(items)} records and damaged stretches of "
            f"{record.name or 'the file'} do not fit in one response ({VERDICT_BYTES} "
            "bytes); send the file in pieces through ValidateStream"
        )
    return response


def stream_responses(
    index: int, records: Sequence[svc.Record]
) -> Iterator[svc.ValidateStreamResponse]:
    """The responses to the ``index``-th request of a ValidateStream (0-based): its
    verdicts in order, in as many responses as they need; the last one ``done``."""
    response = svc.ValidateStreamResponse(request=index)
    verdicts = response.verdicts
    size = 0
    for item in stream_verdicts(records):
        verdict = verdicts.add()
        verdict_into(verdict, item)
        grown = verdict.ByteSize() + 4  # with its field's tag and length
        size += grown
        if size > VERDICT_BYTES and len(verdicts) > 1:
            del verdicts[-1]  # it goes first into the next response
            yield response
            response = svc.ValidateStreamResponse(request=index)
            verdicts = response.verdicts
            verdict_into(verdicts.add(), item)
            size = grown
    response.done = True
    yield response
