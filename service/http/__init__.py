"""The web face of ``kingrec serve --http`` (``kingrec_service.http``): the HTTP API of
docs/HTTP.md and the web viewer's static files, served in the gRPC server's event loop over
the same live hub and store. Like the servicers it translates: requests into the calls the
servicers make, results into JSON, NDJSON or SSE; it decides nothing about the game."""

from .app import CSP, MAX_BODY_BYTES, WEB_ROOT, HttpSite, create_app

__all__ = ["CSP", "MAX_BODY_BYTES", "WEB_ROOT", "HttpSite", "create_app"]
