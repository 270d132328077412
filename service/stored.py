"""Stored matches as the service hands them out: a page of summaries, one record, and the
storing of a finished live match (as an upload of that match would store it)."""

from __future__ import annotations

from kingrec.findings import Location
from kingrec.store import Store
from kingrec.v1 import record_pb2 as pb
from kingrec.v1 import service_pb2 as svc

from .convert import stored_summary, verdict_to_proto
from .errors import BadRequestError, MatchNotFoundError
from .storage import StoreGateway

__all__ = ["LIVE_SOURCE", "get_stored", "get_stored_payload", "list_stored", "store_live"]

LIVE_SOURCE = "live"  # the source a finished live match is stored under


def _page(store: Store, request: svc.ListMatchesRequest) -> svc.ListMatchesResponse:
    status = None
    if request.status != pb.MATCH_STATUS_UNSPECIFIED:
        status = pb.MatchStatus.Name(request.status).removeprefix("MATCH_STATUS_")
    rows, token = store.list_matches(
        player=request.player or None,
        preset=request.preset or None,
        status=status,
        valid=request.valid if request.HasField("valid") else None,
        limit=request.limit or 100,
        after=request.page_token or None,
    )
    players = store.players([row["match_key"] for row in rows])
    return svc.ListMatchesResponse(
        matches=[stored_summary(row, players[row["match_key"]]) for row in rows],
        next_page_token=token or "",
    )


async def list_stored(
    gateway: StoreGateway, request: svc.ListMatchesRequest
) -> svc.ListMatchesResponse:
    if request.page_token and not request.page_token.isdigit():
        raise BadRequestError(
            f"page_token {request.page_token!r} is not one this server gave (next_page_token)"
        )
    return await gateway.read(lambda store: _page(store, request))


async def get_stored_payload(gateway: StoreGateway, match_id: str) -> bytes:
    """The serialized record stored under ``match_id`` (the first, if the id was reused),
    as the store holds it."""
    if not match_id:
        raise BadRequestError("say which match: match_id is empty")
    record = await gateway.read(lambda store: store.get_match(match_id))
    if record is None:
        raise MatchNotFoundError(f"no match {match_id!r} in the store")
    return record


async def get_stored(gateway: StoreGateway, match_id: str) -> pb.Match:
    """The record stored under ``match_id`` (the first, if the id was reused)."""
    return pb.Match.FromString(await get_stored_payload(gateway, match_id))


async def store_live(gateway: StoreGateway, match: pb.Match) -> svc.StoreVerdict:
    """Store a finished live match, as an Upload of it as a ``Match`` would."""
    payload = match.SerializeToString(deterministic=True)
    verdicts = await gateway.ingest([payload], LIVE_SOURCE, [Location(LIVE_SOURCE)])
    return verdict_to_proto(verdicts[0])
