"""The protobuf wire format, for responses put together from pieces already encoded.

A message's encoding is its fields' encodings one after another, and a length-delimited
field is its key, the length as a varint, then the bytes; so a response whose parts were
each encoded once (a replay's events, a report) is their concatenation, the same bytes
``SerializeToString`` gives for the message holding them (fields in number order, as it
writes them; tests compare the two).
"""

from __future__ import annotations

__all__ = ["VARINTS", "delimited", "encode_varint", "varint"]


def encode_varint(n: int) -> bytes:
    """``n`` (0 or more) as a base-128 varint."""
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


# Every varint below 2**14 (all of a card's or trick's numbers, most lengths), looked up.
VARINTS = [encode_varint(n) for n in range(1 << 14)]


def varint(n: int) -> bytes:
    return VARINTS[n] if n < 0x4000 else encode_varint(n)


def delimited(key: bytes, payload: bytes) -> bytes:
    """A length-delimited field (``key``: its key byte) holding ``payload``."""
    return key + varint(len(payload)) + payload
