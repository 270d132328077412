"""Input built to hurt kingrec: the generators behind the fuzz tests, the corpus and bench/fuzz.py.

Each generator takes a ``random.Random`` and returns a ``Case``: the bytes of one record file
and the suffix its name carries. Cases start from real records
(``kingrec.simulate.simulate_match``) and damage them the ways a file from anyone can be
damaged:

* ``.krec`` files: bit flips and byte edits, truncation, frames whose checksums are right
  around payloads that are wrong (cards >= 52, hands of the wrong length, a million plays,
  enums out of range, unknown fields of every wire type, lengths past the end, groups nested
  deep, invalid UTF-8), and container headers built to hurt (resync bombs, 4 GB claims);
* JSON records: wrong types, deep nesting, huge numbers, invalid UTF-8, lone surrogates,
  enormous strings, broken arrays, and the same bit flips, edits and truncation.

Everything is drawn from the ``random.Random`` given, so a seed reproduces a case. Files stay
small (tens of KiB at most) except the few cases that are about size.
"""

from __future__ import annotations

import base64
import functools
import io
import json
import random
import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from google.protobuf import json_format

from kingrec.container import FILE_HEADER_SIZE, FRAME_MARKER, MAGIC, KrecWriter
from kingrec.jsonl import dumps_match, match_to_dict
from kingrec.limits import MAX_FRAME_BYTES
from kingrec.rules import RevokeRule, preset
from kingrec.simulate import simulate_match
from kingrec.v1 import record_pb2 as pb

__all__ = [
    "EGROUP",
    "I32",
    "I64",
    "JSON_KINDS",
    "KINDS",
    "KREC_KINDS",
    "LEN",
    "SGROUP",
    "VARINT",
    "Case",
    "append_inside",
    "base_payloads",
    "empty_deals",
    "fld",
    "frame",
    "groups",
    "key",
    "krec_file",
    "make_case",
    "resync_bomb",
    "varint",
    "write_long_json_line",
]


@dataclass(frozen=True)
class Case:
    """One generated input: its kind, the file's bytes and the suffix of its name."""

    kind: str
    data: bytes
    suffix: str  # ".krec" or ".jsonl" (only an empty file is told by its name)


# -- the protobuf wire format, by hand --------------------------------------------------------

VARINT, I64, LEN, SGROUP, EGROUP, I32 = range(6)


def varint(value: int) -> bytes:
    """The varint of ``value``; a negative number as its 64-bit two's complement (10 bytes)."""
    value &= (1 << 64) - 1
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def zigzag(value: int) -> int:
    return (value << 1) ^ (value >> 63)


def key(number: int, wire: int) -> bytes:
    return varint(number << 3 | wire)


def fld(number: int, wire: int, body: bytes = b"") -> bytes:
    """One field: its key, then ``body`` (length-prefixed for wire type 2)."""
    return key(number, wire) + (varint(len(body)) if wire == LEN else b"") + body


def _read_varint(buf: bytes, i: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = buf[i]
        i += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, i
        shift += 7


def _fields(buf: bytes) -> list[tuple[int, int, int, int]]:
    """The fields of a well-formed message: (field number, wire type, start, end) each, and
    for wire type 2 the end of the length prefix is where the body starts (see _body)."""
    out = []
    i = 0
    while i < len(buf):
        start = i
        tag, i = _read_varint(buf, i)
        wire = tag & 7
        if wire == VARINT:
            _, i = _read_varint(buf, i)
        elif wire == I64:
            i += 8
        elif wire == I32:
            i += 4
        elif wire == LEN:
            size, i = _read_varint(buf, i)
            i += size
        elif wire == SGROUP:
            i = _after_group(buf, i, tag >> 3)
        else:
            raise ValueError(f"wire type {wire} at byte {start}")
        out.append((tag >> 3, wire, start, i))
    return out


def _after_group(buf: bytes, i: int, number: int) -> int:
    """The position after the group ``number`` whose fields start at ``buf[i]``."""
    while True:
        tag, i = _read_varint(buf, i)
        wire = tag & 7
        if wire == EGROUP and tag >> 3 == number:
            return i
        if wire == VARINT:
            _, i = _read_varint(buf, i)
        elif wire in (I64, I32):
            i += 8 if wire == I64 else 4
        elif wire == LEN:
            size, i = _read_varint(buf, i)
            i += size
        elif wire == SGROUP:
            i = _after_group(buf, i, tag >> 3)
        else:
            raise ValueError(f"wire type {wire} at byte {i}")


def _body(buf: bytes, start: int) -> tuple[int, int]:
    """(start of the body, its length) of the length-delimited field at ``start``."""
    _, i = _read_varint(buf, start)
    size, i = _read_varint(buf, i)
    return i, size


# -- the records the cases start from ---------------------------------------------------------


@functools.cache
def base_payloads() -> tuple[bytes, ...]:
    """Serialized real matches: whole ones of every preset, abandoned ones and a penalized
    revoke. Those from index ``SMALL`` on hold one or two deals (cheap to judge)."""
    penalize = preset("kahvehane").replace(revoke=RevokeRule.PENALIZE)
    matches = [
        simulate_match(preset("short"), 0),
        simulate_match(preset("short"), 1),
        simulate_match(preset("classic"), 2),
        simulate_match(preset("kahvehane"), 3),
        # small: what most cases start from
        simulate_match(preset("short"), 4, abandon_after=1),
        simulate_match(preset("short"), 5, abandon_after=2),
        simulate_match(preset("classic"), 6, abandon_after=1),
        simulate_match(preset("plain"), 7, abandon_after=2),
        simulate_match(preset("rotation"), 8, abandon_after=1),
        simulate_match(preset("kahvehane"), 9, abandon_after=1),
        simulate_match(penalize, 10, revoke_in_deal=1, abandon_after=1),
    ]
    return tuple(m.SerializeToString() for m in matches)


SMALL = 4


def _payload(rng: random.Random) -> bytes:
    """A real match: one or two deals four times in five, else a whole one."""
    pool = base_payloads()
    return pool[rng.randrange(SMALL, len(pool))] if rng.random() < 0.8 else rng.choice(pool)


def _some_payloads(rng: random.Random, most: int = 3) -> list[bytes]:
    return [_payload(rng) for _ in range(rng.randint(1, most))]


def _a_match(rng: random.Random) -> pb.Match:
    return pb.Match.FromString(_payload(rng))


# -- the container ----------------------------------------------------------------------------


def frame(
    payload: bytes,
    *,
    length: int | None = None,
    payload_crc: int | None = None,
    header_crc: int | None = None,
    marker: bytes = FRAME_MARKER,
) -> bytes:
    """One frame around ``payload``: sound (checksums right) unless told otherwise."""
    length = len(payload) if length is None else length
    crc = zlib.crc32(payload) if payload_crc is None else payload_crc
    head = marker + struct.pack("<II", length & 0xFFFFFFFF, crc & 0xFFFFFFFF)
    check = zlib.crc32(head) if header_crc is None else header_crc
    return head + struct.pack("<I", check & 0xFFFFFFFF) + payload


def krec_file(payloads: list[bytes], *, version: int = 1, flags: int = 0) -> bytes:
    """A container of ``payloads``, written by kingrec's own writer when the header is sound."""
    if version == 1 and flags == 0 and all(len(p) <= MAX_FRAME_BYTES for p in payloads):
        out = io.BytesIO()
        writer = KrecWriter(out)
        for payload in payloads:
            writer.write(payload)
        writer.close()
        return out.getvalue()
    return MAGIC + struct.pack("<HH", version, flags) + b"".join(frame(p) for p in payloads)


# -- damage to any bytes ----------------------------------------------------------------------

_SPECIAL_BYTES = (0x00, 0x01, 0x7F, 0x80, 0xFF, 0x33, 0x34, 0x0A, 0x7B, 0x22, 0x4B, 0x31)


def flip_bits(rng: random.Random, data: bytes, most: int = 8) -> bytes:
    if not data:
        return data
    out = bytearray(data)
    for _ in range(rng.randint(1, most)):
        at = rng.randrange(len(out))
        out[at] ^= 1 << rng.randrange(8)
    return bytes(out)


def edit_bytes(rng: random.Random, data: bytes, most: int = 4) -> bytes:
    """A few byte-level edits: set, insert, delete, duplicate or move a stretch."""
    out = bytearray(data)
    for _ in range(rng.randint(1, most)):
        at = rng.randrange(len(out) + 1)
        what = rng.randrange(6)
        if what == 0 and out:
            out[min(at, len(out) - 1)] = rng.choice((*_SPECIAL_BYTES, rng.randrange(256)))
        elif what == 1:
            out[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
        elif what == 2:
            del out[at : at + rng.randint(1, 64)]
        elif what == 3 and out:
            start = rng.randrange(len(out))
            out[at:at] = out[start : start + rng.randint(1, 256)]
        elif what == 4:
            out[at:at] = rng.choice([FRAME_MARKER, MAGIC, b"{", b"}", b"[", b"\n", b'"'])
        elif out:
            start = rng.randrange(len(out))
            piece = out[start : start + rng.randint(1, 128)]
            del out[start : start + len(piece)]
            at = rng.randrange(len(out) + 1)
            out[at:at] = piece
    return bytes(out)


def truncate(rng: random.Random, data: bytes) -> bytes:
    return data[: rng.randrange(len(data) + 1)]


# -- payloads with right checksums and wrong contents -----------------------------------------


def _big_int(rng: random.Random, bits: int, signed: bool) -> int:
    if signed:
        top = 1 << (bits - 1)
        return rng.choice([-top, top - 1, -1, 0, 1, rng.randrange(-top, top)])
    return rng.choice(
        [(1 << bits) - 1, 1 << (bits - 1), 0, 1, 4, 52, 255, rng.randrange(1 << bits)]
    )


def _a_deal(rng: random.Random, m: pb.Match) -> pb.Deal:
    if not m.deals:
        m.deals.add(number=1)
    return m.deals[rng.randrange(len(m.deals))]


def _cards_over_51(rng: random.Random, m: pb.Match) -> None:
    deal = _a_deal(rng, m)
    which = rng.choice(["hands", "plays"])
    data = bytearray(getattr(deal, which) or bytes(13))
    for _ in range(rng.randint(1, 3)):
        data[rng.randrange(len(data))] = rng.choice([52, 53, 63, 64, 127, 128, 255])
    setattr(deal, which, bytes(data))


def _wrong_lengths(rng: random.Random, m: pb.Match) -> None:
    deal = _a_deal(rng, m)
    which = rng.choice(["hands", "plays"])
    size = rng.choice([0, 1, 4, 12, 13, 14, 51, 53, 103, 104, 105, 200, 4096])
    data = (bytes(getattr(deal, which)) or bytes(range(52))) * (size // 52 + 1)
    setattr(deal, which, data[:size])


def _many_plays(rng: random.Random, m: pb.Match) -> None:
    """A deal with a million play bytes (or think times, or auto-play marks)."""
    deal = _a_deal(rng, m)
    size = rng.choice([10**6, 10**5, 10**4])
    which = rng.choice(["plays", "plays", "think_ms", "auto_plays", "claimed_scores"])
    if which == "plays":
        deal.plays = bytes([rng.choice([0, 12, 51, 52, 255])]) * size
    else:
        values = getattr(deal, which)
        del values[:]
        values.extend([rng.choice([0, 1, 1000])] * (size // 4))  # ~ a megabyte packed or less


_ENUM_FIELDS = (
    ("deal", "contract"),
    ("deal", "trump"),
    ("deal", "end"),
    ("match", "status"),
    ("ruleset", "schedule"),
    ("ruleset", "first_declarer"),
    ("ruleset", "dealer"),
    ("ruleset", "revoke"),
    ("metadata", "direction"),
)
_UINT_FIELDS = (
    ("deal", "number"),
    ("deal", "dealer"),
    ("deal", "declarer"),
    ("deal", "revoke_play"),
    ("deal", "trump_think_ms"),
    ("match", "format_version"),
    ("ruleset", "deal_count"),
    ("ruleset", "koz_quota"),
    ("ruleset", "penalty_quota"),
    ("ruleset", "max_per_penalty"),
    ("ruleset", "penalty_only_deals"),
    ("ruleset", "first_declarer_card"),
    ("ruleset", "play_timeout_ms"),
    ("ruleset", "trump_timeout_ms"),
    ("player", "seat"),
)
_SCORING = ("koz_trick", "el_almaz_trick", "kupa_heart", "erkek_card", "kiz_queen", "rifki_king")


def _target(rng: random.Random, m: pb.Match, where: str) -> Any:
    if where == "deal":
        return _a_deal(rng, m)
    if where == "player":
        return m.players[rng.randrange(len(m.players))] if m.players else m.players.add()
    return {"match": m, "ruleset": m.ruleset, "metadata": m.metadata}[where]


def _enums_out_of_range(rng: random.Random, m: pb.Match) -> None:
    for _ in range(rng.randint(1, 3)):
        where, name = rng.choice(_ENUM_FIELDS)
        value = rng.choice([-1, 5, 8, 9, 99, -(2**31), 2**31 - 1, rng.randrange(-(2**31), 2**31)])
        setattr(_target(rng, m, where), name, value)


def _numbers_out_of_range(rng: random.Random, m: pb.Match) -> None:
    for _ in range(rng.randint(1, 3)):
        what = rng.randrange(4)
        if what == 0:
            where, name = rng.choice(_UINT_FIELDS)
            setattr(_target(rng, m, where), name, _big_int(rng, 32, False))
        elif what == 1:
            setattr(m.ruleset.scoring, rng.choice(_SCORING), _big_int(rng, 32, True))
        elif what == 2:
            scores = rng.choice([m.claimed_totals, _a_deal(rng, m).claimed_scores])
            del scores[:]
            scores.extend(
                _big_int(rng, 32, True) for _ in range(rng.choice([0, 1, 3, 4, 5, 16, 17]))
            )
        else:
            deal = _a_deal(rng, m)
            size = rng.choice([0, 1, 51, 52, 53, 105])
            for name, bits in (("think_ms", 32), ("auto_plays", 32)):
                values = getattr(deal, name)
                del values[:]
                values.extend(_big_int(rng, bits, False) for _ in range(size))


def _players(rng: random.Random, m: pb.Match) -> None:
    del m.players[:]
    for _ in range(rng.choice([0, 1, 3, 4, 5, 16, 17])):
        m.players.add(
            id=f"p{rng.randrange(9)}",
            name=rng.choice(["", "A", "Ş" * 3]),
            seat=rng.choice([0, 1, 2, 3, 3, 4, 2**32 - 1]),
        )


def _contract_sets(rng: random.Random, m: pb.Match) -> None:
    name = rng.choice(["fixed_order", "heart_lead_ban", "withholding", "void_discard", "early_end"])
    target = getattr(m.ruleset, name)
    target.SetInParent()
    del target.contracts[:]
    size = rng.choice([0, 1, 7, 20, 256, 257, 1000])
    target.contracts.extend(rng.choice([0, 1, 2, 7, 8, -1, 2**31 - 1]) for _ in range(size))
    if rng.random() < 0.5:
        m.ruleset.preset = rng.choice(["", "nope", "CLASSIC", "Short", "ş" * 20])


_ODD_TEXT = (
    "",
    "\x00",
    "\x1b[2J\x1b[31mred",
    "[bold red]markup[/]",
    "[/]",
    "\u202eevil",
    "a\nb\r\nc",
    "ş" * 512,
    "ş" * 513,
    "x" * 1025,
    "😀" * 300,
    "\ufeff",
    "\u2028",
)


def _odd_strings(rng: random.Random, m: pb.Match) -> None:
    for _ in range(rng.randint(1, 4)):
        text = rng.choice(_ODD_TEXT)
        where = rng.randrange(6)
        if where == 0:
            m.match_id = text
        elif where == 1:
            m.status_reason = text
        elif where == 2:
            setattr(
                m.metadata, rng.choice(["event", "site", "client_name", "client_version"]), text
            )
        elif where == 3:
            m.metadata.tags[text] = rng.choice(_ODD_TEXT)
        elif where == 4:
            player = _target(rng, m, "player")
            setattr(player, rng.choice(["id", "name", "seat_name"]), text)
        else:
            m.ruleset.preset = text


def _timestamps(rng: random.Random, m: pb.Match) -> None:
    ts = m.metadata.start_time
    ts.seconds = rng.choice([2**63 - 1, -(2**63), 253402300800, -62135596801, 0, -1, 10**12])
    ts.nanos = rng.choice([0, -1, 999_999_999, 1_000_000_000, 2**31 - 1, -(2**31)])


def _shuffled_deals(rng: random.Random, m: pb.Match) -> None:
    deals = [pb.Deal.FromString(d.SerializeToString()) for d in m.deals]
    what = rng.randrange(4)
    if what == 0:
        rng.shuffle(deals)
    elif what == 1 and deals:
        deals += [deals[rng.randrange(len(deals))]] * rng.randint(1, 3)
    elif what == 2 and deals:
        del deals[rng.randrange(len(deals))]
    else:
        deals = deals[: rng.randrange(len(deals) + 1)]
    del m.deals[:]
    m.deals.extend(deals)
    if rng.random() < 0.3:
        setattr(m, "status", rng.choice([0, 1, 2, 3]))  # noqa: B010 - any number, typed or not


def _empty_deals(rng: random.Random, m: pb.Match) -> None:
    del m.deals[:]
    for number in range(rng.choice([0, 1, 255, 256, 257, 1000, 5000])):
        m.deals.add(number=number + 1) if rng.random() < 0.5 else m.deals.add()


def _revoke_marks(rng: random.Random, m: pb.Match) -> None:
    deal = _a_deal(rng, m)
    deal.revoke_play = rng.choice([0, 1, len(deal.plays) - 1, len(deal.plays), 2**32 - 1])
    if rng.random() < 0.5:
        setattr(m.ruleset, "revoke", rng.choice([0, 1, 2, 3]))  # noqa: B010
    if rng.random() < 0.5:
        del deal.auto_plays[:]
        deal.auto_plays.extend(rng.choice([0, 5, 51, 52, 103, 104, 2**32 - 1]) for _ in range(3))


_MATCH_EDITS: dict[str, Callable[[random.Random, pb.Match], None]] = {
    "cards-over-51": _cards_over_51,
    "wrong-lengths": _wrong_lengths,
    "many-plays": _many_plays,
    "enums-out-of-range": _enums_out_of_range,
    "numbers-out-of-range": _numbers_out_of_range,
    "players": _players,
    "contract-sets": _contract_sets,
    "odd-strings": _odd_strings,
    "timestamps": _timestamps,
    "shuffled-deals": _shuffled_deals,
    "empty-deals": _empty_deals,
    "revoke-marks": _revoke_marks,
}


def edited_match(rng: random.Random, name: str | None = None) -> bytes:
    """A real match with one kind of edit the schema allows (``name`` or a random one)."""
    m = _a_match(rng)
    edit = _MATCH_EDITS[name] if name else rng.choice(list(_MATCH_EDITS.values()))
    edit(rng, m)
    if rng.random() < 0.2:
        rng.choice(list(_MATCH_EDITS.values()))(rng, m)
    return m.SerializeToString()


# -- payloads no schema-abiding writer makes ----------------------------------------------------


def unknown_field(rng: random.Random) -> bytes:
    """A field the schema does not know, of any wire type."""
    number = rng.choice([14, 15, 16, 99, 1000, 2**29 - 1, rng.randrange(30, 5000)])
    wire = rng.choice([VARINT, I64, LEN, SGROUP, I32])
    if wire == VARINT:
        return fld(number, wire, varint(_big_int(rng, 64, False)))
    if wire == I64:
        return fld(number, wire, rng.randbytes(8))
    if wire == I32:
        return fld(number, wire, rng.randbytes(4))
    if wire == LEN:
        return fld(number, wire, rng.randbytes(rng.randint(0, 40)))
    inner = b"".join(
        fld(rng.randrange(1, 20), VARINT, varint(rng.randrange(300))) for _ in range(3)
    )
    return key(number, SGROUP) + inner + key(number, EGROUP)


def groups(
    depth: int, number: int = 110, *, closed: bool = True, mismatched: bool = False
) -> bytes:
    """Unknown groups nested ``depth`` deep (the decoder accepts at most 100 levels in all)."""
    end = key(number + (1 if mismatched else 0), EGROUP)
    return key(number, SGROUP) * depth + (end * depth if closed else b"")


# Known length-delimited fields holding messages: Match field -> nothing more to say.
_SUBMESSAGES = (3, 4, 5, 8)


def _rewrap(
    payload: bytes, number: int, edit: Callable[[bytes], bytes], rng: random.Random
) -> bytes:
    """``payload`` with the body of one of its fields ``number`` passed through ``edit``."""
    chosen = [f for f in _fields(payload) if f[0] == number and f[1] == LEN]
    if not chosen:
        return payload + fld(number, LEN, edit(b""))
    _, _, start, end = rng.choice(chosen)
    body_start, size = _body(payload, start)
    body = edit(payload[body_start : body_start + size])
    return payload[:start] + fld(number, LEN, body) + payload[end:]


def append_inside(payload: bytes, number: int, extra: bytes) -> bytes:
    """``payload`` with ``extra`` at the end of the body of its first length-delimited field
    ``number`` (a sub-message), rewritten with the right length: any bytes, at wire level."""
    for field, wire, start, end in _fields(payload):
        if field == number and wire == LEN:
            body_start, size = _body(payload, start)
            body = payload[body_start : body_start + size] + extra
            return payload[:start] + fld(number, LEN, body) + payload[end:]
    return payload + fld(number, LEN, extra)


def _insert(rng: random.Random, body: bytes, extra: bytes) -> bytes:
    """``extra`` put between two fields of ``body`` (a well-formed message)."""
    cuts = [0] + [f[3] for f in _fields(body)]
    at = rng.choice(cuts)
    return body[:at] + extra + body[at:]


def _unknown_fields_anywhere(rng: random.Random) -> bytes:
    payload = _payload(rng)
    for _ in range(rng.randint(1, 4)):
        extra = unknown_field(rng)
        if rng.random() < 0.4:
            payload = _insert(rng, payload, extra)
        else:
            number = rng.choice(_SUBMESSAGES)
            payload = _rewrap(payload, number, functools.partial(_insert, rng, extra=extra), rng)
    return payload


def _deep_groups(rng: random.Random) -> bytes:
    depth = rng.choice([1, 31, 32, 33, 98, 99, 100, 101, 1000, 30_000])
    nest = groups(depth, closed=rng.random() < 0.8, mismatched=rng.random() < 0.1)
    payload = _payload(rng)
    if rng.random() < 0.5:
        return _insert(rng, payload, nest)
    return _rewrap(payload, rng.choice(_SUBMESSAGES), lambda body: _insert(rng, body, nest), rng)


def _length_lies(rng: random.Random) -> bytes:
    """A length prefix that claims more (or less) than there is, at the top or one level down."""
    payload = _payload(rng)
    fields = [f for f in _fields(payload) if f[1] == LEN]
    _, _, start, end = rng.choice(fields)
    tag_end = _read_varint(payload, start)[1]
    body_start, size = _body(payload, start)
    claim = rng.choice([size + 1, size + 100, size - 1, 2**31, 2**32 - 1, 2**35, 2**64 - 1, 0])
    claim = max(claim, 0)
    if rng.random() < 0.5:  # one level down: a field inside this one
        inner = payload[body_start:end]
        try:
            parts = [f for f in _fields(inner) if f[1] == LEN]
        except (ValueError, IndexError):
            parts = []
        if parts:
            _, _, i_start, _ = rng.choice(parts)
            i_tag_end = _read_varint(inner, i_start)[1]
            i_body, _ = _body(inner, i_start)
            inner = inner[:i_tag_end] + varint(claim) + inner[i_body:]
            return payload[:start] + fld(payload[start] >> 3, LEN, inner) + payload[end:]
    return payload[:tag_end] + varint(claim) + payload[body_start:]


def _wire_oddities(rng: random.Random) -> bytes:
    """Bytes a protobuf decoder must refuse or take in its stride."""
    payload = _payload(rng)
    odd = rng.choice(
        [
            fld(1, VARINT, b"\x80" * 10 + b"\x01"),  # an eleven-byte varint
            fld(1, VARINT, b"\xff" * 9 + b"\x01"),  # a ten-byte varint into a uint32
            fld(1, VARINT, b"\x81\x80\x80\x80\x00"),  # a varint written long
            b"\x00\x01",  # field number 0
            key(1, 6),
            key(1, 7),  # wire types 6 and 7
            b"\xf8\xff\xff\xff\x7f\x00",  # a tag over 32 bits
            key(110, EGROUP),  # an end group without a start
            fld(8, VARINT, varint(5)),  # a deal as a varint
            fld(2, VARINT, varint(5)),  # the match id as a varint
            fld(8, LEN, fld(6, VARINT, varint(1))),  # hands as a varint
            fld(8, LEN, fld(4, LEN, b"\x01\x02")),  # a contract as bytes
            fld(8, LEN, fld(8, LEN, b"\x01\x80")),  # think times cut inside a varint
            fld(9, LEN, b"\x80" * 10 + b"\x01"),  # an overlong packed varint
            fld(8, LEN, fld(12, LEN, varint(2**63) * 4)),  # scores beyond sint32
            fld(3, LEN, fld(6, LEN, b"\x00")),  # a bad tag in a tag entry
            fld(3, LEN, fld(6, LEN, fld(1, VARINT, b"\x01") + fld(2, LEN, b"v"))),  # map key as int
            fld(3, LEN, fld(6, LEN, fld(3, LEN, b"x"))),  # a map entry of unknown fields
            fld(3, LEN, fld(3, LEN, fld(1, VARINT, varint(2**63)))),  # start_time out of range
            fld(2, LEN, b"\xff\xfe"),  # a match id that is no UTF-8
            fld(2, LEN, b"\xed\xa0\x80"),  # a UTF-8-encoded surrogate
            fld(2, LEN, b"\xc0\xaf"),  # an overlong UTF-8 encoding
            fld(4, LEN, fld(2, LEN, b"\xe2\x82")),  # a player name cut inside a character
            fld(5, LEN, fld(1, LEN, b"\x80")),  # a preset that is no UTF-8
            fld(3, LEN, fld(6, LEN, fld(1, LEN, b"\xff"))),  # a tag key that is no UTF-8
            fld(5, LEN, fld(8, LEN, fld(1, VARINT, varint(2**40)))),  # a contract past int32
            fld(5, LEN, fld(24, LEN, fld(1, VARINT, varint(2**64 - 1)))),  # scoring at 64 bits
            fld(2**29 - 1, VARINT, b"\x01"),  # the largest field number
            fld(19000, VARINT, b"\x01"),  # a reserved field number
            rng.randbytes(rng.randint(1, 64)),
        ]
    )
    return payload + odd if rng.random() < 0.5 else _insert(rng, payload, odd)


def _random_message(rng: random.Random, depth: int = 0) -> bytes:
    """Well-formed protobuf of random fields, some nested, some with the known numbers."""
    out = bytearray()
    for _ in range(rng.randint(0, 12)):
        number = rng.choice([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 24, 99])
        wire = rng.choice([VARINT, LEN, LEN, I32, I64])
        if wire == LEN:
            body = (
                _random_message(rng, depth + 1)
                if depth < 4 and rng.random() < 0.5
                else rng.randbytes(rng.randint(0, 60))
            )
            out += fld(number, wire, body)
        elif wire == VARINT:
            out += fld(number, wire, varint(_big_int(rng, 64, False)))
        else:
            out += fld(number, wire, rng.randbytes(8 if wire == I64 else 4))
    return bytes(out)


_PAYLOADS: dict[str, Callable[[random.Random], bytes]] = {
    "edited-match": edited_match,
    "unknown-fields": _unknown_fields_anywhere,
    "deep-groups": _deep_groups,
    "length-lies": _length_lies,
    "wire-oddities": _wire_oddities,
    "random-message": _random_message,
    "mutated-payload": lambda rng: rng.choice([flip_bits, edit_bytes])(rng, _payload(rng)),
    "empty-payload": lambda rng: b"",
}


def hostile_payload(rng: random.Random) -> bytes:
    return rng.choice(list(_PAYLOADS.values()))(rng)


# -- .krec cases ------------------------------------------------------------------------------


def _framed_hostile(rng: random.Random) -> bytes:
    """Hostile payloads in sound frames, among real ones."""
    payloads = [hostile_payload(rng) for _ in range(rng.randint(1, 3))]
    payloads += _some_payloads(rng, 2)
    rng.shuffle(payloads)
    return krec_file([p for p in payloads if len(p) <= MAX_FRAME_BYTES])


def resync_bomb(size: int, *, cap: int | None = MAX_FRAME_BYTES) -> bytes:
    """A file of ``size`` bytes: a sound frame header every 16 bytes, each claiming the rest
    of the file (at most ``cap`` bytes: a claim the reader cannot refuse on its face)."""
    out = bytearray(krec_file([]))
    while len(out) + 16 <= size:
        remaining = size - len(out) - 16
        out += frame(b"", length=remaining if cap is None else min(remaining, cap))[:16]
    return bytes(out.ljust(size, b"\0"))


def empty_deals(count: int) -> bytes:
    """A .krec of one sound frame: a real match (players, ruleset) whose deals are replaced by
    ``count`` empty ones, 2 bytes each (the amplification of issue 10: every deal became a
    Python object, was checked and got its findings)."""
    m = simulate_match(preset("classic"), 1)
    del m.deals[:]
    m.match_id = "amplified"
    return krec_file([m.SerializeToString() + fld(8, LEN) * count])


def write_long_json_line(path: str, size: int, *, after: int = 1) -> None:
    """Write a JSON Lines file whose first record is one line of ``size`` bytes (a match id
    of ``size - 18`` letters), then ``after`` small sound records; written in pieces."""
    head, tail = b'{"match_id": "', b'"}\n'
    letters = size - len(head) - len(tail) + 1
    piece = b"a" * (1 << 20)
    with open(path, "wb") as out:
        out.write(head)
        while letters > 0:
            out.write(piece[:letters])
            letters -= len(piece)
        out.write(tail)
        for i in range(after):
            out.write(b'{"match_id": "after-%d"}\n' % i)


def _container_oddities(rng: random.Random) -> bytes:
    real = _some_payloads(rng, 2)
    what = rng.randrange(14)
    if what == 0:  # a file header from elsewhere
        version, flags = rng.choice([(0, 0), (2, 0), (1, 1), (65535, 65535), (1, 0x8000)])
        return MAGIC + struct.pack("<HH", version, flags) + b"".join(frame(p) for p in real)
    if what == 1:  # a resync bomb
        return resync_bomb(rng.choice([64, 1000, 4096, 20_000]))
    if what == 2:  # frame markers everywhere, never a sound header
        pattern = b"KRF1\x00KRF1\x07\x07KRF1\xff\xfe\xfdKRF1KRF1"
        return krec_file([]) + pattern * rng.randint(1, 500)
    if what == 3:  # headers claiming 4 GB, or one byte past the bound
        claim = rng.choice([2**32 - 1, MAX_FRAME_BYTES + 1, MAX_FRAME_BYTES])
        return krec_file(real) + frame(b"", length=claim)[:16] * rng.randint(1, 50)
    if what == 4:  # many empty frames
        return krec_file([b""] * rng.choice([1, 10, 1000]))
    if what == 5:  # a crashed write followed by appended frames
        whole = krec_file(real)
        cut = FILE_HEADER_SIZE + rng.randrange(len(whole) - FILE_HEADER_SIZE)
        return whole[:cut] + b"".join(frame(p) for p in _some_payloads(rng, 2))
    if what == 6:  # two files end to end
        return krec_file(real) + krec_file(_some_payloads(rng, 2))
    if what == 7:  # a payload checksum that is wrong, or a header checksum
        if rng.random() < 0.5:
            bad = [frame(p, payload_crc=rng.randrange(2**32)) for p in real]
        else:
            bad = [frame(p, header_crc=0) for p in real]
        return krec_file([]) + b"".join(bad) + frame(real[0])
    if what == 8:  # the file header alone, or cut inside it
        return krec_file([])[: rng.randint(0, FILE_HEADER_SIZE)]
    if what == 9:  # frames behind a sound header that claims the frames that follow
        inner = b"".join(frame(p) for p in real)
        return krec_file([]) + frame(b"", length=len(inner) + 50)[:16] + inner
    if what == 10:  # a frame header cut at the end of the file
        return krec_file(real) + frame(real[0])[: rng.randint(1, 15)]
    if what == 11:  # marker bytes near the end
        return krec_file(real) + rng.randbytes(rng.randint(0, 20)) + FRAME_MARKER
    if what == 12:  # not a .krec at all
        return rng.choice(
            [b"", b"\x1f\x8b\x08\x00", b"PK\x03\x04", b"hello\n", b"\xef\xbb\xbf", b"\x00" * 40,
             FRAME_MARKER + b"\0" * 12, b"\x89KREC\n\x1a\x01\x00\x00\x00", rng.randbytes(30)]
        )  # fmt: skip
    return krec_file(real)[: rng.choice([12, 13, 16, 27, 28, 29])]


def _spliced(rng: random.Random) -> bytes:
    """Stretches of several files, real and hostile, end to end."""
    files = [krec_file(_some_payloads(rng, 2)), _framed_hostile(rng), _container_oddities(rng)]
    out = bytearray(krec_file([]))
    for _ in range(rng.randint(2, 4)):
        source = rng.choice(files)
        start = rng.randrange(len(source) + 1)
        out += source[start : start + rng.randint(1, 4000)]
    return bytes(out)


KREC_KINDS: dict[str, Callable[[random.Random], bytes]] = {
    "krec-bitflip": lambda rng: flip_bits(rng, krec_file(_some_payloads(rng))),
    "krec-edit": lambda rng: edit_bytes(rng, krec_file(_some_payloads(rng))),
    "krec-truncate": lambda rng: truncate(rng, krec_file(_some_payloads(rng, 2))),
    "krec-hostile-payload": _framed_hostile,
    "krec-container": _container_oddities,
    "krec-splice": _spliced,
}


# -- JSON cases -------------------------------------------------------------------------------

_HUGE_INT = 10**4000  # json.dumps writes up to 4300 digits; longer ones are spelled in text


def hostile_value(rng: random.Random, depth: int = 0) -> Any:
    """A JSON value of a type or size no field expects."""
    choice = rng.randrange(16)
    if choice == 0:
        return None
    if choice == 1:
        return rng.choice([True, False])
    if choice == 2:
        return rng.choice(
            [-1, 0, 1, 4, 13, 51, 52, 2**31, 2**32, 2**63, 2**64, -(2**63) - 1, 10**30]
        )
    if choice == 3:
        return rng.choice([1.5, -0.0, 1e308, -1e-308, 0.1, 52.0, 1e20])
    if choice == 4:
        return rng.choice(["", "x", "AS", "10H", "♠Q", "qs", "XX", "KOZ", "CONTRACT_KOZ", "sim-0"])
    if choice == 5:
        return rng.choice(["\ud800", "a\udfffb", "\udc00\ud800", "\ud83d\ude00", "\x00", "\u2028"])
    if choice == 6:
        return rng.choice(["x" * 1025, "ş" * 600, "A" * rng.choice([5000, 40_000])])
    if choice == 7:
        return rng.choice(["AAEC", "////", "=", "AA==" * 40, "not base64!", "00" * 60, "zz"])
    if choice == 8:
        return rng.choice(["2024-01-01T00:00:00Z", "10000-01-01T00:00:00Z", "yesterday", "0"])
    if choice == 9:
        return []
    if choice == 10:
        return {}
    if choice == 11 and depth < 3:
        return [hostile_value(rng, depth + 1) for _ in range(rng.randint(1, 5))]
    if choice == 12 and depth < 3:
        return {
            rng.choice(["a", "number", "contracts", "_unknown", "seconds"]): hostile_value(
                rng, depth + 1
            )
        }
    if choice == 13:
        return [["AS"] * 13] * rng.choice([3, 4, 5])
    if choice == 14:
        return base64.b64encode(hostile_payload(rng)[:4000]).decode()
    return rng.choice([_HUGE_INT, -_HUGE_INT, 2**200])


def _paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [path]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value[:8]):
            out += _paths(v, (*path, i))
    return out


def _replace(root: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    node = root
    for step in path[:-1]:
        node = node[step]
    node[path[-1]] = value
    return root


def _friendly(rng: random.Random) -> dict[str, Any]:
    return match_to_dict(_a_match(rng))


def _protojson(rng: random.Random) -> dict[str, Any]:
    return json.loads(json_format.MessageToJson(_a_match(rng)))  # type: ignore[no-any-return]


def _dump(rng: random.Random, value: Any) -> str:
    """JSON text the way some writer might: one line, pretty, ASCII-only or not."""
    ascii_only = rng.random() < 0.5
    text = json.dumps(value, ensure_ascii=ascii_only, indent=rng.choice([None, None, 2]))
    return text


def _encode(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")  # a lone surrogate becomes its (bad) 3 bytes


def _wrong_values(rng: random.Random) -> bytes:
    lines = []
    for _ in range(rng.randint(1, 3)):
        record = (_friendly if rng.random() < 0.7 else _protojson)(rng)
        for _ in range(rng.randint(1, 4)):
            paths = _paths(record)
            record = _replace(record, rng.choice(paths[1:] or paths), hostile_value(rng))
        lines.append(_dump(rng, record))
    return _encode("\n".join(lines) + "\n")


def _wrong_keys(rng: random.Random) -> bytes:
    record = _friendly(rng)
    for _ in range(rng.randint(1, 3)):
        parents = [p for p in _paths(record) if isinstance(_get(record, p), dict)]
        node = _get(record, rng.choice(parents))
        name = rng.choice(
            ["bonus", "matchId", "match_id", "_unknown", "hands_raw", "plays_raw", "thinkMs",
             "\ud800", "", "deals", "DEALS", "ruleset", "x" * 2000, "number"]
        )  # fmt: skip
        node[name] = (
            hostile_value(rng)
            if name != "_unknown"
            else base64.b64encode(hostile_payload(rng)[:20_000]).decode()
        )
    return _encode(_dump(rng, record) + "\n")


def _get(root: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        root = root[step]
    return root


def _number_text(rng: random.Random) -> bytes:
    """Numbers spelled the ways JSON allows and forbids."""
    text = dumps_match(_a_match(rng))
    spelled = rng.choice(
        ["1e400", "-1e400", "1" + "0" * 5000, "-0", "1.0", "1E2", "0x10", "NaN", "Infinity",
         "-Infinity", "01", "1.", ".5", "+1", "1e-400", "4294967296", "18446744073709551616"]
    )  # fmt: skip
    targets = ['"number":1', '"declarer":1', '"format_version":1', '"seat":2', '"dealer":0']
    present = [t for t in targets if t in text] or ['"format_version":1']
    target = rng.choice(present)
    name = target.split(":")[0]
    return (text.replace(target, f"{name}:{spelled}", rng.randint(1, 3)) + "\n").encode()


def _deep_nesting(rng: random.Random) -> bytes:
    depth = rng.choice([30, 31, 32, 33, 100, 1000, 100_000])
    inner = rng.choice(
        [
            "[" * depth + "]" * depth,
            '{"a":' * depth + "1" + "}" * depth,
            '[{"a":' * (depth // 2) + "[]" + "}]" * (depth // 2),
        ]
    )
    where = rng.randrange(4)
    if where == 0:
        text = inner
    elif where == 1:
        text = '{"match_id": "deep", "bonus": ' + inner + "}"
    elif where == 2:
        text = '{"deals": [{"hands": ' + inner + "}]}"
    else:
        text = "[" + inner + "]"
    if rng.random() < 0.3:
        text = text[: rng.randrange(len(text) + 1)]
    return (text + "\n" + dumps_match(_a_match(rng)) + "\n").encode()


_BAD_UTF8 = (
    b"\x80",
    b"\xff",
    b"\xfe\xff",
    b"\xc0\xaf",
    b"\xed\xa0\x80",
    b"\xed\xbf\xbf",
    b"\xf4\x90\x80\x80",
    b"\xf8\x88\x80\x80\x80",
    b"\xe2\x82",
    b"\xef\xbb\xbf",
    b"\x00",
    b"\xff\xfe",
)


def _bad_bytes(rng: random.Random) -> bytes:
    data = bytearray(_encode(dumps_match(_a_match(rng)) + "\n" + dumps_match(_a_match(rng)) + "\n"))
    for _ in range(rng.randint(1, 3)):
        at = rng.randrange(len(data) + 1)
        data[at:at] = rng.choice(_BAD_UTF8)
    if rng.random() < 0.2:
        data = bytearray(rng.choice([b"\xff\xfe", b"\xfe\xff", b"\xef\xbb\xbf"])) + data
    if rng.random() < 0.1:
        data = bytearray(data.decode("utf-8", "replace").encode("utf-16"))
    return bytes(data)


def _surrogates(rng: random.Random) -> bytes:
    text = dumps_match(_a_match(rng))
    escapes = ["\\ud800", "\\udfff", "\\udc00\\ud800", "\\ud83d", "\\ud83d\\ude00", "\\u0000"]
    for _ in range(rng.randint(1, 3)):
        spots = [i for i, c in enumerate(text) if c == '"']
        at = rng.choice(spots) + 1
        text = text[:at] + rng.choice(escapes) + text[at:]
    return (text + "\n").encode()


def _enormous_strings(rng: random.Random) -> bytes:
    size = rng.choice([1024, 1025, 50_000, 200_000])
    record = _friendly(rng)
    path = rng.choice(
        [("match_id",), ("status_reason",), ("ruleset", "preset"), ("players", 0, "name")]
    )
    _replace(record, path, rng.choice(["x", "ş", "\\", '"', "😀"]) * size)
    return (json.dumps(record, ensure_ascii=rng.random() < 0.5) + "\n").encode()


def _structure(rng: random.Random) -> bytes:
    one, two = dumps_match(_a_match(rng)), dumps_match(_a_match(rng))
    pretty = json.dumps(match_to_dict(_a_match(rng)), indent=2)
    text = rng.choice(
        [
            f"[{one}, {two}]",
            f"[{one} {two}]",
            f"[{one},",
            f"[{one}, {two},]",
            f"[[{one}]]",
            f"{pretty}\n{one}\n[{two}]",
            pretty[: rng.randrange(len(pretty))] + "\n" + one,
            f"{one}{two}",
            f'1\n"x"\ntrue\nnull\n{one}',
            f"]\n{one}\n}}\n{two}",
            f"{one}\r\n\r\n{two}\r\n",
            f"\ufeff{one}\n\ufeff{two}",
            f"{one}\n\x0b{two}\n",
            f"{one[:-1]},\n{two}",
            "[" * 5 + one,
            "{" + one,
            "{}\n" * rng.randint(1, 200),
            "[]",
            "",
            "\n\n  \n",
        ]
    )
    return (text + rng.choice(["", "\n"])).encode()


def _json_text(rng: random.Random) -> bytes:
    forms = [
        lambda: dumps_match(_a_match(rng)) + "\n",
        lambda: json.dumps(match_to_dict(_a_match(rng)), indent=2) + "\n",
        lambda: json_format.MessageToJson(_a_match(rng)) + "\n",
        lambda: "[" + ",\n".join(dumps_match(_a_match(rng)) for _ in range(2)) + "]\n",
    ]
    return _encode("".join(rng.choice(forms)() for _ in range(rng.randint(1, 2))))


JSON_KINDS: dict[str, Callable[[random.Random], bytes]] = {
    "json-bitflip": lambda rng: flip_bits(rng, _json_text(rng)),
    "json-edit": lambda rng: edit_bytes(rng, _json_text(rng)),
    "json-truncate": lambda rng: truncate(rng, _json_text(rng)),
    "json-wrong-values": _wrong_values,
    "json-wrong-keys": _wrong_keys,
    "json-numbers": _number_text,
    "json-deep": _deep_nesting,
    "json-bad-utf8": _bad_bytes,
    "json-surrogates": _surrogates,
    "json-enormous-strings": _enormous_strings,
    "json-structure": _structure,
}

KINDS: dict[str, Callable[[random.Random], bytes]] = {**KREC_KINDS, **JSON_KINDS}


def make_case(rng: random.Random, kind: str | None = None) -> Case:
    """One generated input of ``kind`` (a key of ``KINDS``; default: drawn from ``rng``)."""
    kind = kind or rng.choice(sorted(KINDS))
    data = KINDS[kind](rng)
    return Case(kind, data, ".krec" if kind in KREC_KINDS else ".jsonl")
