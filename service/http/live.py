"""Live matches over HTTP: the list, and one match watched as SSE or NDJSON, as the Watch
RPC watches it (``LiveMatch.follow``: the same cursor into the same log, the same lag
limit, the same delay).

A browser's ``EventSource`` reconnects by itself with ``Last-Event-ID`` (the last ``id:`` it
got, the event's number): the stream resumes after it, so nothing is missed or repeated.
Each event's JSON is made once per seat view however many viewers get it (``_texts``).
"""

from __future__ import annotations

import weakref
from contextlib import aclosing

from aiohttp import web

from kingrec.errors import KingrecError
from kingrec.v1 import service_pb2 as svc

from ..errors import BadRequestError
from ..live import LiveMatch, Presence
from .context import Context, match_id_of
from .jsonforms import event_json, message_dict
from .params import number, seat_of
from .streams import EventStream, form_of

__all__ = ["routes"]

# Per live match and seat view, the JSON text of each event so far (events never change).
_TEXTS: weakref.WeakKeyDictionary[LiveMatch, dict[int | None, list[bytes]]] = (
    weakref.WeakKeyDictionary()
)


def _texts(live: LiveMatch, seat: int | None, end: int) -> list[bytes]:
    texts = _TEXTS.setdefault(live, {}).setdefault(seat, [])
    for event in live.events[len(texts) : end]:
        texts.append(event_json(event, seat))
    return texts


async def list_live(request: web.Request) -> web.Response:
    ctx = Context.of(request)
    q = request.query
    page = ctx.hub.list(number(q, "limit", 1, 1000, 100), q.get("page_token", ""))
    return ctx.json(message_dict(page))


def _resume_from(request: web.Request) -> int:
    last = request.headers.get("Last-Event-ID", "").strip()
    if last:
        if not (last.isascii() and last.isdigit()) or len(last) > 9:
            raise BadRequestError(f"Last-Event-ID {last[:40]!r} is not an event number")
        return int(last)
    return number(request.query, "resume_from", 0, 1 << 30, 0)


async def watch(request: web.Request) -> web.StreamResponse:
    ctx = Context.of(request)
    match_id = match_id_of(request)
    seat = seat_of(request.query)
    delay_ms = number(request.query, "delay_ms", 0, 3_600_000, 0)
    after = _resume_from(request)
    stream = EventStream(request, form_of(request, "sse"))
    if stream.form == "json":
        raise BadRequestError("a live match is a stream: ask for SSE or NDJSON")
    live = ctx.hub.get(match_id)
    follow = live.follow(after, delay_ms / 1000, ctx.hub.config, ctx.hub.stopping)
    try:
        await stream.open()
        async with aclosing(follow) as batches:
            async for start, end, _, presence in batches:
                texts = _texts(live, seat, end)
                events = live.events
                if start < end:
                    await stream.send([(events[n].seq, texts[n]) for n in range(start, end)])
                if presence is not None:  # the publisher went, or came back (Watch says it too)
                    await stream.note("publisher", _presence(presence))
    except KingrecError as exc:
        if not stream.started:
            raise
        await stream.failed(exc)
    except (ConnectionResetError, TimeoutError):  # the client went away, or stalled and was cut
        return stream.abandoned()
    else:
        await stream.end("OK", f"match {match_id} ended")
    return await stream.response()


def _presence(presence: Presence) -> dict[str, object]:
    """WatchResponse's publisher and abandon_in_ms, as the JSON mapping names them."""
    body: dict[str, object] = {"publisher": svc.Publisher.Name(presence.publisher)}
    if presence.publisher == svc.PUBLISHER_GONE:
        body["abandon_in_ms"] = presence.abandon_in_ms
    return body


def routes() -> list[web.RouteDef]:
    return [web.get("/api/live", list_live), web.get("/api/live/{match_id}", watch)]
