# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: initializedcheck=False, overflowcheck=False, embedsignature=False
"""The match simulator's deals, compiled: the fast twin of ``kingrec._sim_py``.

``play_match`` plays every deal of one match exactly as the pure-Python twin does (the same
bots of ``kingrec.bots``, the same schedule) and returns the same ``PlayedDeal`` tuples;
``kingrec.simulate`` builds the ``Match``. ``match_tail`` and ``TailWriter.tail`` play the
same deals and write the record's bytes of them straight away (``_v1write.pxd``): no Python
object per deal, the bytes protobuf would write for the message (``kingrec.simulate``'s
``RecordSimulator`` puts the match's head before them); ``TailWriter`` also seeds the two
random streams from the match's seed in C, as ``_sim_py.streams`` does through
``random.Random``.

Both twins draw from the same random streams: the two ``random.Random`` generators of a
match are handed over as their ``getstate()`` (or seeded alike) and continued here by a C
copy of CPython's generator (``_mt.pxd``), so the matches are byte-identical.
``tests/test_simulate.py`` and ``tests/test_simulate_bytes.py`` hold the two twins to that.

The rules (legal cards, closing tricks, the schedule) are the compiled core's
(``_core.pxd``); the bots are ported in ``_bots.pxd``. Only the plain match is compiled:
abandoned matches and revokes stay with the reference simulator.
"""

from cpython.bytes cimport PyBytes_FromStringAndSize
from libc.math cimport exp
from libc.stdint cimport (
    INT32_MAX, INT32_MIN, UINT32_MAX, int32_t, int64_t, uint32_t, uint64_t,
)
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcpy

from kingrec._bots cimport (
    ACE, HEARTS, JACK, KING, KING_OF_HEARTS, QUEEN, RAW_MEAN, choose_contract, choose_play,
    choose_trump, u64,
)
from kingrec._core cimport (
    DEALER_SEAT_BEFORE, END_ALL_TRICKS, END_PLAYING, END_REVOKE, FIRST_HOLDER_OF_CARD, KOZ,
    CoreRules, DealState, Tally, deal_legal, deal_push, deal_scores, deal_start, low_card,
    popcount, tally_add, tally_allowed, tally_clear,
)
from kingrec._mt cimport (
    MT, mt_load, mt_seed, mt_seed_pair, normalvariate, nv_accepts, randbelow, rnd,
)
from kingrec._v1write cimport (
    DEAL_MAX_BYTES, DealRecord, put_match_deal, put_packed_s32, put_varint, uchar, varint_size,
)

import random
from hashlib import sha512

# From the shared types, not _sim_py: a run of records loads no reference twin.
from kingrec._engine_types import CLOCK_SEED, PlayedDeal

__all__ = [
    "CONSTANTS", "TailWriter", "match_tail", "normal_accepts", "normalvariates", "play_match",
]

# The bots' constants, for the test that holds them to kingrec.cards and kingrec.bots.
CONSTANTS = {
    "HEARTS": HEARTS, "JACK": JACK, "QUEEN": QUEEN, "KING": KING, "ACE": ACE,
    "KING_OF_HEARTS": KING_OF_HEARTS, "RAW_MEAN": [RAW_MEAN[i] for i in range(8)],
}


# -- the think-time clock (as _sim_py.Clock) -----------------------------------------

cdef long long clock_play(MT* clock, long long limit, int choices, bint* auto) noexcept nogil:
    cdef double x
    auto[0] = False
    if limit > 0 and rnd(clock) < 0.004:
        auto[0] = True
        return limit
    if choices == 1:
        x = <double>(120 + randbelow(clock, 781))
    else:
        x = exp(normalvariate(clock, 6.9 + 0.08 * <double>(choices if choices < 8 else 8), 0.65))
    # min(int(x), limit) without overflowing for a huge x.
    return limit if x >= limit else <long long>x


cdef long long clock_trump(MT* clock, long long limit) noexcept nogil:
    cdef double x = exp(normalvariate(clock, 8.0, 0.5))
    return limit if x >= limit else <long long>x


def normalvariates(object seed, double mu, double sigma, int n):
    """``n`` draws of ``random.Random(seed).normalvariate(mu, sigma)`` by the C copy
    (``_mt.pxd``), for the tests that hold it to Python's, draw for draw."""
    cdef MT like, mt
    cdef int i
    mt_load(&like, random.Random(0).getstate())
    mt_seed(&mt, seed, &like)
    return [normalvariate(&mt, mu, sigma) for i in range(n)]


def normal_accepts(double zz, double u2):
    """``_mt.nv_accepts``: ``zz <= -log(u2)`` as normalvariate decides it, for the tests."""
    return nv_accepts(zz, u2)


# -- one match ---------------------------------------------------------------------------

cdef void deal_hands(MT* rng, unsigned char* out) noexcept nogil:
    """``_sim_py.deal_hands``: shuffle the deck, each hand sorted, into ``out[0:52]``."""
    cdef int deck[52]
    cdef int i, j, t, s
    cdef u64 mask
    for i in range(52):
        deck[i] = i
    for i in range(51, 0, -1):
        j = randbelow(rng, i + 1)
        t = deck[i]
        deck[i] = deck[j]
        deck[j] = t
    for s in range(4):
        mask = 0
        for i in range(13 * s, 13 * s + 13):
            mask |= 1ULL << deck[i]
        i = 13 * s
        while mask:
            out[i] = <unsigned char>low_card(mask)
            mask &= mask - 1
            i += 1


cdef class _Rules:
    """A ruleset as the core reads it (``Ruleset.core_params``), converted once."""

    cdef CoreRules r

    def __init__(self, dict params):
        self.r = params


_RULES_CACHE = {}


cdef _Rules _rules_of(object rules):
    found = _RULES_CACHE.get(rules)
    if found is None:
        if len(_RULES_CACHE) >= 64:
            _RULES_CACHE.clear()  # a bound on memory; runs use a handful of rulesets
        found = _RULES_CACHE[rules] = _Rules(rules.core_params())
    return found


ctypedef struct Played:
    # One deal as the bots played it: what ``PlayedDeal`` holds, in C.
    int declarer
    int contract
    int trump  # -1: none
    int end  # engine END_* code
    int nplays
    int nauto
    long long trump_ms  # -1: none
    unsigned char hands[52]
    unsigned char plays[52]
    long long think[52]  # one per play when timed
    uint32_t autos[52]  # indexes of the plays made for a player out of time
    int64_t scores[4]


ctypedef struct MatchRun:
    # What runs from one deal of a match to the next.
    const CoreRules* r
    MT rng
    MT clock
    bint timed
    Tally tally
    int first  # the first declarer


cdef int match_start(MatchRun* m, _Rules params, object rng_state, object clock_state,
                     int first) except -1:
    m.r = &params.r
    m.timed = clock_state is not None
    mt_load(&m.rng, rng_state)
    if m.timed:
        mt_load(&m.clock, clock_state)
    m.first = first
    tally_clear(&m.tally)
    return 0


cdef void play_deal(MatchRun* m, int number, Played* out) noexcept nogil:
    """Deal, choose the contract (and trumps) and play deal ``number`` of the match."""
    cdef const CoreRules* r = m.r
    cdef DealState d
    cdef int options[7]
    cdef int i, n, card
    cdef bint was_auto
    cdef u64 legal, hand_mask
    deal_hands(&m.rng, out.hands)
    if number == 1 and r.first_declarer == FIRST_HOLDER_OF_CARD:
        for i in range(52):
            if out.hands[i] == r.first_card:
                m.first = i // 13
                break
    out.declarer = (m.first + number - 1) % 4
    hand_mask = 0
    for i in range(13 * out.declarer, 13 * out.declarer + 13):
        hand_mask |= 1ULL << out.hands[i]
    n = tally_allowed(&m.tally, r, out.declarer, number, options)
    out.contract = choose_contract(hand_mask, options, n, r.unit, &m.rng)
    out.trump = choose_trump(hand_mask, &m.rng) if out.contract == KOZ else -1

    deal_start(&d, out.hands, out.declarer, out.contract, out.trump, r.flags[out.contract])
    out.nauto = 0
    while d.end == END_PLAYING:
        legal = deal_legal(&d)
        card = choose_play(&d, legal, &m.rng)
        if m.timed:
            out.think[d.nplays] = clock_play(&m.clock, r.play_timeout, popcount(legal), &was_auto)
            if was_auto:
                out.autos[out.nauto] = d.nplays
                out.nauto += 1
        out.plays[d.nplays] = <unsigned char>card
        deal_push(&d, card)
    out.nplays = d.nplays
    out.end = d.end
    out.trump_ms = (
        clock_trump(&m.clock, r.trump_timeout) if m.timed and out.contract == KOZ else -1
    )
    tally_add(&m.tally, out.declarer, out.contract)
    deal_scores(&d, r, out.scores)


def play_match(object rules, object rng_state, object clock_state, int first):
    """Play every deal of one plain match: a ``PlayedDeal`` per deal, as ``_sim_py``.

    ``rng_state`` and ``clock_state`` are ``getstate()`` of the match's rng and think-time
    rng (``clock_state`` None: no think times); ``first`` is the first declarer by lot (a
    HOLDER_OF_CARD ruleset looks at deal 1's hands instead).
    """
    cdef MatchRun m
    cdef Played p
    cdef int number, i
    cdef list out = []
    match_start(&m, _rules_of(rules), rng_state, clock_state, first)
    for number in range(1, m.r.deal_count + 1):
        play_deal(&m, number, &p)
        out.append(PlayedDeal(
            p.declarer,
            p.contract,
            p.trump,
            bytes(p.hands[:52]),
            bytes(p.plays[:p.nplays]),
            [p.think[i] for i in range(p.nplays)] if m.timed else [],
            [p.autos[i] for i in range(p.nauto)],
            p.end,
            [p.scores[0], p.scores[1], p.scores[2], p.scores[3]],
            p.trump_ms,
        ))
    return out


# -- the record's bytes -------------------------------------------------------------------

cdef inline int32_t sint32(int64_t v) except? -1:
    if not INT32_MIN <= v <= INT32_MAX:
        raise ValueError(f"score {v} is out of range for a sint32")
    return <int32_t>v


cdef int record_of(const MatchRun* m, int number, Played* p, DealRecord* out,
                   uint32_t* think, int32_t* scores) except -1:
    """``boundary.deal_to_proto`` for the wire: the Deal a played deal is recorded as."""
    cdef int i
    out.number = number
    out.has_dealer = True
    out.dealer = (p.declarer + 3) % 4 if m.r.dealer == DEALER_SEAT_BEFORE else p.declarer
    out.declarer = p.declarer
    out.contract = p.contract
    out.trump = p.trump + 1 if p.contract == KOZ and 0 <= p.trump <= 3 else 0
    out.has_trump_think = p.contract == KOZ and p.trump_ms >= 0
    out.trump_think_ms = <uint32_t>p.trump_ms if out.has_trump_think else 0
    out.end = p.end if END_ALL_TRICKS <= p.end <= END_REVOKE else 0  # as boundary.end_to_proto
    out.hands = p.hands
    out.nhands = 52
    out.plays = p.plays
    out.nplays = p.nplays
    out.nthink = p.nplays if m.timed else 0
    for i in range(out.nthink):
        if not 0 <= p.think[i] <= UINT32_MAX:
            raise ValueError(f"think time {p.think[i]} ms is out of range for a uint32")
        think[i] = <uint32_t>p.think[i]
    out.think_ms = think
    if out.has_trump_think and p.trump_ms > UINT32_MAX:
        raise ValueError(f"trump think time {p.trump_ms} ms is out of range for a uint32")
    out.auto_plays = p.autos
    out.nauto = p.nauto
    for i in range(4):
        scores[i] = sint32(p.scores[i])
    out.scores = scores
    out.nscores = 4
    return 0


cdef size_t tail_room(const MatchRun* m) noexcept nogil:
    """Most bytes ``put_tail`` writes: each deal its tag, a length of at most two bytes and
    the deal; then the totals."""
    return <size_t>m.r.deal_count * (DEAL_MAX_BYTES + 3) + 32


cdef uchar* put_tail(MatchRun* m, uchar* w) except NULL:
    """Play the match's deals and write fields 8 and 9 of its ``Match`` at ``w`` (room for
    ``tail_room``); returns the end."""
    cdef Played p
    cdef DealRecord rec
    cdef uint32_t think[52]
    cdef int32_t scores[4]
    cdef int32_t totals[4]
    cdef int64_t sums[4]
    cdef int number, s
    for s in range(4):
        sums[s] = 0
    for number in range(1, m.r.deal_count + 1):
        play_deal(m, number, &p)
        record_of(m, number, &p, &rec, think, scores)
        w = put_match_deal(w, &rec)
        for s in range(4):
            sums[s] += p.scores[s]
    for s in range(4):
        totals[s] = sint32(sums[s])
    return put_packed_s32(w, 0x4A, totals, 4)  # 9 claimed_totals


cdef bytes write_tail(MatchRun* m):
    """Play the match's deals: the bytes of fields 8 and 9 of its ``Match``."""
    cdef uchar* buf = <uchar*>malloc(tail_room(m))
    cdef uchar* w
    if buf == NULL:
        raise MemoryError()
    try:
        w = put_tail(m, buf)
        return PyBytes_FromStringAndSize(<char*>buf, w - buf)
    finally:
        free(buf)


def match_tail(object rules, object rng_state, object clock_state, int first):
    """The wire bytes of one plain match's ``deals`` and ``claimed_totals`` (fields 8 and 9
    of ``Match``), played as ``play_match`` plays it: ``_sim_py.match_tail`` gives the same
    bytes.
    """
    cdef MatchRun m
    match_start(&m, _rules_of(rules), rng_state, clock_state, first)
    return write_tail(&m)


cdef inline uchar* put_raw(uchar* w, bytes data) except NULL:
    cdef Py_ssize_t n = len(data)
    memcpy(w, <const char*>data, n)
    return w + n


cdef uchar* put_head(uchar* w, tuple parts, bytes digits, uint64_t seconds) except NULL:
    """Fields 1..3 of a simulated match (``kingrec.simulate._head``) from a ``RecordForm``'s
    ``parts`` (``_head_parts``): ``lead`` (field 1), the id (``id_prefix`` then the seed's
    ``digits``), the metadata (``event``, start_time ``seconds``, ``clients``, the tag
    ``tag_key`` = ``digits``, ``direction``), the submessages' lengths counted first."""
    cdef bytes lead, prefix, event, clients, key, direction
    lead, prefix, event, clients, key, direction = parts
    cdef Py_ssize_t nd = len(digits), nkey = len(key)
    cdef Py_ssize_t nid = len(prefix) + nd
    cdef Py_ssize_t stamp = 1 + varint_size(seconds)
    cdef Py_ssize_t entry = 1 + varint_size(nkey) + nkey + 1 + varint_size(nd) + nd
    cdef Py_ssize_t meta = (
        len(event) + 1 + varint_size(stamp) + stamp + len(clients)
        + 1 + varint_size(entry) + entry + len(direction)
    )
    w = put_raw(w, lead)  # 1 format_version
    w[0] = 0x12  # 2 match_id
    w = put_raw(put_raw(put_varint(w + 1, nid), prefix), digits)
    w[0] = 0x1A  # 3 metadata
    w = put_raw(put_varint(w + 1, meta), event)  # 1 event
    w[0] = 0x1A  # 3 start_time: Timestamp.seconds
    w = put_varint(w + 1, stamp)
    w[0] = 0x08
    w = put_raw(put_varint(w + 1, seconds), clients)  # 4 client_name, 5 client_version
    w[0] = 0x32  # 6 tags: one map entry, key then value
    w = put_varint(w + 1, entry)
    w[0] = 0x0A
    w = put_raw(put_varint(w + 1, nkey), key)
    w[0] = 0x12
    w = put_raw(put_varint(w + 1, nd), digits)
    return put_raw(w, direction)  # 7 direction


cdef tuple _head_parts(object form):
    """The head's byte parts of a ``RecordForm``, each checked to be bytes."""
    cdef bytes lead = form.lead, prefix = form.id_prefix, event = form.event
    cdef bytes clients = form.clients, key = form.tag_key, direction = form.direction
    parts = (lead, prefix, event, clients, key, direction)
    if None in parts or form.fixed is None:
        raise TypeError("a RecordForm's parts are bytes")
    return parts


cdef object seed_of_str(str text):
    """The int ``random.Random(text)`` seeds from (version 2: the UTF-8 bytes and their
    SHA-512 digest, read as one big-endian int)."""
    data = text.encode()
    return int.from_bytes(data + sha512(data).digest(), "big")


cdef class TailWriter:
    """``_sim_py.TailWriter``: the tails of matches under one ruleset, each played from
    its seed. The random streams are seeded here, in C, as ``_sim_py.streams`` seeds them
    (no ``random.Random`` and no state handed over)."""

    cdef _Rules params
    cdef MT like  # the random module's constants (mt_load of a fresh state)

    def __init__(self, object rules):
        self.params = _Rules(rules.core_params())
        mt_load(&self.like, random.Random(0).getstate())

    cdef int start(self, MatchRun* m, object seed, bint think_times) except -1:
        if not isinstance(seed, int):
            raise TypeError(f"a seed is an int, not {type(seed).__name__}")
        m.r = &self.params.r
        m.timed = think_times
        if think_times:
            mt_seed_pair(&m.rng, seed, &m.clock, seed_of_str(f"{CLOCK_SEED}{seed}"), &self.like)
        else:
            mt_seed(&m.rng, seed, &self.like)
        m.first = randbelow(&m.rng, 4)  # by lot: rng.randrange(4)
        tally_clear(&m.tally)
        return 0

    def tail(self, object seed, bint think_times):
        """``match_tail`` of the plain match played from ``seed``."""
        cdef MatchRun m
        self.start(&m, seed, think_times)
        return write_tail(&m)

    def records(self, object seeds, bint think_times, object form):
        """The whole record of the plain match played from each of ``seeds``, in a list: what
        ``kingrec.simulate.RecordSimulator.record`` gives for each, written here in one pass
        per match with no Python object but the record (``form``: a ``RecordForm``)."""
        cdef tuple parts = _head_parts(form)  # read once: the buffer is sized by them
        cdef bytes fixed = form.fixed
        cdef bytes digits
        cdef object epoch = form.epoch, span = form.span
        cdef Py_ssize_t base = sum([len(part) for part in parts]) + len(fixed) + 96
        cdef size_t room = 0, need
        cdef uchar* buf = NULL
        cdef uchar* grown
        cdef uchar* w
        cdef MatchRun m
        cdef list out = []
        try:
            for seed in seeds:
                self.start(&m, seed, think_times)
                digits = str(seed).encode("ascii")
                need = <size_t>(base + 2 * len(digits)) + tail_room(&m)
                if need > room:
                    grown = <uchar*>realloc(buf, need)
                    if grown == NULL:
                        raise MemoryError()
                    buf, room = grown, need
                w = put_head(buf, parts, digits, <uint64_t>(epoch + seed % span))
                w = put_raw(w, fixed)
                w = put_tail(&m, w)
                out.append(PyBytes_FromStringAndSize(<char*>buf, w - buf))
        finally:
            free(buf)
        return out

    def bot_play(self, object seed, bint think_times):
        """The same deals as ``tail`` with nothing recorded: the number of plays. For
        ``bench/bench_simulate.py``, which shows the bots' share of ``tail``."""
        cdef MatchRun m
        cdef Played p
        cdef int number
        cdef long plays = 0
        self.start(&m, seed, think_times)
        for number in range(1, m.r.deal_count + 1):
            play_deal(&m, number, &p)
            plays += p.nplays
        return plays

