"""The builders' columns as Arrow tables with the store's own types, ready to append.

Both column builders (``kingrec._columns_c`` and its twin ``kingrec.store.rows``) hand over
each column as bytes: fixed-width values in native byte order, strings as Arrow's offsets
and data; the facts of plays and tricks come packed into the codes of ``packed.PACKED`` and
each seat's hand as a 52-bit set. Nulls are sentinels (255 in a UTINYINT column, the largest
value in others, 0 for a hand) and enum values are codes; here, with vectorised Arrow
compute and no copy of the column bytes, sentinels become validity bitmaps and codes become
dictionary arrays (DuckDB reads those as its enums), so each table goes in with a plain
``INSERT … SELECT`` that does no work per row. The ``deal_code`` of plays and tricks, the same
for every play (trick) of a deal, comes as one value per deal and the row its run ends at,
and goes in run-end encoded: a classic batch is 60 MB smaller than with a copy per row (the
values DuckDB reads, and stores, are the same).
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from .schema import CONTRACTS, DEAL_ENDS, STATUSES, SUITS

__all__ = ["INSERTS", "ROW_GROUP_ROWS", "arrow_tables", "in_row_groups"]

U8, U16, U32, U64, I32, I64 = (
    pa.uint8(),
    pa.uint16(),
    pa.uint32(),
    pa.uint64(),
    pa.int32(),
    pa.int64(),
)

# The columns as the builders lay them out: table -> name -> Arrow type of the bytes.
_LAYOUT: dict[str, dict[str, pa.DataType]] = {
    "matches": {
        "match_key": U64, "ruleset": U32, "format_version": U32, "status": U8,
        "start_time": I64, "deals": U16, "total_0": I32, "total_1": I32, "total_2": I32,
        "total_3": I32,
    },
    "players": {"match_key": U64, "seat": U32},
    "deals": {
        "match_key": U64, "deal": U16, "contract": U8, "declarer": U8, "dealer": U8,
        "trump": U8, "playable": U8, "tricks": U8, "plays": U8, "plays_after_end": U16,
        "ended": U8, "end_trick": U8, "revoker": U8, "score_0": I32, "score_1": I32,
        "score_2": I32, "score_3": I32, "held_0": U64, "held_1": U64, "held_2": U64,
        "held_3": U64, "trump_length": U8,
    },
    "tricks": {"trick_code": U64, "points": I32},
    "plays": {"play_code": U64},
    "records_base": {"match_key": U64, "chunk": U32},
}  # fmt: skip
_STRINGS = {
    "matches": ("match_id", "status_reason", "event", "site", "client_name", "client_version"),
    "players": ("player_id", "name", "seat_name"),
}
# Run-end encoded columns: table -> (column, its values, their run ends), one run per deal
# (U64 values, I64 ends: a run ends at that many rows of the batch, which --batch lets pass
# 2**31 with big enough matches).
_RUNS = {"tricks": ("deal_code", "deal_end"), "plays": ("deal_code", "deal_end")}
# Bytes columns (offsets 64 bits wide: a batch of records may pass 2 GB).
_BYTES = {"records_base": ("bytes",)}

# How a raw column becomes a stored one: ("enum", names, first code, null code),
# ("null", sentinel), ("bool",) or ("nonempty",) for strings where "" means absent.
_CONVERT: dict[str, dict[str, tuple[Any, ...]]] = {
    "matches": {
        "status": ("enum", STATUSES, 0, None),
        **{name: ("nonempty",) for name in _STRINGS["matches"][1:]},
    },
    "deals": {
        "contract": ("enum", CONTRACTS, 1, 0),
        "declarer": ("null", 255),
        "dealer": ("null", 255),
        "trump": ("enum", SUITS, 0, 255),
        "playable": ("bool",),
        "ended": ("enum", DEAL_ENDS, 1, 0),
        "revoker": ("null", 255),
        **{f"held_{seat}": ("null", 0) for seat in range(4)},
        "trump_length": ("null", 255),
    },
}


def _raw(kind: pa.DataType, rows: int, data: bytes) -> pa.Array:
    return pa.Array.from_buffers(kind, rows, [None, pa.py_buffer(data)])


def _valid_where(array: pa.Array, keep: pa.Array) -> pa.Array:
    """``array`` with nulls where ``keep`` (a boolean array without nulls) is false."""
    bitmap = keep.buffers()[1]
    return pa.Array.from_buffers(array.type, len(array), [bitmap, array.buffers()[1]], offset=0)


def _convert(array: pa.Array, how: tuple[Any, ...]) -> pa.Array:
    if how[0] == "bool":
        return pc.not_equal(array, 0)
    if how[0] == "nonempty":
        return pc.if_else(pc.equal(array, ""), None, array)
    if how[0] == "null":
        return _valid_where(array, pc.not_equal(array, how[1]))
    _, names, first, _ = how
    # Every byte value indexes the dictionary: names at their codes, NULL elsewhere (the
    # null code and anything out of range), so the codes are the indices, uncopied.
    entries = [None] * 256
    entries[first : first + len(names)] = names
    return pa.DictionaryArray.from_arrays(array, pa.array(entries, pa.string()))


def arrow_tables(taken: dict[str, dict[str, Any]]) -> dict[str, pa.Table]:
    """The tables of one ``take()``, with the store's types (no copy of the column bytes)."""
    out = {}
    for table, layout in _LAYOUT.items():
        cols = taken[table]
        rows = cols["rows"]
        arrays = {name: _raw(kind, rows, cols[name]) for name, kind in layout.items()}
        for kind, names in ((pa.string(), _STRINGS), (pa.large_binary(), _BYTES)):
            for name in names.get(table, ()):
                offsets, data = cols[name]
                buffers = [None, pa.py_buffer(offsets), pa.py_buffer(data)]
                arrays[name] = pa.Array.from_buffers(kind, rows, buffers)
        if table in _RUNS:
            name, ends = _RUNS[table]
            runs = len(cols[ends]) // 8
            arrays[name] = pa.RunEndEncodedArray.from_arrays(
                _raw(I64, runs, cols[ends]), _raw(U64, runs, cols[name])
            )
        for name, how in _CONVERT.get(table, {}).items():
            arrays[name] = _convert(arrays[name], how)
        out[table] = pa.table(arrays)
    return out


# DuckDB's row group. A table handed over in pieces of this many rows is appended by all of
# DuckDB's threads at once, a piece each (one piece is one thread's work): the append of a
# batch whose preparation is over (the last, or one the next waits behind) takes the two
# cores, not one. The pieces are slices of the columns, not copies.
ROW_GROUP_ROWS = 122_880


def in_row_groups(table: pa.Table) -> pa.Table:
    """``table`` in pieces of at most ``ROW_GROUP_ROWS`` rows (zero-copy slices)."""
    if table.num_rows <= ROW_GROUP_ROWS:
        return table
    return pa.Table.from_batches(table.to_batches(max_chunksize=ROW_GROUP_ROWS), table.schema)


def _insert(table: str, columns: str, batch: str | None = None) -> str:
    names = ", ".join(columns.split())
    return f"INSERT INTO {table} ({names}) SELECT {names} FROM batch_{batch or table}"


# The INSERT of each table from its Arrow batch (registered as batch_<table>).
INSERTS = {
    "players": _insert("players", "match_key seat player_id name seat_name"),
    "deals": _insert(
        "deals_base",
        "match_key deal contract declarer dealer trump playable tricks plays plays_after_end "
        "ended end_trick revoker score_0 score_1 score_2 score_3 held_0 held_1 held_2 held_3 "
        "trump_length",
        "deals",
    ),
    "tricks": _insert("tricks_base", "deal_code trick_code points", "tricks"),
    "plays": _insert("plays_base", "deal_code play_code", "plays"),
    "records_base": _insert("records_base", "match_key chunk bytes"),
}
