"""Event streams over HTTP, in the form the client asked for: a JSON array, NDJSON (one
event per line) or Server-Sent Events (``id:`` = the event's number; the end as ``event:
end``). SSE is aiohttp-sse's ``EventSourceResponse``: the framing, the keep-alive pings and
the cut of a client that takes no data for ``SEND_TIMEOUT`` seconds are the library's.

A stream starts (status 200, headers out) only with its first events, so a request that
fails before (no such match, a bad ``resume_from``) still gets its HTTP status and JSON
error; once started, a failure is the stream's last message. A client that goes away (or
stalls past ``SEND_TIMEOUT`` and is cut) ends its stream quietly: ``abandoned``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from typing import Literal

from aiohttp import web
from aiohttp_sse import EventSourceResponse

from kingrec.errors import KingrecError

from .errors import error_object
from .jsonforms import dumps

__all__ = ["SEND_TIMEOUT", "EventStream", "Form", "form_of"]

Form = Literal["json", "ndjson", "sse"]
NDJSON = "application/x-ndjson"
SSE = "text/event-stream"

SEND_TIMEOUT = 120.0  # seconds a client may take no data before its connection is cut
PING_INTERVAL = 15.0  # seconds between SSE comments that keep proxies from closing it


def form_of(request: web.Request, default: Form) -> Form:
    """The stream form asked for: ``?format=json|ndjson|sse``, else by ``Accept``."""
    asked = request.query.get("format")
    accept = request.headers.get("Accept", "")
    if asked == "sse" or (asked is None and SSE in accept):
        return "sse"
    if asked == "ndjson" or (asked is None and NDJSON in accept):
        return "ndjson"
    if asked == "json":
        return "json"
    return default


class _Stream(web.StreamResponse):
    """An NDJSON response whose end, once its client went away, is quietly nothing."""

    async def write_eof(self, data: bytes = b"") -> None:
        with contextlib.suppress(ConnectionResetError):
            await super().write_eof(data)


class _EventSource(EventSourceResponse):
    """aiohttp-sse's response, whose messages (framed by the library's ``send``) can be held
    and written together: one write, one system call, for a batch of events instead of one
    each (a write costs more than the framing of an event)."""

    _held: list[bytes] | None = None

    async def write_eof(self, data: bytes = b"") -> None:
        with contextlib.suppress(ConnectionResetError):  # the client went away
            await super().write_eof(data)

    async def write(self, data: bytes | bytearray | memoryview) -> None:
        if self._held is not None:
            self._held.append(bytes(data))
            return
        await super().write(data)

    async def send_all(self, events: Sequence[tuple[int, bytes]]) -> None:
        # Held messages are not written yet, so each needs no timeout of its own (the
        # library's send sets one per call, a timer each: 40% of its cost); the one write
        # of them all has it.
        self._held, timeout, self._send_timeout = [], self._send_timeout, None
        try:
            for seq, text in events:
                await self.send(text.decode("ascii"), id=str(seq))
        finally:
            held, self._held, self._send_timeout = self._held, None, timeout
        try:
            async with asyncio.timeout(SEND_TIMEOUT):
                await self.write(b"".join(held))
        except TimeoutError:  # a client that takes nothing: cut, as send() itself cuts it
            self.stop_streaming()
            transport = self._req.transport if self._req is not None else None
            if transport is not None:
                transport.abort()
            raise


class EventStream:
    """One response streaming events (each given as its JSON text) in ``form``."""

    def __init__(self, request: web.Request, form: Form) -> None:
        self.request = request
        self.form = form
        self._sse: _EventSource | None = None
        self._stream: web.StreamResponse | None = None
        self._array: list[bytes] = []

    @property
    def started(self) -> bool:
        return self._sse is not None or self._stream is not None

    async def open(self) -> None:
        """Send the status and headers now (a live stream: the browser knows it is in)."""
        if not self.started and self.form != "json":
            await self._start()

    async def _start(self) -> None:
        if self.form == "sse":
            self._sse = _EventSource(send_timeout=SEND_TIMEOUT, ping_interval=PING_INTERVAL)
            await self._sse.prepare(self.request)
        elif self.form == "ndjson":
            self._stream = _Stream(headers={"Content-Type": NDJSON + "; charset=utf-8"})
            self._stream.enable_chunked_encoding()
            await self._stream.prepare(self.request)

    async def send(self, events: Sequence[tuple[int, bytes]]) -> None:
        """Events as ``(seq, json)``, in order."""
        if not self.started and self.form != "json":
            await self._start()
        if self._sse is not None:
            await self._sse.send_all(events)
        elif self._stream is not None:
            await self._stream.write(b"".join([text + b"\n" for _, text in events]))
        else:
            self._array += [text for _, text in events]

    async def note(self, kind: str, body: object) -> None:
        """A message beside the events (``event: KIND`` in SSE, ``{"KIND": body}`` in NDJSON):
        news a viewer shows but that is no event of the match."""
        if not self.started and self.form != "json":
            await self._start()
        if self._sse is not None:
            await self._sse.send(dumps(body).decode("ascii"), event=kind)
        elif self._stream is not None:
            await self._stream.write(dumps({kind: body}) + b"\n")

    async def end(self, code: str = "OK", message: str = "", error: object = None) -> None:
        """The stream's last message: how it ended."""
        end = error if error is not None else {"code": code, "message": message}
        if not self.started and self.form != "json":
            await self._start()
        if self._sse is not None:
            await self._sse.send(dumps(end).decode("ascii"), event="end")
        elif self._stream is not None:
            key = "error" if error is not None else "end"
            await self._stream.write(dumps({key: end}) + b"\n")

    async def failed(self, exc: KingrecError) -> None:
        """An expected failure after the stream started (see ``error_object``)."""
        await self.end(error=error_object(exc))

    def abandoned(self) -> web.StreamResponse:
        """The response of a client that went away or stalled (its connection is closed or
        cut): nothing more is written."""
        if self._sse is not None:
            self._sse.stop_streaming()
            return self._sse
        assert self._stream is not None
        return self._stream

    async def response(self) -> web.StreamResponse:
        """The finished response."""
        if self._sse is not None:
            self._sse.stop_streaming()
            await self._sse.wait()
            await self._sse.write_eof()
            return self._sse
        if self._stream is not None:
            await self._stream.write_eof()
            return self._stream
        body = b"[" + b",".join(self._array) + b"]"
        return web.Response(body=body, content_type="application/json", charset="utf-8")
