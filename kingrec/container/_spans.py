"""The crc32 of a span from two running crc32s, for the reader's resync (``reader``).

With S(x) the crc32 of the input from an origin up to x, any span's crc32 follows from two
prefixes: crc32(data[a:b]) = S(b) ^ S(a)·x^(8(b-a)) mod P. Multiplying by x^(8n) is running
a bare CRC register through n zero bytes; that is linear in the register, so it takes one
lookup per register byte for each base-256 digit of n (``run_zeros``).
"""

from __future__ import annotations

import zlib
from array import array

__all__ = ["run_zeros"]

_ONES = 0xFFFFFFFF
# _zeros_tables[place * 256 + digit]: the map of ``digit * 256**place`` zero bytes, built
# when first needed (4 KiB each); n < 256**4 covers any span.
_zeros_tables: list[array[int] | None] = [None] * (4 * 256)


def _apply(table: array[int], v: int) -> int:
    """The linear map ``table`` (4 x 256 entries, one block per byte of v) applied to v."""
    return (
        table[v & 255]
        ^ table[256 | v >> 8 & 255]
        ^ table[512 | v >> 16 & 255]
        ^ table[768 | v >> 24]
    )


def _table_of(images: list[int]) -> array[int]:
    """The lookup table of the linear map sending bit i of a register to ``images[i]``."""
    table = array("I")
    for lane in range(4):
        block = [0]
        for image in images[lane * 8 : lane * 8 + 8]:  # byte values with this bit: the rest ^ it
            block += [value ^ image for value in block]
        table.extend(block)
    return table


def _zeros_table(place: int, digit: int) -> array[int]:
    """The map of a bare CRC register run through ``digit * 256**place`` zero bytes."""
    table = _zeros_tables[place * 256 + digit]
    if table is not None:
        return table
    if digit == 1 and place == 0:
        # zlib conditions its register with ~ on the way in and out; undo both.
        images = [zlib.crc32(b"\0", (1 << i) ^ _ONES) ^ _ONES for i in range(32)]
    else:
        # Two maps one after the other: 256**p = 128·256**(p-1) twice, 2d = d twice, and
        # any other digit is its lowest bit then the rest.
        low = digit & -digit
        if digit == 1:
            first = then = _zeros_table(place - 1, 128)
        elif digit == low:
            first = then = _zeros_table(place, digit // 2)
        else:
            first, then = _zeros_table(place, low), _zeros_table(place, digit - low)
        images = [_apply(then, _apply(first, 1 << i)) for i in range(32)]
    table = _zeros_tables[place * 256 + digit] = _table_of(images)
    return table


def run_zeros(v: int, n: int) -> int:
    """The bare CRC register ``v`` after ``n`` zero bytes (v·x^(8n) mod P)."""
    place = 0
    while n and v:
        digit = n & 255
        if digit:
            t = _zeros_tables[place << 8 | digit] or _zeros_table(place, digit)
            v = t[v & 255] ^ t[256 | v >> 8 & 255] ^ t[512 | v >> 16 & 255] ^ t[768 | v >> 24]
        n >>= 8
        place += 1
    return v
