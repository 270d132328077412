# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: initializedcheck=False, overflowcheck=False, embedsignature=False
"""The wire-level checker: is a serialized Match certainly clean?

``MatchChecker`` walks a serialized ``kingrec.v1.Match`` in its protobuf wire format, replays
every deal with the compiled core (``_core.pxd``) and says whether the reference validator
(``kingrec.validator.validate_match``) would report no finding at all. Anything it does not
fully understand answers "not certainly clean", and the caller (``kingrec.fastcheck``) falls
back to the reference validator, so reports never differ. The checks here mirror the
validator's, one for one; the rules themselves (legal cards, tricks, the schedule, scores)
are the core's.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_CheckExact, PyBytes_FromStringAndSize
from cpython.bytes cimport PyBytes_GET_SIZE
from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from libc.stdint cimport int64_t, uint64_t
from cpython.ref cimport PyObject, Py_XDECREF
from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.string cimport memcmp, memcpy

from kingrec cimport _core as core
from kingrec._core cimport CoreRules, DealState, Tally, uchar
from kingrec._busguard cimport guarded
from kingrec._framing cimport CrcFn, FRAME_HEADER, le32, verified_crc, whole_frame
from kingrec._v1wire cimport DealMsg, parse_deal
from kingrec._wire cimport (
    I32_MAX, U32_MAX, WT_LEN, WT_VARINT, enum32, length_delimited, packed_sint32, skip_field,
    hash64, short_varints, string_field, tag, u32, utf8_ok, varint, varint_long, walk_strings,
)

from kingrec.checksum import crc32

__all__ = [
    "MatchChecker", "content_key", "count_short_varints", "crc_in_c", "request_frames",
    "use_crc_in_c",
]

cdef object _payload_crc = crc32
# The payload CRC called from C (``_framing.verified_crc``), NULL: ``_payload_crc`` instead.
cdef CrcFn _found_crc = verified_crc(crc32)
cdef CrcFn _c_crc = _found_crc


def crc_in_c():
    """Whether ``check_frames`` checksums payloads in C (libdeflate found and verified)."""
    return _c_crc != NULL


def use_crc_in_c(bint wanted):
    """Checksum payloads in C when found (True, the default), or always with a Python call
    to ``kingrec.checksum.crc32`` (False: the fallback, for the tests). Returns the old
    setting as ``crc_in_c`` gave it."""
    global _c_crc
    was = _c_crc != NULL
    _c_crc = _found_crc if wanted else NULL
    return was

# kingrec.limits (tests/test_fastcheck.py holds them to the Python values).
cdef enum:
    MAX_STRING_BYTES = 1024
    MAX_TAGS = 64
    MAX_PLAYS = 104

LIMITS = {"MAX_STRING_BYTES": MAX_STRING_BYTES, "MAX_TAGS": MAX_TAGS, "MAX_PLAYS": MAX_PLAYS}


# ---------------------------------------------------------------------------- the match

cdef bint _walk_metadata(const uchar* p, const uchar* end) noexcept nogil:
    """MatchMetadata: strings 1 2 4 5, Timestamp 3, map<string,string> 6, enum 7."""
    cdef uint64_t field, v
    cdef int wt, tags = 0
    cdef const uchar* s
    cdef Py_ssize_t n
    while p < end:
        if not tag(&p, end, &field, &wt):
            return False
        if field == 1 or field == 2 or field == 4 or field == 5:
            if not string_field(&p, end, wt, MAX_STRING_BYTES):
                return False
        elif field == 3:  # Timestamp: int64 seconds = 1, int32 nanos = 2
            if wt != WT_LEN or not length_delimited(&p, end, &s, &n):
                return False
            if not walk_strings(s, s + n, 0, (1 << 1) | (1 << 2), NULL, MAX_STRING_BYTES):
                return False
        elif field == 6:  # map entry: string key = 1, string value = 2
            tags += 1
            if wt != WT_LEN or tags > MAX_TAGS or not length_delimited(&p, end, &s, &n):
                return False
            if not walk_strings(s, s + n, (1 << 1) | (1 << 2), 0, NULL, MAX_STRING_BYTES):
                return False
        elif field == 7:
            if wt != WT_VARINT or not varint(&p, end, &v):
                return False
        elif not skip_field(&p, end, wt):
            return False
    return True


# ---------------------------------------------------------------------------- mapped frames

cdef extern from *:
    """
    /* A run of frames judged where they lie (check_frames), a body of the SIGBUS guard
       (_busguard.pxd). Its progress is volatile: after a SIGBUS (a mapped file cut short
       under the run) it is read back as it stood. */
    typedef struct {
        void* checker;
        const unsigned char* data;
        Py_ssize_t end, max_payload, max_frames;
        volatile Py_ssize_t pos, n, clean, deals;
        void* whole;  /* the buffer as a memoryview, for the checksum's fallback */
        void* dirty;
        void* payloads;
        uint64_t* offsets;
        uint64_t* keys;
        PyObject* volatile pending;  /* a payload being copied out: dropped after a SIGBUS */
    } kr_run;
    """
    ctypedef struct FrameRun "kr_run":
        void* checker
        const uchar* data
        Py_ssize_t end, max_payload, max_frames
        Py_ssize_t pos, n, clean, deals
        void* whole
        void* dirty
        void* payloads
        uint64_t* offsets
        uint64_t* keys
        PyObject* pending


cdef int _frames_body(void* run) except -1:
    """The frames of a run in a row, judged where they lie (``MatchChecker.check_frames``).

    Every read of a frame's bytes comes before the run's lists and counts take that frame:
    stopped by a SIGBUS anywhere (``guarded``), the run stands as it was after its last whole
    frame."""
    cdef FrameRun* r = <FrameRun*>run
    cdef MatchChecker checker = <MatchChecker>r.checker
    cdef const uchar* data = r.data
    cdef const uchar* head
    cdef Py_ssize_t length, found
    cdef MatchTop top
    cdef bytes payload
    while r.n < r.max_frames:
        length = whole_frame(data, r.pos, r.end, r.max_payload)
        if length < 0:
            break
        head = data + r.pos
        if _c_crc != NULL:
            if _c_crc(0, head + FRAME_HEADER, <size_t>length) != le32(head + 8):
                break
        elif _payload_crc((<object>r.whole)[r.pos + FRAME_HEADER:r.pos + FRAME_HEADER + length]) \
                != le32(head + 8):
            break  # (never for a mapping: check_frames makes no Python call under the guard)
        found = checker._clean_deals_at(head + FRAME_HEADER, length, &top)
        if found < 0:
            payload = PyBytes_FromStringAndSize(NULL, length)
            r.pending = <PyObject*>payload
            memcpy(PyBytes_AS_STRING(payload), head + FRAME_HEADER, length)
            r.pending = NULL
            (<list>r.dirty).append(r.n)
            (<list>r.payloads).append(payload)
        else:
            r.keys[r.clean] = hash64(head + FRAME_HEADER, length)
            r.clean += 1
            r.deals += found
        r.offsets[r.n] = <uint64_t>r.pos
        r.n += 1
        r.pos += FRAME_HEADER + length
    return 0


# ---------------------------------------------------------------------------- the match check

cdef class _Rules:
    """A resolved ruleset as the core reads it (``Ruleset.core_params``), converted once."""

    cdef CoreRules r

    def __init__(self, dict params):
        self.r = params
        if self.r.schedule == core.FIXED and self.r.nfixed <= 0:
            raise ValueError("a fixed schedule without an order")


cdef struct MatchTop:
    uint64_t format_version
    const uchar* match_id
    Py_ssize_t match_id_len
    const uchar* ruleset
    Py_ssize_t ruleset_len
    int rulesets
    uint64_t status
    int seats  # bit s: a player sits at seat s
    int players
    Py_ssize_t deals
    int64_t claimed[4]
    int nclaimed
    int claimed_chunks


cdef struct MatchState:
    Tally tally  # the schedule so far
    int64_t totals[4]
    bint whole  # no deal stopped by a revoke or left unfinished
    int first  # seat that must declare deal 1, -1: not yet known


cdef bint _scan_top(const uchar* p, const uchar* end, MatchTop* top) noexcept nogil:
    """First pass over a Match: everything but the deals, which are only counted."""
    cdef uint64_t field, seat
    cdef int wt
    cdef const uchar* s
    cdef Py_ssize_t n
    while p < end:
        if not tag(&p, end, &field, &wt):
            return False
        if field == 8:
            if wt != WT_LEN or not length_delimited(&p, end, &s, &n):
                return False
            top.deals += 1
        elif field == 1:
            if not u32(&p, end, wt, &top.format_version):
                return False
        elif field == 2:
            if wt != WT_LEN or not length_delimited(&p, end, &top.match_id, &top.match_id_len):
                return False
            if top.match_id_len > MAX_STRING_BYTES or not utf8_ok(top.match_id, top.match_id_len):
                return False
        elif field == 3:
            if wt != WT_LEN or not length_delimited(&p, end, &s, &n) or not _walk_metadata(s, s + n):
                return False
        elif field == 4:  # Player: strings id 1, name 2, seat_name 4; uint32 seat 3
            seat = 0
            if wt != WT_LEN or not length_delimited(&p, end, &s, &n):
                return False
            if not walk_strings(s, s + n, (1 << 1) | (1 << 2) | (1 << 4), 1 << 3, &seat,
                                MAX_STRING_BYTES):
                return False
            if seat > 3 or top.seats >> seat & 1:
                return False
            top.seats |= 1 << seat
            top.players += 1
        elif field == 5:
            if wt != WT_LEN or not length_delimited(&p, end, &top.ruleset, &top.ruleset_len):
                return False
            top.rulesets += 1
        elif field == 6:
            if not enum32(&p, end, wt, &top.status):
                return False
        elif field == 7:
            if not string_field(&p, end, wt, MAX_STRING_BYTES):
                return False
        elif field == 9:
            if wt != WT_LEN or not length_delimited(&p, end, &s, &n):
                return False  # unpacked repeated values: left to the reference
            top.claimed_chunks += 1
            if not packed_sint32(s, s + n, top.claimed, &top.nclaimed):
                return False
        elif not skip_field(&p, end, wt):
            return False
    return True


cdef bint _check_metadata(const DealMsg* d, const CoreRules* r) noexcept nogil:
    """Think times, auto plays, the revoke mark and the clocks give no finding
    (validator check_play_metadata)."""
    cdef uint64_t auto_mask = 0, v
    cdef Py_ssize_t nthink = 0, nauto = 0
    cdef const uchar* q
    cdef bint counted = False
    if d.autos != NULL:
        q = d.autos
        while q < d.autos + d.autos_len:
            if not varint(&q, d.autos + d.autos_len, &v) or v >= <uint64_t>d.nplays:
                return False
            nauto += 1
            if nauto > MAX_PLAYS:
                return False
            auto_mask |= <uint64_t>1 << v
    if d.think != NULL and r.play_timeout >= 127:
        # Think times of one or two bytes within the clock (most are) need no decoding:
        # their count alone is checked.
        nthink = short_varints(d.think, d.think_len, r.play_timeout)
        if nthink >= 0:
            if nthink and nthink != d.nplays:
                return False
            counted = True
    if d.think != NULL and not counted:
        nthink = 0
        # One pass: a count other than 0 or one per play fails below, so judging the
        # clock on the way is only ever done when the validator would do it too.
        q = d.think
        while q < d.think + d.think_len:
            if q[0] < 0x80:  # think times are one or two bytes: decode those in line
                v = q[0]
                q += 1
            elif q + 1 < d.think + d.think_len and q[1] < 0x80:
                v = (q[0] & 0x7F) | (<uint64_t>q[1] << 7)
                q += 2
            elif not varint_long(&q, d.think + d.think_len, &v):
                return False
            if v > U32_MAX or nthink >= 52:
                return False
            if <int64_t>v > r.play_timeout and not auto_mask >> nthink & 1:
                return False
            nthink += 1
        if nthink and nthink != d.nplays:
            return False
    if d.has_revoke and (not r.penalize or d.revoke_play >= <uint64_t>d.nplays):
        return False
    if d.has_trump_think and <int64_t>d.trump_think > r.trump_timeout:
        return False
    return True


# The all-legal replay, called through a pointer so that GCC keeps it a function of its own:
# inlined into ``_check_deal`` (as it chooses to when that is small enough) it spills more and
# ran ~75 instructions a deal more under cachegrind. One predicted indirect call a deal.
ctypedef bint (*Replay)(DealState* d, const uint64_t* hands, const uchar* plays,
                        Py_ssize_t nplays, int declarer, int contract, int trump,
                        long flags) noexcept nogil
cdef Replay _replay_clean = core.replay_clean


cdef bint _check_deal(const uchar* p, const uchar* end, const CoreRules* r, MatchState* m,
                      int64_t number, bint last, bint complete) noexcept nogil:
    """Whether one deal gives no finding (validator._MatchCheck.check_deal and friends)."""
    cdef DealMsg d
    cdef DealState deal
    cdef core.Violation viols[53]
    cdef uint64_t held[4]
    cdef uint64_t hand
    cdef Py_ssize_t i
    cdef int owner, seat, contract, trump, expected, nscores = 0
    cdef int64_t scores[4]
    cdef int64_t claimed[4]
    if not parse_deal(p, end, &d):
        return False
    # deal number, declarer, dealer
    if d.number != <uint64_t>number or d.declarer > 3:
        return False
    seat = <int>d.declarer
    contract = <int>d.contract
    if contract < core.KOZ or contract > core.SON_IKI:
        return False
    # the deck (needed first: under HOLDER_OF_CARD deal 1's hands name the first declarer)
    if d.nhands != 52:
        return False
    # Each hand as a card set, for the replay too. No test per byte: a byte that is no card
    # puts NO_CARD (bit 63) in the union, which must be the deck itself (52 bytes: each
    # card exactly once).
    for owner in range(4):
        hand = 0
        for i in range(13):
            hand |= core.BIT_OF[d.hands[13 * owner + i]]
        held[owner] = hand
    if held[0] | held[1] | held[2] | held[3] != core.ALL_CARDS:
        return False
    if number == 1:
        if r.first_declarer == core.FIRST_HOLDER_OF_CARD:
            for i in range(52):
                if d.hands[i] == r.first_card:
                    m.first = <int>(i // 13)
                    break
        else:
            m.first = seat
    if seat != (m.first + number - 1) % 4:
        return False
    if d.has_dealer and d.dealer > 3:
        return False
    if r.dealer != core.DEALER_UNCHECKED and d.has_dealer:
        expected = seat if r.dealer == core.DEALER_DECLARER else (seat + 3) % 4
        if d.dealer != <uint64_t>expected:
            return False
    # the schedule
    if core.tally_problem(&m.tally, r, number, seat, contract) != core.SCHEDULE_OK:
        return False
    core.tally_add(&m.tally, seat, contract)
    # trumps: koz names one of the four suits, the others none
    if contract == core.KOZ:
        if d.trump < 1 or d.trump > 4:
            return False
        trump = <int>d.trump - 1
    elif d.trump != 0:
        return False
    else:
        trump = -1
    # play metadata: think times, auto plays, the revoke mark, the clocks
    if d.nplays > 52:
        return False  # more cards than a deal holds: played after its end
    if not _check_metadata(&d, r):
        return False
    if d.scores != NULL:
        if not packed_sint32(d.scores, d.scores + d.scores_len, claimed, &nscores):
            return False
        if nscores != 0 and nscores != 4:
            return False
    # the replay: a penalized revoke takes the full replay, every other deal the all-legal one
    if d.has_revoke:
        if core.replay_deal(&deal, d.hands, d.plays, d.nplays, seat, contract, trump,
                            r.flags[contract], <Py_ssize_t>d.revoke_play, viols, True):
            return False
    elif not _replay_clean(&deal, held, d.plays, d.nplays, seat, contract, trump,
                           r.flags[contract]):
        return False
    if deal.nplays != d.nplays:
        return False
    if deal.end == core.END_INCOMPLETE:
        if not (d.end == 3 and last and not complete):
            return False
        m.whole = False
    elif d.end != 0 and d.end != <uint64_t>deal.end:
        return False
    if deal.end == core.END_REVOKE:
        m.whole = False
    core.deal_scores(&deal, r, scores)
    if nscores == 4:
        for i in range(4):
            if claimed[i] != scores[i]:
                return False
    for i in range(4):
        m.totals[i] += scores[i]
    return True


cdef bint _check_deals(const uchar* p, const uchar* end, const CoreRules* r,
                       const MatchTop* top) noexcept nogil:
    """Second pass: every deal in order, then the claimed totals."""
    cdef MatchState m
    cdef uint64_t field
    cdef int wt, i
    cdef const uchar* s
    cdef Py_ssize_t n
    cdef int64_t number = 0, total = 0
    cdef bint complete = top.status == 1
    core.tally_clear(&m.tally)
    m.totals[0] = m.totals[1] = m.totals[2] = m.totals[3] = 0
    m.whole = True
    m.first = -1
    while p < end:
        # The first pass checked the structure; these checks only keep the C compiler sure.
        if not tag(&p, end, &field, &wt):
            return False
        if field != 8:
            if not skip_field(&p, end, wt):
                return False
            continue
        if not length_delimited(&p, end, &s, &n):
            return False
        number += 1
        if not _check_deal(s, s + n, r, &m, number, number == top.deals, complete):
            return False
    if top.nclaimed:
        if top.nclaimed != 4:
            return False
        for i in range(4):
            if top.claimed[i] != m.totals[i]:
                return False
            total += top.claimed[i]
        if complete and r.zero_sum and m.whole and total != 0 and top.deals == r.deal_count:
            return False
    return True


cdef class MatchChecker:
    """Decides from a serialized Match whether ``validate_match`` would find nothing.

    ``resolver(raw_ruleset_bytes)`` returns ``Ruleset.core_params()`` of the record's
    ruleset, or None when the reference would not accept it; results are cached by the raw
    bytes, and the last one is checked first with a memcmp since writers repeat the same
    ruleset in every match.
    """

    cdef object resolver
    cdef dict cache
    cdef bytes last_raw
    cdef _Rules last

    def __init__(self, resolver):
        self.resolver = resolver
        self.cache = {}
        self.last_raw = None
        self.last = None

    cdef _Rules _rules(self, const uchar* raw, Py_ssize_t n):
        cdef bytes key
        if raw == NULL:  # no ruleset in the record: resolved like an empty one
            raw = <const uchar*>b""
        if self.last_raw is not None and PyBytes_GET_SIZE(self.last_raw) == n and (
            memcmp(PyBytes_AS_STRING(self.last_raw), raw, n) == 0
        ):
            return self.last
        key = PyBytes_FromStringAndSize(<const char*>raw, n)
        try:
            rules = self.cache[key]
        except KeyError:
            params = self.resolver(key)
            try:
                rules = None if params is None else _Rules(params)
            except (TypeError, ValueError, OverflowError, IndexError):
                rules = None
            if len(self.cache) >= 256:
                self.cache.clear()  # a bound on memory; real files hold few rulesets
            self.cache[key] = rules
        self.last_raw = key
        self.last = rules
        return rules

    cdef Py_ssize_t _clean_deals(self, bytes payload, MatchTop* top) except -2:
        """The deals of a certainly clean match (``top`` then holds its id), else -1."""
        return self._clean_deals_at(<const uchar*>PyBytes_AS_STRING(payload),
                                    PyBytes_GET_SIZE(payload), top)

    cdef Py_ssize_t _clean_deals_at(self, const uchar* p, Py_ssize_t size,
                                    MatchTop* top) except -2:
        """``_clean_deals`` of the ``size`` bytes at ``p``."""
        cdef _Rules rules
        top.format_version = top.status = 0
        top.match_id = top.ruleset = NULL
        top.match_id_len = top.ruleset_len = top.deals = 0
        top.rulesets = top.seats = top.players = top.nclaimed = top.claimed_chunks = 0
        if not _scan_top(p, p + size, top):
            return -1
        if (top.format_version != 1 or top.status == 0 or top.players != 4
                or top.seats != 15 or top.rulesets > 1 or top.claimed_chunks > 1):
            return -1
        rules = self._rules(top.ruleset, top.ruleset_len)
        if rules is None:
            return -1
        if top.deals > rules.r.deal_count or (top.status == 1 and top.deals < rules.r.deal_count):
            return -1
        if not _check_deals(p, p + size, &rules.r, top):
            return -1
        return top.deals

    cdef object _check(self, object payload):
        """(deals, match_id bytes) when certainly clean, else None. Bytes, or any buffer (a
        memoryview of a request's bytes) read where it lies: copying a record costs more
        than scanning it."""
        cdef MatchTop top
        cdef Py_ssize_t deals
        cdef Py_buffer view
        if PyBytes_CheckExact(payload):
            deals = self._clean_deals(payload, &top)
            if deals < 0:
                return None
            return deals, PyBytes_FromStringAndSize(<const char*>top.match_id, top.match_id_len)
        PyObject_GetBuffer(payload, &view, PyBUF_SIMPLE)
        try:  # the id is copied out before the buffer is let go
            deals = self._clean_deals_at(<const uchar*>view.buf, view.len, &top)
            if deals < 0:
                return None
            return deals, PyBytes_FromStringAndSize(<const char*>top.match_id, top.match_id_len)
        finally:
            PyBuffer_Release(&view)

    def check(self, payload):
        """``(deals, match_id_bytes)`` if the match is certainly clean, else None."""
        return self._check(payload)

    def check_batch(self, payloads):
        """``check`` for each payload of a list, in one call."""
        return [self._check(payload) for payload in payloads]

    def check_run(self, list payloads, bint keyed=True):
        """``(clean, deals, dirty, keys)`` for a list of payloads: how many are certainly clean
        and the deals they hold, the indices of the others (for the reference validator),
        and each clean one's ``content_key`` packed as native uint64s (8 bytes each, in
        order; none without ``keyed``: the store keys records by sha256, not by these).
        Nothing else is made per clean match: the fast way through a file when only the
        records with something to report are wanted one by one."""
        cdef Py_ssize_t i, n = len(payloads), clean = 0, deals = 0, found
        cdef list dirty = []
        cdef MatchTop top
        cdef bytearray keys = bytearray(8 * n if keyed else 0)
        cdef uint64_t* slot = <uint64_t*><char*>keys
        for i in range(n):
            payload = payloads[i]
            found = self._clean_deals(payload, &top) if PyBytes_CheckExact(payload) else -1
            if found < 0:
                dirty.append(i)
            else:
                if keyed:
                    slot[clean] = _key(payload)
                clean += 1
                deals += found
        if keyed:
            del keys[8 * clean:]
        return clean, deals, dirty, bytes(keys)

    def check_frames(self, buf, Py_ssize_t start, Py_ssize_t end, Py_ssize_t max_payload,
                     Py_ssize_t max_frames, bint mapped=False):
        """``check_run`` of the intact frames of ``buf[start:end]`` in a row, judged where they
        lie: ``scan_frames`` (``kingrec._frames_py``) and ``check_run`` of its payloads in one
        call, with no Python object made for a clean frame.

        Takes at most ``max_frames`` frames. Returns ``(stop, offsets, clean, deals, dirty,
        payloads, keys)``: where the run stopped (as ``scan_frames``), each frame's header
        offset in ``buf`` packed as native uint64s, then as ``check_run``, with ``payloads``
        the bytes of each frame listed in ``dirty``.

        ``mapped``: ``buf`` is a file mapped in memory (``mmap``), which can lose pages under
        the run when the file is cut short meanwhile: a SIGBUS while its bytes are read then
        stops the run at the frame being read (as a frame not whole), where the reader reports
        it. Only with the checksum in C (``crc_in_c``): no Python call reads the mapping.
        """
        cdef Py_buffer view
        if mapped and _c_crc == NULL:
            raise ValueError("check_frames: a mapped buffer needs the checksum in C (crc_in_c)")
        PyObject_GetBuffer(buf, &view, PyBUF_SIMPLE)
        try:
            if not (0 <= start <= end <= view.len) or max_payload < 0 or max_frames < 0:
                raise ValueError(
                    f"check_frames: need 0 <= start <= end <= {view.len}, max_payload >= 0 "
                    f"and max_frames >= 0, got start={start}, end={end}, "
                    f"max_payload={max_payload}, max_frames={max_frames}"
                )
            return self._check_frames(buf, <const uchar*>view.buf, start, end, max_payload,
                                      max_frames, mapped)
        finally:
            PyBuffer_Release(&view)

    cdef tuple _check_frames(self, object buf, const uchar* data, Py_ssize_t start,
                             Py_ssize_t end, Py_ssize_t max_payload, Py_ssize_t max_frames,
                             bint mapped):
        cdef FrameRun run
        cdef list dirty = []
        cdef list payloads = []
        cdef object whole = memoryview(buf)  # for the fallback: slices to kingrec.checksum
        # Room for every frame that fits: a frame is at least a header.
        cdef Py_ssize_t room = min(max_frames, (end - start) // FRAME_HEADER)
        cdef bytearray offsets = bytearray(8 * room)
        cdef bytearray keys = bytearray(8 * room)
        run.checker = <void*>self
        run.data = data
        run.end, run.max_payload, run.max_frames = end, max_payload, max_frames
        run.pos, run.n, run.clean, run.deals = start, 0, 0, 0
        run.whole = <void*>whole
        run.dirty = <void*>dirty
        run.payloads = <void*>payloads
        run.offsets = <uint64_t*><char*>offsets
        run.keys = <uint64_t*><char*>keys
        run.pending = NULL
        try:
            if not mapped:
                _frames_body(&run)
            elif guarded(_frames_body, &run) == -2:  # a SIGBUS: the run stops where it was
                Py_XDECREF(run.pending)
        finally:
            whole.release()
        del offsets[8 * run.n:]
        del keys[8 * run.clean:]
        return run.pos, bytes(offsets), run.clean, run.deals, dirty, payloads, bytes(keys)


cdef inline uint64_t _key(bytes payload) noexcept:
    return hash64(<const uchar*>PyBytes_AS_STRING(payload), PyBytes_GET_SIZE(payload))


def content_key(bytes payload):
    """A 64-bit key of a record's bytes: equal records, equal keys (not cryptographic)."""
    return _key(payload)


def count_short_varints(bytes field not None, int64_t clock):
    """The think times' fast pass on a packed field's bytes: how many varints it holds when
    each is one or two bytes and none above ``clock``, or -1 (the checker then decodes
    them one by one). For the tests: it must never vouch for what the decoder would not."""
    return short_varints(<const uchar*>PyBytes_AS_STRING(field), PyBytes_GET_SIZE(field), clock)


# ValidateStreamRequest's keys (number << 3 | wire type 2): records = 1, Record.krec = 2,
# Record.name = 4. ``request_frames`` reads only these; anything else is protobuf's.
cdef enum:
    _RECORDS = 0x0A
    _KREC = 0x12
    _NAME = 0x22


cdef inline Py_ssize_t _request_length(const uchar* data, Py_ssize_t* pos,
                                       Py_ssize_t end) noexcept nogil:
    """The length varint at ``pos`` (at most four bytes, as ``read_frames`` reads it: any
    length a request can hold is under 2**28), ``pos`` moved past it; -1 if it is longer
    or runs past ``end``."""
    cdef Py_ssize_t at = pos[0], value = 0
    cdef int shift = 0
    cdef uchar byte
    while at < end and shift < 28:
        byte = data[at]
        value |= <Py_ssize_t>(byte & 0x7F) << shift
        at += 1
        if byte < 0x80:
            pos[0] = at
            return value
        shift += 7
    return -1


cdef inline Py_ssize_t _value_end(const uchar* data, Py_ssize_t* pos, Py_ssize_t end,
                                  Py_ssize_t limit) noexcept nogil:
    """The end of the length-delimited value whose length is at ``pos`` (read within
    ``end``), ``pos`` moved to its start; -1 if the length is unreadable or the value runs
    past ``limit`` (its message's end)."""
    cdef Py_ssize_t size = _request_length(data, pos, end)
    if size < 0 or pos[0] + size > limit:
        return -1
    return pos[0] + size


def request_frames(bytes data not None, Py_ssize_t max_frame, bytes magic not None):
    """``(payloads, names)`` of a ValidateStreamRequest's bytes whose records are each a
    frame's bytes (``krec`` at most ``max_frame`` bytes, not starting with ``magic``) with at
    most a name and nothing else: each payload a memoryview of ``data``, each name a str (""
    for none). None for any other request. The compiled twin of
    ``kingrec_service.stream_request.read_frames_py``, which it must agree with: the server
    reads every request of a stream with it (the Python loop cost ~10,000 instructions a
    match)."""
    cdef const uchar* p = <const uchar*>PyBytes_AS_STRING(data)
    cdef const uchar* m = <const uchar*>PyBytes_AS_STRING(magic)
    cdef Py_ssize_t nmagic = PyBytes_GET_SIZE(magic)
    cdef Py_ssize_t pos = 0, end = PyBytes_GET_SIZE(data), size, stop, field_end
    cdef Py_ssize_t krec_at = 0, krec_end = 0, last_at = 0, last_size = 0
    cdef object last_name = ""
    cdef uchar key
    cdef bint has_krec, has_name
    cdef object name
    cdef object view = memoryview(data)
    cdef list payloads = []
    cdef list names = []
    while pos < end:
        if p[pos] != _RECORDS:
            return None
        pos += 1
        stop = _value_end(p, &pos, end, end)
        if stop < 0:
            return None
        has_krec = has_name = False
        name = ""
        while pos < stop:
            key = p[pos]
            if key != _KREC and key != _NAME:
                return None
            pos += 1
            field_end = _value_end(p, &pos, end, stop)
            if field_end < 0:
                return None
            size = field_end - pos
            if key == _KREC and not has_krec:
                if size > max_frame or (size >= nmagic and memcmp(p + pos, m, nmagic) == 0):
                    return None  # a damage verdict or a whole file: stream_verdicts says
                has_krec = True
                krec_at, krec_end = pos, field_end
            elif key == _NAME and not has_name:
                has_name = True
                if size == last_size and memcmp(p + pos, p + last_at, size) == 0:
                    name = last_name  # a client names its records alike: decoded once
                elif size:  # strict, as str(bytes, "utf-8"): no surrogates
                    try:
                        name = PyUnicode_DecodeUTF8(<const char*>(p + pos), size, NULL)
                    except UnicodeDecodeError:
                        return None
                    last_name, last_at, last_size = name, pos, size
            else:
                return None  # a field given twice: protobuf keeps the last
            pos = field_end
        if not has_krec:
            return None  # an empty record: damage, from stream_verdicts
        payloads.append(view[krec_at:krec_end])
        names.append(name)
    return payloads, names
