"""Opening a store: the DuckDB file, its schema version, and what a connection may do.

A new file gets the schema of ``kingrec.store.schema`` in one transaction, written in the
storage format the stock DuckDB CLI reads. An existing file must be a kingrec store of a
schema this kingrec knows: an older one is upgraded (``MIGRATIONS``), a newer one refused.
Every connection is locked down — no file or network access from SQL, no extensions, no
settings changed afterwards — except the one an export opens to write Parquet.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import duckdb

from ..cards import card_name, card_symbol
from ..errors import StoreError, StoreLockedError, StoreVersionError
from .guard import refuse_what_is_not_a_store
from .schema import (
    SCHEMA_VERSION,
    STORAGE_VERSION,
    SUITS,
    comments,
    create_statements,
    view_statements,
)
from .upgrades import upgrade_statements

__all__ = ["DEFAULT_DB", "MIGRATIONS", "connect", "default_path"]

DEFAULT_DB = "kingrec.duckdb"

# schema version -> the statements that bring the tables of a store of that version to the
# next one (the views and comments are made anew once the last has run).
MIGRATIONS: dict[int, list[str]] = {v: upgrade_statements(v) for v in range(1, SCHEMA_VERSION)}


def default_path() -> str:
    """Where the store lives unless told: ``$KINGREC_DB``, else ``kingrec.duckdb``."""
    return os.environ.get("KINGREC_DB") or DEFAULT_DB


# A writable store caps DuckDB's memory: uncapped, DuckDB keeps every block it wrote cached
# (up to 80% of RAM), so an ingest's memory grew with the store (measured: 490 MiB after
# 10,000 matches, 2 GB after 100,000); capped, it stays flat. At 128 MB, the log's rows (the
# matches, players and the last rows of each batch) were spilled to disk until the checkpoint;
# 256 MB took a 2 M-deal ingest from ~104k deals/s to ~113k for ~160 MiB more peak memory. A
# big query on a writable store (the service's) spills to disk; read-only opens are uncapped.
WRITE_MEMORY_LIMIT = "256MB"
# DuckDB checkpoints (writes what the log holds into the file) once the log passes this. At
# its default of 16 MB a schema-3 ingest checkpointed after nearly every batch, and each
# checkpoint rewrote the tables' last, partly filled row groups (matches is one row group up
# to 122,880 matches), so the cost grew with the store: 2 M deals took 31 s, with 1 GB 25 s,
# and the file was 1.48 GB instead of 1.93. Since schema 4 a classic match leaves ~560 bytes
# in the log (a 100,000-match ingest 56 MB), and the gain is smaller (97-101k deals/s at
# 16 MB, 100-106k at 1 GB); 256 MB keeps such an ingest to one checkpoint, at close, while
# the log a crash leaves to replay, and the work of the checkpoint at close, stay bounded.
CHECKPOINT_THRESHOLD = "256MB"
# No row groups merged at a checkpoint. Each batch leaves its last rows of a table in a row
# group of their own (a classic batch's 130,000 deals are a whole row group and 7,120 rows),
# and DuckDB's vacuum, finding that the row groups would fit in fewer, rewrote the whole of
# deals_base at the checkpoint at close, every value compressed again, while nothing else
# could run: measured on 2 M deals, 1.7 s of CPU (0.9 s with the chosen compressions of
# schema.py) where 0.02 s write what the log holds. The cost is a few more row groups (two
# per batch where one would do), which the questions do not feel; a store never deletes
# rows but when a deal's par is analysed again (a few rows of deal_par and play_costs).
VACUUM_TASKS = 0


def _config(
    external_access: bool, read_only: bool
) -> dict[str, str | bool | int | float | list[str]]:
    config: dict[str, str | bool | int | float | list[str]] = {
        "autoinstall_known_extensions": False,
        "autoload_known_extensions": False,
        # Bulk appends may then fill row groups on every thread; order is the match_key's.
        "preserve_insertion_order": False,
        # A name in a query is a table of the store, never a Python object of the caller's.
        "python_enable_replacements": False,
    }
    if not external_access:
        config["enable_external_access"] = False
    if not read_only:
        config["memory_limit"] = WRITE_MEMORY_LIMIT
        config["checkpoint_threshold"] = CHECKPOINT_THRESHOLD
        # No block memory kept (block_allocator_memory, DuckDB's default 0). Kept (256 MB),
        # it saved page faults (2 M deals: 313-322k where 749-763k, 3.2-4.2 s of system time
        # where 4.5-5.1) but sat beside the cap, and 8 M deals peaked at 994-995 MiB, over
        # the 10^9-byte bound, where 891-919 without it (128 MB: 935); 2 M deals 795-875 MiB
        # where 847-906. One run each, in turn, load 2-9 (bench_ingest_ab.py).
        config["max_vacuum_tasks"] = VACUUM_TASKS
    return config


def connect(
    path: str, *, read_only: bool = False, external_access: bool = False, create: bool = True
) -> duckdb.DuckDBPyConnection:
    """A connection to the store at ``path``, created when new unless ``read_only`` or not
    ``create`` (then ``StoreError``: no store there, and nothing is created)."""
    exists = refuse_what_is_not_a_store(path)
    if not exists and (read_only or not create):
        raise StoreError(f"{path}: no store there (run kingrec ingest first)")
    config = _config(external_access, read_only)
    if not exists:
        config["storage_compatibility_version"] = STORAGE_VERSION
    try:
        con = duckdb.connect(path, read_only=read_only, config=config)
    except duckdb.IOException as exc:
        holder = _LOCK_HOLDER.search(str(exc))
        if holder is not None:
            raise StoreLockedError(
                f"{path}: the store is in use by another process (PID {holder.group(2)}, "
                f"{Path(holder.group(1)).name}); DuckDB lets one process write a store at a "
                "time — wait for it to finish"
            ) from None
        if "not a valid DuckDB database file" in str(exc):
            raise StoreError(f"{path}: not a DuckDB file, so not a kingrec store") from None
        raise StoreError(f"{path}: cannot open the store: {_first_line(exc)}") from None
    except duckdb.Error as exc:
        raise StoreError(f"{path}: not a DuckDB store: {_first_line(exc)}") from None
    # Sessions stay quiet (no progress bar on a server's stderr), then nothing can change.
    con.execute("SET enable_progress_bar = false")
    if not external_access:
        con.execute("SET lock_configuration = true")
    try:
        version = _version(con, path)
        if version is None and not read_only:
            _create(con)
        elif version is None:
            raise StoreError(f"{path}: an empty DuckDB file, not a kingrec store")
        elif version < SCHEMA_VERSION and not read_only:
            _upgrade(con, version)
        elif version < SCHEMA_VERSION:
            raise StoreVersionError(
                f"{path}: a store of schema version {version}; open it once without read-only "
                f"access to upgrade it to version {SCHEMA_VERSION}"
            )
    except BaseException:
        con.close()
        raise
    return con


# DuckDB's words for a file another process holds: "Conflicting lock is held in PROGRAM (PID N)".
_LOCK_HOLDER = re.compile(r"Conflicting lock is held in (.*?) \(PID (\d+)\)")


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def _version(con: duckdb.DuckDBPyConnection, path: str) -> int | None:
    tables = {row[0] for row in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    if "kingrec_meta" not in tables:
        if tables:
            raise StoreError(f"{path}: a DuckDB file that is not a kingrec store")
        return None
    rows = con.execute("SELECT value FROM kingrec_meta WHERE key = 'schema_version'").fetchall()
    if not rows or not str(rows[0][0]).isdigit():
        raise StoreError(f"{path}: a kingrec store without a schema version")
    version = int(rows[0][0])
    if version > SCHEMA_VERSION:
        raise StoreVersionError(
            f"{path}: written by a newer kingrec (store schema {version}; this one knows "
            f"{SCHEMA_VERSION}) — upgrade kingrec"
        )
    return version


def _create(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("BEGIN")
    try:
        for statement in create_statements() + comments():
            con.execute(statement)
        cards = [(c, card_name(c), card_symbol(c), SUITS[c // 13], c % 13 + 2) for c in range(52)]
        con.executemany("INSERT INTO cards VALUES (?, ?, ?, ?, ?)", cards)
        con.execute(
            "INSERT INTO kingrec_meta VALUES ('schema_version', ?), ('created_by', 'kingrec')",
            [str(SCHEMA_VERSION)],
        )
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise


def _upgrade(con: duckdb.DuckDBPyConnection, version: int) -> None:
    con.execute("BEGIN")
    try:
        while version < SCHEMA_VERSION:
            for statement in MIGRATIONS[version]:
                con.execute(statement)
            version += 1
        for statement in view_statements() + comments():
            con.execute(statement)
        con.execute(
            "UPDATE kingrec_meta SET value = ? WHERE key = 'schema_version'", [str(version)]
        )
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
