"""The web face of ``kingrec serve --http``: the aiohttp application (the API routes and the
web viewer's static files), its error handling and security headers, and ``HttpSite``,
which runs it in the gRPC server's event loop.

Every response, errors and static files included, carries the security headers (set on
``on_response_prepare``, the one hook every response passes through). Every failure is the
JSON error body: an expected one (a ``KingrecError``) with its code and the HTTP status of
the one table, aiohttp's own (no such path, a method not allowed, a body too large) with
theirs, anything else (a bug) as 500 ``INTERNAL``: one log line, never a traceback.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Awaitable, Callable
from pathlib import Path

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError

from kingrec.errors import KingrecError

from ..analysing import Analyser
from ..live import Hub
from ..storage import StoreGateway
from . import live, matches, par, stats, validating
from .context import CONTEXT, Context
from .errors import error_object, http_status

__all__ = ["CSP", "MAX_BODY_BYTES", "WEB_ROOT", "HttpSite", "create_app"]

log = logging.getLogger("kingrec_service.http")

WEB_ROOT = Path(__file__).resolve().parent.parent / "web"  # package data of kingrec_service

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "object-src 'none'; base-uri 'none'; frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
}

# The largest request there is: the gRPC service's (room for the largest record as JSON).
MAX_BODY_BYTES = 4 * 1024 * 1024 + 64 * 1024
# aiohttp's request line and header limits, raised so that a long id in a path reaches the
# handler (and gets its 404) instead of the parser's bare 400.
MAX_LINE_BYTES = 64 * 1024

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

_HTTP_CODES = {
    404: "NOT_FOUND",
    405: "METHOD_NOT_ALLOWED",
    413: "BODY_TOO_LARGE",
    403: "NOT_FOUND",  # aiohttp's static files: a path outside the folder
}


def _error(status: int, code: str, message: str) -> web.Response:
    body = {"error": {"code": code, "message": message}}
    return Context.json(body, status)


@web.middleware
async def errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except KingrecError as exc:
        return Context.json({"error": error_object(exc)}, http_status(exc) or 400)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        if exc.status == 403:  # a static path outside the folder: as if it were not there
            return _error(404, "NOT_FOUND", f"no such file: {request.path[:200]!r}")
        code = _HTTP_CODES.get(exc.status, "BAD_REQUEST")
        message = exc.reason
        if exc.status == 413:
            message = f"the body is over the limit of {MAX_BODY_BYTES} bytes"
        elif exc.status == 404:
            message = f"no such path: {request.path[:200]!r}"
        return _error(exc.status, code, message)
    except (ConnectionResetError, TimeoutError):
        raise  # the client went away or stalled: nobody to answer
    except Exception as exc:
        if isinstance(exc, OSError | ValueError) and request.path.startswith("/static/"):
            # a name the file system refuses (too long, a NUL): no such file either
            return _error(404, "NOT_FOUND", f"no such file: {request.path[:200]!r}")
        log.error("internal error on %s %s: %r", request.method, request.path[:200], exc)
        if os.environ.get("KINGREC_DEBUG"):
            log.exception("the traceback")
        return _error(500, "INTERNAL", "an internal error; the server logged it")


async def _headers(request: web.Request, response: web.StreamResponse) -> None:
    response.headers.update(SECURITY_HEADERS)
    cors = request.app[CONTEXT].cors
    if cors is not None:
        response.headers["Access-Control-Allow-Origin"] = cors
        response.headers["Vary"] = "Origin"


async def _index(request: web.Request) -> web.StreamResponse:
    index = WEB_ROOT / "index.html"
    if not index.is_file():
        return _error(404, "NOT_FOUND", "the web viewer is not installed")
    return web.FileResponse(index, headers={"Cache-Control": "no-cache"})


def create_app(
    hub: Hub,
    gateway: StoreGateway | None,
    cors: str | None = None,
    analyser: Analyser | None = None,
) -> web.Application:
    """The application over the server's live hub, store and par searches."""
    app = web.Application(middlewares=[errors], client_max_size=MAX_BODY_BYTES)
    app[CONTEXT] = Context(hub, gateway, cors, analyser or Analyser())
    app.on_response_prepare.append(_headers)
    app.add_routes([web.get("/", _index)])
    app.add_routes(matches.routes())
    app.add_routes(par.routes())
    app.add_routes(live.routes())
    app.add_routes(validating.routes())
    app.add_routes(stats.routes())
    if WEB_ROOT.is_dir():
        app.router.add_static("/static/", WEB_ROOT, follow_symlinks=False, show_index=False)
    return app


class _OneLineForBadRequests(logging.Filter):
    """A request the HTTP parser refuses (garbage, a line over the limit) is the client's
    fault, answered 400 by aiohttp: one line in the log, not a traceback per attempt."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, HttpProcessingError):
            record.msg = "refused a request the HTTP parser cannot read: %s"
            record.args = (" ".join(str(exc.message).split())[:200],)
            record.exc_info = None
            record.levelno, record.levelname = logging.INFO, "INFO"
        return True


_QUIET = _OneLineForBadRequests()


def _listen(host: str, port: int) -> socket.socket:
    """A listening socket, bound now (so a port in use is known at once, and port 0's
    choice can be printed)."""
    infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(512)
        sock.setblocking(False)
    except OSError:
        sock.close()
        raise
    return sock


class HttpSite:
    """The application on a socket of its own, in the running event loop."""

    def __init__(self, app: web.Application, host: str, port: int, grace: float) -> None:
        logging.getLogger("aiohttp.server").addFilter(_QUIET)  # added once, however often
        self.sock = _listen(host, port)
        self.host = host
        self.port: int = self.sock.getsockname()[1]
        self.runner = web.AppRunner(
            app,
            handle_signals=False,
            access_log=None,
            # A client that goes away cancels its handler (aiohttp's "web handler
            # cancellation"): its par search is stopped, its query interrupted, its stream
            # left, as a cancelled gRPC call's are, instead of running on for nobody.
            handler_cancellation=True,
            shutdown_timeout=grace,
            max_line_size=MAX_LINE_BYTES,
            max_field_size=MAX_LINE_BYTES,
        )

    async def start(self) -> None:
        await self.runner.setup()
        await web.SockSite(self.runner, self.sock).start()

    async def stop(self) -> None:
        await self.runner.cleanup()
