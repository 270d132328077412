"""``kingrec view FILE``: a record file in the web viewer, for someone with no store."""

from __future__ import annotations

import asyncio
import logging
import sys
import tempfile
import urllib.parse
import webbrowser
from pathlib import Path

import click

from kingrec.store import Store
from kingrec_service import ServiceConfig
from kingrec_service import serve as run_server

from .errors import (
    EXIT_CLOSED_PIPE,
    EXIT_INTERNAL,
    EXIT_OK,
    EXIT_UNREADABLE,
    Failed,
    user_errors,
)
from .helptext import Command, epilog
from .http_address import http_address, http_url

__all__ = ["view"]

EXAMPLES = [
    ("kingrec view game.krec", "serve it on a free local port; open the printed URL"),
    ("kingrec view --open games.jsonl", "and open it in the browser"),
    ("kingrec view --http :8080 game.krec", "on http://127.0.0.1:8080/"),
]


@click.command(
    cls=Command,
    epilog=epilog(
        EXAMPLES,
        (
            (EXIT_OK, "stopped (Ctrl-C or SIGTERM)"),
            (EXIT_UNREADABLE, "FILE holds no readable record, cannot listen, or bad usage"),
            EXIT_INTERNAL,
            EXIT_CLOSED_PIPE,
        ),
    ),
)
@click.argument("file", type=click.Path(allow_dash=True))
@click.option(
    "--http",
    "http",
    default="127.0.0.1:0",
    show_default=True,
    metavar="HOST:PORT",
    help="Where the viewer listens (':PORT' or 'PORT': on 127.0.0.1; port 0: any free port).",
)
@click.option("--open", "open_browser", is_flag=True, help="Open the viewer in the browser.")
def view(file: str, http: str, open_browser: bool) -> None:
    """Open the records of FILE (.krec or JSON Lines; - for standard input) in the web viewer.

    The records are judged as `kingrec ingest` judges them (invalid ones are shown with their
    findings) into a store of their own in a temporary folder, which `kingrec serve --http`
    serves (the HTTP API of docs/HTTP.md included) until Ctrl-C; the folder is removed then.
    Nothing is written beside FILE. The URL is printed; --open also opens it.
    """
    logging.basicConfig(stream=sys.stderr, format="kingrec view: %(message)s", level=logging.INFO)
    host, port = http_address(http)
    with tempfile.TemporaryDirectory(prefix="kingrec-view-") as folder:
        db = str(Path(folder) / "view.duckdb")
        with user_errors(), Store.open(db) as store:
            summary = store.ingest_file(file)
            ids = [row["match_id"] for row in store.list_matches(limit=2)[0]]
        shown = summary.stored + summary.stored_invalid
        if not shown:
            raise Failed(f"{file}: no record to show (damaged or empty)")
        config = ServiceConfig(db=db, http_host=host, http_port=port)

        def ready(grpc_port: int, http_port: int | None) -> None:
            assert http_port is not None
            url = http_url(host, http_port)
            if len(ids) == 1:  # straight to the one match
                url += "#/match/" + urllib.parse.quote(ids[0], safe="")
            what = f"{shown} match(es)" + (
                f", {summary.damaged} damaged stretch(es) skipped" if summary.damaged else ""
            )
            click.echo(f"kingrec: viewing {file} ({what}) at {url}")
            click.echo("kingrec: Ctrl-C to stop")
            sys.stdout.flush()
            if open_browser:
                webbrowser.open(url)

        with user_errors():
            asyncio.run(run_server(config, ready))
    click.echo("kingrec: stopped")
