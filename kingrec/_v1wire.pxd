# cython: language_level=3
# kingrec.v1 messages read in place from their wire bytes, for the compiled readers (the
# fast checker, the store's column builder): the one place in C that knows the schema's field
# numbers. record.proto is the authority; tests hold the readers to the Python parser.

from libc.stdint cimport uint64_t

from kingrec._wire cimport WT_LEN, WT_VARINT, enum32, length_delimited, skip_field, tag, u32, uchar


ctypedef struct DealMsg:
    uint64_t number
    uint64_t dealer
    uint64_t declarer
    uint64_t contract
    uint64_t trump
    uint64_t revoke_play
    uint64_t end
    uint64_t trump_think
    bint has_dealer
    bint has_revoke
    bint has_trump_think
    const uchar* hands
    Py_ssize_t nhands
    const uchar* plays
    Py_ssize_t nplays
    const uchar* think
    Py_ssize_t think_len
    const uchar* autos
    Py_ssize_t autos_len
    const uchar* scores
    Py_ssize_t scores_len


cdef inline bint parse_deal(const uchar* p, const uchar* end, DealMsg* d) noexcept nogil:
    cdef uint64_t field
    cdef int wt
    d.number = d.dealer = d.declarer = d.contract = d.trump = d.revoke_play = 0
    d.end = d.trump_think = 0
    d.has_dealer = d.has_revoke = d.has_trump_think = False
    d.hands = d.plays = d.think = d.autos = d.scores = NULL
    d.nhands = d.nplays = d.think_len = d.autos_len = d.scores_len = 0
    # kingrec writes a deal's fields in field order, each tag one byte: each field is tried
    # at its place first, with one compare of that byte, and whatever else the bytes hold
    # (other orders, repeats, unknown fields, wrong wire types) is read by the general loop
    # below, field by field as it would have read them all. The same fields, read the same
    # way; only the jump on the tag (a fifth of the checker's indirect mispredictions) goes.
    if p < end and p[0] == 0x08:  # 1 number
        p += 1
        if not u32(&p, end, WT_VARINT, &d.number):
            return False
    if p < end and p[0] == 0x10:  # 2 dealer
        p += 1
        if not u32(&p, end, WT_VARINT, &d.dealer):
            return False
        d.has_dealer = True
    if p < end and p[0] == 0x18:  # 3 declarer
        p += 1
        if not u32(&p, end, WT_VARINT, &d.declarer):
            return False
    if p < end and p[0] == 0x20:  # 4 contract
        p += 1
        if not enum32(&p, end, WT_VARINT, &d.contract):
            return False
    if p < end and p[0] == 0x28:  # 5 trump
        p += 1
        if not enum32(&p, end, WT_VARINT, &d.trump):
            return False
    if p < end and p[0] == 0x32:  # 6 hands
        p += 1
        if not length_delimited(&p, end, &d.hands, &d.nhands):
            return False
    if p < end and p[0] == 0x3A:  # 7 plays
        p += 1
        if not length_delimited(&p, end, &d.plays, &d.nplays):
            return False
    if p < end and p[0] == 0x42:  # 8 think times (first sight: nothing to repeat)
        p += 1
        if not length_delimited(&p, end, &d.think, &d.think_len):
            return False
    if p < end and p[0] == 0x4A:  # 9 auto plays
        p += 1
        if not length_delimited(&p, end, &d.autos, &d.autos_len):
            return False
    if p < end and p[0] == 0x50:  # 10 revoke play
        p += 1
        if not u32(&p, end, WT_VARINT, &d.revoke_play):
            return False
        d.has_revoke = True
    if p < end and p[0] == 0x58:  # 11 end
        p += 1
        if not enum32(&p, end, WT_VARINT, &d.end):
            return False
    if p < end and p[0] == 0x62:  # 12 scores
        p += 1
        if not length_delimited(&p, end, &d.scores, &d.scores_len):
            return False
    if p < end and p[0] == 0x68:  # 13 trump think time
        p += 1
        if not u32(&p, end, WT_VARINT, &d.trump_think):
            return False
        d.has_trump_think = True
    while p < end:
        if not tag(&p, end, &field, &wt):
            return False
        if field == 7:
            if wt != WT_LEN or not length_delimited(&p, end, &d.plays, &d.nplays):
                return False
        elif field == 6:
            if wt != WT_LEN or not length_delimited(&p, end, &d.hands, &d.nhands):
                return False
        # Packed repeated fields seen more than once are left to the reference.
        elif field == 8:
            if wt != WT_LEN or d.think != NULL or not length_delimited(&p, end, &d.think, &d.think_len):
                return False
        elif field == 9:
            if wt != WT_LEN or d.autos != NULL or not length_delimited(&p, end, &d.autos, &d.autos_len):
                return False
        elif field == 12:
            if wt != WT_LEN or d.scores != NULL or not length_delimited(&p, end, &d.scores, &d.scores_len):
                return False
        elif field == 1:
            if not u32(&p, end, wt, &d.number):
                return False
        elif field == 2:
            if not u32(&p, end, wt, &d.dealer):
                return False
            d.has_dealer = True
        elif field == 3:
            if not u32(&p, end, wt, &d.declarer):
                return False
        elif field == 4:
            if not enum32(&p, end, wt, &d.contract):
                return False
        elif field == 5:
            if not enum32(&p, end, wt, &d.trump):
                return False
        elif field == 10:
            if not u32(&p, end, wt, &d.revoke_play):
                return False
            d.has_revoke = True
        elif field == 11:
            if not enum32(&p, end, wt, &d.end):
                return False
        elif field == 13:
            if not u32(&p, end, wt, &d.trump_think):
                return False
            d.has_trump_think = True
        elif not skip_field(&p, end, wt):
            return False
    return True
