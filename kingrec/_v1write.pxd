# cython: language_level=3
# kingrec.v1 messages written straight to their wire bytes, for the compiled simulator: the
# counterpart of _v1wire.pxd (which reads them in place). The bytes are what protobuf's own
# serializer writes for the same message (deterministic or not: a Deal has no map), field by
# field in number order, proto3 zero values left out, packed repeated fields; record.proto is
# the authority and tests/test_simulate_bytes.py holds this to SerializeToString().

from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t
from libc.string cimport memcpy

ctypedef unsigned char uchar

cdef enum:
    # Most bytes one Deal can take: ten small varint fields, hands and plays (2 + 52 each),
    # 52 think times of up to five bytes, 52 one-byte auto plays, four sint32 scores.
    DEAL_MAX_BYTES = 512


ctypedef struct DealRecord:
    # A Deal as the record holds it (proto enum values, not engine codes).
    uint32_t number
    uint32_t dealer
    uint32_t declarer
    uint32_t contract
    uint32_t trump  # Suit: 0 (unspecified) for a penalty deal
    uint32_t end  # DealEnd
    uint32_t trump_think_ms
    bint has_dealer
    bint has_trump_think
    const uchar* hands
    int nhands
    const uchar* plays
    int nplays
    const uint32_t* think_ms
    int nthink
    const uint32_t* auto_plays
    int nauto
    const int32_t* scores
    int nscores


cdef inline uchar* put_varint(uchar* p, uint64_t v) noexcept nogil:
    while v >= 0x80:
        p[0] = <uchar>(v | 0x80)
        v >>= 7
        p += 1
    p[0] = <uchar>v
    return p + 1


cdef inline uint32_t zigzag32(int32_t v) noexcept nogil:
    return (<uint32_t>v << 1) ^ <uint32_t>(v >> 31)


cdef inline int varint_size(uint64_t v) noexcept nogil:
    cdef int n = 1
    while v >= 0x80:
        v >>= 7
        n += 1
    return n


cdef inline uchar* put_uint(uchar* p, uchar tag, uint64_t v) noexcept nogil:
    """A varint field (tag < 128), left out when zero (proto3's implicit presence)."""
    if v == 0:
        return p
    p[0] = tag
    return put_varint(p + 1, v)


cdef inline uchar* put_bytes(uchar* p, uchar tag, const uchar* data, int n) noexcept nogil:
    if n == 0:
        return p
    p[0] = tag
    p = put_varint(p + 1, <uint64_t>n)
    memcpy(p, data, n)
    return p + n


cdef inline uchar* put_packed_u32(uchar* p, uchar tag, const uint32_t* v, int n) noexcept nogil:
    cdef int i, size = 0
    if n == 0:
        return p
    for i in range(n):
        size += varint_size(v[i])
    p[0] = tag
    p = put_varint(p + 1, <uint64_t>size)
    for i in range(n):
        p = put_varint(p, v[i])
    return p


cdef inline uchar* put_packed_s32(uchar* p, uchar tag, const int32_t* v, int n) noexcept nogil:
    cdef int i, size = 0
    if n == 0:
        return p
    for i in range(n):
        size += varint_size(zigzag32(v[i]))
    p[0] = tag
    p = put_varint(p + 1, <uint64_t>size)
    for i in range(n):
        p = put_varint(p, zigzag32(v[i]))
    return p


cdef inline uchar* put_deal(uchar* p, const DealRecord* d) noexcept nogil:
    """``Deal`` (record.proto), its bytes without a tag or length; at most DEAL_MAX_BYTES."""
    p = put_uint(p, 0x08, d.number)  # 1 number
    if d.has_dealer:  # 2 dealer: optional, so written even when 0
        p[0] = 0x10
        p = put_varint(p + 1, d.dealer)
    p = put_uint(p, 0x18, d.declarer)  # 3
    p = put_uint(p, 0x20, d.contract)  # 4
    p = put_uint(p, 0x28, d.trump)  # 5
    p = put_bytes(p, 0x32, d.hands, d.nhands)  # 6
    p = put_bytes(p, 0x3A, d.plays, d.nplays)  # 7
    p = put_packed_u32(p, 0x42, d.think_ms, d.nthink)  # 8
    p = put_packed_u32(p, 0x4A, d.auto_plays, d.nauto)  # 9
    # 10 revoke_play: the compiled simulator plays no revokes
    p = put_uint(p, 0x58, d.end)  # 11
    p = put_packed_s32(p, 0x62, d.scores, d.nscores)  # 12
    if d.has_trump_think:  # 13 trump_think_ms: optional
        p[0] = 0x68
        p = put_varint(p + 1, d.trump_think_ms)
    return p


cdef inline uchar* put_match_deal(uchar* p, const DealRecord* d) noexcept nogil:
    """One entry of ``Match.deals`` (field 8): tag, length, the deal."""
    cdef uchar body[DEAL_MAX_BYTES]
    cdef uchar* end = put_deal(body, d)
    return put_bytes(p, 0x42, body, <int>(end - body))
