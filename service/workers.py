"""Several server processes on one port: ``kingrec serve --workers N``.

One grpc.aio process serves at most about one core's worth of calls, and grpc costs most of
a unary call (a Validate spends ~0.04 ms in kingrec and ~0.5 ms in grpc). With ``--workers
N`` the kernel spreads client connections over N processes listening on the same port
(SO_REUSEPORT). Only one of them, the primary, may own the DuckDB store (DuckDB lets one
process write a file) and the live matches (a viewer must find the match its publisher
plays), so each helper process serves the calls that need neither, Validate and the replay
of an inline record, and forwards every other call, as bytes, to the primary over a Unix
socket in a private folder: metadata (the token), deadline, cancellation, status and
trailers go through unchanged, so a client cannot tell which process it reached.

The price: a forwarded call costs a second hop (about one more call's or message's CPU, in
the helper); a viewer that reached a helper costs the match's fan-out twice. More workers
pay off for Validate and inline replays on a machine with cores to spare, not for Watch.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import AsyncGenerator, AsyncIterator
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, Any, NoReturn

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from kingrec.v1 import service_pb2 as svc

from .live import Hub
from .servicers import KingrecServicer

if TYPE_CHECKING:
    from .server import ServiceConfig

    Context = grpc.aio.ServicerContext[Any, Any]

__all__ = ["forwarded_metadata", "run_helper"]

SERVICE = svc.DESCRIPTOR.services_by_name["KingrecService"]

# Metadata that belongs to a connection or to grpc, not to the call: never forwarded.
_OWN = ("user-agent", "content-type", "te", "host")


def forwarded_metadata(context: Context) -> tuple[tuple[str, str | bytes], ...]:
    """The call's own metadata (the token and anything else the client sent)."""
    return tuple(
        (key, value)
        for key, value in context.invocation_metadata() or ()
        if not key.startswith((":", "grpc-")) and key not in _OWN
    )


class _Forward:
    """Calls of one method, passed on as bytes to the primary."""

    def __init__(self, channel: grpc.aio.Channel, method: str) -> None:
        self.channel = channel
        self.method = method

    def _options(self, context: Context) -> dict[str, Any]:
        return {"metadata": forwarded_metadata(context), "timeout": context.time_remaining()}

    async def _failed(self, context: Context, error: grpc.aio.AioRpcError) -> NoReturn:
        await context.abort(
            error.code(),
            error.details() or "",
            trailing_metadata=tuple(error.trailing_metadata() or ()),
        )

    async def unary_unary(self, request: bytes, context: Context) -> bytes:
        call: grpc.aio.UnaryUnaryMultiCallable[bytes, bytes] = self.channel.unary_unary(self.method)
        try:
            return await call(request, **self._options(context))
        except grpc.aio.AioRpcError as error:
            await self._failed(context, error)

    async def stream_unary(self, requests: AsyncIterator[bytes], context: Context) -> bytes:
        method: grpc.aio.StreamUnaryMultiCallable[bytes, bytes] = self.channel.stream_unary(
            self.method
        )
        call = method(**self._options(context))
        pump = asyncio.ensure_future(_pump(requests, call))
        try:
            response: bytes = await call
            return response
        except grpc.aio.AioRpcError as error:
            await self._failed(context, error)
        finally:
            pump.cancel()

    async def unary_stream(self, request: bytes, context: Context) -> AsyncGenerator[bytes]:
        method: grpc.aio.UnaryStreamMultiCallable[bytes, bytes] = self.channel.unary_stream(
            self.method
        )
        call = method(request, **self._options(context))
        try:
            async for response in call:
                yield response
        except grpc.aio.AioRpcError as error:
            await self._failed(context, error)
        finally:
            call.cancel()

    async def stream_stream(
        self, requests: AsyncIterator[bytes], context: Context
    ) -> AsyncGenerator[bytes]:
        method: grpc.aio.StreamStreamMultiCallable[bytes, bytes] = self.channel.stream_stream(
            self.method
        )
        call = method(**self._options(context))
        pump = asyncio.ensure_future(_pump(requests, call))
        try:
            async for response in call:
                yield response
        except grpc.aio.AioRpcError as error:
            await self._failed(context, error)
        finally:
            pump.cancel()
            call.cancel()


async def _pump(
    requests: AsyncIterator[bytes],
    call: grpc.aio.StreamUnaryCall[bytes, bytes] | grpc.aio.StreamStreamCall[bytes, bytes],
) -> None:
    """The client's requests to the primary, until they end or the primary's call does (its
    status is the answer then)."""
    try:
        async for request in requests:
            await call.write(request)
        await call.done_writing()
    except (grpc.aio.AioRpcError, grpc.aio.UsageError, grpc.aio.InternalError):
        pass  # the call is over: its status says why


class _HelperServicer(KingrecServicer):
    """Validate and inline replays here; a replay of a stored match from the primary."""

    def __init__(self, hub: Hub, replay: _Forward) -> None:
        super().__init__(hub, None)
        self._replay = replay

    async def Replay(  # type: ignore[override]  # responses go out encoded
        self, request: svc.ReplayRequest, context: Context
    ) -> AsyncIterator[bytes]:
        forwarded: AsyncGenerator[bytes]
        if request.WhichOneof("source") == "match_id":
            forwarded = self._replay.unary_stream(request.SerializeToString(), context)
        else:
            forwarded = super().Replay(request, context)  # type: ignore[assignment]
        async with contextlib.aclosing(forwarded) as responses:
            async for response in responses:
                yield response


def _handlers(servicer: _HelperServicer, channel: grpc.aio.Channel) -> grpc.GenericRpcHandler:
    """Every method of the service: Validate and Replay served here, the rest forwarded."""
    handlers: dict[str, grpc.RpcMethodHandler[Any, Any]] = {
        "Validate": grpc.unary_unary_rpc_method_handler(
            servicer.Validate,
            request_deserializer=svc.ValidateRequest.FromString,
            response_serializer=svc.ValidateResponse.SerializeToString,
        ),
        "Replay": grpc.unary_stream_rpc_method_handler(
            servicer.Replay,
            request_deserializer=svc.ReplayRequest.FromString,
        ),
    }
    for method in SERVICE.methods:
        if method.name in handlers:
            continue
        forward = _Forward(channel, f"/{SERVICE.full_name}/{method.name}")
        if method.client_streaming and method.server_streaming:
            handlers[method.name] = grpc.stream_stream_rpc_method_handler(forward.stream_stream)
        elif method.client_streaming:
            handlers[method.name] = grpc.stream_unary_rpc_method_handler(forward.stream_unary)
        elif method.server_streaming:
            handlers[method.name] = grpc.unary_stream_rpc_method_handler(forward.unary_stream)
        else:
            handlers[method.name] = grpc.unary_unary_rpc_method_handler(forward.unary_unary)
    return grpc.method_handlers_generic_handler(SERVICE.full_name, handlers)


def run_helper(config: ServiceConfig, primary: str, conn: Connection) -> None:
    """A helper process (multiprocessing's target): serve ``config``'s port, sharing it with
    the primary, until SIGTERM or SIGINT; says "ready" (or why not) on ``conn``."""
    asyncio.run(_helper(config, primary, conn))


async def _helper(config: ServiceConfig, primary: str, conn: Connection) -> None:
    from .server import SERVICE_NAME, build_grpc_server, listen  # the server imports this

    try:
        server = build_grpc_server(config, reuse_port=True)
        channel = grpc.aio.insecure_channel(primary)
        hub = Hub(config.live)
        forward_replay = _Forward(channel, f"/{SERVICE.full_name}/Replay")
        server.add_generic_rpc_handlers((_handlers(_HelperServicer(hub, forward_replay), channel),))
        health_servicer = health.aio.HealthServicer()
        health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
        reflection.enable_server_reflection(
            (SERVICE_NAME, health.SERVICE_NAME, reflection.SERVICE_NAME), server
        )
        listen(server, config, config.port)
        await server.start()
        await health_servicer.set(SERVICE_NAME, health_pb2.HealthCheckResponse.SERVING)
    except Exception as exc:  # told to the primary, which reports it and stops
        conn.send(f"a worker could not start: {exc}")
        return
    conn.send("ready")
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    await stop.wait()
    await health_servicer.enter_graceful_shutdown()
    await server.stop(config.grace)
    await channel.close()
