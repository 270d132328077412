"""``kingrec serve``: run the gRPC service until SIGTERM or Ctrl-C."""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from pathlib import Path

import click

from kingrec.store.db import default_path
from kingrec_service import ServiceConfig
from kingrec_service import serve as run_server
from kingrec_service.analysing import SEARCH_THREADS, WAITING_CALLS, AnalyseLimits
from kingrec_service.live import LiveConfig
from kingrec_service.server import token_problem
from kingrec_service.storage import QueryLimits

from . import teardown
from .errors import EXIT_CLOSED_PIPE, EXIT_INTERNAL, EXIT_OK, EXIT_UNREADABLE, user_errors
from .helptext import Command, epilog
from .http_address import http_address, http_url
from .store_option import store_option

TOKEN_VARIABLE = "KINGREC_TOKEN"


def _token(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """--token as given (None: not given, nor $KINGREC_TOKEN); a usage error when empty or
    unsendable, never a silent server without authentication."""
    if value is None and os.environ.get(TOKEN_VARIABLE) == "":
        # click reads an empty variable as unset; here that would turn authentication off
        raise click.BadParameter(
            f"${TOKEN_VARIABLE} is set but empty, which would let anyone Upload and Publish: "
            f"give it a token, or unset it to run without one",
            ctx=ctx,
            param=param,
        )
    if value is not None:
        problem = token_problem(value)
        if problem is not None:
            raise click.BadParameter(problem, ctx=ctx, param=param)
    return value


@click.command(
    cls=Command,
    epilog=epilog(
        [
            ("kingrec serve --db games.duckdb", "serve the store games.duckdb on localhost:50051"),
            (
                "kingrec serve --host 0.0.0.0 --token s3cret",
                "every interface; uploads need the token",
            ),
            (
                "kingrec serve --db games.duckdb --http :8080",
                "also the web viewer and HTTP API on http://127.0.0.1:8080/",
            ),
        ],
        (
            (EXIT_OK, "stopped (SIGTERM or Ctrl-C)"),
            (EXIT_UNREADABLE, "cannot listen, the store cannot be opened, or bad usage"),
            EXIT_INTERNAL,
            EXIT_CLOSED_PIPE,
        ),
    ),
)
@click.option("--host", default="127.0.0.1", show_default=True, help="The address to listen on.")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=50051,
    show_default=True,
    help="The port to listen on (0: any free port; the one taken is printed).",
)
@click.option(
    "--token",
    envvar=TOKEN_VARIABLE,
    metavar="TOKEN",
    callback=_token,
    help="Require this token (metadata 'authorization: Bearer TOKEN') on Upload and Publish "
    "(default: $KINGREC_TOKEN; visible ASCII, never empty). Without one, anyone who can "
    "reach the port may Upload and Publish, and the startup line says so.",
)
@click.option(
    "--tls-cert",
    type=click.Path(exists=True, dir_okay=False),
    metavar="PEM",
    help="Serve TLS with this certificate chain (needs --tls-key).",
)
@click.option(
    "--tls-key",
    type=click.Path(exists=True, dir_okay=False),
    metavar="PEM",
    help="The private key of --tls-cert.",
)
@store_option(
    "The store: a DuckDB file, created when new, that the server alone may open while it runs",
    metavar="PATH",
)
@click.option(
    "--query-timeout",
    type=click.FloatRange(min=0.001),
    default=30.0,
    show_default=True,
    metavar="SECONDS",
    help="How long one Query may run.",
)
@click.option(
    "--analyse-queue",
    type=click.IntRange(0, 10_000),
    default=WAITING_CALLS,
    show_default=True,
    metavar="N",
    help=f"How many Analyse calls may wait for one of the {SEARCH_THREADS} par search threads; "
    "one more is refused at once (RESOURCE_EXHAUSTED, kingrec-code ANALYSES_BUSY; HTTP 429) "
    "rather than queued (0: none wait).",
)
@click.option(
    "--watch-flush",
    type=click.FloatRange(min=0, max=10_000),
    default=round(LiveConfig.flush * 1000),
    show_default=True,
    metavar="MS",
    help="Wake the viewers of a live match at most this often: events published in between "
    "go out together, one message per viewer (0: each event at once, at more CPU per event).",
)
@click.option(
    "--http",
    "http",
    metavar="HOST:PORT",
    help="Also serve the web viewer and the HTTP API (docs/HTTP.md) here, in the same process "
    "(':PORT' or 'PORT': on 127.0.0.1; port 0: any free port, printed). Default: off.",
)
@click.option(
    "--http-cors",
    metavar="ORIGIN",
    help="Let pages of this one origin (https://example.org) read the HTTP API. Default: none.",
)
@click.option(
    "--grace",
    type=click.FloatRange(min=0),
    default=10.0,
    show_default=True,
    metavar="SECONDS",
    help="On SIGTERM, how long calls in flight get to finish.",
)
def serve(
    host: str,
    port: int,
    token: str | None,
    tls_cert: str | None,
    tls_key: str | None,
    db: str | None,
    query_timeout: float,
    analyse_queue: int,
    watch_flush: float,
    http: str | None,
    http_cors: str | None,
    grace: float,
) -> None:
    """Serve kingrec over gRPC: validate, store and query records, replay them, publish
    and watch live matches.

    The service is kingrec.v1.KingrecService (proto/kingrec/v1/service.proto), with the
    standard health service and server reflection, on the store --db. It runs until SIGTERM
    or Ctrl-C, then stops gracefully: uploads get the answers to what they sent, live
    matches are stored as abandoned, streams end saying where to resume, calls in flight get
    --grace seconds to finish.

    With --http, the same process also serves the web viewer and the HTTP API
    (docs/HTTP.md) over the same store and live matches: JSON, NDJSON and Server-Sent
    Events for browsers and scripts.
    """
    logging.basicConfig(stream=sys.stderr, format="kingrec serve: %(message)s", level=logging.INFO)
    http_host, http_port = (None, 0) if http is None else http_address(http)
    if http_cors is not None and http is None:
        raise click.UsageError("--http-cors needs --http")
    with user_errors():
        config = ServiceConfig(
            host=host,
            port=port,
            token=token,
            tls_cert=Path(tls_cert).read_bytes() if tls_cert else None,
            tls_key=Path(tls_key).read_bytes() if tls_key else None,
            db=db or default_path(),
            query=QueryLimits(timeout_s=query_timeout),
            analyse=AnalyseLimits(waiting=analyse_queue),
            grace=grace,
            live=LiveConfig(flush=watch_flush / 1000),
            http_host=http_host,
            http_port=http_port,
            http_cors=http_cors or None,
        )

        def ready(bound: int, http_bound: int | None) -> None:
            notes = ["TLS" if tls_cert else "plaintext", f"store {config.db}"]
            if token is not None:
                notes.append("Upload and Publish need the token")
            else:
                notes.append("no token: anyone can Upload and Publish")
            click.echo(f"kingrec: serving on {host}:{bound} ({', '.join(notes)})")
            if http_bound is not None and http_host is not None:
                click.echo(f"kingrec: web viewer on {http_url(http_host, http_bound)}")
            sys.stdout.flush()

        asyncio.run(run_server(config, ready))
    teardown.needless(teardown.ON_SUCCESS)  # every query ended, the store closed whole
    click.echo("kingrec: stopped")
