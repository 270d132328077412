"""An Upload stream: records read off each request, stored through the gateway, answered in
order once committed.

Requests are read ahead of the answers (up to ``AHEAD`` waiting), so that the writer can put
several of a stream's requests in one transaction while the client keeps sending; each
answer still waits for its own request's commit. A record the service cannot read as one
(bad JSON, a damaged .krec file, too large) is answered ``STATUS_REJECTED`` and never
reaches the store. When the stream breaks, what was committed stays (its answers may be
lost: sending those records again gives duplicates, never a second copy), and a request
not yet committed either commits whole or not at all.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from contextlib import aclosing
from dataclasses import dataclass

from kingrec.errors import KingrecError
from kingrec.findings import Location
from kingrec.store.ingest import RecordVerdict
from kingrec.v1 import service_pb2 as svc

from .convert import rejected_verdict, verdict_to_proto
from .records import payload_of_record
from .storage import StoreGateway

__all__ = ["AHEAD", "upload_responses"]

AHEAD = 8  # requests read and queued before their answers went out

_COUNTED = {
    svc.StoreVerdict.STATUS_STORED: "stored",
    svc.StoreVerdict.STATUS_STORED_INVALID: "stored_invalid",
    svc.StoreVerdict.STATUS_DUPLICATE: "duplicates",
    svc.StoreVerdict.STATUS_REJECTED: "rejected",
}


@dataclass
class _Pending:
    """A request on its way: the answers known now, and the store's for the rest."""

    verdicts: list[svc.StoreVerdict | None]
    stored_at: list[int]  # where the store's verdicts go
    stored: asyncio.Future[list[RecordVerdict]]

    async def response(self, summary: svc.UploadSummary) -> svc.UploadResponse:
        for i, verdict in zip(self.stored_at, await self.stored, strict=True):
            self.verdicts[i] = verdict_to_proto(verdict)
        done = [v for v in self.verdicts if v is not None]
        for answer in done:
            name = _COUNTED[answer.status]
            setattr(summary, name, getattr(summary, name) + 1)
        summary.records += len(done)
        return svc.UploadResponse(verdicts=done)


def _submit(gateway: StoreGateway, request: svc.UploadRequest) -> _Pending:
    verdicts: list[svc.StoreVerdict | None] = []
    stored_at: list[int] = []
    payloads: list[bytes] = []
    locations: list[Location] = []
    for record in request.records:
        try:
            payload = payload_of_record(record)
        except KingrecError as exc:
            verdicts.append(rejected_verdict(f"{exc.code}: {exc}"))
            continue
        stored_at.append(len(verdicts))
        verdicts.append(None)
        payloads.append(payload)
        locations.append(Location(record.name or request.source))
    return _Pending(verdicts, stored_at, gateway.ingest(payloads, request.source, locations))


async def upload_responses(
    gateway: StoreGateway, requests: AsyncGenerator[svc.UploadRequest]
) -> AsyncGenerator[svc.UploadResponse]:
    """A response per request, in order, each once its records are committed; then the
    summary. An error reading the requests (the server stopping) comes after the answers
    to the requests read before it."""
    queued: asyncio.Queue[_Pending | BaseException | None] = asyncio.Queue(AHEAD)

    async def read() -> None:
        try:
            async with aclosing(requests) as stream:
                async for request in stream:
                    await queued.put(_submit(gateway, request))
        except Exception as exc:
            await queued.put(exc)
        else:
            await queued.put(None)

    reader = asyncio.ensure_future(read())
    summary = svc.UploadSummary()
    try:
        while (item := await queued.get()) is not None:
            if isinstance(item, BaseException):
                raise item
            yield await item.response(summary)
        yield svc.UploadResponse(summary=summary)
    finally:
        reader.cancel()
