# cython: language_level=3
# Just enough of the protobuf wire format to read kingrec.v1 messages in place, for the
# compiled readers (_fastcheck_c, the store's column builder). Every helper returns False for
# "not certainly what the Python parser would read": malformed bytes, wire types we do not
# expect, values too big for their field (the Python parser would truncate them), groups.

from libc.stdint cimport int64_t, uint64_t
from libc.string cimport memcpy

ctypedef unsigned char uchar


cdef enum:
    WT_VARINT = 0
    WT_I64 = 1
    WT_LEN = 2
    WT_I32 = 5
    U32_MAX = 0xFFFFFFFF
    I32_MAX = 0x7FFFFFFF


cdef inline bint varint_long(const uchar** pp, const uchar* end, uint64_t* out) noexcept nogil:
    cdef const uchar* p = pp[0]
    cdef uint64_t v = 0
    cdef int shift = 0
    cdef uchar b
    while True:
        if p >= end or shift > 63:
            return False  # runs past the end, or past ten bytes
        b = p[0]
        p += 1
        v |= <uint64_t>(b & 0x7F) << shift
        if b < 0x80:
            break
        shift += 7
    pp[0] = p
    out[0] = v
    return True


cdef inline bint varint(const uchar** pp, const uchar* end, uint64_t* out) noexcept nogil:
    # In line for the one-byte varints most tags and values are.
    if pp[0] < end and pp[0][0] < 0x80:
        out[0] = pp[0][0]
        pp[0] += 1
        return True
    return varint_long(pp, end, out)


cdef extern from *:
    """
    #if defined(__SSE2__) || defined(_M_X64) || defined(_M_AMD64)
    #include <emmintrin.h>
    static inline int kr_wire_popcount(unsigned long long x) {
        x = x - ((x >> 1) & 0x5555555555555555ULL);
        x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
        x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0FULL;
        return (int)((x * 0x0101010101010101ULL) >> 56);
    }
    static inline Py_ssize_t kr_short_varints(const unsigned char *p, Py_ssize_t n,
                                              long long clock) {
        /* Bit maps of the field, one bit a byte, 16 bytes a chunk (x86: little-endian, so
           the chunks read as two words): its continuation bytes (high bit set), bytes
           above `hi`, bytes equal to `hi`, bytes whose low 7 bits are above `lo`. */
        union { unsigned short chunk[4][8]; unsigned long long w[4][2]; } maps = {{{0}}};
        unsigned long long ends[2], after[2], low_over[2], seconds, bad = 0;
        Py_ssize_t at;
        int hi, lo, drop, k, i;
        __m128i v, vhi, vlo;
        if (n < 16 || n > 104 || clock < 127 || p[n - 1] >= 0x80)
            return -1;  /* (a field ending inside a varint is for the careful decoder) */
        /* a two-byte varint is lo7(first) + 128 * second: above the clock when its second
           byte is above clock >> 7, or equal to it with lo7(first) above clock & 127 */
        hi = clock >= 16383 ? 127 : (int)(clock >> 7);
        lo = clock >= 16383 ? 127 : (int)(clock & 127);
        vhi = _mm_set1_epi8((char)hi);
        vlo = _mm_set1_epi8((char)lo);
        for (at = 0, k = 0; at < n; at += 16, k++) {
            drop = 0;  /* the last chunk: the field's last 16 bytes, less those counted */
            if (at + 16 > n) {
                drop = (int)(at + 16 - n);
                v = _mm_loadu_si128((const __m128i *)(p + n - 16));
            } else {
                v = _mm_loadu_si128((const __m128i *)(p + at));
            }
            maps.chunk[0][k] = (unsigned short)((unsigned)_mm_movemask_epi8(v) >> drop);
            maps.chunk[1][k] = (unsigned short)(
                (unsigned)_mm_movemask_epi8(_mm_cmpgt_epi8(v, vhi)) >> drop);
            maps.chunk[2][k] = (unsigned short)(
                (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, vhi)) >> drop);
            maps.chunk[3][k] = (unsigned short)((unsigned)_mm_movemask_epi8(
                _mm_cmpgt_epi8(_mm_and_si128(v, _mm_set1_epi8(0x7F)), vlo)) >> drop);
        }
        ends[0] = ~maps.w[0][0] & (n >= 64 ? ~0ULL : (1ULL << n) - 1);
        ends[1] = ~maps.w[0][1] & (n > 64 ? (1ULL << (n - 64)) - 1 : 0);
        /* bit j of these: byte j - 1 continues a varint; its low 7 bits are above lo */
        after[0] = maps.w[0][0] << 1;
        after[1] = maps.w[0][1] << 1 | maps.w[0][0] >> 63;
        low_over[0] = maps.w[3][0] << 1;
        low_over[1] = maps.w[3][1] << 1 | maps.w[3][0] >> 63;
        for (i = 0; i < 2; i++) {
            seconds = ends[i] & after[i];  /* the last bytes of two-byte varints */
            bad |= (maps.w[0][i] & after[i])  /* a varint of three bytes or more */
                 | (seconds & (maps.w[1][i] | (maps.w[2][i] & low_over[i])));  /* over */
        }
        if (bad)
            return -1;
        return kr_wire_popcount(ends[0]) + kr_wire_popcount(ends[1]);
    }
    #else
    /* No SSE2: every think time is decoded one by one. */
    static inline Py_ssize_t kr_short_varints(const unsigned char *p, Py_ssize_t n,
                                              long long clock) {
        (void)p; (void)n; (void)clock;
        return -1;
    }
    #endif
    """
    # How many varints the packed field ``p[0:n]`` holds, when each is one or two bytes and
    # none is above ``clock`` (127 or more); -1 when not so, or not sure (then the caller
    # decodes them one by one, as it does everywhere without SSE2, and for fields under 16
    # bytes). At most 104 bytes: 52 values of two bytes.
    #
    # Sixteen bytes at a time, as bit maps of the field (one bit a byte): a varint ends at
    # each byte below 0x80, so the count is the count of clear high bits; a varint of three
    # bytes or more has two set high bits in a row; a two-byte varint above the clock is
    # told by its two bytes' compares, exactly (a think time at the clock, as an auto play
    # records, is within it).
    Py_ssize_t short_varints "kr_short_varints"(const uchar* p, Py_ssize_t n,
                                                int64_t clock) noexcept nogil


cdef inline bint tag(const uchar** pp, const uchar* end, uint64_t* field,
                      int* wt) noexcept nogil:
    cdef uint64_t tag
    cdef const uchar* start = pp[0]
    # A key of more than five bytes is refused, as protobuf's decoder (upb) refuses it:
    # otherwise the twins' verdicts on such a record would differ.
    if not varint(pp, end, &tag) or tag > U32_MAX or tag >> 3 == 0 or pp[0] - start > 5:
        return False
    field[0] = tag >> 3
    wt[0] = <int>(tag & 7)
    return True


cdef inline bint length_delimited(const uchar** pp, const uchar* end, const uchar** start,
                      Py_ssize_t* size) noexcept nogil:
    """Read a length-delimited value: its start and size; the cursor moves past it."""
    cdef uint64_t n
    cdef const uchar* at = pp[0]
    # (a length of more than five bytes is refused, as upb refuses it: see ``tag``)
    if not varint(pp, end, &n) or n > <uint64_t>(end - pp[0]) or pp[0] - at > 5:
        return False
    start[0] = pp[0]
    size[0] = <Py_ssize_t>n
    pp[0] += n
    return True


cdef inline bint skip_field(const uchar** pp, const uchar* end, int wt) noexcept nogil:
    """Skip an unknown field (from a newer writer) by its wire type; groups are refused."""
    cdef uint64_t v
    cdef const uchar* s
    cdef Py_ssize_t n
    if wt == WT_VARINT:
        return varint(pp, end, &v)
    if wt == WT_LEN:
        return length_delimited(pp, end, &s, &n)
    if wt == WT_I64:
        if end - pp[0] < 8:
            return False
        pp[0] += 8
        return True
    if wt == WT_I32:
        if end - pp[0] < 4:
            return False
        pp[0] += 4
        return True
    return False


cdef inline bint u32(const uchar** pp, const uchar* end, int wt, uint64_t* out) noexcept nogil:
    return wt == WT_VARINT and varint(pp, end, out) and out[0] <= U32_MAX


cdef inline bint enum32(const uchar** pp, const uchar* end, int wt, uint64_t* out) noexcept nogil:
    return wt == WT_VARINT and varint(pp, end, out) and out[0] <= I32_MAX


cdef inline bint utf8_ok(const uchar* s, Py_ssize_t n) noexcept nogil:
    """Strict UTF-8, as the protobuf parser demands of string fields."""
    cdef Py_ssize_t i = 0
    cdef uchar c, c1
    while i < n:
        c = s[i]
        if c < 0x80:
            i += 1
            continue
        if c < 0xC2 or c > 0xF4:
            return False
        if c < 0xE0:
            if i + 1 >= n or s[i + 1] & 0xC0 != 0x80:
                return False
            i += 2
            continue
        if i + 2 >= n:
            return False
        c1 = s[i + 1]
        if c1 & 0xC0 != 0x80 or s[i + 2] & 0xC0 != 0x80:
            return False
        if c < 0xF0:
            if (c == 0xE0 and c1 < 0xA0) or (c == 0xED and c1 >= 0xA0):
                return False  # overlong form or surrogate
            i += 3
            continue
        if i + 3 >= n or s[i + 3] & 0xC0 != 0x80:
            return False
        if (c == 0xF0 and c1 < 0x90) or (c == 0xF4 and c1 >= 0x90):
            return False  # overlong form or beyond U+10FFFF
        i += 4
    return True


cdef inline bint string_field(const uchar** pp, const uchar* end, int wt,
                              Py_ssize_t max_bytes) noexcept nogil:
    """A string field of at most ``max_bytes`` bytes of strict UTF-8."""
    cdef const uchar* s
    cdef Py_ssize_t n
    return wt == WT_LEN and length_delimited(pp, end, &s, &n) and n <= max_bytes and utf8_ok(s, n)


cdef inline bint walk_strings(const uchar* p, const uchar* end, uint64_t string_fields,
                              uint64_t varint_fields, uint64_t* seat,
                              Py_ssize_t max_string) noexcept nogil:
    """Walk a message of strings and varints (Timestamp, map entry, Player) for parseability.

    Fields in the ``string_fields`` / ``varint_fields`` bit sets (bit = field number < 64)
    must have those types; ``seat`` receives field 3 of a Player (uint32) when not NULL.
    """
    cdef uint64_t field, v
    cdef int wt
    while p < end:
        if not tag(&p, end, &field, &wt):
            return False
        if field < 64 and string_fields >> field & 1:
            if not string_field(&p, end, wt, max_string):
                return False
        elif field < 64 and varint_fields >> field & 1:
            if wt != WT_VARINT or not varint(&p, end, &v):
                return False
            if seat != NULL and field == 3:
                if v > U32_MAX:
                    return False
                seat[0] = v
        elif not skip_field(&p, end, wt):
            return False
    return True


cdef inline bint packed_sint32(const uchar* p, const uchar* end, int64_t* out,
                         int* count) noexcept nogil:
    """Decode a packed sint32 field into ``out`` (room for 4); more than 4 values fail."""
    cdef uint64_t v
    cdef int n = 0
    while p < end:
        if not varint(&p, end, &v) or v > U32_MAX or n == 4:
            return False
        out[n] = <int64_t>(v >> 1) ^ -<int64_t>(v & 1)
        n += 1
    count[0] = n
    return True


cdef inline uint64_t _mix(uint64_t h, uint64_t w) noexcept nogil:
    h = (h ^ w) * <uint64_t>0xFF51AFD7ED558CCD
    return h ^ (h >> 32)


cdef inline uint64_t hash64(const uchar* p, Py_ssize_t n) noexcept nogil:
    """A fast 64-bit hash of a message's bytes (not cryptographic): equal records, equal keys;
    for telling the same record seen again within one run (never stored: it may change).

    Four independent lanes of 8 bytes: one lane's multiply chain ran at a fifth of the
    memory speed; four in flight at once keep the multiplier busy."""
    cdef uint64_t h0 = <uint64_t>0x9E3779B97F4A7C15 ^ <uint64_t>n, h1, h2, h3, w0, w1, w2, w3
    cdef Py_ssize_t i = 0, j
    h1 = h0 ^ <uint64_t>0x2545F4914F6CDD1D
    h2 = h0 ^ <uint64_t>0x6A09E667F3BCC908
    h3 = h0 ^ <uint64_t>0xBB67AE8584CAA73B
    while i + 32 <= n:
        memcpy(&w0, p + i, 8)
        memcpy(&w1, p + i + 8, 8)
        memcpy(&w2, p + i + 16, 8)
        memcpy(&w3, p + i + 24, 8)
        h0 = _mix(h0, w0)
        h1 = _mix(h1, w1)
        h2 = _mix(h2, w2)
        h3 = _mix(h3, w3)
        i += 32
    h0 = _mix(_mix(_mix(h0, h1), h2), h3)
    while i + 8 <= n:
        memcpy(&w0, p + i, 8)
        h0 = _mix(h0, w0)
        i += 8
    if i < n:
        w0 = 0
        for j in range(n - i):
            w0 |= <uint64_t>p[i + j] << (8 * j)
        h0 = _mix(h0, w0)
    h0 ^= h0 >> 33
    h0 *= <uint64_t>0xC4CEB9FE1A85EC53
    h0 ^= h0 >> 33
    return h0
