"""Server interceptors: errors to status codes (the one table), undecodable requests, tokens.

``ErrorInterceptor`` wraps every method's behaviour (unary or streaming, in the spirit of
grpc-interceptor's ``ExceptionToStatusInterceptor``): an exception that
``kingrec_service.errors.status_of`` knows ends the call with that status, the error's
message and its trailers; any other exception is a bug, logged in one line and answered
INTERNAL. It also decodes requests itself, so bytes that are no request message are answered
INVALID_ARGUMENT naming the message expected, not with grpc's own logged traceback.

``TokenInterceptor`` refuses the calls of the methods that need the server's token when the
metadata ``authorization: Bearer TOKEN`` does not carry it (compared in constant time).
"""

from __future__ import annotations

import hmac
import inspect
import logging
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import aclosing
from typing import TYPE_CHECKING, Any

import grpc
from google.protobuf.message import DecodeError

from kingrec.errors import KingrecError

from .errors import BadRequestError, UnauthenticatedError, status_of, trailing_metadata

__all__ = ["ErrorInterceptor", "TokenInterceptor"]

LOG = logging.getLogger("kingrec_service")

if TYPE_CHECKING:  # the stubs' generics do not exist at run time
    Behaviour = Callable[[Any, grpc.aio.ServicerContext[Any, Any]], Any]
    Continuation = Callable[
        [grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler[Any, Any] | None]
    ]


class _Undecodable:
    """What the request deserializer gives for bytes that are no request message."""

    def __init__(self, error: str) -> None:
        self.error = error


def _decoder(
    deserialize: Callable[[bytes], Any] | None, method: str
) -> Callable[[bytes], Any] | None:
    if deserialize is None:
        return None

    def decode(data: bytes) -> Any:
        try:
            return deserialize(data)
        except DecodeError as exc:
            return _Undecodable(f"the request to {method} is not a valid message: {exc}")

    return decode


def _encoder(serialize: Callable[[Any], bytes] | None) -> Callable[[Any], bytes] | None:
    """The response serializer, passing through responses already encoded (bytes)."""
    if serialize is None:
        return None

    def encode(response: Any) -> bytes:
        return response if type(response) is bytes else serialize(response)

    return encode


def _check(request: Any) -> Any:
    if isinstance(request, _Undecodable):
        raise BadRequestError(request.error)
    return request


async def _checked(requests: AsyncIterator[Any]) -> AsyncIterator[Any]:
    async for request in requests:
        yield _check(request)


async def _abort(context: grpc.aio.ServicerContext[Any, Any], exc: Exception, method: str) -> None:
    code = status_of(exc)
    if code is None:
        if os.environ.get("KINGREC_DEBUG"):
            LOG.exception("internal error in %s", method)
        else:
            LOG.error(
                "internal error in %s: %s: %s (please report it; KINGREC_DEBUG=1 logs the "
                "traceback)",
                method,
                type(exc).__name__,
                exc,
            )
        await context.abort(grpc.StatusCode.INTERNAL, f"internal error in kingrec ({method})")
        return
    assert isinstance(exc, KingrecError)
    await context.abort(code, str(exc), trailing_metadata=trailing_metadata(exc))


def _wrap(handler: grpc.RpcMethodHandler[Any, Any], method: str) -> grpc.RpcMethodHandler[Any, Any]:
    """The handler with its behaviour guarded and its requests decoded by us."""
    streaming_in = handler.request_streaming
    if handler.unary_unary or handler.stream_unary:
        inner: Behaviour = handler.unary_unary or handler.stream_unary  # type: ignore[assignment]

        async def unary(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
            try:
                request = _checked(request) if streaming_in else _check(request)
                return await inner(request, context)
            except (grpc.aio.AbortError, grpc.aio.UsageError):
                raise
            except Exception as exc:
                await _abort(context, exc, method)

        factory = (
            grpc.stream_unary_rpc_method_handler
            if streaming_in
            else grpc.unary_unary_rpc_method_handler
        )
        behaviour: Behaviour = unary
    else:
        inner = handler.unary_stream or handler.stream_stream  # type: ignore[assignment]
        generates = inspect.isasyncgenfunction(inner)

        async def writer(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> None:
            # An async generator's responses are written here, not by grpc, so that a client
            # that goes away mid-write ends the call quietly instead of in grpc's log.
            try:
                request = _checked(request) if streaming_in else _check(request)
                if not generates:  # a coroutine that writes itself (health's Watch)
                    await inner(request, context)
                    return
                async with aclosing(inner(request, context)) as responses:
                    async for response in responses:
                        try:
                            await context.write(response)
                        except grpc.aio.InternalError:
                            return  # the call broke (the client went away): no one to tell
            except (grpc.aio.AbortError, grpc.aio.UsageError):
                raise
            except Exception as exc:
                await _abort(context, exc, method)

        behaviour = writer
        factory = (
            grpc.stream_stream_rpc_method_handler
            if streaming_in
            else grpc.unary_stream_rpc_method_handler
        )
    return factory(
        behaviour,
        request_deserializer=_decoder(handler.request_deserializer, method),
        response_serializer=_encoder(handler.response_serializer),
    )


class ErrorInterceptor(grpc.aio.ServerInterceptor):
    """Errors to status codes through ``kingrec_service.errors.STATUS``; requests decoded
    with a precise refusal."""

    def __init__(self) -> None:
        # method -> (its handler, wrapped): a service's handlers are the same on every call
        self._wrapped: dict[str, tuple[Any, grpc.RpcMethodHandler[Any, Any]]] = {}

    async def intercept_service(
        self, continuation: Continuation, handler_call_details: grpc.HandlerCallDetails
    ) -> grpc.RpcMethodHandler[Any, Any] | None:
        handler = await continuation(handler_call_details)
        if handler is None:
            return None
        method = handler_call_details.method
        known = self._wrapped.get(method)
        if known is not None and known[0] is handler:
            return known[1]
        wrapped = _wrap(handler, method)
        self._wrapped[method] = (handler, wrapped)
        return wrapped


def _refuse(
    handler: grpc.RpcMethodHandler[Any, Any], message: str
) -> grpc.RpcMethodHandler[Any, Any]:
    """The handler with a behaviour that refuses the call (before reading any request)."""

    async def refuse(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
        raise UnauthenticatedError(message)

    async def refuse_stream(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
        raise UnauthenticatedError(message)
        yield  # an async generator, like the behaviour it stands for

    streaming_in = handler.request_streaming
    if handler.response_streaming:
        factory = (
            grpc.stream_stream_rpc_method_handler
            if streaming_in
            else grpc.unary_stream_rpc_method_handler
        )
        behaviour: Behaviour = refuse_stream
    else:
        factory = (
            grpc.stream_unary_rpc_method_handler
            if streaming_in
            else grpc.unary_unary_rpc_method_handler
        )
        behaviour = refuse
    return factory(
        behaviour,
        request_deserializer=handler.request_deserializer,
        response_serializer=handler.response_serializer,
    )


class TokenInterceptor(grpc.aio.ServerInterceptor):
    """Calls of ``methods`` (full names, ``/kingrec.v1.KingrecService/Upload``) need the
    metadata ``authorization: Bearer TOKEN``."""

    def __init__(self, token: str, methods: frozenset[str]) -> None:
        self._token = token.encode("utf-8")
        self._methods = methods

    def _refusal(self, details: grpc.HandlerCallDetails) -> str | None:
        """Why the call may not go on, or None when it carries the token."""
        given = [v for k, v in details.invocation_metadata or () if k == "authorization"]
        if not given:
            return "this call needs the server's token: send metadata 'authorization: Bearer TOKEN'"
        value = given[0]
        text = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
        scheme, _, token = text.strip().partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(
            token.strip().encode("utf-8"), self._token
        ):
            return "the token is not this server's (metadata 'authorization: Bearer TOKEN')"
        return None

    async def intercept_service(
        self, continuation: Continuation, handler_call_details: grpc.HandlerCallDetails
    ) -> grpc.RpcMethodHandler[Any, Any] | None:
        handler = await continuation(handler_call_details)
        if handler is None or handler_call_details.method not in self._methods:
            return handler
        refusal = self._refusal(handler_call_details)
        return handler if refusal is None else _refuse(handler, refusal)
