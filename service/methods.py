"""Every method the server serves, wrapped once when the server is built.

``MethodTable`` takes the place of the server in the generated ``add_*Servicer_to_server``
functions (they call ``add_generic_rpc_handlers`` and ``add_registered_method_handlers``)
and ``install`` hands the server one generic handler: a dict from a method's full name to
its handler, each handler wrapped by ``guard`` once, here, rather than on every call.

Why not interceptors: grpc.aio runs a server's interceptors on every call, a chain of
coroutines before the method is even found, and a table of registered methods makes its
serving loop wait on one pending call per method (``asyncio.wait`` over all of them) after
every call; with one generic handler it waits on one. What the interceptors did, ``guard``
does, with the same statuses, messages and trailers:

- errors to status codes (in the spirit of grpc-interceptor's
  ``ExceptionToStatusInterceptor``): an exception that ``kingrec_service.errors.status_of``
  knows ends the call with that status, the error's message and its trailers; any other is
  a bug, logged in one line and answered INTERNAL;
- requests decoded here, so bytes that are no request message are answered
  INVALID_ARGUMENT naming the method, not with grpc's own logged traceback;
- the token: the methods that need it refuse a call whose metadata ``authorization: Bearer
  TOKEN`` does not carry it (compared in constant time) before reading any request; the
  other methods do not look;
- responses already encoded (``bytes``) pass the response serializer untouched.
"""

from __future__ import annotations

import hmac
import inspect
import logging
import os
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from contextlib import aclosing
from typing import TYPE_CHECKING, Any, cast

import grpc
from google.protobuf.message import DecodeError

from kingrec.errors import KingrecError

from .errors import BadRequestError, UnauthenticatedError, status_of, trailing_metadata

__all__ = ["MethodTable", "guard"]

LOG = logging.getLogger("kingrec_service")

if TYPE_CHECKING:  # the stubs' generics do not exist at run time
    Behaviour = Callable[[Any, grpc.aio.ServicerContext[Any, Any]], Any]
    Handler = grpc.RpcMethodHandler[Any, Any]
    Context = grpc.aio.ServicerContext[Any, Any]

NO_TOKEN = "this call needs the server's token: send metadata 'authorization: Bearer TOKEN'"
WRONG_TOKEN = "the token is not this server's (metadata 'authorization: Bearer TOKEN')"


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


def _refusal(metadata: Iterable[tuple[str, str | bytes]] | None, token: bytes) -> str | None:
    """Why a call with ``metadata`` may not go on, or None when it carries ``token``."""
    given = [v for k, v in metadata or () if k == "authorization"]
    if not given:
        return NO_TOKEN
    value = given[0]
    text = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
    scheme, _, sent = text.strip().partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(sent.strip().encode("utf-8"), token):
        return WRONG_TOKEN
    return None


def _authorize(context: Context, token: bytes) -> None:
    refusal = _refusal(context.invocation_metadata(), token)
    if refusal is not None:
        raise UnauthenticatedError(refusal)


async def _abort(context: Context, exc: Exception, method: str) -> None:
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


def guard(
    handler: Handler,
    method: str,
    token: bytes | None = None,
    deserialize: Callable[[bytes], Any] | None = None,
) -> Handler:
    """``handler`` (of the method ``method``, its full name) with its requests decoded here
    (by ``deserialize`` when given, else its own deserializer), its errors turned into
    statuses and, when ``token`` is given, calls without it refused."""
    streaming_in = handler.request_streaming
    if handler.unary_unary or handler.stream_unary:
        inner: Behaviour = handler.unary_unary or handler.stream_unary  # type: ignore[assignment]

        async def unary(request: Any, context: Context) -> Any:
            try:
                if token is not None:
                    _authorize(context, token)
                if streaming_in:
                    request = _checked(request)
                elif type(request) is _Undecodable:  # bytes grpc could not decode (_decoder)
                    raise BadRequestError(request.error)
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

        async def writer(request: Any, context: Context) -> None:
            # An async generator's responses are written here, not by grpc, so that a client
            # that goes away mid-write ends the call quietly instead of in grpc's log.
            try:
                if token is not None:
                    _authorize(context, token)
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
        request_deserializer=_decoder(deserialize or handler.request_deserializer, method),
        response_serializer=_encoder(handler.response_serializer),
    )


class _Methods(grpc.GenericRpcHandler):
    """The server's one generic handler: a method's handler by its full name."""

    def __init__(self, handlers: Mapping[str, Handler]) -> None:
        self._handlers = dict(handlers)

    def service(self, handler_call_details: grpc.HandlerCallDetails) -> Handler | None:
        return self._handlers.get(handler_call_details.method)


class MethodTable:
    """Where the services register (in place of the server), then ``install`` on it.

    ``token``, when given, is needed by the methods named in ``guarded`` (full names,
    ``/kingrec.v1.KingrecService/Upload``); ``decoders`` gives methods, by full name, a
    request deserializer of their own in place of the generated one."""

    def __init__(
        self,
        token: str | None = None,
        guarded: frozenset[str] = frozenset(),
        decoders: Mapping[str, Callable[[bytes], Any]] | None = None,
    ) -> None:
        self._token = None if token is None else token.encode("utf-8")
        self._guarded = guarded
        self._decoders = dict(decoders or {})
        self._handlers: dict[str, Handler] = {}
        self._services: set[str] = set()
        self._generic: list[grpc.GenericRpcHandler] = []

    def add_generic_rpc_handlers(self, handlers: Iterable[grpc.GenericRpcHandler]) -> None:
        """What generated code registers first; ``add_registered_method_handlers`` gives the
        same methods as a table (``install`` checks that it did)."""
        self._generic.extend(handlers)

    def add_registered_method_handlers(
        self, service_name: str, method_handlers: Mapping[str, Handler]
    ) -> None:
        for name, handler in method_handlers.items():
            method = f"/{service_name}/{name}"
            token = self._token if method in self._guarded else None
            self._handlers[method] = guard(handler, method, token, self._decoders.get(method))
        self._services.add(service_name)

    @property
    def methods(self) -> frozenset[str]:
        """The full names of the methods registered so far."""
        return frozenset(self._handlers)

    def as_server(self) -> grpc.aio.Server:
        """This table, typed as what the generated ``add_*Servicer_to_server`` functions
        take: they call only the two methods above."""
        return cast("grpc.aio.Server", self)

    def install(self, server: grpc.aio.Server) -> None:
        """Give ``server`` every method registered, as one generic handler."""
        for handler in self._generic:
            name = handler.service_name() if isinstance(handler, grpc.ServiceRpcHandler) else None
            if name not in self._services:  # nothing may be served unguarded
                raise TypeError(f"a service registered without its method table: {handler!r}")
        unknown = self._guarded - self._handlers.keys()
        if unknown:  # a typo here would leave a method open
            raise ValueError(f"methods to guard that no service has: {sorted(unknown)}")
        undecoded = self._decoders.keys() - self._handlers.keys()
        if undecoded:  # a typo here would leave the generated deserializer in place
            raise ValueError(f"request decoders for methods no service has: {sorted(undecoded)}")
        server.add_generic_rpc_handlers((_Methods(self._handlers),))
