"""How a store lays its rows down in the DuckDB file: the compression each appended column
is given, checkpoints that write what the log holds without rewriting what is stored, and
tables handed to DuckDB in row-group pieces (appended by all its threads)."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pyarrow as pa
import pytest

from kingrec.rules import preset
from kingrec.simulate import simulate_match
from kingrec.store import Store, columns
from kingrec.store.columns import ROW_GROUP_ROWS, in_row_groups

# column -> the compression DuckDB reports for its data segments (pragma_storage_info)
_CHOSEN = {
    ("plays_base", "deal_code"): "RLE",
    ("plays_base", "play_code"): "Uncompressed",
    ("tricks_base", "deal_code"): "RLE",
    ("tricks_base", "trick_code"): "Uncompressed",
    ("tricks_base", "points"): "BitPacking",
    ("deals_base", "match_key"): "RLE",
    ("deals_base", "score_0"): "BitPacking",
    ("deals_base", "held_0"): "Uncompressed",
    ("deals_base", "contract"): "Uncompressed",
    ("deals_base", "tricks"): "Uncompressed",
    ("records_base", "match_key"): "RLE",
    ("records_base", "chunk"): "BitPacking",
    ("records_base", "bytes"): "Uncompressed",
}


def _ingest(path: Path, seeds: range, source: str) -> None:
    with Store.open(str(path)) as store:
        matches = [simulate_match(preset("classic"), seed) for seed in seeds]
        assert {v.status for v in store.ingest_matches(matches, source=source)} == {"stored"}


def _row_groups(path: Path, table: str) -> list[tuple[int, list[int]]]:
    """Each stored row group of ``table`` and the blocks its columns lie in."""
    con = duckdb.connect(str(path), read_only=True)
    try:
        return con.execute(
            "SELECT row_group_id, list(DISTINCT block_id ORDER BY block_id) "
            f"FROM pragma_storage_info('{table}') WHERE persistent AND block_id >= 0 "
            "GROUP BY ALL ORDER BY 1"
        ).fetchall()
    finally:
        con.close()


def test_dense_codes_are_stored_as_they_are_keys_as_runs_and_small_numbers_bitpacked(
    tmp_path: Path,
) -> None:
    db = tmp_path / "k.duckdb"
    _ingest(db, range(3), "a")
    con = duckdb.connect(str(db), read_only=True)
    try:
        found = {
            (table, column): {
                row[0]
                for row in con.execute(
                    "SELECT DISTINCT compression FROM pragma_storage_info(?) "
                    "WHERE column_name = ? AND segment_type <> 'VALIDITY'",
                    [table, column],
                ).fetchall()
            }
            for table, column in _CHOSEN
        }
    finally:
        con.close()
    assert found == {key: {method} for key, method in _CHOSEN.items()}


def test_a_checkpoint_writes_the_new_rows_and_leaves_the_row_groups_stored_before(
    tmp_path: Path,
) -> None:
    # Each ingest ends with a checkpoint (the store is closed). DuckDB's vacuum would merge
    # the last ingest's row group into the new rows and write both again, every value
    # compressed anew (on 2 M deals, 1.7 s at the close of an ingest where nothing else
    # runs); the store keeps what it wrote and adds a row group.
    db = tmp_path / "k.duckdb"
    _ingest(db, range(10), "first")
    first = _row_groups(db, "deals_base")
    assert len(first) == 1
    _ingest(db, range(10, 20), "second")
    second = _row_groups(db, "deals_base")
    assert second[0] == first[0]
    assert len(second) == 2
    with Store.open(str(db), read_only=True) as store:
        assert store.count("deals") == 20 * 20
        assert store.con.execute("SELECT count(DISTINCT match_key) FROM deals").fetchall() == [
            (20,)
        ]


def test_a_big_table_goes_to_duckdb_in_row_groups_sliced_not_copied() -> None:
    column = pa.array(range(300_000), pa.uint64())
    table = pa.table({"play_code": column})
    pieces = in_row_groups(table)
    assert [len(c) for c in pieces.column(0).chunks] == [ROW_GROUP_ROWS, ROW_GROUP_ROWS, 54_240]
    assert pieces.equals(table)
    start = column.buffers()[1].address
    for n, chunk in enumerate(pieces.column(0).chunks):  # views of the one buffer
        assert chunk.buffers()[1].address == start
        assert chunk.offset == n * ROW_GROUP_ROWS
    small = pa.table({"play_code": pa.array(range(10), pa.uint64())})
    assert in_row_groups(small) is small


def test_an_ingest_appending_tables_in_pieces_stores_the_same_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    matches = [simulate_match(preset("classic"), seed) for seed in range(6)]
    views = {
        "plays": "match_key, deal, play",
        "tricks": "match_key, deal, trick",
        "deals": "match_key, deal",
        "records": "match_key",
        "players": "match_key, seat",
    }

    def stored(db: Path) -> dict[str, list[tuple[object, ...]]]:
        with Store.open(str(db)) as store:
            store.ingest_matches(matches, source="m")
            return {
                view: store.con.execute(f"SELECT * FROM {view} ORDER BY {order}").fetchall()
                for view, order in views.items()
            }

    whole = stored(tmp_path / "whole.duckdb")
    monkeypatch.setattr(columns, "ROW_GROUP_ROWS", 7)  # every table in many pieces
    assert stored(tmp_path / "pieces.duckdb") == whole
    assert len(whole["plays"]) > 7 * 20
