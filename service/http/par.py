"""A stored match's par analysis over HTTP: the Analyse RPC's answer as JSON, from the same
call on the same searches (``kingrec_service.analysing.Analyser``), within the same bounds."""

from __future__ import annotations

from aiohttp import web

from kingrec.v1 import record_pb2 as pb
from kingrec.v1 import service_pb2 as svc

from ..stored import get_stored
from .context import Context, match_id_of
from .jsonforms import message_dict
from .params import flag, number

__all__ = ["routes"]


async def get_par(request: web.Request) -> web.Response:
    ctx = Context.of(request)
    match_id = match_id_of(request)
    q = request.query
    asked = svc.AnalyseRequest(
        match_id=match_id,
        from_trick=number(q, "from_trick", 1, 13, 1),
        par_only=flag(q, "par_only") or False,
        budget_ms=number(q, "budget_ms", 0, 999_999_999, 0),  # bounded by the Analyser
        budget_nodes=number(q, "budget_nodes", 0, 999_999_999, 0),
    )
    if q.get("deal", ""):
        asked.deals.append(number(q, "deal", 1, 1 << 16, 1))
    if q.get("seat", ""):
        asked.seats.append(number(q, "seat", 0, 3, 0))
    store = ctx.store("analysing a stored match")

    async def match() -> pb.Match:  # read once the call has its place, not before
        return await get_stored(store, match_id)

    return ctx.json(message_dict(await ctx.analyser.analyse(asked, match)))


def routes() -> list[web.RouteDef]:
    return [web.get("/api/matches/{match_id}/par", get_par)]
