"""The stored matches: a page of summaries, one record (JSON or .krec bytes), its report,
and its replay as events. Each handler reads its query, calls what the servicers call
(``stored``, ``replaying``) and writes the answer."""

from __future__ import annotations

import io
import re
from contextlib import aclosing

from aiohttp import web

from kingrec.container import FILE_HEADER_SIZE, KrecWriter
from kingrec.errors import KingrecError
from kingrec.fastcheck import validate_payload
from kingrec.findings import Location, MatchReport
from kingrec.jsonl import match_to_dict
from kingrec.v1 import record_pb2 as pb
from kingrec.v1 import service_pb2 as svc
from kingrec.verdicts import match_object

from ..errors import BadRequestError, UnreadableRecordError
from ..replaying import check_pace, paced, replay_events
from ..stored import get_stored_payload, list_stored
from .context import Context, match_id_of
from .jsonforms import event_json, message_dict
from .params import flag, number, seat_of
from .streams import EventStream, form_of

__all__ = ["list_request", "routes"]

STATUSES = {
    name.removeprefix("MATCH_STATUS_"): value
    for name, value in pb.MatchStatus.items()
    if value != pb.MATCH_STATUS_UNSPECIFIED
}


def _status(text: str) -> pb.MatchStatus.ValueType:
    found = STATUSES.get(text.upper().removeprefix("MATCH_STATUS_"))
    if found is None:
        raise BadRequestError(f"status {text!r} is none of {', '.join(STATUSES)}")
    return found


def list_request(request: web.Request) -> svc.ListMatchesRequest:
    """The ListMatchesRequest a query string asks for."""
    q = request.query
    asked = svc.ListMatchesRequest(
        player=q.get("player", ""),
        preset=q.get("preset", ""),
        limit=number(q, "limit", 1, 1000, 100),
        page_token=q.get("page_token", ""),
    )
    if q.get("status"):
        asked.status = _status(q["status"])
    valid = flag(q, "valid")
    if valid is not None:
        asked.valid = valid
    return asked


async def list_matches(request: web.Request) -> web.Response:
    ctx = Context.of(request)
    page = await list_stored(ctx.store("listing stored matches"), list_request(request))
    return ctx.json(message_dict(page))


async def _payload(request: web.Request) -> tuple[Context, str, bytes]:
    ctx = Context.of(request)
    match_id = match_id_of(request)
    payload = await get_stored_payload(ctx.store("reading a stored match"), match_id)
    return ctx, match_id, payload


def _match(payload: bytes, match_id: str) -> pb.Match:
    try:
        return pb.Match.FromString(payload)
    except Exception:
        raise UnreadableRecordError(
            f"match {match_id!r} cannot be read back from the store", "FRAME_UNDECODABLE"
        ) from None


async def get_match(request: web.Request) -> web.StreamResponse:
    ctx, match_id, payload = await _payload(request)
    accept = request.headers.get("Accept", "")
    if request.query.get("format") != "krec" and "application/octet-stream" not in accept:
        return ctx.json(match_to_dict(_match(payload, match_id)))
    out = io.BytesIO()
    with KrecWriter(out) as writer:
        writer.write(payload)  # the stored frame, byte for byte
    return web.Response(
        body=out.getvalue(),
        content_type="application/octet-stream",
        headers={"Content-Disposition": f'attachment; filename="{_file_name(match_id)}.krec"'},
    )


def _file_name(match_id: str) -> str:
    """The id as a download's name: letters, digits, ``.-_`` only (no quote, no path)."""
    name = re.sub(r"[^A-Za-z0-9._-]", "_", match_id)[:100].lstrip(".")
    return name or "match"


async def get_report(request: web.Request) -> web.Response:
    ctx, match_id, payload = await _payload(request)
    report = validate_payload(payload, Location(match_id, 0, FILE_HEADER_SIZE))
    if not isinstance(report, MatchReport):
        raise UnreadableRecordError(report.message, report.code)
    return ctx.json(match_object(report))  # the object of validate --json's line


async def replay(request: web.Request) -> web.StreamResponse:
    ctx, match_id, payload = await _payload(request)
    q = request.query
    seat = seat_of(q)
    pace = svc.Pace()
    if q.get("pace_ms", ""):
        pace.fixed_delay_ms = number(q, "pace_ms", 0, 60_000, 0)
    elif q.get("think_factor", ""):
        try:
            pace.think_time_factor = float(q["think_factor"])
        except ValueError:
            raise BadRequestError(f"think_factor {q['think_factor']!r} is not a number") from None
    check_pace(pace)
    form = form_of(request, "json")
    if form == "json" and pace.WhichOneof("mode") is not None:
        raise BadRequestError("a paced replay is a stream: ask for NDJSON or SSE")
    start_deal = number(q, "from_deal", 0, 1 << 16, 0)
    start_trick = number(q, "from_trick", 0, 1 << 16, 0)
    events = replay_events(_match(payload, match_id), start_deal, start_trick)
    stream = EventStream(request, form)
    try:
        async with aclosing(paced(events, pace, ctx.hub.stopping)) as batches:
            async for batch in batches:
                await stream.send([(e.seq, event_json(e, seat)) for e in batch])
    except KingrecError as exc:
        if not stream.started:
            raise
        await stream.failed(exc)
    except (ConnectionResetError, TimeoutError):  # the client went away, or stalled and was cut
        return stream.abandoned()
    else:
        await stream.end("OK", "the replay is complete")
    return await stream.response()


def routes() -> list[web.RouteDef]:
    return [
        web.get("/api/matches", list_matches),
        web.get("/api/matches/{match_id}", get_match),
        web.get("/api/matches/{match_id}/report", get_report),
        web.get("/api/matches/{match_id}/replay", replay),
    ]
