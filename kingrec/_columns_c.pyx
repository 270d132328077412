# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: initializedcheck=False, overflowcheck=False, embedsignature=False
"""The store's column builder, compiled: match wire bytes -> the columns of every table.

``ColumnBuilder.add`` reads one serialized ``kingrec.v1.Match`` in place (``_v1wire``,
``_wire``), replays its deals with the compiled core (``_core.pxd``) and appends its rows to
growing C buffers: the match's own row, its players, deals, tricks and plays (their facts
packed into the codes of ``kingrec.store.packed.PACKED``), and its bytes in pieces. ``take``
hands every buffer over, uncopied, laid out as ``kingrec.store.columns`` describes, for
pyarrow to wrap as is. The pure-Python twin is ``kingrec.store.rows``; tests hold the two to
identical tables. A record whose wire bytes this reader does not fully understand is left to
the twin (``add`` answers -1), so the rows never differ.
"""

from cpython.buffer cimport PyBuffer_FillInfo
from cpython.bytes cimport (
    PyBytes_AS_STRING, PyBytes_CheckExact, PyBytes_FromStringAndSize, PyBytes_GET_SIZE,
)
from cpython.mem cimport PyMem_RawFree, PyMem_RawMalloc, PyMem_RawRealloc
from libc.stdint cimport int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memcmp, memcpy, memset

from kingrec cimport _core as core
from kingrec._core cimport CoreRules, DealState, uchar
from kingrec._v1wire cimport DealMsg, parse_deal
from kingrec._wire cimport (
    WT_LEN, WT_VARINT, enum32, length_delimited, skip_field, tag, u32, utf8_ok, varint,
)

from kingrec.store.packed import PACKED
from kingrec.store.schema import RECORD_CHUNK

__all__ = ["BUILDS_WITHOUT_GIL", "ColumnBuilder"]

BUILDS_WITHOUT_GIL = True  # add_many lets go of the GIL while it builds (rows.py: its twin's)

# -- growing buffers ------------------------------------------------------------------------

cdef struct Buf:
    char* p
    Py_ssize_t n  # bytes used
    Py_ssize_t cap


# A column's block: from Python's allocator while small, and once it is HUGE bytes or more
# (a classic batch's play codes are ~50 MB, its record pieces ~30 MB) mapped from the kernel
# and advised into transparent huge pages, so the kernel faults it in 2 MB at a time, not
# 4 KB (measured: a 25,000-match ingest took 145,000 page faults, not 234,000). Capacities are
# powers of two from 64 KB, so the kind of a block follows from its capacity alone.
cdef extern from *:
    """
    #if defined(__linux__)
    #include <sys/mman.h>
    #define KR_HUGE ((Py_ssize_t)1 << 21)
    static char* kr_map(Py_ssize_t n) {
        void* p = mmap(NULL, (size_t)n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                       -1, 0);
        if (p == MAP_FAILED) return NULL;
        (void)madvise(p, (size_t)n, MADV_HUGEPAGE);  /* advice only: may be refused */
        return (char*)p;
    }
    static char* kr_remap(char* p, Py_ssize_t old, Py_ssize_t n) {
        void* q = mremap(p, (size_t)old, (size_t)n, MREMAP_MAYMOVE);
        if (q == MAP_FAILED) return NULL;
        (void)madvise(q, (size_t)n, MADV_HUGEPAGE);
        return (char*)q;
    }
    static void kr_unmap(char* p, Py_ssize_t n) { (void)munmap(p, (size_t)n); }
    #else
    #define KR_HUGE PY_SSIZE_T_MAX  /* elsewhere every block is Python's allocator's */
    static char* kr_map(Py_ssize_t n) { (void)n; return NULL; }
    static char* kr_remap(char* p, Py_ssize_t old, Py_ssize_t n) {
        (void)p; (void)old; (void)n; return NULL; }
    static void kr_unmap(char* p, Py_ssize_t n) { (void)p; (void)n; }
    #endif
    """
    const Py_ssize_t HUGE "KR_HUGE"
    char* kr_map(Py_ssize_t n) noexcept nogil
    char* kr_remap(char* p, Py_ssize_t old, Py_ssize_t n) noexcept nogil
    void kr_unmap(char* p, Py_ssize_t n) noexcept nogil


# The blocks come from the raw allocator (thread-safe without the GIL): ``add_many`` fills
# the columns with the GIL let go of.
cdef char* block_new(Py_ssize_t cap) except NULL nogil:
    cdef char* p = kr_map(cap) if cap >= HUGE else <char*>PyMem_RawMalloc(cap)
    if p == NULL:
        with gil:
            raise MemoryError()
    return p


cdef char* block_resized(char* p, Py_ssize_t cap, Py_ssize_t new_cap) except NULL nogil:
    """The block ``p`` of ``cap`` bytes (NULL: none yet) grown to ``new_cap``, its bytes kept."""
    cdef char* q
    if new_cap < HUGE:
        q = <char*>PyMem_RawRealloc(p, new_cap)
    elif cap >= HUGE:
        q = kr_remap(p, cap, new_cap)
    else:  # crossing into mapped blocks: its bytes moved over once
        q = kr_map(new_cap)
        if q != NULL and p != NULL:
            memcpy(q, p, cap)
            PyMem_RawFree(p)
    if q == NULL:
        with gil:
            raise MemoryError()
    return q


cdef void block_free(char* p, Py_ssize_t cap) noexcept nogil:
    if p == NULL:
        return
    if cap >= HUGE:
        kr_unmap(p, cap)
    else:
        PyMem_RawFree(p)


cdef int grow(Buf* b, Py_ssize_t more) except -1 nogil:
    cdef Py_ssize_t cap
    if b.n + more <= b.cap:
        return 0
    cap = b.cap * 2 if b.cap else 1 << 16
    while cap < b.n + more:
        cap *= 2
    b.p = block_resized(b.p, b.cap, cap)
    b.cap = cap
    return 0


# A batch's columns are big (a classic batch's play codes alone are about 50 MB). Fresh memory
# that big comes from the kernel a page at a time, each page a fault: measured, a quarter of
# an ingest's CPU was the kernel's. So the memory of a column the table is done with is kept
# (up to SPARE_BYTES) for the next batch's columns instead of going back to the kernel.
# What is kept counts in the ingest's memory. Measured on a 2 M-deal ingest (peak RSS; the
# builder's kernel time per deal): 256 MB ~990 MiB, 0.05 µs; 128 MB 830-950 MiB, 0.16 µs;
# 64 MB 820-860 MiB, 0.31 µs. 64 MB keeps the biggest block, a classic batch's play codes.
cdef Py_ssize_t SPARE_BYTES = 64 << 20
cdef list _spare = []  # [(capacity, address)] of kept blocks
cdef Py_ssize_t _spare_total = 0


cdef char* _fresh(Py_ssize_t* cap) except NULL:
    """A block of at least ``cap[0]`` bytes (``cap`` is set to its size): the smallest kept
    one that fits and is not over twice as big, else a new one."""
    global _spare_total
    cdef Py_ssize_t best = -1
    cdef Py_ssize_t i, size
    for i in range(len(_spare)):
        size = _spare[i][0]
        if cap[0] <= size <= 2 * cap[0] and (best < 0 or size < _spare[best][0]):
            best = i
    if best >= 0:
        size, address = _spare.pop(best)
        _spare_total -= size
        cap[0] = size
        return <char*><size_t>address
    return block_new(cap[0])


cdef class Column:
    """A column's bytes handed over by ``take`` without a copy (a buffer: pyarrow
    wraps it as is and lets go of it with the table; its memory is then kept for reuse)."""

    cdef char* p
    cdef Py_ssize_t n
    cdef Py_ssize_t cap

    def __getbuffer__(self, Py_buffer* view, int flags):
        PyBuffer_FillInfo(view, self, self.p, self.n, 0, flags)

    def __len__(self):
        return self.n

    def __dealloc__(self):
        global _spare_total
        if self.p == NULL:
            return
        if _spare is not None and _spare_total + self.cap <= SPARE_BYTES:
            _spare.append((self.cap, <size_t>self.p))
            _spare_total += self.cap
        else:
            block_free(self.p, self.cap)


cdef Column hand_over(Buf* b):
    """The buffer's bytes as a Column; the buffer starts afresh with the same capacity, so a
    builder that fills batch after batch of the same size never grows again."""
    cdef Column column = Column.__new__(Column)
    cdef char* fresh
    cdef Py_ssize_t cap
    if b.p == NULL:
        grow(b, 1)  # pyarrow wants a pointer even for no bytes
    cap = b.cap
    fresh = _fresh(&cap)
    column.p, column.n, column.cap = b.p, b.n, b.cap
    b.p, b.n, b.cap = fresh, 0, cap
    return column


cdef inline void u8(Buf* b, uint8_t v) noexcept nogil:
    b.p[b.n] = <char>v
    b.n += 1


cdef inline void u16(Buf* b, uint16_t v) noexcept nogil:
    memcpy(b.p + b.n, &v, 2)
    b.n += 2


cdef inline void u32v(Buf* b, uint32_t v) noexcept nogil:
    memcpy(b.p + b.n, &v, 4)
    b.n += 4


cdef inline void i32(Buf* b, int32_t v) noexcept nogil:
    memcpy(b.p + b.n, &v, 4)
    b.n += 4


cdef inline void u64(Buf* b, uint64_t v) noexcept nogil:
    memcpy(b.p + b.n, &v, 8)
    b.n += 8


cdef inline void i64(Buf* b, int64_t v) noexcept nogil:
    memcpy(b.p + b.n, &v, 8)
    b.n += 8


# -- the columns (kingrec.store.columns lists the same, in the same order) --------------------

cdef enum:
    # matches
    M_KEY, M_RULESET, M_FORMAT, M_STATUS, M_START, M_DEALS, M_T0, M_T1, M_T2, M_T3,
    # players
    P_KEY, P_SEAT,
    # deals
    D_KEY, D_DEAL, D_CONTRACT, D_DECLARER, D_DEALER, D_TRUMP, D_PLAYABLE, D_TRICKS, D_PLAYS,
    D_AFTER, D_ENDED, D_END_TRICK, D_REVOKER, D_S0, D_S1, D_S2, D_S3,
    D_HELD0, D_HELD1, D_HELD2, D_HELD3, D_TRUMP_LEN,
    # tricks (deal_code and deal_end: one per deal, the code and the rows that end its run)
    T_DEAL_CODE, T_TRICK_CODE, T_POINTS, T_DEAL_END,
    # plays (the same)
    Y_DEAL_CODE, Y_PLAY_CODE, Y_DEAL_END,
    # records_base
    R_KEY, R_CHUNK,
    NFIXED

cdef enum:
    S_MATCH_ID, S_STATUS_REASON, S_EVENT, S_SITE, S_CLIENT, S_CLIENT_VERSION,
    S_PLAYER_ID, S_NAME, S_SEAT_NAME,
    NSTRINGS

# The fixed-width columns by table, and the string columns, as kingrec.store.columns names them.
FIXED = {
    "matches": ["match_key", "ruleset", "format_version", "status", "start_time", "deals",
                "total_0", "total_1", "total_2", "total_3"],
    "players": ["match_key", "seat"],
    "deals": ["match_key", "deal", "contract", "declarer", "dealer", "trump", "playable",
              "tricks", "plays", "plays_after_end", "ended", "end_trick", "revoker", "score_0",
              "score_1", "score_2", "score_3", "held_0", "held_1", "held_2", "held_3",
              "trump_length"],
    "tricks": ["deal_code", "trick_code", "points", "deal_end"],
    "plays": ["deal_code", "play_code", "deal_end"],
    "records_base": ["match_key", "chunk"],
}
STRINGS = {
    "matches": ["match_id", "status_reason", "event", "site", "client_name", "client_version"],
    "players": ["player_id", "name", "seat_name"],
}
_TABLE_OF_STRING = ["matches"] * 6 + ["players"] * 3

cdef enum:
    NONE8 = 255  # the null sentinel of a UTINYINT column
    END_UNPLAYABLE = 6  # a deal that could not be replayed (kingrec.store.schema.DEAL_ENDS)
    MAX_STRING = 1024  # kingrec.limits.MAX_STRING_BYTES

cdef int64_t NO_TIME = -0x8000000000000000  # the null sentinel of start_time
cdef Py_ssize_t CHUNK = RECORD_CHUNK  # a record's bytes are stored in pieces this long


# -- packed codes: one fact's place in a 64-bit code, read from kingrec.store.packed.PACKED ---

cdef struct Fact:
    int low
    uint64_t mask  # its bits, unshifted

cdef Fact _fact(str code, str name) except *:
    cdef Fact f
    for fact, low, bits in PACKED[code]:
        if fact == name:
            f.low = low
            f.mask = (<uint64_t>1 << bits) - 1 if bits < 64 else ~(<uint64_t>0)
            return f
    raise KeyError(name)

cdef Fact F_TRUMP = _fact("deal_code", "trump"), F_CONTRACT = _fact("deal_code", "contract")
cdef Fact F_DEAL = _fact("deal_code", "deal"), F_MATCH = _fact("deal_code", "match_key")
cdef Fact F_CARD = _fact("play_code", "card"), F_SEAT = _fact("play_code", "seat")
cdef Fact F_PLAY = _fact("play_code", "play"), F_LEGAL = _fact("play_code", "legal")
cdef Fact F_TOOK = _fact("play_code", "took"), F_AUTO = _fact("play_code", "auto")
cdef Fact F_BROKE = _fact("play_code", "broke"), F_THINK = _fact("play_code", "think")
cdef Fact F_CARDS = _fact("trick_code", "cards"), F_TRICK = _fact("trick_code", "trick")
cdef Fact F_LEADER = _fact("trick_code", "leader"), F_WINNER = _fact("trick_code", "winner")
cdef Fact F_UNITS = _fact("trick_code", "units")

cdef inline uint64_t put(Fact f, uint64_t value) noexcept nogil:
    return (value & f.mask) << f.low


cdef class _Rules:
    cdef CoreRules r

    def __init__(self, dict params):
        self.r = params


cdef int _run(Buf* codes, Buf* ends, uint64_t code, Py_ssize_t rows,
              Py_ssize_t before) except -1 nogil:
    """A run of ``code`` ending at row ``rows`` (run-end encoding), if it has a row."""
    if rows == before:
        return 0
    grow(codes, 8)
    grow(ends, 8)
    u64(codes, code)
    i64(ends, <int64_t>rows)
    return 0


cdef class ColumnBuilder:
    """Rows of many matches, gathered column by column in C until ``take``.

    ``resolver(raw_ruleset_bytes)`` gives ``Ruleset.core_params()`` of a record's ruleset, or
    None when it cannot be applied (the record's deals are then stored unplayed, as the
    validator leaves them unjudged). ``rulesets`` lists the distinct raw rulesets met since
    ``take_rulesets``; the ``ruleset`` column of a match is its index there.
    """

    cdef Buf fixed[NFIXED]
    cdef Buf offsets[NSTRINGS]
    cdef Buf data[NSTRINGS]
    cdef Buf piece_offsets  # records_base.bytes: int64 offsets (a batch may pass 2 GB)
    cdef Buf pieces
    cdef Py_ssize_t rows[6]
    cdef object resolver
    cdef dict index  # raw ruleset bytes -> its index in rulesets
    cdef public list rulesets
    cdef list params  # index -> _Rules or None
    # The last ruleset met (``_remember``): most files repeat one in every match.
    cdef int last_which  # its index in rulesets, -1: none yet
    cdef bytes last_key  # its raw bytes, held alive for last_raw
    cdef const char* last_raw
    cdef Py_ssize_t last_len
    cdef const CoreRules* last_rules

    def __cinit__(self):
        memset(self.fixed, 0, sizeof(self.fixed))
        memset(self.offsets, 0, sizeof(self.offsets))
        memset(self.data, 0, sizeof(self.data))
        memset(&self.piece_offsets, 0, sizeof(Buf))
        memset(&self.pieces, 0, sizeof(Buf))
        memset(self.rows, 0, sizeof(self.rows))
        self.last_which = -1
        self.last_rules = NULL

    def __init__(self, resolver):
        self.resolver = resolver
        self.index = {}
        self.rulesets = []
        self.params = []
        self._start_strings()

    def __dealloc__(self):
        cdef int i
        for i in range(NFIXED):
            block_free(self.fixed[i].p, self.fixed[i].cap)
        for i in range(NSTRINGS):
            block_free(self.offsets[i].p, self.offsets[i].cap)
            block_free(self.data[i].p, self.data[i].cap)
        block_free(self.piece_offsets.p, self.piece_offsets.cap)
        block_free(self.pieces.p, self.pieces.cap)

    cdef int _start_strings(self) except -1:
        cdef int i
        for i in range(NSTRINGS):
            grow(&self.offsets[i], 4)
            i32(&self.offsets[i], 0)
        grow(&self.piece_offsets, 8)
        i64(&self.piece_offsets, 0)
        return 0

    cdef int _pieces(self, const uchar* p, Py_ssize_t n, uint64_t key) except -1 nogil:
        """The record's bytes as rows of records_base, CHUNK bytes each (one row if empty)."""
        cdef Py_ssize_t start = 0, size
        cdef uint32_t number = 0
        cdef Py_ssize_t count = (n + CHUNK - 1) // CHUNK if n else 1
        grow(&self.fixed[R_KEY], 8 * count)
        grow(&self.fixed[R_CHUNK], 4 * count)
        grow(&self.piece_offsets, 8 * count)
        grow(&self.pieces, n)
        memcpy(self.pieces.p + self.pieces.n, p, n)
        while True:
            size = min(CHUNK, n - start)
            u64(&self.fixed[R_KEY], key)
            u32v(&self.fixed[R_CHUNK], number)
            i64(&self.piece_offsets, <int64_t>(self.pieces.n + start + size))
            start += size
            number += 1
            if start >= n:
                break
        self.pieces.n += n
        self.rows[5] += count
        return 0

    cdef int _string(self, int which, const uchar* s, Py_ssize_t n) except -1 nogil:
        cdef int32_t end
        grow(&self.data[which], n)
        memcpy(self.data[which].p + self.data[which].n, s, n)
        self.data[which].n += n
        grow(&self.offsets[which], 4)
        end = <int32_t>self.data[which].n
        i32(&self.offsets[which], end)
        return 0

    cdef int _ruleset(self, const uchar* raw, Py_ssize_t n) except -2:
        key = PyBytes_FromStringAndSize(<const char*>raw, n) if raw != NULL else b""
        found = self.index.get(key)
        if found is None:
            params = self.resolver(key)
            try:
                rules = None if params is None else _Rules(params)
            except (TypeError, ValueError, OverflowError, IndexError):
                rules = None
            found = self.index[key] = len(self.rulesets)
            self.rulesets.append(key)
            self.params.append(rules)
        return found

    cdef int _remember(self, const uchar* raw, Py_ssize_t n) except -1:
        """Make the ruleset of ``raw`` the last one met: its index and core rules (NULL when
        it cannot be applied), for ``_one`` to reuse without the GIL while it repeats."""
        cdef _Rules rules
        self.last_which = self._ruleset(raw, n)
        self.last_key = self.rulesets[self.last_which]
        self.last_raw = PyBytes_AS_STRING(self.last_key)
        self.last_len = PyBytes_GET_SIZE(self.last_key)
        found = self.params[self.last_which]
        if found is None:
            self.last_rules = NULL
        else:
            rules = found
            self.last_rules = &rules.r  # held alive by self.params until take_rulesets
        return 0

    cdef int _one(self, const uchar* p, Py_ssize_t size, uint64_t key) except -2 nogil:
        """Append one match's rows (``add``), the GIL taken only for a ruleset other than the
        last one met; its ruleset's index, or -1 (nothing appended)."""
        cdef const uchar* end = p + size
        cdef Top top
        memset(&top, 0, sizeof(top))
        if not _scan(p, end, &top):
            return -1
        if self.last_which < 0 or top.ruleset_len != self.last_len or (
                top.ruleset_len and memcmp(top.ruleset, self.last_raw, top.ruleset_len) != 0):
            with gil:
                self._remember(top.ruleset, top.ruleset_len)
        self._match_row(&top, key, self.last_which)
        self._players(p, end, key)
        self._deals(p, end, key, self.last_rules, &top)
        # the totals were summed while the deals were stored: write them now
        memcpy(self.fixed[M_T0].p + self.fixed[M_T0].n - 4, &top.totals[0], 4)
        memcpy(self.fixed[M_T1].p + self.fixed[M_T1].n - 4, &top.totals[1], 4)
        memcpy(self.fixed[M_T2].p + self.fixed[M_T2].n - 4, &top.totals[2], 4)
        memcpy(self.fixed[M_T3].p + self.fixed[M_T3].n - 4, &top.totals[3], 4)
        self._pieces(p, size, key)
        return self.last_which

    def add(self, bytes payload, uint64_t match_key):
        """Append one match's rows; its ruleset's index in ``rulesets``, or -1 when the wire
        bytes are not what this reader understands (nothing appended: use the twin)."""
        cdef const uchar* p = <const uchar*>PyBytes_AS_STRING(payload)
        cdef Py_ssize_t size = PyBytes_GET_SIZE(payload)
        cdef int which
        with nogil:
            which = self._one(p, size, match_key)
        return which

    def add_many(self, list payloads, list keys):
        """``add`` of each payload (bytes) with its key, in order, in one call that lets go of
        the GIL while it builds (another thread judges, or DuckDB appends, meanwhile); the
        positions of the payloads this reader left to the twin (nothing appended for them).
        One thread at a time may fill a builder."""
        cdef Py_ssize_t i, n = len(payloads), nleft = 0
        cdef const uchar** at
        cdef Py_ssize_t* sizes
        cdef uint64_t* codes
        cdef Py_ssize_t* left
        if len(keys) != n:
            raise ValueError(f"add_many: {n} payloads but {len(keys)} keys")
        for payload in payloads:
            if not PyBytes_CheckExact(payload):
                raise TypeError(f"add_many: payloads are bytes, not {type(payload).__name__}")
        at = <const uchar**>PyMem_RawMalloc(sizeof(uchar*) * n + 1)
        sizes = <Py_ssize_t*>PyMem_RawMalloc(sizeof(Py_ssize_t) * n + 1)
        codes = <uint64_t*>PyMem_RawMalloc(sizeof(uint64_t) * n + 1)
        left = <Py_ssize_t*>PyMem_RawMalloc(sizeof(Py_ssize_t) * n + 1)
        try:
            if at == NULL or sizes == NULL or codes == NULL or left == NULL:
                raise MemoryError()
            for i in range(n):
                codes[i] = keys[i]  # before any row: a bad key appends nothing
                at[i] = <const uchar*>PyBytes_AS_STRING(payloads[i])
                sizes[i] = PyBytes_GET_SIZE(payloads[i])
            # ``payloads`` (the caller's list, which this call holds) keeps every byte alive.
            with nogil:
                for i in range(n):
                    if self._one(at[i], sizes[i], codes[i]) < 0:
                        left[nleft] = i
                        nleft += 1
            return [left[i] for i in range(nleft)]
        finally:
            PyMem_RawFree(at)
            PyMem_RawFree(sizes)
            PyMem_RawFree(codes)
            PyMem_RawFree(left)

    cdef int _match_row(self, Top* top, uint64_t key, int which) except -1 nogil:
        cdef int i
        for i in range(M_KEY, M_T3 + 1):
            grow(&self.fixed[i], 8)
        u64(&self.fixed[M_KEY], key)
        u32v(&self.fixed[M_RULESET], <uint32_t>which)
        u32v(&self.fixed[M_FORMAT], <uint32_t>top.format_version)
        u8(&self.fixed[M_STATUS], <uint8_t>(top.status if top.status <= 3 else 0))
        i64(&self.fixed[M_START], top.start if top.has_start else NO_TIME)
        u16(&self.fixed[M_DEALS], <uint16_t>top.deals)
        for i in range(M_T0, M_T3 + 1):
            i32(&self.fixed[i], 0)
        self._string(S_MATCH_ID, top.match_id, top.match_id_len)
        self._string(S_STATUS_REASON, top.reason, top.reason_len)
        self._string(S_EVENT, top.event, top.event_len)
        self._string(S_SITE, top.site, top.site_len)
        self._string(S_CLIENT, top.client, top.client_len)
        self._string(S_CLIENT_VERSION, top.version, top.version_len)
        self.rows[0] += 1
        return 0

    cdef int _players(self, const uchar* p, const uchar* end, uint64_t key) except -1 nogil:
        cdef uint64_t field, v
        cdef int wt
        cdef const uchar* s
        cdef Py_ssize_t n
        cdef Player pl
        while p < end:
            tag(&p, end, &field, &wt)
            if field == 4 and wt == WT_LEN:
                length_delimited(&p, end, &s, &n)
                _player(s, s + n, &pl)
                grow(&self.fixed[P_KEY], 8)
                grow(&self.fixed[P_SEAT], 4)
                u64(&self.fixed[P_KEY], key)
                u32v(&self.fixed[P_SEAT], <uint32_t>pl.seat)
                self._string(S_PLAYER_ID, pl.id, pl.id_len)
                self._string(S_NAME, pl.name, pl.name_len)
                self._string(S_SEAT_NAME, pl.seat_name, pl.seat_name_len)
                self.rows[1] += 1
            else:
                skip_field(&p, end, wt)
        return 0

    cdef int _deals(self, const uchar* p, const uchar* end, uint64_t key, const CoreRules* r,
                    Top* top) except -1 nogil:
        cdef uint64_t field
        cdef int wt
        cdef const uchar* s
        cdef Py_ssize_t n
        cdef int number = 0
        cdef DealMsg d
        while p < end:
            tag(&p, end, &field, &wt)
            if field == 8 and wt == WT_LEN:
                length_delimited(&p, end, &s, &n)
                number += 1
                parse_deal(s, s + n, &d)  # _scan checked that it parses
                self._deal(&d, key, number, r, top)
            else:
                skip_field(&p, end, wt)
        return 0

    cdef int _deal(self, DealMsg* d, uint64_t key, int number, const CoreRules* r,
                   Top* top) except -1 nogil:
        cdef DealState state
        cdef int i, contract, trump = -1, s
        cdef uint64_t seen = 0, v, deal_code
        cdef uint64_t held[4]
        cdef uint8_t autos[104]
        cdef bint hands_ok = d.nhands == 52, playable
        cdef int64_t scores[4]
        cdef uint32_t think[104]
        cdef Py_ssize_t nthink = 0, consumed = 0, nout = 0
        cdef uint64_t* out
        cdef Py_ssize_t plays_before = self.rows[4], tricks_before = self.rows[3]
        cdef const uchar* q
        cdef const uchar* qend
        cdef int ended, end_trick, trump_length
        contract = <int>d.contract if 1 <= d.contract <= 7 else 0
        if contract == core.KOZ and 1 <= d.trump <= 4:
            trump = <int>d.trump - 1
        # the deck
        memset(held, 0, sizeof(held))
        if hands_ok:  # seat by seat, 13 cards each (no division by 13 a card)
            for s in range(4):
                for i in range(13 * s, 13 * s + 13):
                    if d.hands[i] < 52:
                        held[s] |= <uint64_t>1 << d.hands[i]
                        seen |= <uint64_t>1 << d.hands[i]
        # the declarer's trumps: counted off his cards (repeats too: a deck with repeats
        # still has a trump length, as the twin counts it)
        trump_length = NONE8
        if trump >= 0 and hands_ok and d.declarer <= 3:
            if seen == core.ALL_CARDS:
                trump_length = core.popcount(held[d.declarer] & core.SUIT[trump])
            else:
                trump_length = 0
                for i in range(13 * <int>d.declarer, 13 * <int>d.declarer + 13):
                    if d.hands[i] < 52 and d.hands[i] // 13 == trump:
                        trump_length += 1
        if seen != core.ALL_CARDS:  # each seat's cards as 52 bits only for a whole deck
            memset(held, 0, sizeof(held))
        playable = (r != NULL and hands_ok and seen == core.ALL_CARDS and contract != 0
                    and d.declarer <= 3 and (contract != core.KOZ or trump >= 0))
        # think times and auto plays, by play index (think times are most often one or two
        # bytes: those read in line)
        if d.think != NULL:
            q = d.think
            qend = d.think + d.think_len
            while q < qend and nthink < 104:
                if q[0] < 0x80:
                    v = q[0]
                    q += 1
                elif q + 1 < qend and q[1] < 0x80:
                    v = <uint64_t>(q[0] & 0x7F) | (<uint64_t>q[1] << 7)
                    q += 2
                else:
                    varint(&q, qend, &v)
                think[nthink] = <uint32_t>v
                nthink += 1
        memset(autos, 0, 104)
        if d.autos != NULL:
            q = d.autos
            qend = d.autos + d.autos_len
            # a varint cut short ends the list (else the loop would never end)
            while q < qend and varint(&q, qend, &v):
                if v < 104:
                    autos[v] = 1
        scores[0] = scores[1] = scores[2] = scores[3] = 0
        ended = END_UNPLAYABLE
        end_trick = 0
        if playable:
            deal_code = (put(F_MATCH, key) | put(F_DEAL, <uint64_t>number)
                         | put(F_CONTRACT, <uint64_t>contract)
                         | put(F_TRUMP, <uint64_t>(trump + 1)))
            grow(&self.fixed[Y_PLAY_CODE], 8 * 53)
            for i in range(T_DEAL_CODE, T_POINTS + 1):
                grow(&self.fixed[i], 8 * 13)
            # The deal's play codes go straight into the column (room made above), counted in
            # locals: through the builder, every write to the column's bytes made the C
            # compiler load the counters and the packing facts again.
            out = <uint64_t*>(self.fixed[Y_PLAY_CODE].p + self.fixed[Y_PLAY_CODE].n)
            nout = self._replay(d, held, contract, trump, r, deal_code, think, nthink, autos,
                                out, &state)
            self.fixed[Y_PLAY_CODE].n += 8 * nout
            self.rows[4] += nout
            # the deal's runs of deal_code (none for a deal without rows: runs are not empty)
            _run(&self.fixed[Y_DEAL_CODE], &self.fixed[Y_DEAL_END], deal_code,
                 self.rows[4], plays_before)
            _run(&self.fixed[T_DEAL_CODE], &self.fixed[T_DEAL_END], deal_code,
                 self.rows[3], tricks_before)
            if state.end == core.END_PLAYING:
                state.end = core.END_INCOMPLETE
            core.deal_scores(&state, r, scores)
            for s in range(4):
                top.totals[s] += <int32_t>scores[s]
            ended = state.end
            consumed = state.nplays
            end_trick = state.ntricks + (1 if state.ntrick else 0)
            if state.end == core.END_REVOKE and state.ntrick == 0:
                end_trick = state.ntricks + 1  # the revoke card opened a trick of its own
        for i in range(D_KEY, D_TRUMP_LEN + 1):
            grow(&self.fixed[i], 64)
        u64(&self.fixed[D_KEY], key)
        u16(&self.fixed[D_DEAL], <uint16_t>number)
        u8(&self.fixed[D_CONTRACT], <uint8_t>contract)
        u8(&self.fixed[D_DECLARER], <uint8_t>(d.declarer if d.declarer <= 3 else NONE8))
        u8(&self.fixed[D_DEALER], <uint8_t>(d.dealer if d.has_dealer and d.dealer <= 3 else NONE8))
        u8(&self.fixed[D_TRUMP], <uint8_t>(trump if trump >= 0 else NONE8))
        u8(&self.fixed[D_PLAYABLE], 1 if playable else 0)
        u8(&self.fixed[D_TRICKS], <uint8_t>(state.ntricks if playable else 0))
        u8(&self.fixed[D_PLAYS], <uint8_t>consumed)
        u16(&self.fixed[D_AFTER], <uint16_t>(d.nplays - consumed if playable else 0))
        u8(&self.fixed[D_ENDED], <uint8_t>ended)
        u8(&self.fixed[D_END_TRICK], <uint8_t>end_trick)
        u8(&self.fixed[D_REVOKER], <uint8_t>(state.revoker if playable and state.revoker >= 0 else NONE8))
        i32(&self.fixed[D_S0], <int32_t>scores[0])
        i32(&self.fixed[D_S1], <int32_t>scores[1])
        i32(&self.fixed[D_S2], <int32_t>scores[2])
        i32(&self.fixed[D_S3], <int32_t>scores[3])
        for s in range(4):
            u64(&self.fixed[D_HELD0 + s], held[s])
        u8(&self.fixed[D_TRUMP_LEN], <uint8_t>trump_length)
        self.rows[2] += 1
        return 0

    cdef Py_ssize_t _replay(self, const DealMsg* d, const uint64_t* hands, int contract,
                            int trump, const CoreRules* r, uint64_t deal_code,
                            const uint32_t* think, Py_ssize_t nthink, const uint8_t* autos,
                            uint64_t* out, DealState* state) except -1 nogil:
        """Replay a playable deal's plays as ``core.deal_step`` does, card by card (the
        verdict and the legal set of each, played as played, a revoke mark under
        F_REVOKE_PENALIZE ending the deal, a byte that is no card stopping it), writing each
        play's code to ``out`` and each closed trick's row; the plays written. ``state`` is
        left with what ``_deal`` reads of it (the end, tricks, plays, revoker, units).

        The state is kept in locals and the deal's rules of play resolved once, not once a
        card through ``judge``: the card bytes may alias any memory, so fields behind a
        pointer would be reloaded after every write to ``out`` (measured: the builder's replay
        took about twice the checker's on the same deals). ``hands`` are the four hands as
        card sets (the caller has checked that they are a deal of the deck)."""
        cdef long flags = r.flags[contract]
        cdef core.PlayRules rules = core.play_rules(contract, trump, flags)
        cdef uint64_t held[4]
        cdef uint64_t played = 0, tcards = 0, led = 0, bit, hand, legal, penalty
        cdef int trick[4]
        cdef int units[4]
        cdef int leader = <int>d.declarer, k = 0, ntricks = 0, end = core.END_PLAYING
        cdef int revoker = -1, card, seat, code, winner, won
        cdef Py_ssize_t index, i, nout = 0, first = 0, consumed = 0
        cdef Py_ssize_t revoke_at = -1
        cdef uint64_t open_trick = put(F_TOOK, 7)  # took: 7 until the trick closes (_trick)
        cdef Fact fcard = F_CARD, fseat = F_SEAT, fplay = F_PLAY, flegal = F_LEGAL
        cdef Fact fauto = F_AUTO, fbroke = F_BROKE, fthink = F_THINK, ftook = F_TOOK
        penalty = core.PENALTY[contract]
        if d.has_revoke and flags & core.F_REVOKE_PENALIZE:
            revoke_at = <Py_ssize_t>d.revoke_play
        held[0], held[1], held[2], held[3] = hands[0], hands[1], hands[2], hands[3]
        units[0] = units[1] = units[2] = units[3] = 0
        trick[0] = trick[1] = trick[2] = trick[3] = 0
        for index in range(d.nplays):
            card = d.plays[index]
            if card >= 52:  # no card: the replay stops, its scores void
                end = core.END_UNREADABLE
                units[0] = units[1] = units[2] = units[3] = 0
                break
            seat = (leader + k) & 3
            bit = <uint64_t>1 << card
            hand = held[seat]
            code = core.LEGAL if hand & bit else core.NOT_IN_HAND
            if k == 0:
                first = nout
                legal = core.legal_cards(&rules, hand, bit, 0, 0, 0, 0, played, &code)
            else:
                # the trick's cards of the suit led and its trumps: the filters take their tops
                legal = core.legal_cards(&rules, hand, bit, k, led, tcards & led,
                                         tcards & rules.trump, played, &code)
            if index == revoke_at:  # the revoker scores the whole total, the rest nothing
                end = core.END_REVOKE
                revoker = seat
                consumed += 1
                units[0] = units[1] = units[2] = units[3] = 0
                if code == core.LEGAL:
                    code = core.REVOKE_MARK_ON_LEGAL_PLAY
                elif code != core.NOT_IN_HAND:
                    code = core.LEGAL
            # think: think_ms + 1, 0 = none
            out[nout] = (
                put(fcard, <uint64_t>card) | put(fseat, <uint64_t>seat)
                | put(fplay, <uint64_t>index) | put(flegal, <uint64_t>core.popcount(legal))
                | open_trick | put(fauto, autos[index]) | put(fbroke, <uint64_t>code)
                | put(fthink, <uint64_t>think[index] + 1 if index < nthink else 0))
            nout += 1
            if end == core.END_REVOKE:
                break
            # played as played
            held[seat] = hand & ~bit
            if k == 0:
                led = core.SUIT[core.SUIT_OF[card]]
            trick[k] = card
            tcards |= bit
            k += 1
            consumed += 1
            if k < 4:
                continue
            # the trick closes: its winner leads the next
            winner = (leader + core.closed_trick_winner(trick, tcards, trump)) & 3
            won = core.trick_units(trick, 4, ntricks, contract)
            units[winner] += won
            ntricks += 1
            for i in range(first, first + 4):  # the trick's plays: who took them
                out[i] = (out[i] & ~put(ftook, 7)) | put(ftook, <uint64_t>winner)
            self._trick(deal_code, ntricks, trick, leader, winner, won, r.unit[contract])
            played |= tcards
            tcards = 0
            k = 0
            leader = winner
            if ntricks == 13:
                end = core.END_ALL_TRICKS
                break
            if flags & core.F_EARLY_END and played & penalty == penalty:
                end = core.END_EARLY
                break
        state.contract = contract
        state.trump = trump
        state.end = end
        state.ntricks = ntricks
        state.ntrick = k
        state.nplays = <int>consumed
        state.revoker = revoker
        for i in range(4):
            state.units[i] = units[i]
        return nout

    cdef int _trick(self, uint64_t deal_code, int trick_no, const int* cards, int leader,
                    int winner, int units, int64_t unit) except -1 nogil:
        """A closed trick's row."""
        cdef uint64_t four = 0
        cdef int i
        for i in range(4):
            four |= <uint64_t>cards[i] << (6 * i)
        u64(&self.fixed[T_TRICK_CODE],
            put(F_CARDS, four) | put(F_TRICK, <uint64_t>trick_no) | put(F_LEADER, <uint64_t>leader)
            | put(F_WINNER, <uint64_t>winner) | put(F_UNITS, <uint64_t>units))
        i32(&self.fixed[T_POINTS], <int32_t>(units * unit))
        self.rows[3] += 1
        return 0

    def take(self):
        """Every column gathered so far, by table and name, and start afresh:
        ``{table: {"rows": n, name: Column, ...}}`` (a Column is a buffer: ``bytes(c)`` copies
        it); a string column is ``(offsets, data)``."""
        cdef int i
        out = {}
        names = [(table, name) for table, columns in FIXED.items() for name in columns]
        for i in range(NFIXED):
            table, name = names[i]
            out.setdefault(table, {})[name] = hand_over(&self.fixed[i])
        strings = [name for table in ("matches", "players") for name in STRINGS[table]]
        for i in range(NSTRINGS):
            out[_TABLE_OF_STRING[i]][strings[i]] = (
                hand_over(&self.offsets[i]), hand_over(&self.data[i])
            )
        out["records_base"]["bytes"] = (hand_over(&self.piece_offsets), hand_over(&self.pieces))
        for i, table in enumerate(
            ("matches", "players", "deals", "tricks", "plays", "records_base")
        ):
            out[table]["rows"] = self.rows[i]
            self.rows[i] = 0
        self._start_strings()
        return out

    def take_rulesets(self):
        """The distinct raw rulesets met since the last call (the ``ruleset`` column of the
        matches taken indexes this list), and start a new list."""
        met = self.rulesets
        self.index = {}
        self.rulesets = []
        self.params = []
        self.last_which = -1  # the indices start again
        self.last_key = None
        self.last_raw = NULL
        self.last_rules = NULL
        return met


# -- the top of a match, players ------------------------------------------------------------

cdef struct Top:
    uint64_t format_version
    uint64_t status
    const uchar* match_id
    Py_ssize_t match_id_len
    const uchar* reason
    Py_ssize_t reason_len
    const uchar* event
    Py_ssize_t event_len
    const uchar* site
    Py_ssize_t site_len
    const uchar* client
    Py_ssize_t client_len
    const uchar* version
    Py_ssize_t version_len
    const uchar* ruleset
    Py_ssize_t ruleset_len
    int64_t start
    bint has_start
    Py_ssize_t deals
    int32_t totals[4]


cdef struct Player:
    uint64_t seat
    const uchar* id
    Py_ssize_t id_len
    const uchar* name
    Py_ssize_t name_len
    const uchar* seat_name
    Py_ssize_t seat_name_len


cdef inline bint _text(const uchar** pp, const uchar* end, int wt, const uchar** s,
                       Py_ssize_t* n) noexcept nogil:
    """A string field as the Python parser reads it: strict UTF-8, within the bound."""
    return (wt == WT_LEN and length_delimited(pp, end, s, n) and n[0] <= MAX_STRING
            and utf8_ok(s[0], n[0]))


cdef bint _player(const uchar* p, const uchar* end, Player* pl) noexcept nogil:
    cdef uint64_t field
    cdef int wt
    memset(pl, 0, sizeof(Player))
    while p < end:
        if not tag(&p, end, &field, &wt):
            return False
        if field == 1:
            if not _text(&p, end, wt, &pl.id, &pl.id_len):
                return False
        elif field == 2:
            if not _text(&p, end, wt, &pl.name, &pl.name_len):
                return False
        elif field == 3:
            if not u32(&p, end, wt, &pl.seat):
                return False
        elif field == 4:
            if not _text(&p, end, wt, &pl.seat_name, &pl.seat_name_len):
                return False
        elif not skip_field(&p, end, wt):
            return False
    return True


cdef bint _metadata(const uchar* p, const uchar* end, Top* top) noexcept nogil:
    cdef uint64_t field, v
    cdef int wt
    cdef const uchar* s
    cdef const uchar* q
    cdef Py_ssize_t n
    cdef uint64_t f2
    cdef int w2
    while p < end:
        if not tag(&p, end, &field, &wt):
            return False
        if field == 1:
            if not _text(&p, end, wt, &top.event, &top.event_len):
                return False
        elif field == 2:
            if not _text(&p, end, wt, &top.site, &top.site_len):
                return False
        elif field == 4:
            if not _text(&p, end, wt, &top.client, &top.client_len):
                return False
        elif field == 5:
            if not _text(&p, end, wt, &top.version, &top.version_len):
                return False
        elif field == 3:  # Timestamp: seconds = 1 (int64); nanos are not stored
            if wt != WT_LEN or not length_delimited(&p, end, &s, &n):
                return False
            top.has_start = True
            top.start = 0
            q = s
            while q < s + n:
                if not tag(&q, s + n, &f2, &w2):
                    return False
                if f2 == 1 and w2 == WT_VARINT:
                    if not varint(&q, s + n, &v):
                        return False
                    top.start = <int64_t>v
                elif not skip_field(&q, s + n, w2):
                    return False
        elif not skip_field(&p, end, wt):
            return False
    return True


cdef bint _scan(const uchar* p, const uchar* end, Top* top) noexcept nogil:
    """Everything but the deals' contents, and whether every deal parses."""
    cdef uint64_t field
    cdef int wt
    cdef const uchar* s
    cdef Py_ssize_t n
    cdef DealMsg d
    cdef Player pl
    while p < end:
        if not tag(&p, end, &field, &wt):
            return False
        if field == 8:
            if wt != WT_LEN or not length_delimited(&p, end, &s, &n) or not parse_deal(s, s + n, &d):
                return False
            if d.nplays > 104 or d.nhands > 104:
                return False
            top.deals += 1
        elif field == 4:
            if wt != WT_LEN or not length_delimited(&p, end, &s, &n) or not _player(s, s + n, &pl):
                return False
        elif field == 1:
            if not u32(&p, end, wt, &top.format_version):
                return False
        elif field == 2:
            if not _text(&p, end, wt, &top.match_id, &top.match_id_len):
                return False
        elif field == 3:
            if wt != WT_LEN or not length_delimited(&p, end, &s, &n) or not _metadata(s, s + n, top):
                return False
        elif field == 5:
            if wt != WT_LEN or not length_delimited(&p, end, &top.ruleset, &top.ruleset_len):
                return False
        elif field == 6:
            if not enum32(&p, end, wt, &top.status):
                return False
        elif field == 7:
            if not _text(&p, end, wt, &top.reason, &top.reason_len):
                return False
        elif not skip_field(&p, end, wt):
            return False
    return True
