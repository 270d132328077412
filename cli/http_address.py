"""``HOST:PORT`` for ``--http``: where the web viewer listens, and its URL."""

from __future__ import annotations

import click

__all__ = ["LOOPBACK", "http_address", "http_url"]

LOOPBACK = "127.0.0.1"


def http_address(text: str) -> tuple[str, int]:
    """``HOST:PORT``, ``:PORT`` or ``PORT`` (on the loopback), ``[v6]:PORT``."""
    host, sep, port = text.rpartition(":")
    if not sep:
        host, port = "", text
    host = host.strip("[]") if host.startswith("[") else host
    if not port.isascii() or not port.isdigit() or int(port) > 65535:
        raise click.BadParameter(
            f"{text!r} is not HOST:PORT (a port is 0..65535; 0: any free port)",
            param_hint="'--http'",
        )
    return host or LOOPBACK, int(port)


def http_url(host: str, port: int) -> str:
    """The viewer's URL (an address of every interface is shown as the loopback's)."""
    if host in ("0.0.0.0", ""):
        host = LOOPBACK
    elif host == "::":
        host = "::1"
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/"
