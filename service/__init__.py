"""kingrec's gRPC service (``kingrec.v1.KingrecService``): validate records, replay them,
publish and watch live matches.

The library (``kingrec``) never imports this package or grpc; the service translates
requests into library calls and maps the library's errors to status codes in one table
(``kingrec_service.errors``). Start one with ``kingrec serve`` or::

    server, port = create_server(ServiceConfig(port=0))
    await server.start()
"""

from typing import TYPE_CHECKING

from kingrec import _lazy_names

if TYPE_CHECKING:
    from .server import (
        MAX_REQUEST_BYTES,
        MAX_RESPONSE_BYTES,
        SERVICE_NAME,
        KingrecServer,
        ServerError,
        ServiceConfig,
        create_server,
        running_server,
        serve,
    )

__all__ = [
    "MAX_REQUEST_BYTES",
    "MAX_RESPONSE_BYTES",
    "SERVICE_NAME",
    "KingrecServer",
    "ServerError",
    "ServiceConfig",
    "create_server",
    "running_server",
    "serve",
]


# The server's names are imported when first asked for: a client command that needs only the
# generated stub (``kingrec_service._pb``) does not pay for the server, its web face and
# aiohttp at start-up.
if not TYPE_CHECKING:  # hidden from type checkers, which would take any name as Any
    __getattr__, __dir__ = _lazy_names(__name__, globals(), dict.fromkeys(__all__, ".server"))
