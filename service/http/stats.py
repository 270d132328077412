"""The ``kingrec stats`` questions over HTTP: their list, and each one's answer as rows, the
values ``kingrec stats --format json`` prints (``kingrec.store.values.json_value``)."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from kingrec.store import Store
from kingrec.store.query import QueryStop
from kingrec.store.stats import STATS, Stat, run_stat
from kingrec.store.values import json_value, rows_of

from .context import Context
from .errors import PathNotFoundError

__all__ = ["routes", "stat_answer"]


def _question(item: Stat) -> dict[str, Any]:
    return {
        "name": item.name,
        "title": item.title,
        "description": item.description,
        "sql": item.sql,
        "bar": item.bar,
    }


async def list_stats(request: web.Request) -> web.Response:
    return Context.json({"questions": [_question(item) for item in STATS.values()]})


def stat_answer(
    store: Store, name: str, timeout_s: float, stop: QueryStop | None = None
) -> dict[str, Any]:
    """The question ``name`` and its answer, run on ``store``."""
    with run_stat(store, name, timeout_s=timeout_s, stop=stop) as result:
        rows = [
            [json_value(v) for v in row] for batch in result.batches() for row in rows_of(batch)
        ]
    return _question(STATS[name]) | {
        "columns": [[column, kind] for column, kind in result.columns],
        "rows": rows,
    }


async def get_stat(request: web.Request) -> web.Response:
    ctx = Context.of(request)
    name = request.match_info["name"]
    if name not in STATS:
        raise PathNotFoundError(f"no stats question {name[:100]!r}; there are: {', '.join(STATS)}")
    gateway = ctx.store("the statistics")
    timeout = gateway.limits.timeout_s
    # A question is a query: it waits for the queries' threads, never for the readers'.
    return ctx.json(
        await gateway.query(lambda store, stop: stat_answer(store, name, timeout, stop))
    )


def routes() -> list[web.RouteDef]:
    return [web.get("/api/stats", list_stats), web.get("/api/stats/{name}", get_stat)]
