"""POST /api/validate: a .krec file or JSON Lines in the body, judged as ``kingrec validate
--json`` judges a file holding those bytes (``kingrec.verdicts``: the same objects, the same
summary), written back as NDJSON.

The body is read whole, within ``MAX_REQUEST_BYTES`` (aiohttp refuses more before reading
it), and judged in a thread, so the event loop keeps serving viewers meanwhile.
"""

from __future__ import annotations

import asyncio
import io

from aiohttp import web

from kingrec.errors import KingrecError
from kingrec.findings import CleanMatches
from kingrec.records import Damage, RecordFile
from kingrec.validation import validate_records
from kingrec.verdicts import (
    Tally,
    damage_object,
    error_object,
    listed,
    match_object,
    summary_object,
)

from .jsonforms import dumps
from .params import flag

__all__ = ["routes", "validation_lines"]

NAME_CHARS = 255


def validation_lines(body: bytes, name: str, show_all: bool) -> list[object]:
    """The objects ``kingrec validate --json [--all] NAME`` writes for a file of ``body``."""
    tally = Tally()
    out: list[object] = []
    tally.files += 1
    try:
        records = RecordFile(name, io.BytesIO(body), len(body))
        for item in validate_records(records, count_clean=not show_all, seen=set()):
            tally.count(item)
            if isinstance(item, CleanMatches):
                continue
            if isinstance(item, Damage):
                out.append(damage_object(item))
            elif listed(item, show_all):
                out.append(match_object(item))
    except KingrecError as exc:
        tally.unreadable += 1
        out.append(error_object(name, exc.code, str(exc)))
    out.append(summary_object(tally))
    return out


async def validate(request: web.Request) -> web.Response:
    name = request.query.get("name", "") or "upload"
    name = name[:NAME_CHARS]
    show_all = bool(flag(request.query, "all"))
    body = await request.read()
    lines = await asyncio.to_thread(validation_lines, body, name, show_all)
    text = b"".join([dumps(line) + b"\n" for line in lines])
    return web.Response(body=text, content_type="application/x-ndjson", charset="utf-8")


def routes() -> list[web.RouteDef]:
    return [web.post("/api/validate", validate)]
