"""Run a kingrec command with DuckDB settings added to the stores it writes (for benches).

    python bench/with_settings.py threads=1 -- ingest --no-progress --db s.duckdb f.krec

Each NAME=VALUE before ``--`` joins the settings ``kingrec.store.db`` gives a writable store
(read-only opens are left as they are); what follows ``--`` is the command line of
``kingrec``, run in this process. For measuring a DuckDB knob on a whole ``kingrec ingest``
beside the store as it is (``bench_floor.py --setting`` runs its ingest this way).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import Any

from kingrec.store import db

HERE = __file__


@contextlib.contextmanager
def duckdb_settings(settings: dict[str, str]) -> Iterator[None]:
    """Writable stores opened meanwhile get ``settings`` besides the store's own."""
    original = db._config

    def config(external_access: bool, read_only: bool) -> dict[str, Any]:
        own = original(external_access, read_only)
        return own if read_only else {**own, **settings}

    db._config = config
    try:
        yield
    finally:
        db._config = original


def setting(text: str) -> tuple[str, str]:
    """``NAME=VALUE`` as (name, value); ValueError if it is not that."""
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise ValueError(f"{text!r}: a DuckDB setting as NAME=VALUE")
    return name.strip(), value.strip()


def main() -> None:
    args = sys.argv[1:]
    if "--" not in args:
        sys.exit(f"usage: {sys.argv[0]} NAME=VALUE... -- KINGREC-ARGS...")
    split = args.index("--")
    try:
        settings = dict(setting(text) for text in args[:split])
    except ValueError as exc:
        sys.exit(str(exc))
    from kingrec_cli.main import run  # the console script itself

    sys.argv = ["kingrec", *args[split + 1 :]]
    with duckdb_settings(settings):
        run()


if __name__ == "__main__":
    main()
