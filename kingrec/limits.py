"""The bounds a record must keep before kingrec spends memory or time on it.

A real King match is small: at most a few dozen deals of 52 cards, four players, a few tags.
Records from anyone (uploads, files from other programs) are held to these bounds *before*
they are decoded into Python objects, so input built to hurt the reader (a frame claiming
200,000 empty deals, a 100 MiB JSON line) costs time linear in its size and bounded memory,
and is reported with the code ``LIMIT_EXCEEDED`` naming the bound. The format spec
(docs/FORMAT.md) lists the same numbers; other implementations may rely on them.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the rules import the bounds: they load no protobuf code
    from .v1 import record_pb2 as pb

__all__ = [
    "MAX_DEALS",
    "MAX_FIXED_ORDER",
    "MAX_FRAME_BYTES",
    "MAX_HAND_BYTES",
    "MAX_JSON_DEPTH",
    "MAX_JSON_LINE_BYTES",
    "MAX_PLAYERS",
    "MAX_PLAYS",
    "MAX_SCORES",
    "MAX_STRING_BYTES",
    "MAX_TAGS",
    "check_match_limits",
    "scan_match_limits",
    "wire_match_id",
]

# One .krec frame's payload (a serialized Match). A 28-deal match with think times and
# metadata is about 10 KiB; the bound leaves room for long names and tags.
MAX_FRAME_BYTES = 1 << 20

# One JSON record (a line of JSON Lines, or one match of a JSON document). Card names and
# keys make the JSON form a few times larger than the frame.
MAX_JSON_LINE_BYTES = 4 << 20

# Nesting depth of a JSON record (a match is 4 levels deep; more is hostile).
MAX_JSON_DEPTH = 32

MAX_DEALS = 256  # deals in one match (and a ruleset's deal_count)
MAX_PLAYS = 104  # card bytes in one deal's plays (52 are legal; the rest is a finding)
MAX_HAND_BYTES = 104  # card bytes in one deal's hands (52 are legal)
MAX_PLAYERS = 16  # players listed in one match (4 are legal)
MAX_TAGS = 64  # metadata tags of one match
MAX_STRING_BYTES = 1024  # any one string: ids, names, event, site, tag keys and values
MAX_SCORES = 16  # claimed scores of a deal, claimed totals of a match (4 are legal)
MAX_FIXED_ORDER = 256  # contracts in a ruleset's fixed order


# -- the checks -------------------------------------------------------------------------
#
# Both checks gather the same tally (counts, and the largest size of each kind of string)
# and hand it to ``_verdict``, which names the first bound exceeded in one fixed order: the
# match's strings, its metadata, tags, players, ruleset, deals (in record order; within a
# deal hands, plays, think times, auto-plays, scores) and claimed totals. So the wire scan
# of a serialized Match and the check of its decoded form give the same sentence. The wire
# scan counts what is on the wire: a field repeated against the schema (say match_id twice,
# or a tag key twice, which a decoder reduces to one) counts every time, never less.

_STRINGS = ("match_id", "status_reason")
_METADATA_STRINGS = ("event", "site", "client_name", "client_version")
_PLAYER_STRINGS = ("id", "name", "seat_name")
_CONTRACT_SETS = ("fixed_order", "heart_lead_ban", "withholding", "void_discard", "early_end")


class _Tally:
    """What a Match holds, as far as the bounds go."""

    def __init__(self) -> None:
        self.strings = dict.fromkeys((*_STRINGS, *_METADATA_STRINGS), 0)  # longest, bytes
        self.tags = 0
        self.tag_key = 0
        self.tag_value = 0
        self.players = 0
        self.player_problem: str | None = None  # of the first player over a bound
        self.preset = 0
        self.deal_count = 0
        self.contract_sets = dict.fromkeys(_CONTRACT_SETS, 0)
        self.deals = 0
        self.deal_problem: str | None = None  # of the first deal over a bound
        self.totals = 0


def _player_problem(number: int, sizes: tuple[int, int, int]) -> str | None:
    for what, size in zip(_PLAYER_STRINGS, sizes, strict=True):
        if size > MAX_STRING_BYTES:
            return (
                f"player #{number}'s {what} is {size} bytes long; "
                f"at most {MAX_STRING_BYTES} are allowed"
            )
    return None


def _deal_problem(number: int, sizes: tuple[int, int, int, int, int]) -> str | None:
    hands, plays, think, auto, scores = sizes
    if hands > MAX_HAND_BYTES:
        return f"deal #{number} has {hands} hand bytes; at most {MAX_HAND_BYTES} are allowed"
    if plays > MAX_PLAYS:
        return f"deal #{number} has {plays} play bytes; at most {MAX_PLAYS} are allowed"
    if think > MAX_PLAYS:
        return f"deal #{number} has {think} think times; at most {MAX_PLAYS} are allowed"
    if auto > MAX_PLAYS:
        return f"deal #{number} has {auto} auto-play marks; at most {MAX_PLAYS} are allowed"
    if scores > MAX_SCORES:
        return f"deal #{number} claims {scores} scores; at most {MAX_SCORES} are allowed"
    return None


def _verdict(t: _Tally) -> str | None:
    """The first bound the tally exceeds, as a sentence; None when it keeps them all."""
    for what in _STRINGS:
        if t.strings[what] > MAX_STRING_BYTES:
            return (
                f"the match's {what} is {t.strings[what]} bytes long; "
                f"at most {MAX_STRING_BYTES} are allowed"
            )
    for what in _METADATA_STRINGS:
        if t.strings[what] > MAX_STRING_BYTES:
            return (
                f"the metadata's {what} is {t.strings[what]} bytes long; "
                f"at most {MAX_STRING_BYTES} are allowed"
            )
    if t.tags > MAX_TAGS:
        return f"the match holds {t.tags} tags; at most {MAX_TAGS} are allowed"
    for what, size in (("key", t.tag_key), ("value", t.tag_value)):
        if size > MAX_STRING_BYTES:
            return f"a tag {what} is {size} bytes long; at most {MAX_STRING_BYTES} are allowed"
    if t.players > MAX_PLAYERS:
        return f"the match lists {t.players} players; at most {MAX_PLAYERS} are allowed"
    if t.player_problem is not None:
        return t.player_problem
    if t.preset > MAX_STRING_BYTES:
        return (
            f"the ruleset's preset is {t.preset} bytes long; at most {MAX_STRING_BYTES} are allowed"
        )
    if t.deal_count > MAX_DEALS:
        return f"the ruleset's deal_count is {t.deal_count}; at most {MAX_DEALS} are allowed"
    for what, count in t.contract_sets.items():
        if count > MAX_FIXED_ORDER:
            return (
                f"the ruleset's {what} lists {count} contracts; "
                f"at most {MAX_FIXED_ORDER} are allowed"
            )
    if t.deals > MAX_DEALS:
        return f"the match holds {t.deals} deals; at most {MAX_DEALS} are allowed"
    if t.deal_problem is not None:
        return t.deal_problem
    if t.totals > MAX_SCORES:
        return f"the match claims {t.totals} totals; at most {MAX_SCORES} are allowed"
    return None


def check_match_limits(match: pb.Match) -> str | None:
    """The first bound a decoded ``kingrec.v1.Match`` exceeds, as a sentence, or None.

    For records that arrive decoded (JSON, whose size the line cap bounds); for a .krec
    frame use ``scan_match_limits`` on its bytes, before decoding.
    """
    t = _Tally()
    for what in _STRINGS:
        t.strings[what] = len(getattr(match, what).encode())
    meta = match.metadata
    for what in _METADATA_STRINGS:
        t.strings[what] = len(getattr(meta, what).encode())
    t.tags = len(meta.tags)
    for key, value in meta.tags.items():
        t.tag_key = max(t.tag_key, len(key.encode()))
        t.tag_value = max(t.tag_value, len(value.encode()))
    t.players = len(match.players)
    for number, p in enumerate(match.players, 1):
        sizes = (len(p.id.encode()), len(p.name.encode()), len(p.seat_name.encode()))
        t.player_problem = _player_problem(number, sizes)
        if t.player_problem is not None:
            break
    rules = match.ruleset
    t.preset = len(rules.preset.encode())
    t.deal_count = rules.deal_count
    for what in _CONTRACT_SETS:
        t.contract_sets[what] = len(getattr(rules, what).contracts)
    t.deals = len(match.deals)
    for number, d in enumerate(match.deals, 1):
        counts = (len(d.think_ms), len(d.auto_plays), len(d.claimed_scores))
        t.deal_problem = _deal_problem(number, (len(d.hands), len(d.plays), *counts))
        if t.deal_problem is not None:
            break
    t.totals = len(match.claimed_totals)
    return _verdict(t)


# -- the wire scan ------------------------------------------------------------------------
#
# A serialized Match is walked field by field without building any Python object for it:
# tags and lengths are read, known fields measured, everything else skipped by wire type
# (unknown fields are allowed: newer writers add them). Bytes that are no protobuf message
# raise _Malformed, and the scan then answers None: the decoder reports those itself.


class _Malformed(Exception):
    """The bytes are no valid protobuf encoding."""


_MAX_DEPTH = 100  # nested messages and groups the decoder (upb) accepts
_OVERLONG_VARINT = re.compile(rb"[\x80-\xff]{10}")  # a varint of more than ten bytes
_LOW_BYTES = bytes(range(0x80))  # a varint's last byte
_COUNT_WINDOW = 1 << 16

# Tags (field number << 3 | wire type) of the fields the bounds look at.
_VARINT, _I64, _LEN, _SGROUP, _EGROUP, _I32 = range(6)


def _tag(field: int, wire: int) -> int:
    return field << 3 | wire


def _varint(buf: bytes, i: int, end: int) -> tuple[int, int]:
    """The varint at ``buf[i]`` and the position after it."""
    value = shift = 0
    while i < end:
        byte = buf[i]
        i += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, i
        shift += 7
        if shift == 70:
            break
    raise _Malformed


def _read_tag(buf: bytes, i: int, end: int) -> tuple[int, int]:
    byte = buf[i]
    tag, i = (byte, i + 1) if byte < 0x80 else _varint(buf, i, end)
    if tag >> 3 == 0 or tag > 0xFFFFFFFF:
        raise _Malformed
    return tag, i


def _read_len(buf: bytes, i: int, end: int) -> tuple[int, int]:
    """A length-delimited field's start and end, from the length at ``buf[i]``."""
    if i >= end:
        raise _Malformed
    byte = buf[i]
    size, i = (byte, i + 1) if byte < 0x80 else _varint(buf, i, end)
    if size > end - i:
        raise _Malformed
    return i, i + size


def _skip(buf: bytes, i: int, end: int, tag: int, depth: int) -> int:
    """The position after the value of a field with ``tag`` starting at ``buf[i]``."""
    wire = tag & 7
    if wire == _VARINT:
        return _varint(buf, i, end)[1]
    if wire == _LEN:
        return _read_len(buf, i, end)[1]
    if wire in (_I64, _I32):
        i += 8 if wire == _I64 else 4
        if i > end:
            raise _Malformed
        return i
    if wire == _SGROUP:
        if depth > _MAX_DEPTH:
            raise _Malformed
        while i < end:
            inner, i = _read_tag(buf, i, end)
            if inner & 7 == _EGROUP:
                if inner >> 3 != tag >> 3:
                    raise _Malformed
                return i
            i = _skip(buf, i, end, inner, depth + 1)
    raise _Malformed  # an end group without a start, wire types 6 and 7, or a cut group


def _count_varints(buf: bytes, start: int, stop: int) -> int:
    """How many varints a packed field holds (each ends with a byte below 0x80)."""
    if start == stop:
        return 0
    if buf[stop - 1] >= 0x80 or _OVERLONG_VARINT.search(buf, start, stop):
        raise _Malformed
    count = 0
    for at in range(start, stop, _COUNT_WINDOW):  # bounded slices: O(1) memory
        window = buf[at : min(stop, at + _COUNT_WINDOW)]
        count += len(window) - len(window.translate(None, _LOW_BYTES))
    return count


def _repeated_count(buf: bytes, i: int, end: int, tag: int) -> tuple[int, int]:
    """(elements, position after) of one chunk of a repeated varint field, packed or not."""
    if tag & 7 == _LEN:
        start, stop = _read_len(buf, i, end)
        return _count_varints(buf, start, stop), stop
    return 1, _varint(buf, i, end)[1]


_METADATA_STRING_TAGS = {
    _tag(n, _LEN): what for n, what in zip((1, 2, 4, 5), _METADATA_STRINGS, strict=True)
}
_PLAYER_STRING_TAGS = {_tag(1, _LEN): 0, _tag(2, _LEN): 1, _tag(4, _LEN): 2}  # id, name, seat


def _scan_metadata(buf: bytes, i: int, end: int, t: _Tally) -> None:
    while i < end:
        tag, i = _read_tag(buf, i, end)
        if tag in _METADATA_STRING_TAGS:
            start, i = _read_len(buf, i, end)
            what = _METADATA_STRING_TAGS[tag]
            t.strings[what] = max(t.strings[what], i - start)
        elif tag == _tag(6, _LEN):  # a tags entry: key = 1, value = 2
            j, i = _read_len(buf, i, end)
            t.tags += 1
            while j < i:
                inner, j = _read_tag(buf, j, i)
                if inner == _tag(1, _LEN) or inner == _tag(2, _LEN):
                    start, j = _read_len(buf, j, i)
                    if inner == _tag(1, _LEN):
                        t.tag_key = max(t.tag_key, j - start)
                    else:
                        t.tag_value = max(t.tag_value, j - start)
                else:
                    j = _skip(buf, j, i, inner, 3)
        else:
            i = _skip(buf, i, end, tag, 2)


def _scan_player(buf: bytes, i: int, end: int) -> tuple[int, int, int]:
    sizes = [0, 0, 0]
    while i < end:
        tag, i = _read_tag(buf, i, end)
        slot = _PLAYER_STRING_TAGS.get(tag)
        if slot is None:
            i = _skip(buf, i, end, tag, 2)
            continue
        start, i = _read_len(buf, i, end)
        sizes[slot] = max(sizes[slot], i - start)
    return sizes[0], sizes[1], sizes[2]


_CONTRACT_SET_TAGS = {
    _tag(n, _LEN): what for n, what in zip((8, 16, 17, 18, 20), _CONTRACT_SETS, strict=True)
}


def _scan_ruleset(buf: bytes, i: int, end: int, t: _Tally) -> None:
    while i < end:
        tag = buf[i]
        if 8 <= tag < 0x80:
            i += 1
        else:
            tag, i = _read_tag(buf, i, end)
        if tag & 7 == _VARINT and tag != _tag(3, _VARINT):  # the many flags and numbers
            if i < end and buf[i] < 0x80:
                i += 1
            else:
                i = _varint(buf, i, end)[1]
        elif tag == _tag(1, _LEN):
            start, i = _read_len(buf, i, end)
            t.preset = max(t.preset, i - start)
        elif tag == _tag(3, _VARINT):
            value, i = _varint(buf, i, end)
            t.deal_count = max(t.deal_count, value & 0xFFFFFFFF)  # a uint32 keeps 32 bits
        elif tag in _CONTRACT_SET_TAGS:
            j, i = _read_len(buf, i, end)
            what = _CONTRACT_SET_TAGS[tag]
            while j < i:
                inner, j = _read_tag(buf, j, i)
                if inner == _tag(1, _LEN) or inner == _tag(1, _VARINT):
                    count, j = _repeated_count(buf, j, i, inner)
                    t.contract_sets[what] += count
                else:
                    j = _skip(buf, j, i, inner, 3)
        else:
            i = _skip(buf, i, end, tag, 2)


_DEAL_BYTES = {_tag(6, _LEN): 0, _tag(7, _LEN): 1}  # hands, plays
_DEAL_COUNTS = {  # think_ms, auto_plays, claimed_scores, packed or not
    _tag(n, wire): slot for n, slot in ((8, 2), (9, 3), (12, 4)) for wire in (_VARINT, _LEN)
}


def _scan_deal(buf: bytes, i: int, end: int) -> tuple[int, int, int, int, int]:
    # The hot loop of a normal match: one-byte tags, varints and lengths are read inline.
    sizes = [0, 0, 0, 0, 0]  # hands, plays, think times, auto-plays, scores
    while i < end:
        tag = buf[i]
        if 8 <= tag < 0x80:
            i += 1
        else:
            tag, i = _read_tag(buf, i, end)
        if tag & 7 == _VARINT and tag not in _DEAL_COUNTS:
            if i < end and buf[i] < 0x80:
                i += 1
            else:
                i = _varint(buf, i, end)[1]
            continue
        slot = _DEAL_BYTES.get(tag)
        if slot is not None:
            start, i = _read_len(buf, i, end)
            sizes[slot] = max(sizes[slot], i - start)
            continue
        slot = _DEAL_COUNTS.get(tag)
        if slot is not None:
            count, i = _repeated_count(buf, i, end, tag)
            sizes[slot] += count
            continue
        i = _skip(buf, i, end, tag, 2)
    return sizes[0], sizes[1], sizes[2], sizes[3], sizes[4]


def scan_match_limits(payload: bytes) -> str | None:
    """The first bound a serialized ``kingrec.v1.Match`` exceeds, as a sentence, or None.

    Reads the protobuf wire format without decoding it: time linear in the payload and
    constant memory, whatever it claims to hold. None also when the bytes are no valid
    protobuf encoding: decoding them then fails and says so. ``check_match_limits`` gives
    the same answer for the decoded Match.
    """
    t = _Tally()
    buf, i, end = payload, 0, len(payload)
    try:
        while i < end:
            tag, i = _read_tag(buf, i, end)
            if tag == _tag(8, _LEN):  # a deal: the bulk of a match, so the fast path
                start, i = _read_len(buf, i, end)
                t.deals += 1
                if start < i and t.deal_problem is None:
                    t.deal_problem = _deal_problem(t.deals, _scan_deal(buf, start, i))
                elif start < i:
                    _scan_deal(buf, start, i)  # only to find malformed bytes
            elif tag == _tag(2, _LEN) or tag == _tag(7, _LEN):
                start, i = _read_len(buf, i, end)
                what = "match_id" if tag == _tag(2, _LEN) else "status_reason"
                t.strings[what] = max(t.strings[what], i - start)
            elif tag == _tag(3, _LEN):
                start, i = _read_len(buf, i, end)
                _scan_metadata(buf, start, i, t)
            elif tag == _tag(4, _LEN):
                start, i = _read_len(buf, i, end)
                t.players += 1
                sizes = _scan_player(buf, start, i)
                if t.player_problem is None:
                    t.player_problem = _player_problem(t.players, sizes)
            elif tag == _tag(5, _LEN):
                start, i = _read_len(buf, i, end)
                _scan_ruleset(buf, start, i, t)
            elif tag == _tag(9, _LEN) or tag == _tag(9, _VARINT):
                count, i = _repeated_count(buf, i, end, tag)
                t.totals += count
            else:
                i = _skip(buf, i, end, tag, 1)
    except _Malformed:
        return None
    return _verdict(t)


def wire_match_id(payload: bytes) -> str:
    """The ``match_id`` of a serialized Match without decoding it ("" when it has none or the
    bytes are malformed), cut to ``MAX_STRING_BYTES``: to name a record over a bound."""
    buf, i, end = payload, 0, len(payload)
    found = b""
    try:
        while i < end:
            tag, i = _read_tag(buf, i, end)
            if tag == _tag(2, _LEN):
                start, i = _read_len(buf, i, end)
                found = buf[start : min(i, start + MAX_STRING_BYTES)]
            else:
                i = _skip(buf, i, end, tag, 1)
    except _Malformed:
        pass
    return found.decode("utf-8", errors="replace")
