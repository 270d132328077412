"""``kingrec export``: a store's tables as hive-partitioned Parquet, for Spark and friends."""

from __future__ import annotations

import time

import click

from kingrec.store.db import default_path
from kingrec.store.export import export_parquet

from .errors import (
    EXIT_CLOSED_PIPE,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_UNREADABLE,
    user_errors,
)
from .helptext import Command, epilog
from .store_option import store_option
from .terminal import Terminal, counted

__all__ = ["export"]

EXAMPLES = [
    ("kingrec export --parquet out/", "every table of kingrec.duckdb under out/"),
    ("kingrec export --parquet out/ --db games.duckdb --overwrite", "replace an older export"),
]

LAYOUT = """Layout (hive partitions: any engine reads preset and month back as columns):
  DIR/kingrec_export.json                   schema version, rows per table
  DIR/plays/preset=classic/month=2026-11/part-0.parquet
  … matches players deals tricks plays findings records: by preset and month
  DIR/damage/ DIR/cards/ DIR/kingrec_meta/  one file each
Spark: spark.read.parquet("DIR/plays").createOrReplaceTempView("plays")"""


@click.command(
    cls=Command,
    epilog=epilog(
        EXAMPLES,
        (
            (EXIT_OK, "exported"),
            (EXIT_UNREADABLE, "the store unreadable, DIR not written, or bad usage"),
            EXIT_INTERNAL,
            EXIT_INTERRUPTED,
            EXIT_CLOSED_PIPE,
        ),
        LAYOUT,
    ),
)
@click.option(
    "--parquet",
    "out_dir",
    required=True,
    type=click.Path(file_okay=False),
    help="Directory to create with the Parquet files (written beside it, then moved in).",
)
@store_option()
@click.option("--overwrite", is_flag=True, help="Replace DIR when it exists.")
@click.option("-q", "--quiet", is_flag=True, help="No summary line; errors only.")
def export(out_dir: str, db: str | None, overwrite: bool, quiet: bool) -> None:
    """Write every table of a store as hive-partitioned Parquet under DIR.

    The per-match tables are partitioned by the match's preset and the month it started;
    plays come with the columns of the plays view (trick, position, suit, rank). DIR
    appears only once complete: an interrupted export leaves nothing half written.
    """
    began = time.perf_counter()
    with user_errors():
        summary = export_parquet(db or default_path(), out_dir, overwrite=overwrite)
    if not quiet:
        Terminal().tell(
            f"exported {counted(summary.rows['matches'], 'match', 'matches')} "
            f"({counted(summary.rows['plays'], 'play')}) to "
            f"{out_dir}: {counted(summary.files, 'file')}, {summary.bytes / 1e6:.1f} MB in "
            f"{time.perf_counter() - began:.2f} s"
        )
