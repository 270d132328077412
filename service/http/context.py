"""What every handler shares: the server's live hub, store and par searches (the same
objects the gRPC servicers use), and the JSON answer."""

from __future__ import annotations

from dataclasses import dataclass, field

from aiohttp import web

from ..analysing import Analyser
from ..errors import MatchNotFoundError, NoStoreError
from ..live import Hub
from ..storage import StoreGateway
from .jsonforms import dumps

__all__ = ["CONTEXT", "MAX_ID_CHARS", "Context", "match_id_of"]

# Longer ids are no match's (the store's ids come from records, which hold far shorter
# ones): answered without asking the store.
MAX_ID_CHARS = 1024


@dataclass(frozen=True)
class Context:
    hub: Hub
    gateway: StoreGateway | None
    cors: str | None = None  # the one origin allowed to read answers (None: no CORS)
    analyser: Analyser = field(default_factory=Analyser)  # the par searches, the servicer's

    @staticmethod
    def of(request: web.Request) -> Context:
        return request.app[CONTEXT]

    def store(self, what: str) -> StoreGateway:
        if self.gateway is None:
            raise NoStoreError(f"{what} needs the store, and this server keeps none")
        return self.gateway

    @staticmethod
    def json(obj: object, status: int = 200) -> web.Response:
        return web.Response(
            body=dumps(obj), status=status, content_type="application/json", charset="utf-8"
        )


CONTEXT = web.AppKey("kingrec", Context)


def match_id_of(request: web.Request) -> str:
    match_id = request.match_info["match_id"]
    if len(match_id) > MAX_ID_CHARS:
        raise MatchNotFoundError(f"no match has an id of {len(match_id)} characters")
    return match_id
