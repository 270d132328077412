"""The builders' columns as Arrow tables with the store's own types, ready to append.

Both column builders (``kingrec._columns_c`` and its twin ``kingrec.store.rows``) hand over
each column as bytes: fixed-width values in native byte order, strings as Arrow's offsets
and data, each seat's 13 hand bytes and 4 suit lengths in a row. Nulls are sentinels (255 in
a UTINYINT column, the largest value in others) and enum values are codes; here, with
vectorised Arrow compute and no copy of the column bytes, sentinels become validity bitmaps
and codes become dictionary arrays (DuckDB reads those as its enums), so each table goes in
with a plain ``INSERT … SELECT`` that does no work per row.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from .schema import CONTRACTS, DEAL_ENDS, STATUSES, SUITS

__all__ = ["INSERTS", "arrow_tables"]

U8, U16, U32, U64, I32, I64 = (
    pa.uint8(),
    pa.uint16(),
    pa.uint32(),
    pa.uint64(),
    pa.int32(),
    pa.int64(),
)
HAND, SUIT_LENGTHS = pa.list_(U8, 13), pa.list_(U8, 4)

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
        "score_2": I32, "score_3": I32, "hands_ok": U8, "hand_0": HAND, "hand_1": HAND,
        "hand_2": HAND, "hand_3": HAND, "suits_0": SUIT_LENGTHS, "suits_1": SUIT_LENGTHS,
        "suits_2": SUIT_LENGTHS, "suits_3": SUIT_LENGTHS, "trump_length": U8,
    },
    "tricks": {
        "match_key": U64, "deal": U16, "trick": U8, "contract": U8, "leader": U8, "winner": U8,
        "units": U8, "points": I32, "led_suit": U8, "card_0": U8, "card_1": U8, "card_2": U8,
        "card_3": U8,
    },
    "plays": {
        "match_key": U64, "deal": U16, "play": U8, "seat": U8, "card": U8, "contract": U8,
        "trump": U8, "legal": U8, "took": U8, "broke": U8, "think_ms": U32, "auto": U8,
    },
}  # fmt: skip
_STRINGS = {
    "matches": ("match_id", "status_reason", "event", "site", "client_name", "client_version"),
    "players": ("player_id", "name", "seat_name"),
}

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
        "trump_length": ("null", 255),
    },
    "tricks": {"contract": ("enum", CONTRACTS, 1, 0)},
    "plays": {
        "contract": ("enum", CONTRACTS, 1, 0),
        "trump": ("enum", SUITS, 0, 255),
        "think_ms": ("null", 0xFFFFFFFF),
    },
}


def _raw(kind: pa.DataType, rows: int, data: bytes) -> pa.Array:
    if isinstance(kind, pa.FixedSizeListType):
        size = kind.list_size
        child = pa.Array.from_buffers(U8, rows * size, [None, pa.py_buffer(data)])
        return pa.FixedSizeListArray.from_arrays(child, size)
    return pa.Array.from_buffers(kind, rows, [None, pa.py_buffer(data)])


def _valid_where(array: pa.Array, keep: pa.Array) -> pa.Array:
    """``array`` with nulls where ``keep`` (a boolean array without nulls) is false."""
    bitmap = keep.buffers()[1]
    if isinstance(array, pa.FixedSizeListArray):
        return pa.FixedSizeListArray.from_arrays(
            array.values, array.type.list_size, mask=pc.invert(keep)
        )
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


def _pack_plays(arrays: dict[str, pa.Array]) -> dict[str, pa.Array]:
    """took, auto and broke in one ``flags`` column (schema: plays_base.flags), which the
    view unpacks: each stored column costs the ingest about as much as any other. The rare
    values sit in the high bits, so DuckDB's bit-packing keeps most of it at 2-4 bits."""
    took = pc.min_element_wise(arrays.pop("took"), pa.scalar(7, U8))  # 255 (none) -> 7
    auto = pc.shift_left(pc.min_element_wise(arrays.pop("auto"), pa.scalar(1, U8)), 3)
    broke = pc.shift_left(arrays.pop("broke"), pa.scalar(4, U8))  # 0 legal, else code + 1
    flags = pc.bit_wise_or(pc.bit_wise_or(took, auto), broke)
    think = arrays.pop("think_ms")
    return {**arrays, "flags": flags, "think_ms": think}


def _pack_tricks(arrays: dict[str, pa.Array]) -> dict[str, pa.Array]:
    """The four cards in one ``cards`` column (schema: tricks_base.cards), 6 bits each; the
    led suit follows from the first (the view derives both)."""
    del arrays["led_suit"]
    cards = pc.cast(arrays.pop("card_0"), U32)
    for i in (1, 2, 3):
        card = pc.shift_left(pc.cast(arrays.pop(f"card_{i}"), U32), pa.scalar(6 * i, U32))
        cards = pc.bit_wise_or(cards, card)
    return {**arrays, "cards": cards}


def arrow_tables(taken: dict[str, dict[str, Any]]) -> dict[str, pa.Table]:
    """The tables of one ``take()``, with the store's types (no copy of the column bytes)."""
    out = {}
    for table, layout in _LAYOUT.items():
        cols = taken[table]
        rows = cols["rows"]
        arrays = {name: _raw(kind, rows, cols[name]) for name, kind in layout.items()}
        for name in _STRINGS.get(table, ()):
            offsets, data = cols[name]
            buffers = [None, pa.py_buffer(offsets), pa.py_buffer(data)]
            arrays[name] = pa.Array.from_buffers(pa.string(), rows, buffers)
        for name, how in _CONVERT.get(table, {}).items():
            arrays[name] = _convert(arrays[name], how)
        if table == "plays":
            arrays = _pack_plays(arrays)
        if table == "tricks":
            arrays = _pack_tricks(arrays)
        if table == "deals":
            dealt = pc.not_equal(arrays.pop("hands_ok"), 0)
            for s in range(4):
                arrays[f"hand_{s}"] = _valid_where(arrays[f"hand_{s}"], dealt)
                arrays[f"suits_{s}"] = _valid_where(arrays[f"suits_{s}"], dealt)
        out[table] = pa.table(arrays)
    return out


def _insert(table: str, columns: str, batch: str | None = None) -> str:
    names = ", ".join(columns.split())
    return f"INSERT INTO {table} ({names}) SELECT {names} FROM batch_{batch or table}"


# The INSERT of each table from its Arrow batch (registered as batch_<table>).
INSERTS = {
    "players": _insert("players", "match_key seat player_id name seat_name"),
    "deals": _insert(
        "deals",
        "match_key deal contract declarer dealer trump playable tricks plays plays_after_end "
        "ended end_trick revoker score_0 score_1 score_2 score_3 hand_0 hand_1 hand_2 hand_3 "
        "suits_0 suits_1 suits_2 suits_3 trump_length",
    ),
    "tricks": _insert(
        "tricks_base",
        "match_key deal trick contract leader winner units points cards",
        "tricks",
    ),
    "plays": _insert(
        "plays_base",
        "match_key deal play seat card contract trump legal flags think_ms",
        "plays",
    ),
}
