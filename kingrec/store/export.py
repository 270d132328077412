"""Export a store as hive-partitioned Parquet: the same tables for Spark, Trino, pandas, ….

``export_parquet(store_or_path, out_dir)`` writes every table of the store under ``out_dir``::

    out_dir/
      kingrec_export.json                  schema version, partitioning, rows per table
      matches/preset=classic/month=2026-11/part-0.parquet
      players/preset=…/month=…/…           the same two keys on every per-match table:
      deals/…  tricks/…  plays/…  findings/…  records/…
      deal_par/…  play_costs/…             the par analysis (kingrec analyse --db), when run
      damage/part-0.parquet                not per match: one file each
      cards/part-0.parquet

The partition keys are the match's ``preset`` (its ruleset's preset name) and ``month``, the
``YYYY-MM`` of the match's start time (of its ingest time when the record names no start).
A reader that knows hive partitioning (Spark, pyarrow, DuckDB, Polars) gives them back as
columns and skips whole directories on ``WHERE preset = 'classic'``. ``plays`` and
``tricks`` are exported as the views analysts query (their packed columns unpacked), enums
as strings, and the 64-bit unsigned keys as signed ones, which every engine joins natively.

The export is atomic: it is written to a hidden directory beside ``out_dir`` and renamed into
place when complete, so an interrupted export leaves no half directory. It reads the store
through its own locked-down connection (no file access from SQL): rows stream out as Arrow
batches and pyarrow writes the files, so memory stays flat whatever the store's size.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as pads
import pyarrow.parquet as pq

from ..errors import StoreError
from .schema import SCHEMA_VERSION, TABLES, VIEWS, view_columns
from .store import Store

__all__ = ["PARTITIONING", "ExportSummary", "export_parquet"]

PARTITIONING = ("preset", "month")
MANIFEST = "kingrec_export.json"
BATCH_ROWS = 256 * 1024
_TMP_PREFIX = ".kingrec-export-"
_NULL = "__HIVE_DEFAULT_PARTITION__"  # a NULL partition key, as Hive, Spark and pyarrow write it
# The tables with rows per match, partitioned by that match's preset and month.
PER_MATCH = (
    "matches",
    "players",
    "deals",
    "tricks",
    "plays",
    "findings",
    "records",
    "deal_par",
    "play_costs",
)
WHOLE = ("damage", "cards", "kingrec_meta")

# The partition keys of each match, by match_key.
_KEYS = (
    "SELECT match_key, nullif(preset, '') AS preset, "
    "strftime(coalesce(start_time, ingested_at), '%Y-%m') AS month FROM matches"
)


@dataclass
class ExportSummary:
    """What an export wrote."""

    path: str
    rows: dict[str, int] = field(default_factory=dict)  # table -> rows written
    files: int = 0
    bytes: int = 0


def _columns(store: Store, table: str) -> list[str]:
    rows = store.con.execute(f"DESCRIBE {table}").fetchall()
    out = []
    for name, kind, *_ in rows:
        if kind == "UBIGINT":  # match_key, offsets: far below 2**63; Spark has no UINT64
            out.append(f'CAST(t."{name}" AS BIGINT) AS "{name}"')
        elif table == "matches" and name == "preset":
            continue  # a partition key, given back by the path
        else:
            out.append(f't."{name}"')
    return out


def _select(store: Store, table: str) -> str:
    columns = ", ".join(_columns(store, table))
    if table in WHOLE:
        return f"SELECT {columns} FROM {table} t"
    return (
        f"SELECT {columns}, k.preset, k.month FROM {table} t "
        f"JOIN ({_KEYS}) k ON k.match_key = t.match_key"
    )


def _write(store: Store, table: str, where: Path) -> int:
    reader = store.con.sql(_select(store, table)).to_arrow_reader(BATCH_ROWS)
    counted = 0

    def counting() -> Iterator[pa.RecordBatch]:
        nonlocal counted
        for batch in reader:
            counted += batch.num_rows
            yield batch

    partitioning = None
    if table not in WHOLE:
        schema = pa.schema([("preset", pa.string()), ("month", pa.string())])
        partitioning = pads.partitioning(schema, flavor="hive")
    pads.write_dataset(
        pa.RecordBatchReader.from_batches(reader.schema, counting()),
        where,
        format="parquet",
        partitioning=partitioning,
        basename_template="part-{i}.parquet",
        existing_data_behavior="error",
        max_rows_per_group=1 << 20,
        min_rows_per_group=1 << 16,
        file_options=pads.ParquetFileFormat().make_write_options(compression="zstd"),
    )
    if counted == 0:  # an empty table still has its columns for a reader to find
        empty = where if table in WHOLE else where.joinpath(*(f"{k}={_NULL}" for k in PARTITIONING))
        empty.mkdir(parents=True, exist_ok=True)
        columns = [f for f in reader.schema if table in WHOLE or f.name not in PARTITIONING]
        pq.write_table(pa.schema(columns).empty_table(), empty / "part-0.parquet")
    return counted


def _stale(parent: Path) -> None:
    """Remove what exports killed outright (``kill -9``) left behind in ``parent``."""
    for path in parent.glob(f"{_TMP_PREFIX}*"):
        try:
            pid = int(path.name.removeprefix(_TMP_PREFIX).split("-")[0])
        except ValueError:
            continue
        if pid == os.getpid():
            continue
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            shutil.rmtree(path, ignore_errors=True)
        except PermissionError:
            pass


def export_parquet(
    store_or_path: Store | str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    *,
    overwrite: bool = False,
    progress: Callable[[str, int], object] | None = None,
) -> ExportSummary:
    """Write every table of a store (an open ``Store`` or a store's path) as hive-partitioned
    Parquet under ``out_dir`` (layout in this module's doc), atomically.

    ``out_dir`` must not exist unless ``overwrite`` (then it is replaced, also atomically as
    far as readers of the new one go). ``progress(table, rows)`` is called after each table.
    Raises ``StoreError`` when the store cannot be read or ``out_dir`` cannot be written.
    """
    target = Path(out_dir)
    if target.exists() and not overwrite:
        raise StoreError(f"{target}: exists already (choose another directory, or overwrite)")
    if target.exists() and not target.is_dir():
        raise StoreError(f"{target}: not a directory")
    own = not isinstance(store_or_path, Store)
    if isinstance(store_or_path, Store):
        store = store_or_path
    else:
        store = Store.open(os.fspath(store_or_path), read_only=True)
    parent = target.absolute().parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
        _stale(parent)
        tmp = Path(tempfile.mkdtemp(prefix=f"{_TMP_PREFIX}{os.getpid()}-", dir=parent))
    except OSError as exc:
        if own:
            store.close()
        raise StoreError(f"{target}: cannot write there: {exc.strerror or exc}") from None
    summary = ExportSummary(str(target))
    try:
        for table in (*PER_MATCH, *WHOLE):
            summary.rows[table] = _write(store, table, tmp / table)
            if progress is not None:
                progress(table, summary.rows[table])
        files = [p for p in tmp.rglob("*.parquet") if p.is_file()]
        summary.files = len(files)
        summary.bytes = sum(p.stat().st_size for p in files)
        manifest = {
            "created_by": "kingrec",
            "schema_version": SCHEMA_VERSION,
            "exported_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "partitioning": {"flavor": "hive", "keys": list(PARTITIONING), "tables": PER_MATCH},
            "rows": summary.rows,
        }
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
        _move_into_place(tmp, target)
    except OSError as exc:
        raise StoreError(f"{target}: cannot write the export: {exc.strerror or exc}") from None
    finally:
        if own:
            store.close()
        shutil.rmtree(tmp, ignore_errors=True)  # gone already once renamed
    return summary


def _move_into_place(tmp: Path, target: Path) -> None:
    if not target.exists():
        tmp.rename(target)
        return
    old = Path(tempfile.mkdtemp(prefix=f"{_TMP_PREFIX}{os.getpid()}-old-", dir=tmp.parent))
    old.rmdir()
    target.rename(old)
    try:
        tmp.rename(target)
    except BaseException:
        with contextlib.suppress(OSError):
            old.rename(target)
        raise
    shutil.rmtree(old, ignore_errors=True)


# Columns each exported table has (for the docs and tests): the store's, partition keys added.
def exported_columns(table: str) -> list[str]:
    """The columns of an exported table as a reader with hive partitioning sees them."""
    if table in VIEWS:
        names = [n for n, _ in view_columns(table)]
    else:
        names = [n for n, _, _ in TABLES[table]]
    if table in PER_MATCH:
        names = [n for n in names if n != "preset"] + list(PARTITIONING)
    return names
