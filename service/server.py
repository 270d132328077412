"""The server: a factory that tests call on port 0, a graceful stop, and the ``serve`` loop.

``create_server(config)`` builds a ``grpc.aio`` server (one event loop, no thread per stream)
with the kingrec service, the standard health service and server reflection, every method
guarded once as it is registered (``kingrec_service.methods``: errors to status codes; the
token on Upload and Publish), the message-size limits and TLS when given a certificate and
key, bound to ``config.host:config.port`` (0: a free port). Call it in the event loop that will
run the server.

Message sizes (derived from ``kingrec.limits``): a request may be ``MAX_REQUEST_BYTES``, room
for the largest record there is (a JSON record of ``MAX_JSON_LINE_BYTES``) and its envelope;
responses are kept to ``MAX_RESPONSE_BYTES``, gRPC's default receive limit, so that clients
need no setting.

With ``config.http_host`` the same loop also serves the HTTP API and the web viewer
(``kingrec_service.http``) over the same hub and store, on a socket bound here as well.

With ``config.db`` the server owns that DuckDB store (``kingrec_service.storage``: DuckDB
lets one process write a file, so nothing else may hold it open meanwhile).

``KingrecServer.stop`` is graceful: health turns NOT_SERVING, live matches are abandoned and
stored, viewers get the end of their match, replays and publishers end UNAVAILABLE saying where
to resume, queries are interrupted at once and end UNAVAILABLE (SHUTTING_DOWN), uploads get
the answers to what they sent before and end UNAVAILABLE, unary calls in flight finish
(within ``grace`` seconds; the par searches of those still running then stop); then what is
queued for the store is committed and the store closed.
"""

from __future__ import annotations

import asyncio
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection, reflection_pb2_grpc

from kingrec.errors import KingrecError
from kingrec.limits import MAX_JSON_LINE_BYTES
from kingrec.v1 import service_pb2 as svc

from . import heap
from ._pb import service_pb2_grpc
from .analysing import AnalyseLimits, Analyser
from .errors import ShuttingDownError
from .http import HttpSite, create_app
from .live import Hub, LiveConfig
from .methods import MethodTable
from .servicers import KingrecServicer
from .storage import QueryLimits, StoreGateway
from .stored import store_live
from .stream_request import stream_request

__all__ = [
    "MAX_REQUEST_BYTES",
    "MAX_RESPONSE_BYTES",
    "SERVER_OPTIONS",
    "SERVICE_NAME",
    "KingrecServer",
    "ServerError",
    "ServiceConfig",
    "create_server",
    "running_server",
    "serve",
    "token_problem",
]

SERVICE_NAME: str = svc.DESCRIPTOR.services_by_name["KingrecService"].full_name

MAX_REQUEST_BYTES = MAX_JSON_LINE_BYTES + (64 << 10)
MAX_RESPONSE_BYTES = 4 << 20

QUERIES_STOPPED = "the server is shutting down: run the query again once it is back"

# The methods that need the token, when the server has one.
GUARDED = frozenset(f"/{SERVICE_NAME}/{name}" for name in ("Upload", "Publish"))

# Requests read from their bytes rather than by the generated deserializer.
DECODERS = {f"/{SERVICE_NAME}/ValidateStream": stream_request}

# The grpc.aio server's settings (bench/bench_service.py gives its floor the same).
SERVER_OPTIONS: tuple[tuple[str, int], ...] = (
    ("grpc.max_receive_message_length", MAX_REQUEST_BYTES),
    ("grpc.max_send_message_length", MAX_RESPONSE_BYTES),
    ("grpc.so_reuseport", 0),
    ("grpc.keepalive_time_ms", 60_000),  # find viewers that went away silently
    ("grpc.keepalive_timeout_ms", 20_000),
)


def token_problem(token: str) -> str | None:
    """Why ``token`` cannot be the server's token, or None. An empty one would mean no
    authentication at all, silently; a space or a character outside visible ASCII cannot
    travel in an ``authorization`` metadata value, so no client could ever send it."""
    if not token:
        return (
            "the token is empty, which would let anyone Upload and Publish: give a token, or "
            "leave --token and $KINGREC_TOKEN unset to run without one"
        )
    odd = next((c for c in token if not "!" <= c <= "~"), None)
    if odd is not None:
        return (
            f"the token holds {odd!r}: a token is visible ASCII without spaces (it travels in "
            "the metadata 'authorization: Bearer TOKEN')"
        )
    return None


class ServerError(KingrecError):
    """The server cannot start as configured (address in use, a certificate without a key)."""

    code = "SERVER_ERROR"


@dataclass(frozen=True)
class ServiceConfig:
    host: str = "127.0.0.1"
    port: int = 0  # 0: any free port (create_server returns the one bound)
    token: str | None = None  # Upload and Publish need it, when set (never "": see token_problem)
    tls_cert: bytes | None = None  # PEM certificate chain; TLS when given with the key
    tls_key: bytes | None = None  # PEM private key
    db: str | None = None  # the store's DuckDB file (None: no store; the store RPCs refuse)
    query: QueryLimits = field(default_factory=QueryLimits)
    analyse: AnalyseLimits = field(default_factory=AnalyseLimits)  # Analyse's searches
    grace: float = 10.0  # seconds in-flight calls get to finish on stop
    live: LiveConfig = field(default_factory=LiveConfig)
    http_host: str | None = None  # the HTTP API and web viewer on this address (None: off)
    http_port: int = 0  # 0: any free port (KingrecServer.http_port says which)
    http_cors: str | None = None  # the one origin whose pages may read the API (None: none)


class KingrecServer:
    """A built server: ``start``, ``stop`` (graceful), ``wait_for_termination``."""

    def __init__(
        self,
        server: grpc.aio.Server,
        hub: Hub,
        health: health.aio.HealthServicer,
        grace: float,
        store: StoreGateway | None,
        http: HttpSite | None = None,
        analyser: Analyser | None = None,
    ) -> None:
        self.grpc = server
        self.hub = hub
        self.health = health
        self.grace = grace
        self.store = store
        self.http = http
        self.analyser = analyser or Analyser()

    @property
    def http_port(self) -> int | None:
        """The port of the HTTP API and web viewer (None: not served)."""
        return None if self.http is None else self.http.port

    async def start(self) -> None:
        await self.grpc.start()
        if self.http is not None:
            await self.http.start()
        await self.health.set(SERVICE_NAME, health_pb2.HealthCheckResponse.SERVING)

    async def stop(self, grace: float | None = None) -> None:
        """Stop taking calls; let streams end cleanly and calls in flight finish."""
        await self.health.enter_graceful_shutdown()
        if self.store is not None:  # a query is a read, run again later: none holds the stop
            self.store.stop_queries(ShuttingDownError(QUERIES_STOPPED))
        closing = asyncio.ensure_future(self.hub.close())
        web = None if self.http is None else asyncio.ensure_future(self.http.stop())
        await self.grpc.stop(self.grace if grace is None else grace)
        await closing
        if web is not None:  # its streams end with the matches and replays they follow
            await web
        self.analyser.close()  # searches of calls past the grace stop, their threads end
        if self.store is not None:  # what is queued is committed, then the file is closed
            await asyncio.to_thread(self.store.close)

    async def wait_for_termination(self) -> None:
        await self.grpc.wait_for_termination()


def _address(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host and not host.startswith("[") else f"{host}:{port}"


def create_server(config: ServiceConfig) -> tuple[KingrecServer, int]:
    """The server for ``config``, bound but not started, and the port it is bound to."""
    if (config.tls_cert is None) != (config.tls_key is None):
        raise ServerError("TLS needs both a certificate and its key")
    if config.token is not None:
        problem = token_problem(config.token)
        if problem is not None:
            raise ServerError(problem)
    server = grpc.aio.server(options=SERVER_OPTIONS)
    store = None if config.db is None else StoreGateway.open(config.db, config.query)
    hub = Hub(config.live, None if store is None else partial(store_live, store))
    methods = MethodTable(config.token, GUARDED, DECODERS)  # each method guarded once, here
    table = methods.as_server()  # the services register into it, not into the server
    analyser = Analyser(config.analyse)
    servicer = KingrecServicer(hub, store, analyser)
    service_pb2_grpc.add_KingrecServiceServicer_to_server(servicer, table)
    health_servicer = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, table)
    names = (SERVICE_NAME, health.SERVICE_NAME, reflection.SERVICE_NAME)
    reflection_pb2_grpc.add_ServerReflectionServicer_to_server(  # type: ignore[no-untyped-call]
        reflection.aio.ReflectionServicer(names), table
    )
    methods.install(server)
    address = _address(config.host, config.port)
    try:
        if config.tls_cert is not None and config.tls_key is not None:
            credentials = grpc.ssl_server_credentials([(config.tls_key, config.tls_cert)])
            port = server.add_secure_port(address, credentials)
        else:
            port = server.add_insecure_port(address)
    except RuntimeError as exc:
        port, problem = 0, f"cannot listen on {address}: {exc}"
    else:
        problem = f"cannot listen on {address} (in use, or not an address of this host)"
    http = None
    if port != 0 and config.http_host is not None:
        try:
            app = create_app(hub, store, config.http_cors, analyser)
            http = HttpSite(app, config.http_host, config.http_port, config.grace)
        except OSError as exc:
            where = _address(config.http_host, config.http_port)
            port, problem = 0, f"cannot listen on {where} for HTTP: {exc.strerror or exc}"
    if port == 0:
        if store is not None:
            store.close()
        analyser.close()
        raise ServerError(problem)
    built = KingrecServer(server, hub, health_servicer, config.grace, store, http, analyser)
    return built, port


async def serve(
    config: ServiceConfig, ready: Callable[[int, int | None], None] | None = None
) -> None:
    """Run a server until SIGTERM or SIGINT, then stop it gracefully. ``ready`` is called
    with the port (and the HTTP port, or None) once the server takes calls."""
    heap.keep_freed_memory()  # the process is the server's: its requests' pages are reused
    server, port = create_server(config)
    await server.start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    try:
        if ready is not None:
            ready(port, server.http_port)
        await stop.wait()
    finally:
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(signum)
        await server.stop()


@contextmanager
def running_server(config: ServiceConfig) -> Iterator[tuple[KingrecServer, int]]:
    """A server running in a thread of its own (its own event loop) for as long as the
    ``with`` block: for tests, benchmarks and programs that are not asyncio."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="kingrec-server", daemon=True)
    thread.start()

    async def build() -> tuple[KingrecServer, int]:
        server, port = create_server(config)
        await server.start()
        return server, port

    try:
        server, port = asyncio.run_coroutine_threadsafe(build(), loop).result()
        try:
            yield server, port
        finally:
            asyncio.run_coroutine_threadsafe(server.stop(), loop).result()
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join()
        loop.close()
