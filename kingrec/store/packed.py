"""The store's packed columns: several small facts of a row in one 64-bit code.

``PACKED`` is the one layout. The column builders (``rows.pack`` in the pure twin,
``kingrec._columns_c`` in the compiled one) pack with it, the schema's views unpack with
``unpacked``, the upgrades pack in SQL with ``packed_sql``, and each code's column comment
(``packed_comment``) spells the layout out for analysts.
"""

from __future__ import annotations

__all__ = ["PACKED", "pack", "packed_comment", "packed_sql", "unpacked"]

# Packed columns. DuckDB's append costs about the same per value whatever the value's width
# (measured: ~40 ns per value per column, most of it compressing), and a play has ten small
# facts: stored as two 64-bit codes, a deal costs ~170 stored values instead of ~730. Each
# code is (fact, lowest bit, bits). Both column builders pack with this table, the upgrade
# packs in SQL with it and the views unpack with it. Facts are stored as: trump, its suit's
# code + 1 (0: none); contract, its number (0: none); took, the seat (7: the trick stayed
# open); broke, the rule's code + 1 (0: a legal play); think, think_ms + 1 (0: not recorded).
PACKED: dict[str, tuple[tuple[str, int, int], ...]] = {
    "deal_code": (("trump", 0, 3), ("contract", 3, 3), ("deal", 6, 10), ("match_key", 16, 48)),
    "play_code": (
        ("card", 0, 8), ("seat", 8, 2), ("play", 10, 8), ("legal", 18, 4), ("took", 22, 3),
        ("auto", 25, 1), ("broke", 26, 4), ("think", 30, 32),
    ),
    "trick_code": (
        ("cards", 0, 24), ("trick", 24, 8), ("leader", 32, 2), ("winner", 34, 2),
        ("units", 36, 8),
    ),
}  # fmt: skip


def pack(code: str, facts: dict[str, int]) -> int:
    """``facts`` (their stored values) packed into ``code``; a value too wide for its bits is
    cut to them rather than spill into the next."""
    return sum((facts[name] & ((1 << bits) - 1)) << low for name, low, bits in PACKED[code])


_ABOUT_PACKED = {
    "deal_code": "the match, deal, contract and trumps of the row, packed",
    "play_code": "card, seat, play, legal, took, auto, broke and think_ms, packed",
    "trick_code": "the four cards (6 bits each), trick, leader, winner and units, packed",
}


def packed_comment(code: str) -> str:
    """The column comment of ``code``: what it holds and where each fact's bits are."""
    fields = ", ".join(f"{name} bits {low}-{low + bits - 1}" for name, low, bits in PACKED[code])
    return f"{_ABOUT_PACKED[code]} ({fields}; the view unpacks it)"


def unpacked(code: str, fact: str, skip: int = 0, width: int | None = None) -> str:
    """SQL for one fact of a packed column (a UBIGINT), or for ``width`` of its bits from its
    ``skip``-th (one mask and one shift: DuckDB does not merge them, measured)."""
    low, bits = next((low, bits) for name, low, bits in PACKED[code] if name == fact)
    low, bits = low + skip, min(bits - skip, width or 64)
    shifted = f"({code} >> {low})" if low else code
    return shifted if low + bits == 64 else f"({shifted} & {(1 << bits) - 1})"


def packed_sql(code: str, facts: dict[str, str]) -> str:
    """SQL that packs ``facts`` (fact -> SQL of its stored value) into ``code``."""
    parts = [
        f"(CAST({facts[name]} AS UBIGINT) << {low})" if low else f"CAST({facts[name]} AS UBIGINT)"
        for name, low, _ in PACKED[code]
    ]
    return f"CAST({' | '.join(parts)} AS UBIGINT)"
