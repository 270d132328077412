"""``kingrec.v1.KingrecService``: each method turns its request into library calls and their
results into responses. Nothing here judges a record or maps an error: the library judges,
``kingrec_service.errors`` maps (through ``kingrec_service.methods.guard``)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterable, AsyncIterator
from contextlib import aclosing
from typing import TYPE_CHECKING, Any, TypeVar

import grpc

from kingrec.v1 import record_pb2 as pb
from kingrec.v1 import service_pb2 as svc

from ._pb import service_pb2_grpc
from .analysing import Analyser
from .errors import BadRequestError, NoStoreError, ShuttingDownError
from .events import response
from .live import Hub, LiveMatch
from .querying import query_stream
from .records import match_of_record
from .replaying import check_pace, check_seat, paced, replay_events
from .storage import StoreGateway
from .stored import get_stored, list_stored
from .stream_request import Frames
from .uploads import upload_responses
from .validating import match_response, stream_responses, validate_response

__all__ = ["KingrecServicer"]

if TYPE_CHECKING:  # the stubs' generics do not exist at run time
    Context = grpc.aio.ServicerContext[Any, Any]

R = TypeVar("R")

# A response already encoded: the events of a replay or a live match are serialized once
# each (kingrec_service.events.Event), however many viewers get them, and responses are
# their concatenation; the guard (kingrec_service.methods) passes bytes through the serializer.
Encoded = bytes


def _seat(request: svc.ReplayRequest | svc.WatchRequest) -> int | None:
    return check_seat(request.seat) if request.HasField("seat") else None


class KingrecServicer(service_pb2_grpc.KingrecServiceServicer):
    def __init__(
        self, hub: Hub, store: StoreGateway | None, analyser: Analyser | None = None
    ) -> None:
        self.hub = hub
        self.store = store
        self.analyser = analyser or Analyser()

    def _store(self, what: str) -> StoreGateway:
        if self.store is None:
            raise NoStoreError(f"{what} needs the store, and this server keeps none")
        return self.store

    # -- records ------------------------------------------------------------------------

    async def Validate(  # type: ignore[override]  # the response goes out encoded
        self, request: svc.ValidateRequest, context: Context
    ) -> Encoded:
        record = request.record
        answer = match_response(record)  # one match: judged in a blink, here
        if answer is None:  # a whole file or JSON text: thousands of records, off the loop
            answer = await asyncio.to_thread(validate_response, record)
        return answer

    async def ValidateStream(  # type: ignore[override]  # responses go out encoded
        self,
        request_iterator: AsyncIterable[Frames | svc.ValidateStreamRequest],  # stream_request
        context: Context,
    ) -> AsyncIterator[Encoded]:
        async with aclosing(_until(request_iterator, self.hub.stopping)) as requests:
            index = 0
            async for request in requests:
                # Up to MAX_VERDICTS records a message: judged off the event loop.
                responses = await asyncio.to_thread(_listed, index, request)
                del request  # (see _until)
                for response in responses:
                    yield response
                index += 1

    async def Replay(  # type: ignore[override]  # responses go out encoded (see Encoded)
        self, request: svc.ReplayRequest, context: Context
    ) -> AsyncIterator[Encoded]:
        source = request.WhichOneof("source")
        if source is None:
            raise BadRequestError("say what to replay: a match_id or a record")
        seat = _seat(request)
        check_pace(request.pace)
        if source == "match_id":
            match = await get_stored(self._store("replaying a stored match"), request.match_id)
        else:
            match = match_of_record(request.record)
        events = replay_events(match, request.start_deal, request.start_trick)
        async with aclosing(paced(events, request.pace, self.hub.stopping)) as batches:
            async for batch in batches:
                yield response(batch, seat)  # a ReplayResponse, encoded

    # -- live -----------------------------------------------------------------------------

    async def Publish(
        self, request_iterator: AsyncIterable[svc.PublishRequest], context: Context
    ) -> svc.PublishResponse:
        hub = self.hub
        publisher = object()
        live: LiveMatch | None = None
        accepted = 0  # the match's last event once this stream's last message was taken
        try:
            async with aclosing(_until(request_iterator, hub.stopping)) as requests:
                async for request in requests:
                    live = self._publish(request, live, publisher)
                    accepted = len(live.events)
        except ShuttingDownError:
            if live is None:
                raise
            # The stop abandons the match after this; the publisher learns what was taken.
            raise ShuttingDownError(
                f"the server is shutting down: match {live.match_id} ends abandoned "
                f"after event {accepted}, the last this stream's messages made",
                accepted,
            ) from None
        finally:
            if live is not None:
                hub.release(live, publisher)
        if live is None:
            raise BadRequestError("the stream held no message: begin with start or resume")
        stored = await hub.finish(live) if live.finished else None
        return svc.PublishResponse(
            match_id=live.match_id, events=len(live.events), finished=live.finished, stored=stored
        )

    def _publish(
        self, request: svc.PublishRequest, live: LiveMatch | None, publisher: object
    ) -> LiveMatch:
        kind = request.WhichOneof("event")
        if kind is None:
            raise BadRequestError("an empty message: give start, resume, deal, card or end")
        if request.HasField("resume_from") and (kind != "resume" or live is not None):
            raise BadRequestError("resume_from goes with resume, in the first message only")
        if live is None:
            if kind == "start":
                return self.hub.start(request.start, publisher)
            if kind == "resume":
                at = request.resume_from if request.HasField("resume_from") else None
                return self.hub.resume(request.resume, publisher, at)
            raise BadRequestError(f"the first message must be start or resume, not {kind}")
        if kind in ("start", "resume"):
            raise BadRequestError(f"{kind} comes only as the first message of a stream")
        if kind == "deal":
            live.add_deal(request.deal)
        elif kind == "card":
            live.play_card(request.card)
        else:
            live.end(request.end)
        return live

    async def Watch(  # type: ignore[override]  # responses go out encoded (see Encoded)
        self, request: svc.WatchRequest, context: Context
    ) -> AsyncIterator[Encoded]:
        seat = _seat(request)
        live = self.hub.get(request.match_id)
        follow = live.follow(
            request.resume_from, request.delay_ms / 1000, self.hub.config, self.hub.stopping
        )
        async with aclosing(follow) as batches:
            async for start, end, snapshot, presence in batches:
                yield live.encoded(start, end, seat, snapshot, presence)  # a WatchResponse

    # -- the store --------------------------------------------------------------------------

    async def Upload(
        self, request_iterator: AsyncIterable[svc.UploadRequest], context: Context
    ) -> AsyncIterator[svc.UploadResponse]:
        store = self._store("uploading")
        requests = _until(request_iterator, self.hub.stopping)
        async with aclosing(upload_responses(store, requests)) as responses:
            async for response in responses:
                yield response

    async def Query(
        self, request: svc.QueryRequest, context: Context
    ) -> AsyncIterator[svc.QueryResponse]:
        store = self._store("a query")
        async with aclosing(query_stream(store, request, context.time_remaining())) as responses:
            async for response in responses:
                yield response

    async def ListMatches(
        self, request: svc.ListMatchesRequest, context: Context
    ) -> svc.ListMatchesResponse:
        if request.live:
            return self.hub.list(request.limit or 100, request.page_token)
        return await list_stored(self._store("listing stored matches"), request)

    async def GetMatch(
        self, request: svc.GetMatchRequest, context: Context
    ) -> svc.GetMatchResponse:
        match = await get_stored(self._store("reading a stored match"), request.match_id)
        return svc.GetMatchResponse(match=match)

    async def Analyse(self, request: svc.AnalyseRequest, context: Context) -> svc.AnalyseResponse:
        source = request.WhichOneof("source")
        if source is None:
            raise BadRequestError("say what to analyse: a match_id or a record")
        if source == "match_id":
            store = self._store("analysing a stored match")

            async def match() -> pb.Match:  # read once the call has its place, not before
                return await get_stored(store, request.match_id)
        else:

            async def match() -> pb.Match:
                return match_of_record(request.record)

        return await self.analyser.analyse(request, match)


def _listed(index: int, request: Frames | svc.ValidateStreamRequest) -> list[Encoded]:
    records = request if isinstance(request, Frames) else request.records
    return list(stream_responses(index, records))


async def _until(requests: AsyncIterable[R], stopping: asyncio.Event) -> AsyncGenerator[R]:
    """The requests of a client stream until it ends, or ``ShuttingDownError`` when the
    server starts stopping while waiting for one."""
    iterator = aiter(requests)
    stop = asyncio.ensure_future(stopping.wait())
    following: asyncio.Future[R] | None = None
    try:
        while True:
            if stopping.is_set():
                raise ShuttingDownError("the server is shutting down")
            following = asyncio.ensure_future(anext(iterator))
            await asyncio.wait({following, stop}, return_when=asyncio.FIRST_COMPLETED)
            if not following.done():
                following.cancel()
                raise ShuttingDownError("the server is shutting down")
            try:
                request = following.result()
            except StopAsyncIteration:
                return
            yield request
            del request  # not kept while the next one is received: requests may be MiBs
    finally:
        stop.cancel()
        if following is not None:  # the call cancelled while waiting (the client gave up):
            following.cancel()  # its end (StopAsyncIteration) is nobody's to log
            following.add_done_callback(_retrieved)


def _retrieved(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()
